package duration

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

func read(t *testing.T, text string) (Seconds, error) {
	t.Helper()
	var v struct {
		D Seconds `yaml:"d"`
	}
	err := yaml.Unmarshal([]byte("d: "+text), &v)
	return v.D, err
}

// What the simulator's model and mix files always accepted reads to the same
// float, bit for bit: the unit is a multiplication, not a rounding to
// nanoseconds.
func TestReadsTheSimulatorsForms(t *testing.T) {
	for text, want := range map[string]float64{
		"2.4673ms": 2.4673 * 1e-3, "0.33537ms": 0.33537 * 1e-3, "2.2us": 2.2 * 1e-6, "2.2µs": 2.2 * 1e-6,
		"7s": 7, "1.5m": 90, "2h": 7200, "0.5ns": 0.5e-9, "0.0024673": 0.0024673, "60": 60,
		"1e-3s": 1e-3, "2 ms": 2e-3, "-1ms": -1e-3, "'30'": 30,
	} {
		got, err := read(t, text)
		require.NoError(t, err, text)
		assert.Equal(t, want, float64(got), text)
	}
	got, err := read(t, "inf")
	require.NoError(t, err, "an infinite time reads; validators refuse it by name")
	assert.True(t, math.IsInf(float64(got), 1))
}

// What the live runner's settings always accepted reads to the same
// time.Duration.
func TestReadsTheLiveRunnersForms(t *testing.T) {
	for text, want := range map[string]time.Duration{
		"30s": 30 * time.Second, "1m30s": 90 * time.Second, "1h2m3.5s": time.Hour + 2*time.Minute + 3500*time.Millisecond,
		"500ms": 500 * time.Millisecond, "0.3s": 300 * time.Millisecond, "30": 30 * time.Second, "0": 0,
		"1.1": 1100 * time.Millisecond, "0x10": 16 * time.Second, "1_000": 1000 * time.Second,
		"2562047h": 2562047 * time.Hour, "1.000000001s": time.Second + 1,
	} {
		got, err := read(t, text)
		require.NoError(t, err, text)
		assert.Equal(t, want, got.Duration(), text)
		assert.True(t, got.IsTimeout(), text)
	}
}

func TestRefusesWhatIsNoTime(t *testing.T) {
	for _, text := range []string{"soon", "nan", ".nan", "NaN", "nans", "1e400", "1e400s", "[1]", "{a: 1}", "5 parsecs", "''"} {
		_, err := read(t, text)
		require.Error(t, err, text)
		assert.Contains(t, err.Error(), "want a duration like 2.5ms or 7s", text)
	}
}

func TestIsTimeout(t *testing.T) {
	assert.True(t, Seconds(0).IsTimeout())
	assert.True(t, Seconds(9.2e9).IsTimeout())
	for _, s := range []Seconds{-1e-9, Longest, Seconds(math.Inf(1)), Seconds(math.NaN())} {
		assert.False(t, s.IsTimeout(), "%g", float64(s))
	}
}

func TestDurationSaturates(t *testing.T) {
	assert.Equal(t, time.Duration(math.MaxInt64), Seconds(1e300).Duration())
	assert.Equal(t, time.Duration(math.MinInt64), Seconds(-1e300).Duration())
	assert.Equal(t, time.Duration(math.MaxInt64), Seconds(math.Inf(1)).Duration())
	assert.Equal(t, time.Duration(0), Seconds(math.NaN()).Duration())
	assert.Equal(t, 1500*time.Millisecond, Of(1500*time.Millisecond).Duration())
}

func TestMarshalReadsBackExactly(t *testing.T) {
	for _, s := range []Seconds{2.4673e-3, 1.0 / 3, 7, 0, -2e-6, 1e300} {
		b, err := yaml.Marshal(map[string]Seconds{"d": s})
		require.NoError(t, err)
		var back map[string]Seconds
		require.NoError(t, yaml.Unmarshal(b, &back))
		assert.Equal(t, s, back["d"], "%s", b)
	}
}
