package live

import (
	"fmt"

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
		{"hookTimeout", c.HookTimeout}, {"healthTimeout", c.HealthTimeout}, {"scrapeTimeout", c.ScrapeTimeout},
		{"requestTimeout", c.RequestTimeout}, {"thinkTime", c.ThinkTime},
		{"rampUp", c.RampUp}, {"runtime", c.Runtime}, {"rampDown", c.RampDown}, {"interval", c.Interval},
	} {
		if !d.v.IsTimeout() {
			return fmt.Errorf("%s: want a duration >= 0 and under 292 years, got %g seconds", d.key, float64(d.v))
		}
	}
	return nil
}
