package algorithms

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimingJSONRoundTrip(t *testing.T) {
	in := Timing{RampUp: 90 * time.Second, Runtime: 12 * time.Minute, RampDown: 1500 * time.Millisecond}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	var out Timing
	require.NoError(t, json.Unmarshal(b, &out))
	assert.Equal(t, in, out)
}

func TestTimingJSONRefusesWhatADurationCannotHold(t *testing.T) {
	for _, doc := range []string{
		`{"rampUpSeconds": 0, "runtimeSeconds": 1e300, "rampDownSeconds": 0}`, // overflows to a negative runtime
		`{"rampUpSeconds": -1, "runtimeSeconds": 60, "rampDownSeconds": 0}`,
		`{"rampUpSeconds": 0, "runtimeSeconds": 0, "rampDownSeconds": 0}`,
		`{"rampUpSeconds": 0, "runtimeSeconds": 60, "rampDownSeconds": 1e19}`,
	} {
		var tm Timing
		err := json.Unmarshal([]byte(doc), &tm)
		require.Error(t, err, doc)
		assert.Contains(t, err.Error(), "timing: want", doc)
	}
}
