package journal_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/journal"
	"github.com/softalloc/softalloc/internal/wire"
)

// fuzzLine is a record as Append writes it.
func fuzzLine(f *testing.F, id journal.Identity, users int) []byte {
	e := algorithms.Experiment{
		Deployment: algorithms.Deployment{Topology: "1/2/1", Tiers: []algorithms.Tier{
			{Name: "web", Role: algorithms.RoleWeb, Replicas: 1, Cores: 1, Pools: []string{algorithms.PoolThreads}},
			{Name: "app", Role: algorithms.RoleApp, Replicas: 2, Cores: 1, Pools: []string{algorithms.PoolThreads, algorithms.PoolConnections}},
			{Name: "db", Role: algorithms.RoleDB, Replicas: 1, Cores: 1},
		}},
		Allocation: algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 150, Connections: 60}},
		Workload:   algorithms.Workload{Users: users},
		Timing:     algorithms.Timing{RampUp: time.Minute, Runtime: 2 * time.Minute},
	}
	b, err := json.Marshal(journal.Record{Key: journal.Key(id, e), Runner: id.Runner, Settings: id.Settings,
		Finished: time.Date(2026, 11, 23, 4, 50, 33, 0, time.UTC), Seconds: 0.5, Experiment: wire.FromExperiment(e),
		Observation: wire.FromObservation(algorithms.Observation{RuntimeSeconds: 120, Throughput: float64(users) / 7,
			Servers: []algorithms.ServerObservation{{Name: "app-1", Tier: "app", CPU: 0.5}}})})
	if err != nil {
		f.Fatal(err)
	}
	return append(b, '\n')
}

// FuzzOpen feeds arbitrary journal files to Open. What opens is repaired
// for good: opened again it gives no warning and the same records, and it
// ends on a whole line. What does not open is refused on one line.
func FuzzOpen(f *testing.F) {
	a, b := fuzzLine(f, simID, 100), fuzzLine(f, simID, 200)
	other := fuzzLine(f, journal.Identity{Runner: "exec", Settings: map[string]string{"command": "./trial.sh\n--x"}}, 100)
	join := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, s := range [][]byte{
		join(a, b), join(a, b[:len(b)/2]), join(a, b[:len(b)-1]), join(a, []byte("\n\n"), b), join(a, other),
		join(a, b[:len(b)/2], []byte("\r")), join(a, []byte("\r\n"), b), {}, []byte("\n"), []byte("{}\n"),
		[]byte("null\n"), []byte("5"), []byte(`{"runner": "sim", "settings": {"seed": "1"}, "experiment": 5}` + "\n"),
		[]byte(`{"runner": "sim\n", "settings": {"seed": "1"}}` + "\n"),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "journal.jsonl")
		require.NoError(t, os.WriteFile(path, data, 0o644))
		j, err := journal.Open(path, simID, journal.Options{})
		if err != nil {
			msg := err.Error()
			require.NotEmpty(t, msg)
			require.NotContains(t, msg, "\n", "a multi-line error")
			require.NotContains(t, msg, "\r", "an error with a carriage return")
			return
		}
		for _, w := range j.Warnings {
			require.NotContains(t, w, "\n")
		}
		n := j.Len()
		require.NoError(t, j.Close())
		after, err := os.ReadFile(path)
		require.NoError(t, err)
		if len(after) > 0 {
			require.Equal(t, byte('\n'), after[len(after)-1], "the next record would not start a line: %q", after)
		}

		j2, err := journal.Open(path, simID, journal.Options{})
		require.NoError(t, err, "opened once, the journal no longer opens: %q", after)
		defer j2.Close()
		require.Empty(t, j2.Warnings, "the first open repaired nothing: %q", after)
		require.Equal(t, n, j2.Len())
	})
}
