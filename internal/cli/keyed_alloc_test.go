package cli_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const phpDeployment = "../../testdata/deployments/php.yaml"

// --alloc and validate --recommended take the keyed form,
// tier.pool=N,..., for any deployment: a PHP stack's pools (web threads,
// php children, db connections) are not the notation's chain.
func TestKeyedAllocationOnTheCommandLine(t *testing.T) {
	// The notation's chains take it too, and print as they always have.
	out, stderr, code := run(t, "", "simulate", "--topology", "1/2/1/2", "--alloc", "web.threads=400,app.threads=6,app.connections=6",
		"--users", "1000", "--ramp-up", "10s", "--runtime", "20s", "--no-journal", "--output", "json")
	require.Equal(t, 0, code, stderr)
	var rows []struct{ Allocation string }
	require.NoError(t, json.Unmarshal([]byte(out), &rows))
	require.Len(t, rows, 1)
	assert.Equal(t, "400-6-6", rows[0].Allocation)

	// A PHP stack's allocation is read: what stops it is the runner, not --alloc.
	const good = "web.threads=150,php.children=20,db.connections=51"
	_, stderr, code = run(t, "", "simulate", "-f", phpDeployment, "--alloc", good, "--users", "10", "--no-journal")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "(allocation: --alloc "+good+") cannot run on the sim runner")
	// validate reads --recommended once the runner can run the deployment.
	_, stderr, code = run(t, "", "validate", "-f", phpDeployment, "--recommended", good, "--users", "10", "--no-journal",
		"--runner", "exec", "--runner-cmd", "/bin/false", "--runner-retries", "0", "--fixed", "--ramp-up", "1s", "--runtime", "1s")
	assert.NotEqual(t, 0, code)
	assert.NotContains(t, stderr, `allocation "`)

	file := `deployment file "` + phpDeployment + `": allocation `
	runUsageCases(t, []usageCase{
		{"missing pool", []string{"simulate", "-f", phpDeployment, "--users", "10", "--alloc", "web.threads=150,php.children=20"},
			file + `"web.threads=150,php.children=20": db.connections missing: want web.threads=N,php.children=N,db.connections=N`},
		{"threads of children", []string{"find-critical", "-f", phpDeployment, "--alloc", "web.threads=150,php.threads=20,db.connections=51"},
			`php.threads: tier "php"'s workers are its children (each opens its own connections), not threads: write php.children=N`},
		{"unknown tier", []string{"recommend", "-f", phpDeployment, "--alloc", "web.threads=150,php.children=20,app.connections=5"},
			`unknown tier "app": deployment "php" has web, php or db`},
		{"too large", []string{"validate", "-f", phpDeployment, "--users", "10", "--runner", "exec", "--runner-cmd", "/bin/false", "--recommended", "web.threads=150,php.children=200000,db.connections=51"},
			`php.children "200000" is more than the maximum of 100000`},
		{"nojournal duplicate", []string{"advise", "-f", phpDeployment, "--observations", filepath.Join("testdata", "none.jsonl"),
			"--alloc", "web.threads=1,web.threads=1,php.children=20,db.connections=51"}, `web.threads given twice`},
		{"the notation", []string{"simulate", "-f", phpDeployment, "--users", "10", "--alloc", "100-20-51"},
			`deployment "php"'s pools are not the notation's web threads, app threads and app connections: want web.threads=N,php.children=N,db.connections=N`},
	})
}

// check --from-journal --alloc takes the keyed form too, read against the
// deployment of the journal's records.
func TestCheckFromJournalTakesAKeyedAllocation(t *testing.T) {
	j := filepath.Join(t.TempDir(), "journal.jsonl")
	_, stderr, code := run(t, "", "simulate", "--topology", "1/2/1/2", "--alloc", "400-150-60", "--alloc", "400-15-15",
		"--users", "500", "--ramp-up", "1s", "--runtime", "2s", "--journal", j)
	require.Equal(t, 0, code, stderr)
	fromJournal := []string{"check", "--from-journal", j, "--topology", "1/2/1/2", "--output", "json"}
	out, stderr, code := run(t, "", append(fromJournal, "--alloc", "web.threads=400,app.threads=15,app.connections=15")...)
	require.Equal(t, 0, code, stderr)
	var doc struct{ Capacity struct{ Allocation string } }
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, "400-15-15", doc.Capacity.Allocation)

	_, stderr, code = run(t, "", append(fromJournal, "--alloc", "web.threads=400,app.threads=15")...)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `--alloc: allocation "web.threads=400,app.threads=15": app.connections missing: want web.threads=N,app.threads=N,app.connections=N`)
}
