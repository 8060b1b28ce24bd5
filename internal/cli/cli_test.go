package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/cli"
)

var update = flag.Bool("update", false, "rewrite golden files")

// run executes a command line in-process.
func run(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = cli.Run(context.Background(), args, cli.Streams{In: strings.NewReader(stdin), Out: &out, Err: &errb})
	return out.String(), errb.String(), code
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("..", "..", "testdata", "golden", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./internal/cli -update to create it")
	assert.Equal(t, string(want), got)
}

func table1(name string) string { return filepath.Join("..", "..", "testdata", "table1", name) }

// `softalloc size` reproduces both halves of Table I from outside.
func TestSizeReproducesTableI(t *testing.T) {
	want := map[string]map[string]int{
		"1212.yaml": {"web": 101, "app": 13, "cluster": 26, "db": 13},
		"1414.yaml": {"web": 125, "app": 8, "cluster": 22, "db": 6},
		"1414.json": {"web": 125, "app": 8, "cluster": 22, "db": 6},
	}
	for file, sizes := range want {
		t.Run(file, func(t *testing.T) {
			stdout, stderr, code := run(t, "", "size", "-m", table1(file), "--output", "json")
			require.Equal(t, 0, code, stderr)
			var doc struct {
				Topology string
				Tiers    []struct {
					Name                 string
					ThreadsPerServer     int
					ConnectionsPerServer *int
				}
			}
			require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
			require.Len(t, doc.Tiers, 4)
			for _, tr := range doc.Tiers {
				assert.Equal(t, sizes[tr.Name], tr.ThreadsPerServer, tr.Name)
				if tr.Name == "app" {
					require.NotNil(t, tr.ConnectionsPerServer)
					assert.Equal(t, sizes["app"], *tr.ConnectionsPerServer)
				} else {
					assert.Nil(t, tr.ConnectionsPerServer)
				}
			}
			if file != "1414.json" {
				golden(t, "size-"+strings.TrimSuffix(file, ".yaml")+".json", stdout)
				table, _, code := run(t, "", "size", "-m", table1(file))
				require.Equal(t, 0, code)
				golden(t, "size-"+strings.TrimSuffix(file, ".yaml")+".txt", table)
			}
		})
	}
}

func TestSizeReadsStdin(t *testing.T) {
	data, err := os.ReadFile(table1("1212.yaml"))
	require.NoError(t, err)
	stdout, stderr, code := run(t, string(data), "size", "-m", "-", "-o", "json")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, `"threadsPerServer": 101`)
}

func TestSizeErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no file", []string{"size"}, 2, "size: want --measurements FILE"},
		{"missing file", []string{"size", "-m", filepath.Join(dir, "nope.yaml")}, 2, "no such file"},
		{"bad topology", []string{"size", "-m", write("a.yaml", "topology: 1/x/1/4\ncritical: app\n")}, 2, `replica count "x" is not a positive integer`},
		{"unknown key", []string{"size", "-m", write("b.yaml", "topology: 1/2/1/2\ncritical: app\nthroughput: 3\n")}, 2,
			`unknown field "throughput" in the top level; want one of: topology, deployment, critical, minJobs, tiers`},
		{"no critical", []string{"size", "-m", write("c.yaml", "topology: 1/2/1/2\n")}, 2, "critical: want the critical tier's name"},
		{"unknown tier", []string{"size", "-m", write("d.yaml", "topology: 1/2/1/2\ncritical: app\ntiers: [{name: cache, throughput: 1, responseTime: 1}]\n")}, 2, `measured tier "cache" is not in the deployment`},
		{"empty", []string{"size", "-m", write("e.yaml", "")}, 2, "the file is empty"},
		{"bad output", []string{"size", "-m", table1("1212.yaml"), "-o", "xml"}, 2, `--output "xml": want table, json or csv`},
		{"unknown flag", []string{"size", "--frobnicate"}, 2, "unknown flag"},
		{"unknown command", []string{"sizes"}, 2, "unknown command"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := run(t, "", tc.args...)
			assert.Empty(t, stdout)
			assert.Equal(t, tc.code, code)
			assert.Contains(t, stderr, tc.msg)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line on stderr: %q", stderr)
			assert.True(t, strings.HasPrefix(stderr, "softalloc: "), stderr)
		})
	}
}

func TestBadTopologyIsAUsageError(t *testing.T) {
	_, stderr, code := run(t, "", "find-critical", "--topology", "1/x/1/4")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `topology "1/x/1/4": replica count "x" is not a positive integer`)

	_, stderr, code = run(t, "", "recommend")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "want --topology")

	_, stderr, code = run(t, "", "recommend", "--topology", "1/2/1/2", "--alloc", "400-0-6")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `allocation "400-0-6"`)

	// A runner that cannot be built is the configuration's fault, as in every command.
	_, stderr, code = run(t, "", "recommend", "--topology", "1/2/1/2", "--runner", "nosuch")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `runner "nosuch": want one of`)
}

// TestErrorsEscapeWhatTheyQuote: an error quoting input raw (here the
// system's, with a path) cannot clear the screen or forge a line.
func TestErrorsEscapeWhatTheyQuote(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "no\x1b[2Jsuch\rsoftalloc: recommended 400-150-60")
	_, stderr, code := run(t, "", "recommend", "--topology", "1/2/1/2", "--model", filepath.Join(dir, "model.yaml"))
	assert.NotZero(t, code)
	assert.NotContains(t, stderr, "\x1b")
	assert.NotContains(t, stderr, "\r")
	assert.Contains(t, stderr, `no\x1b[2Jsuch\rsoftalloc`)
	assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
}

func TestVersion(t *testing.T) {
	stdout, stderr, code := run(t, "", "--version")
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `^softalloc \S+.*, go1\.[0-9.]+ [a-z0-9]+/[a-z0-9]+\n$`, stdout)

	stdout, _, code = run(t, "", "size", "-m", "../../testdata/table1/1212.yaml", "-o", "json")
	require.Equal(t, 0, code)
	var doc struct{ Version string }
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	assert.NotEmpty(t, doc.Version, "JSON results say which softalloc wrote them")
}

// Issue 24: completion of flag values, and man pages from the commands' help.
func TestCompletionAndManPages(t *testing.T) {
	stdout, _, code := run(t, "", "__complete", "recommend", "--output", "")
	require.Equal(t, 0, code)
	assert.Equal(t, "table\njson\ncsv\n:4\n", stdout)
	// Every snippet format, the PHP stack's and the pooler's included.
	stdout, _, _ = run(t, "", "__complete", "recommend", "--format", "")
	assert.Contains(t, stdout, "apache\ntomcat\nhikari\nmysql\nphp-fpm\npgbouncer\npostgresql\nall\n")
	stdout, _, _ = run(t, "", "__complete", "simulate", "--runner", "")
	assert.Contains(t, stdout, "live\nreplay\nsim\n")
	stdout, _, _ = run(t, "", "__complete", "recommend", "--deployment", "")
	assert.Contains(t, stdout, "yaml\nyml\njson\n:8", "files of a deployment's extensions")
	stdout, _, code = run(t, "", "completion", "bash")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "bash completion")

	dir := t.TempDir()
	require.NoError(t, cli.WriteManPages(dir))
	for _, c := range []string{"softalloc", "softalloc-recommend", "softalloc-check", "softalloc-size"} {
		b, err := os.ReadFile(filepath.Join(dir, c+".1"))
		require.NoError(t, err, c)
		assert.Contains(t, string(b), ".TH \"SOFTALLOC\" \"1\"", c)
	}
}
