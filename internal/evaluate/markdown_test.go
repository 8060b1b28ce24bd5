package evaluate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSpeedFitNeverBelowZero(t *testing.T) {
	// 200 ns/event is 0.2 s per million events; from -0.5 s it reaches 0 at 2.5 million.
	x, y := speedFit(Speed{NsPerEvent: 200, InterceptSeconds: -0.5}, 30)
	require.Len(t, x, 2)
	assert.InDelta(t, 2.5, x[0], 1e-9)
	assert.InDelta(t, 0, y[0], 1e-9)
	assert.InDelta(t, 5.5, y[1], 1e-9)

	x, y = speedFit(Speed{NsPerEvent: 200, InterceptSeconds: 0.1}, 30)
	assert.Equal(t, []float64{0, 30}, x)
	assert.InDelta(t, 0.1, y[0], 1e-9)

	x, _ = speedFit(Speed{NsPerEvent: 200, InterceptSeconds: -10}, 30)
	assert.Nil(t, x, "a fit below zero over all the trials is not drawn")
}

// The committed evaluation is what this code writes from its JSON twin: the
// Markdown is never edited by hand, and the plots draw from the recorded report.
func TestCommittedEvaluationIsWhatWriteProduces(t *testing.T) {
	b, err := os.ReadFile("../../docs/evaluation.json")
	require.NoError(t, err)
	var rep Report
	require.NoError(t, json.Unmarshal(b, &rep))
	dir := t.TempDir()
	require.NoError(t, Write(dir, rep))
	got, err := os.ReadFile(filepath.Join(dir, "evaluation.md"))
	require.NoError(t, err)
	want, err := os.ReadFile("../../docs/evaluation.md")
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))
	for _, plot := range []string{"evaluation-speed.svg", "evaluation-experiments.svg"} {
		assert.FileExists(t, filepath.Join(dir, plot))
	}
}
