package cli_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 35: check's help promises exit 2 for a configuration error found
// before any experiment, and a baseline of another runner, or one that does
// not say at which SLA it was measured, was compared without a word.
func TestCheckRefusesABaselineItCannotCompare(t *testing.T) {
	dir := t.TempDir()
	capacity := func(name, fields string) string {
		return writeFile(t, dir, name, `{"capacity": {`+fields+`"maxGoodput": 700, "maxThroughput": 740}}`)
	}
	execBase := capacity("exec.json", `"topology": "1/2/1/2", "runner": "exec", "allocation": "400-150-60", "slaSeconds": 2, `)
	noSLA := capacity("nosla.json", `"topology": "1/2/1/2", "runner": "sim", "allocation": "400-150-60", `)
	noRunner := capacity("norunner.json", `"topology": "1/2/1/2", "allocation": "400-150-60", "slaSeconds": 2, `)
	noTopology := capacity("notopology.json", `"runner": "sim", "allocation": "400-150-60", "slaSeconds": 2, `)
	journal := writeFile(t, dir, "empty.jsonl", "")
	// Taken, each baseline would be compared with one short trial's capacity.
	check := []string{"check", "--topology", "1/2/1/2", "--max-regression", "5%", "--fixed", "--ramp-up", "0s", "--runtime", "1s",
		"--step", "500", "--max-workload", "500"}
	runUsageCases(t, []usageCase{
		{"another runner", append(check, "--baseline", execBase),
			`--baseline "` + execBase + `" was measured on the exec runner, this check runs on sim`},
		{"no slaSeconds", append(check, "--baseline", noSLA),
			`--baseline "` + noSLA + `": no slaSeconds, the SLA its maxGoodput was measured at; want check --output json's capacity, which has it`},
		{"no runner", append(check, "--baseline", noRunner),
			`--baseline "` + noRunner + `": no runner, the runner it was measured on; want check --output json's capacity, which has it`},
		{"no topology", append(check, "--baseline", noTopology),
			`--baseline "` + noTopology + `": no topology, the deployment it was measured on; want check --output json's capacity, which has it`},
		{"baseline is a directory", append(check, "--baseline", dir), `--baseline: not a regular file (a directory)`},
		// From a journal, the flags are checked before the journal is read.
		{"nojournal from-journal bad alloc", []string{"check", "--from-journal", journal, "--min-goodput", "1", "--alloc", "-1-5-5"},
			`--alloc: allocation "-1-5-5": web thread pool -1 is not a pool size`},
		{"nojournal from-journal bad step", []string{"check", "--from-journal", journal, "--min-goodput", "1", "--step", "0"},
			`--step: want a positive number of users, got 0`},
	})
}

// A baseline of another allocation is what a CI gate on a changed
// allocation compares with: check compares, and says so.
func TestCheckSaysTheBaselinesAllocationDiffers(t *testing.T) {
	dir := t.TempDir()
	j := filepath.Join(dir, "journal.jsonl")
	_, stderr, code := run(t, "", "simulate", "--topology", "1/2/1/2", "--alloc", "400-150-60", "--alloc", "400-15-15",
		"--users", "500,1000", "--ramp-up", "1s", "--runtime", "2s", "--journal", j)
	require.Equal(t, 0, code, stderr)
	fromJournal := []string{"check", "--from-journal", j, "--topology", "1/2/1/2"}
	baseline, stderr, code := run(t, "", append(fromJournal, "--alloc", "400-150-60", "--output", "json")...)
	require.Equal(t, 0, code, stderr)
	base := writeFile(t, dir, "capacity.json", baseline)

	out, stderr, code := run(t, "", append(fromJournal, "--alloc", "400-15-15", "--baseline", base, "--max-regression", "99%", "--output", "json")...)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, `softalloc: warning: --baseline "`+base+`" was measured on allocation 400-150-60, this check on 400-15-15: the regression checks compare the two allocations`+"\n", stderr)
	var doc struct {
		Checks []struct{ Name, Message string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Len(t, doc.Checks, 2)
	for _, c := range doc.Checks {
		assert.Contains(t, c.Message, "(baseline allocation 400-150-60, this check's 400-15-15)", c.Name)
	}

	// The same allocation: not a word.
	_, stderr, code = run(t, "", append(fromJournal, "--alloc", "400-150-60", "--baseline", base, "--max-regression", "5%")...)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stderr)
}
