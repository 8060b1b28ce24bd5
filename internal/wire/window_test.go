package wire_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/wire"
)

func TestReadWindowsTakesEveryRecordedForm(t *testing.T) {
	e, o := sample()
	line := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return string(b)
	}
	journalLine := `{"key":"k","runner":"sim","settings":{"seed":"1"},"finished":"2026-11-24T09:00:00Z","seconds":1.5,` +
		strings.TrimPrefix(line(wire.FromRecord(e, o)), "{")
	window := wire.FromWindow(algorithms.Window{Label: "09:00-09:05", Observation: o, Users: 5000, ResponseTime: 0.2})
	marked := wire.FromWindow(algorithms.Window{Label: "09:05-09:10", Problem: "a counter reset of x in 09:05-09:10"})
	in := strings.Join([]string{journalLine, line(wire.FromRecord(e, o)), line(wire.FromObservation(o)), "", line(window), line(marked)}, "\n")

	ws, err := wire.ReadWindows(strings.NewReader(in), "obs.jsonl")
	require.NoError(t, err)
	require.Len(t, ws, 5)
	assert.Equal(t, "obs.jsonl:1 (6000 users)", ws[0].Label)
	assert.Equal(t, 6000.0, ws[0].Users, "a journal record's users are its workload")
	assert.InDelta(t, 120000.0/612360, ws[0].ResponseTime, 1e-12, "and its page response time the histogram's mean")
	assert.Equal(t, o, ws[0].Observation)
	require.NotNil(t, ws[0].Experiment, "a journal record says what measured it")
	assert.Equal(t, e.Allocation, ws[0].Experiment.Allocation)
	assert.Equal(t, e.Deployment.Topology, ws[0].Experiment.Deployment.Topology)
	assert.Equal(t, 6000.0, ws[1].Users, "a replay campaign's line")
	assert.NotNil(t, ws[1].Experiment)
	assert.Equal(t, wire.RecordedWindow{Window: algorithms.Window{Label: "obs.jsonl:3", Observation: o}}, ws[2], "a bare observation: users unknown")
	assert.Equal(t, wire.RecordedWindow{Window: algorithms.Window{Label: "09:00-09:05", Observation: o, Users: 5000, ResponseTime: 0.2}}, ws[3])
	assert.Equal(t, wire.RecordedWindow{Window: algorithms.Window{Label: "09:05-09:10", Problem: "a counter reset of x in 09:05-09:10"}}, ws[4], "kept for advise to report")
}

func TestReadWindowsNamesTheBadLine(t *testing.T) {
	_, o := sample()
	bad := wire.FromObservation(o)
	bad.Servers[0].CPU = 1.7
	badLine, err := json.Marshal(bad)
	require.NoError(t, err)
	for _, tc := range []struct{ in, want string }{
		{"", "obs.jsonl: no observation in it"},
		{"not json\n", "obs.jsonl:1: invalid character"},
		{string(badLine) + "\n", "obs.jsonl:1: observation.servers[0].cpu: want a number in [0,1], got 1.7"},
		{`{"throughput": 3, "servrs": []}` + "\n", `obs.jsonl:1: json: unknown field "servrs": want a journal record, an observation or a window`},
		{`{"label": "w", "users": -1, "problem": "p"}` + "\n", "obs.jsonl:1: users: want a finite number >= 0, got -1"},
		{`{"label": "w"}` + "\n", "obs.jsonl:1: a window with neither an observation nor a problem"},
	} {
		_, err := wire.ReadWindows(strings.NewReader(tc.in), "obs.jsonl")
		require.Error(t, err, tc.in)
		assert.Contains(t, err.Error(), tc.want)
	}
}
