package cli_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// init's bad input is refused with exit 2 before any query is sent.
func TestInitUsageErrors(t *testing.T) {
	existing := writeFile(t, t.TempDir(), "deployment.yaml", "name: mine\n")
	runUsageCases(t, []usageCase{
		{"nojournal no prometheus", []string{"init"}, "--prometheus: missing"},
		{"nojournal bad prometheus", []string{"init", "--prometheus", "127.0.0.1:9090"}, `--prometheus: want an http:// or https:// URL, got "127.0.0.1:9090"`},
		{"nojournal bad target", []string{"init", "--prometheus", "http://127.0.0.1:1", "--target", "ftp://x"}, `--target: want an http:// or https:// URL, got "ftp://x"`},
		{"nojournal bad output", []string{"init", "--prometheus", "http://127.0.0.1:1", "--output", "xml"}, `--output: want yaml or json, got "xml"`},
		{"nojournal existing file", []string{"init", "--prometheus", "http://127.0.0.1:1", "-o", existing}, "exists; pass --force"},
	})
}

// A Prometheus that does not answer is exit 1 naming it, and no file is written.
func TestInitUnreachablePrometheus(t *testing.T) {
	out := filepath.Join(t.TempDir(), "deployment.yaml")
	stdout, stderr, code := run(t, "", "init", "--prometheus", "http://127.0.0.1:1", "-o", out, "--timeout", "5s")
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "init: query up")
	assert.Empty(t, stdout)
	assert.NoFileExists(t, out)
}
