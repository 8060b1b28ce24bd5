package journal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/journal"
	"github.com/softalloc/softalloc/internal/topology"
)

// A php-fpm tier of children and a tier of threads with the same names,
// roles and sizes are different deployments: a journal must not answer one
// with the other's experiment (their allocations' keys are the same, each
// calls its workers threads).
func TestAChildrenTierDoesNotReuseAThreadsTiersRecord(t *testing.T) {
	parse := func(php string) algorithms.Deployment {
		df, err := topology.ParseDeployment([]byte("name: php\ntiers:\n  - {name: web, role: web, replicas: 1, pools: {threads: 100}}\n"+
			"  - {name: php, role: app, replicas: 1, "+php+"}\n  - {name: db, role: db, replicas: 1, pools: {connections: 151}}\n"), "php.yaml")
		require.NoError(t, err)
		return df.Deployment
	}
	threads := parse("pools: {threads: 20}")
	children := parse("pools: {children: 20}")
	fpm := parse("software: php-fpm, pools: {children: 20}")
	a := algorithms.Allocation{"web": {Threads: 100}, "php": {Threads: 20}, "db": {Connections: 151}}
	timing := algorithms.Timing{RampUp: time.Minute, Runtime: 2 * time.Minute}
	exp := func(d algorithms.Deployment) algorithms.Experiment {
		return algorithms.Experiment{Deployment: d, Allocation: a, Workload: algorithms.Workload{Users: 50}, Timing: timing}
	}
	keys := map[string]string{}
	for name, d := range map[string]algorithms.Deployment{"threads": threads, "children": children, "php-fpm children": fpm} {
		k := journal.Key(simID, exp(d))
		assert.NotContains(t, keys, k, "%s has the key of %s", name, keys[k])
		keys[k] = name
	}

	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := journal.Open(path, simID, journal.Options{})
	require.NoError(t, err)
	x := &counting{}
	_, err = j.Wrap(x).RunExperiment(context.Background(), exp(threads))
	require.NoError(t, err)
	require.NoError(t, j.Close())

	j, err = journal.Open(path, simID, journal.Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, j.Close()) }()
	_, ok := j.Lookup(exp(threads))
	assert.True(t, ok, "the threads deployment's own record")
	_, ok = j.Lookup(exp(children))
	assert.False(t, ok, "a children tier reused the threads tier's record")
	_, ok = j.Lookup(exp(fpm))
	assert.False(t, ok, "a php-fpm tier reused the threads tier's record")
	_, err = j.Wrap(x).RunExperiment(context.Background(), exp(fpm))
	require.NoError(t, err)
	assert.Equal(t, 2, x.calls)
	// What the record says of the tier reads back.
	_, ok = j.Lookup(exp(fpm))
	assert.True(t, ok)
}

// A journal written before tiers said their software or children (by
// softalloc at 98b9bf0: simulate -f testdata/deployments/rubbos-1414.yaml
// --users 1000 --fixed --ramp-up 10s --runtime 20s) still resumes: its
// records keep their keys and answer the same experiment.
func TestAJournalOfBeforeSoftwareStillResumes(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "rubbos-1414-before-software.jsonl"))
	require.NoError(t, err)
	var rec journal.Record
	require.NoError(t, json.NewDecoder(bytes.NewReader(src)).Decode(&rec))
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	require.NoError(t, os.WriteFile(path, src, 0o644))

	df, err := topology.LoadDeployment(filepath.Join("..", "..", "testdata", "deployments", "rubbos-1414.yaml"))
	require.NoError(t, err)
	e := algorithms.Experiment{Deployment: df.Deployment, Allocation: df.Allocation, Workload: algorithms.Workload{Users: 1000},
		Timing: algorithms.Timing{RampUp: 10 * time.Second, Runtime: 20 * time.Second}}
	id := journal.Identity{Runner: rec.Runner, Settings: rec.Settings}
	assert.Equal(t, rec.Key, journal.Key(id, e), "the key the journal holds")
	j, err := journal.Open(path, id, journal.Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, j.Close()) }()
	o, ok := j.Lookup(e)
	require.True(t, ok, "the recorded experiment is reused")
	assert.InDelta(t, rec.Observation.Throughput, o.Throughput, 1e-9)
}
