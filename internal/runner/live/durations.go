package live

import (
	"fmt"
	"time"

	"github.com/softalloc/softalloc/internal/duration"
)

// checkDurations refuses a time of the runner section that the runner
// cannot wait: duration.Seconds reads any number but NaN (the simulators'
// validators name their own ranges), and a timeout or a trial phase must be
// >= 0 and fit a time.Duration.
func (c *Config) checkDurations() error {
	for _, d := range []struct {
		key string
		v   duration.Seconds
	}{
		{"hookTimeout", c.HookTimeout}, {"healthTimeout", c.HealthTimeout}, {"scrapeTimeout", c.ScrapeTimeout}, {"queryTimeout", c.QueryTimeout},
		{"requestTimeout", c.RequestTimeout}, {"thinkTime", c.ThinkTime},
		{"rampUp", c.RampUp}, {"runtime", c.Runtime}, {"rampDown", c.RampDown}, {"interval", c.Interval},
	} {
		// Under 1,000 hours: a few of them are added up (a hook's timeout
		// and the health check's), and two of 6e9 s overflowed the sum.
		if !d.v.IsTimeout() || d.v.Duration() > maxDuration {
			return fmt.Errorf("%s: want a duration >= 0 and at most %v, got %g seconds", d.key, maxDuration, float64(d.v))
		}
	}
	// The series are kept in memory an interval a value: an interval of 1ns
	// ran the runner out of memory.
	if iv := c.Interval.Duration(); iv != 0 && iv < minInterval {
		return fmt.Errorf("interval: want at least %v, got %v", minInterval, iv)
	}
	if iv := max(c.Interval.Duration(), minInterval); (c.RampUp.Duration()+c.Runtime.Duration())/iv > maxIntervals {
		return fmt.Errorf("rampUp + runtime: at most %d intervals of %v, got %v", maxIntervals, iv, c.RampUp.Duration()+c.Runtime.Duration())
	}
	return nil
}

// Bounds of the runner section's times.
const (
	maxDuration  = 1000 * time.Hour
	minInterval  = 10 * time.Millisecond
	maxIntervals = 1_000_000
)
