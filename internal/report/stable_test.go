package report

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The README calls these keys stable: a script reads them whatever their
// value, so a zero is written, not left out (an open model's think time, a
// server without a garbage collector).
func TestStableKeysAreWrittenWhenZero(t *testing.T) {
	for _, c := range []struct {
		value any
		keys  []string
	}{
		{AdviceEvidenceJSON{Model: "open"}, []string{"thinkTime", "thinkTimeSource"}},
		{SimulateServer{Name: "web-1", Tier: "web"}, []string{"gcShare"}},
		// No failed page is an answer too: a script tells it from a key it
		// does not know.
		{SimulateRow{}, []string{"errors", "errorShare", "drops", "retries"}},
		{ValidateAllocation{}, []string{"errors", "errorShare"}},
		{Capacity{}, []string{"errors", "errorShare"}},
		{FindCriticalJSON{}, []string{"errors", "errorShare"}},
		{RecommendJSON{Failures: &Failures{}}, []string{"errors", "errorShare"}},
	} {
		b, err := json.Marshal(c.value)
		require.NoError(t, err)
		var got map[string]any
		require.NoError(t, json.Unmarshal(b, &got))
		for _, k := range c.keys {
			assert.Contains(t, got, k, "%T", c.value)
		}
	}
}
