// Package duration is the one YAML duration type of the input files: the
// simulator's model, the workload format, the service-class workload and
// the live runner's settings.
package duration

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Seconds is a length of time in seconds. YAML reads a Go duration text
// ("2.4673ms", "7s", "1m30s") or a plain number of seconds ("0.0024673").
//
// It is a float, not a time.Duration: the simulators compute in float
// seconds, and whole nanoseconds would round the demands they are given.
// The live runner converts with Duration. Any number but NaN reads, a
// negative or infinite one included: each format's validator names the
// field and the range it wants (a demand > 0, a timeout that fits a
// time.Duration), which a parse error could not.
type Seconds float64

// Longest is the longest time a time.Duration holds, about 292 years.
const Longest Seconds = math.MaxInt64 / 1e9

// Of is d in seconds.
func Of(d time.Duration) Seconds { return Seconds(d.Seconds()) }

// Duration is s as a time.Duration, rounded to the nanosecond; outside
// [-Longest, Longest] it saturates.
func (s Seconds) Duration() time.Duration {
	ns := math.Round(float64(s) * 1e9)
	switch {
	case ns >= math.MaxInt64: // 2^63 as a float: one past the largest
		return math.MaxInt64
	case ns <= math.MinInt64:
		return math.MinInt64
	case ns != ns: // NaN
		return 0
	}
	return time.Duration(ns)
}

// IsTimeout says whether s is a time the live runner can wait: >= 0 and
// under Longest.
func (s Seconds) IsTimeout() bool { return s >= 0 && s < Longest }

// UnmarshalYAML reads "2.4673ms", "1m30s" or 0.0024673.
func (s *Seconds) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return typeError("line %d: want a duration like 2.5ms or 7s", n.Line)
	}
	v, ok := parse(n)
	if !ok {
		return typeError("line %d: want a duration like 2.5ms or 7s, got %q", n.Line, n.Value)
	}
	*s = Seconds(v)
	return nil
}

// MarshalYAML writes a duration text that reads back exactly.
func (s Seconds) MarshalYAML() (any, error) {
	return strconv.FormatFloat(float64(s), 'g', -1, 64) + "s", nil
}

// parse reads a scalar in the first of these forms that takes it, never as
// NaN (no time is NaN, and a NaN passes every range check written as a
// comparison):
//
//   - a number of seconds, as strconv.ParseFloat reads it ("0.5", "-1",
//     "inf");
//   - one number and a unit, the number as ParseFloat reads it ("2.4673ms",
//     "1e-3s"): the value is the number times the unit, exactly what the
//     simulator always computed, with no rounding to nanoseconds;
//   - Go duration text of several units ("1m30s"), as time.ParseDuration
//     reads it;
//   - a YAML number ("0x10", "1_000", ".inf").
func parse(n *yaml.Node) (float64, bool) {
	if v, err := strconv.ParseFloat(n.Value, 64); err == nil {
		return v, !math.IsNaN(v)
	}
	if v, ok := parseOneUnit(n.Value); ok {
		return v, !math.IsNaN(v)
	}
	if d, err := time.ParseDuration(n.Value); err == nil {
		return d.Seconds(), true
	}
	var v float64
	if n.Tag == "!!int" || n.Tag == "!!float" {
		if err := n.Decode(&v); err == nil && !math.IsNaN(v) {
			return v, true
		}
	}
	return 0, false
}

// parseOneUnit reads a number and one unit ("2.4673ms") as the number times
// the unit.
func parseOneUnit(s string) (float64, bool) {
	units := []struct {
		suffix string
		scale  float64
	}{{"ns", 1e-9}, {"us", 1e-6}, {"µs", 1e-6}, {"ms", 1e-3}, {"s", 1}, {"m", 60}, {"h", 3600}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
			if err != nil {
				return 0, false
			}
			return v * u.scale, true
		}
	}
	return 0, false
}

// typeError is an error yaml.v3 collects with the others of a document, so
// that a strict decoder (oneline.DecodeYAML) can name its field.
func typeError(format string, args ...any) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf(format, args...)}}
}
