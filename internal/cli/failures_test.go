package cli_test

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withErrors copies a journal, giving each record's observation the failed
// pages errs says for its workload (the sim fails none).
func withErrors(t *testing.T, src string, errs func(users int) int64) string {
	t.Helper()
	in, err := os.ReadFile(src)
	require.NoError(t, err)
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(in))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
		users := int(rec["experiment"].(map[string]any)["workload"].(map[string]any)["users"].(float64))
		rec["observation"].(map[string]any)["errors"] = errs(users)
		b, err := json.Marshal(rec)
		require.NoError(t, err)
		out.Write(append(b, '\n'))
	}
	require.NoError(t, sc.Err())
	dst := src + ".errors"
	require.NoError(t, os.WriteFile(dst, out.Bytes(), 0o600))
	return dst
}

// servedAndFailed reads the pages a journal's records served (their
// response times' count) and failed, by workload.
func servedAndFailed(t *testing.T, path string) (served, failed map[int]float64) {
	t.Helper()
	in, err := os.ReadFile(path)
	require.NoError(t, err)
	served, failed = map[int]float64{}, map[int]float64{}
	for _, line := range strings.Split(strings.TrimSpace(string(in)), "\n") {
		var rec struct {
			Experiment  struct{ Workload struct{ Users int } }
			Observation struct {
				Errors        float64
				ResponseTimes struct{ Buckets []struct{ Count float64 } }
			}
		}
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		u := rec.Experiment.Workload.Users
		served[u], failed[u] = 0, rec.Observation.Errors // the last record of a workload is the one used
		for _, b := range rec.Observation.ResponseTimes.Buckets {
			served[u] += b.Count
		}
	}
	return served, failed
}

// totalFailed is the failed pages of every record of a journal.
func totalFailed(t *testing.T, path string) float64 {
	t.Helper()
	in, err := os.ReadFile(path)
	require.NoError(t, err)
	var n float64
	for _, line := range strings.Split(strings.TrimSpace(string(in)), "\n") {
		var rec struct{ Observation struct{ Errors float64 } }
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		n += rec.Observation.Errors
	}
	return n
}

// csvColumn is a one-row CSV's number in a column.
func csvColumn(t *testing.T, out, name string) float64 {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 2, out)
	i := slices.Index(recs[0], name)
	require.GreaterOrEqual(t, i, 0, recs[0])
	v, err := strconv.ParseFloat(recs[1][i], 64)
	require.NoError(t, err)
	return v
}

// A broken allocation fails pages: simulate's JSON and CSV rows carry them,
// not only the runner's lines on stderr.
func TestSimulateReportsFailedPages(t *testing.T) {
	dir := t.TempDir()
	j := filepath.Join(dir, "j.jsonl")
	args := []string{"simulate", "--topology", "1/2/1/2", "--alloc", "400-6-6", "--users", "1000,6000", "--ramp-up", "10s", "--runtime", "20s", "--sla", "2"}
	_, stderr, code := run(t, "", append(args, "--journal", j, "--output", "json")...)
	require.Equal(t, 0, code, stderr)
	broken := withErrors(t, j, func(users int) int64 {
		if users == 6000 {
			return 123
		}
		return 0
	})
	served, _ := servedAndFailed(t, broken)
	replay := append(args, "--runner", "replay", "--campaign", broken)

	out, stderr, code := run(t, "", slices.Concat(replay, []string{"--output", "json"})...)
	require.Equal(t, 0, code, stderr)
	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &rows))
	require.Len(t, rows, 2)
	assert.EqualValues(t, 0, rows[0]["errors"], "1000 users failed nothing")
	assert.EqualValues(t, 0, rows[0]["errorShare"])
	assert.EqualValues(t, 123, rows[1]["errors"])
	assert.InDelta(t, 123/(123+served[6000]), rows[1]["errorShare"], 1e-12)
	assert.Contains(t, rows[1], "drops", "the fields that were there stay")

	out, stderr, code = run(t, "", slices.Concat(replay, []string{"--output", "csv"})...)
	require.Equal(t, 0, code, stderr)
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 3)
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, h := range []string{"errors", "error_share", "drops", "retries"} {
		require.Contains(t, col, h, recs[0])
	}
	assert.Equal(t, "0", recs[1][col["errors"]])
	assert.Equal(t, "123", recs[2][col["errors"]])
	share, err := strconv.ParseFloat(recs[2][col["error_share"]], 64)
	require.NoError(t, err)
	assert.InDelta(t, 123/(123+served[6000]), share, 1e-4)

	table, stderr, code := run(t, "", replay...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, table, "ERRORS")
}

// recommend, find-critical and check report the failed pages of the trials
// they ran, and recommend's scan points each their own.
func TestSlowCampaignsReportFailedPages(t *testing.T) {
	dir := t.TempDir()
	j := filepath.Join(dir, "j.jsonl")
	base := []string{"--topology", "1/2/1/2", "--ramp-up", "10s", "--runtime", "20s", "--output", "json"}
	_, stderr, code := run(t, "", append(append([]string{"recommend"}, base...), "--journal", j)...)
	require.Equal(t, 0, code, stderr)
	broken := withErrors(t, j, func(users int) int64 { return int64(users / 100) })
	replay := append(base, "--runner", "replay", "--campaign", broken)

	out, stderr, code := run(t, "", append([]string{"recommend"}, replay...)...)
	require.Equal(t, 0, code, stderr)
	var rec struct {
		Experiments int
		Errors      *int64
		ErrorShare  *float64
		Evidence    struct {
			Scan []struct {
				Workload   int
				Errors     *int64
				ErrorShare *float64
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rec))
	require.NotNil(t, rec.Errors, out)
	require.NotNil(t, rec.ErrorShare)
	assert.EqualValues(t, totalFailed(t, broken), *rec.Errors, "every experiment once")
	assert.Positive(t, *rec.ErrorShare)
	assert.Less(t, *rec.ErrorShare, 1.0)
	require.NotEmpty(t, rec.Evidence.Scan)
	for _, p := range rec.Evidence.Scan {
		require.NotNil(t, p.Errors, "scan point at %d users", p.Workload)
		require.NotNil(t, p.ErrorShare)
		assert.EqualValues(t, p.Workload/100, *p.Errors, "scan point at %d users", p.Workload)
		assert.Positive(t, *p.ErrorShare)
	}

	out, stderr, code = run(t, "", append([]string{"find-critical"}, replay...)...)
	require.Equal(t, 0, code, stderr)
	var fc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &fc))
	require.Contains(t, fc, "errors", out)
	require.Contains(t, fc, "errorShare")
	assert.Positive(t, fc["errors"])
	assert.LessOrEqual(t, fc["errors"], float64(*rec.Errors), "find-critical's experiments are recommend's first")

	out, stderr, code = run(t, "", slices.Concat([]string{"find-critical"}, replay, []string{"--output", "csv"})...)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, fc["errors"], csvColumn(t, out, "errors"))

	// check sweeps with its own steps: a journal of its own.
	cj := filepath.Join(dir, "check.jsonl")
	_, stderr, code = run(t, "", append(append([]string{"check"}, base...), "--journal", cj)...)
	require.Equal(t, 0, code, stderr)
	cbroken := withErrors(t, cj, func(users int) int64 { return int64(users / 100) })
	want := totalFailed(t, cbroken)
	for _, args := range [][]string{
		append([]string{"check"}, append(base, "--runner", "replay", "--campaign", cbroken)...),
		{"check", "--from-journal", cbroken, "--output", "json"},
	} {
		out, stderr, code = run(t, "", args...)
		require.Equal(t, 0, code, stderr)
		var ck struct {
			Capacity map[string]any
		}
		require.NoError(t, json.Unmarshal([]byte(out), &ck))
		require.Contains(t, ck.Capacity, "errors", out)
		require.Contains(t, ck.Capacity, "errorShare")
		assert.EqualValues(t, want, ck.Capacity["errors"], args)
		out, stderr, code = run(t, "", slices.Concat(args, []string{"--output", "csv"})...)
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, want, csvColumn(t, out, "errors"))
	}
}

// validate's rows carry the failed pages of each allocation's trials, over
// its workloads.
func TestValidateReportsFailedPages(t *testing.T) {
	dir := t.TempDir()
	j := filepath.Join(dir, "j.jsonl")
	args := []string{"validate", "--topology", "1/2/1/2", "--recommended", "400-15-15", "--users", "5000,6000",
		"--grid-threads", "15", "--grid-connections", "15", "--ramp-up", "10s", "--runtime", "20s", "--screening", "0", "--output", "json"}
	_, stderr, code := run(t, "", append(args, "--journal", j)...)
	require.Equal(t, 0, code, stderr)
	broken := withErrors(t, j, func(users int) int64 { return int64(users / 1000) })
	out, stderr, code := run(t, "", append(args, "--runner", "replay", "--campaign", broken)...)
	require.Equal(t, 0, code, stderr)
	var doc struct {
		Recommended map[string]any
		Grid        []map[string]any
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.NotEmpty(t, doc.Grid)
	for _, g := range append(doc.Grid, doc.Recommended) {
		require.Contains(t, g, "errors", out)
		require.Contains(t, g, "errorShare")
		assert.EqualValues(t, 5+6, g["errors"], g["allocation"])
		assert.Positive(t, g["errorShare"])
	}

	out, stderr, code = run(t, "", slices.Concat(args[:len(args)-1], []string{"csv", "--runner", "replay", "--campaign", broken})...)
	require.Equal(t, 0, code, stderr)
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	require.NoError(t, err)
	require.Contains(t, recs[0], "errors")
	require.Contains(t, recs[0], "error_share")
}
