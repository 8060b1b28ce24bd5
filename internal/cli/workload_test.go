package cli_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/runner/live"
)

// accessLog is an Apache combined log with %D: clients each walking home
// -> story/N -> story/N/comments for rounds rounds from 08:00 + after, 2 s
// of think time.
func accessLog(clients, rounds int, after time.Duration) string {
	t0 := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC).Add(after)
	var b strings.Builder
	for c := range clients {
		at := t0
		for r := range rounds {
			for _, p := range []string{"/", fmt.Sprintf("/story/%d", 100+r*7+c), fmt.Sprintf("/story/%d/comments", 300+r+c)} {
				fmt.Fprintf(&b, "10.0.0.%d - - [%s] \"GET %s HTTP/1.1\" 200 900 \"-\" \"Mozilla/5.0\" 1000000\n",
					c+1, at.Format("02/Jan/2006:15:04:05 -0700"), p)
				at = at.Add(3 * time.Second) // 1 s to serve, 2 s of think time
			}
		}
	}
	return b.String()
}

func TestWorkloadFromLog(t *testing.T) {
	dir := t.TempDir()
	log := writeFile(t, dir, "access.log", accessLog(4, 10, 0)+"not a log line\n")
	out := filepath.Join(dir, "workload.yaml")
	stdout, stderr, code := run(t, "", "workload", "--from-log", log, "--write", out)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stdout)
	for _, want := range []string{"121 lines", "1 bad (" + log + ":121: want [time]", "120 pages", "sessions: 4, 30.0 pages each; start /",
		"mean 2.000 s", "/story/*/comments", "33.3%", "wrote " + out} {
		assert.Contains(t, stderr, want)
	}
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	w, err := live.ParseWorkload(b)
	require.NoError(t, err, "the load generator reads it:\n%s", b)
	assert.Equal(t, "from-log access.log", w.Name)
	assert.Equal(t, 2.0, float64(w.ThinkTime.Mean))
	assert.Len(t, w.Interactions, 3)

	// JSON, and rotated logs: one gzipped, one from stdin.
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	_, err = zw.Write([]byte(accessLog(2, 5, 0)))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	gz := writeFile(t, dir, "access.log.1.gz", z.String())
	stdout, stderr, code = run(t, accessLog(2, 5, 15*3*time.Second), "workload", "--from-log", gz, "--from-log", "-", "-w", out, "-o", "json")
	require.Equal(t, 0, code, stderr)
	var j struct {
		Lines   int64  `json:"lines"`
		Written string `json:"written"`
		Summary struct {
			Pages     int64 `json:"pages"`
			Sessions  int64 `json:"sessions"`
			Templates []struct {
				Name  string  `json:"name"`
				Share float64 `json:"share"`
			} `json:"templates"`
			ThinkTime struct {
				Mean float64 `json:"mean"`
			} `json:"thinkTime"`
		} `json:"summary"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &j), stdout)
	assert.EqualValues(t, 60, j.Lines)
	assert.EqualValues(t, 60, j.Summary.Pages)
	assert.EqualValues(t, 2, j.Summary.Sessions, "the same clients in both files: their sessions go on")
	assert.Equal(t, out, j.Written)
	assert.InDelta(t, 2.0, j.Summary.ThinkTime.Mean, 1e-9)
	require.Len(t, j.Summary.Templates, 3)
	assert.InDelta(t, 1/3.0, j.Summary.Templates[0].Share, 1e-9)

	// Without --write, the workload goes to stdout.
	stdout, _, code = run(t, accessLog(1, 3, 0), "workload", "--from-log", "-")
	require.Equal(t, 0, code)
	w, err = live.ParseWorkload([]byte(stdout))
	require.NoError(t, err)
	last := w.Interactions[len(w.Interactions)-1]
	assert.Equal(t, "EndOfSession", last.Next[len(last.Next)-1].To, "the session's exit: %v", last.Next)

	// A load test's log: the sessions' ends are cuts, left out.
	stdout, _, code = run(t, accessLog(1, 3, 0), "workload", "--from-log", "-", "--ends", "cut")
	require.Equal(t, 0, code)
	w, err = live.ParseWorkload([]byte(stdout))
	require.NoError(t, err)
	assert.Contains(t, stdout, "--ends cut")
	for _, it := range w.Interactions {
		for _, tr := range it.Next {
			assert.NotEqual(t, "EndOfSession", tr.To, "%s: %v", it.Name, it.Next)
		}
	}
}

func TestWorkloadUsageErrors(t *testing.T) {
	dir := t.TempDir()
	log := writeFile(t, dir, "access.log", accessLog(1, 2, 0))
	garbage := writeFile(t, dir, "garbage.log", "one\ntwo\n"+accessLog(1, 0, 0)+"three\n")
	static := writeFile(t, dir, "static.log",
		`h - - [27/Nov/2026:08:55:23 +0000] "GET /logo.png HTTP/1.1" 200 5 "-" "ua" 10`+"\n")
	runUsageCases(t, []usageCase{
		{"nojournal no log", []string{"workload"}, "want --from-log FILE"},
		{"nojournal format", []string{"workload", "--from-log", log, "--format", "iis"}, `--format: want a log format auto, combined (Apache's combined or common) or nginx, got "iis"`},
		{"nojournal unit", []string{"workload", "--from-log", log, "--duration-unit", "h"}, `--duration-unit: want a duration unit auto, us, ms or s, got "h"`},
		{"nojournal ends", []string{"workload", "--from-log", log, "--ends", "never"}, `--ends: want exit (users left) or cut (a load test's trials ended the sessions), got "never"`},
		{"nojournal idle gap", []string{"workload", "--from-log", log, "--idle-gap", "0s"}, "--idle-gap: want a duration > 0"},
		{"nojournal sample", []string{"workload", "--from-log", log, "--sample", "0"}, "--sample: want an integer in [1,10000], got 0"},
		{"nojournal json to stdout", []string{"workload", "--from-log", log, "-o", "json"}, "give the workload a file with --write FILE"},
		{"nojournal output", []string{"workload", "--from-log", log, "-o", "xml"}, `--output: want table or json, got "xml"`},
		{"nojournal template", []string{"workload", "--from-log", log, "--template", "/a{b}"}, `--template: template "/a{b}"`},
		{"nojournal exclude", []string{"workload", "--from-log", log, "--exclude", "("}, `--exclude "(": want a regular expression`},
		{"nojournal missing", []string{"workload", "--from-log", filepath.Join(dir, "nope.log")}, "nope.log"},
		{"nojournal mostly bad", []string{"workload", "--from-log", garbage}, "3 of 3 lines are not access log lines (" + garbage + ":1: want %l (ident) after the client; " + garbage + ":2: "},
		{"nojournal no pages", []string{"workload", "--from-log", static}, "no pages in the log"},
	})
}

// The help prints Apache's and nginx's configuration within 100 columns
// (issue 24's rule); accesslog's tests run the real servers with it.
func TestWorkloadHelpFits100Columns(t *testing.T) {
	stdout, _, code := run(t, "", "workload", "--help")
	require.Equal(t, 0, code)
	for i, line := range strings.Split(stdout, "\n") {
		assert.LessOrEqual(t, len([]rune(line)), 100, "line %d: %q", i+1, line)
	}
	assert.Contains(t, stdout, `%{msec_frac}t`)
	assert.Contains(t, stdout, `[$msec]`)
}
