package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/fuzzcheck"
	"github.com/softalloc/softalloc/internal/jsonl"
	"github.com/softalloc/softalloc/internal/wire"
)

// fuzzRecord is one line as a journal writes it: a campaign record with the
// journal's own keys around it.
func fuzzRecord(users int) []byte {
	e := algorithms.Experiment{
		Deployment: algorithms.Deployment{Topology: "1/2/1/2", Tiers: []algorithms.Tier{
			{Name: "web", Role: algorithms.RoleWeb, Replicas: 1, Cores: 1, Pools: []string{algorithms.PoolThreads}},
			{Name: "app", Role: algorithms.RoleApp, Replicas: 2, Cores: 1, Pools: []string{algorithms.PoolThreads, algorithms.PoolConnections}},
			{Name: "cluster", Role: algorithms.RoleCluster, Replicas: 1, Cores: 1},
			{Name: "db", Role: algorithms.RoleDB, Replicas: 2, Cores: 1},
		}},
		Allocation: algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 150, Connections: 60}},
		Workload:   algorithms.Workload{Users: users},
		Timing:     algorithms.Timing{RampUp: time.Minute, Runtime: time.Minute},
	}
	o := algorithms.Observation{RuntimeSeconds: 60, Throughput: 72.7,
		ResponseTimes: algorithms.Histogram{Buckets: []algorithms.Bucket{{LE: 0.01, Count: 4000}, {LE: 0.5, Count: 362}}, Sum: 80},
		Servers: []algorithms.ServerObservation{{Name: "app-1", Tier: "app", CPU: 0.5, Throughput: 36,
			Pools: []algorithms.PoolObservation{{Name: "threads", Size: 150, Busy: 3, FullShare: -1}}}},
		Drops: 1}
	b, err := json.Marshal(map[string]any{"key": "423b97fd73af280977fd93fa", "runner": "sim",
		"settings": map[string]string{"seed": "1"}, "experiment": e, "observation": o})
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzRead feeds arbitrary campaign files to Read. A campaign that loads
// answers each of its whole records; every message, for a bad file or a
// missed lookup, is one line.
func FuzzRead(f *testing.F) {
	a, b := fuzzRecord(500), fuzzRecord(1000)
	for _, s := range [][]byte{
		append(append(append(a, '\n'), b...), '\n'),
		append(append(a, '\n'), b[:len(b)/2]...), // torn last line
		append(append(a, "\r\n\n  \n"...), b...),
		a[:len(a)-1],
		bytes.ReplaceAll(append(append(a, '\n'), b...), []byte(`"1/2/1/2"`), []byte(`"1/2\n1/2"`)),
		bytes.ReplaceAll(a, []byte(`"web"`), []byte(`"w\reb"`)),
		[]byte(""), []byte("\n"), []byte("{}\n"), []byte("null\n"), []byte("[1]\n{}"), []byte(`{"experiment": 5}` + "\n"),
		[]byte(`{"experiment": {"deployment": {"topology": "a\nb"}, "workload": {"users": 1}}, "observation": {}}` + "\n"),
		[]byte(`{"experiment": {"timing": {"runtimeSeconds": 1e300}}}`),
		bytes.Repeat([]byte("\n"), 1000),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Read(bytes.NewReader(data), "fuzz.jsonl")
		if err != nil {
			fuzzcheck.RequireOneLine(t, err)
			return
		}
		require.NotEmpty(t, r.records)
		for _, w := range r.Warnings {
			require.NotContains(t, w, "\n")
		}
		for k, recs := range r.records {
			for _, rec := range recs {
				require.NoError(t, rec.observation.Validate(), "record %q", k)
			}
		}
		lines, _, _ := jsonl.Read(bytes.NewReader(data), jsonl.MaxLine)
		for i, line := range lines {
			var rec wire.Record
			if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &rec) != nil {
				continue
			}
			_, err := r.RunExperiment(context.Background(), rec.Experiment.Algorithms())
			require.NoError(t, err, "line %d", i+1)
		}
		// A miss lists what the campaign has, from the file: still one line.
		miss := algorithms.Experiment{Deployment: algorithms.Deployment{Topology: "no such"}, Workload: algorithms.Workload{Users: -1}}
		_, err = r.RunExperiment(context.Background(), miss)
		require.ErrorIs(t, err, ErrNotRecorded)
		fuzzcheck.RequireOneLine(t, err)
		for topology := range r.records {
			miss.Deployment.Topology = strings.Split(topology, "|")[0]
			_, err = r.RunExperiment(context.Background(), miss)
			require.ErrorIs(t, err, ErrNotRecorded)
			fuzzcheck.RequireOneLine(t, err)
		}
	})
}
