package classes

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/internal/fuzzcheck"
)

// FuzzParse feeds arbitrary workload files to parse. A workload that parses
// passes Validate and reads back the same once written as YAML (defaults
// filled in); a bad one is refused on one line.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	files = append(files, "seed000.yaml")
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	base := "server: {cores: 1, pools: [{name: p, size: 1}]}\nclasses: [{name: a, demand: 1ms, load: {users: 1}}]\nrun: {duration: 1s}\n"
	for _, s := range []string{base, "", "{}", "[1]", "server: 5", "{server: {cores: 1, cors: 2}}",
		base + "extra: 1", base + "---\nserver: 1", replace(base, "1ms", "nan"), replace(base, "1ms", ".inf"),
		replace(base, "1ms", "1e400s"), replace(base, "name: a", `name: "a\nb"`), replace(base, "name: a", `"a\nb": 1`),
		replace(base, "cores: 1,", "cores: 1, memory: {heap: 1TX},"), replace(base, "cores: 1,", "cores: 1, memory: {heap: NaNGB},"),
		replace(base, "users: 1", "arrivals: {rate: 1, on: nan}"), replace(base, "cores: 1,", "cores: 1, quantum: nan,"),
		replace(base, "1ms,", "1ms, objective: {bestEffort: true, adequacy: .nan},"),
		"a: &a [*a, *a]\nserver: *a", "server: {cores: 1, pools: [{name: p, size: 99999999999999999999}]}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := parse(data, "fuzz.yaml")
		if err != nil {
			fuzzcheck.RequireOneLine(t, err)
			return
		}
		require.NoError(t, w.Validate())
		out, err := yaml.Marshal(w)
		require.NoError(t, err)
		// A NaN passes range checks written as comparisons: none may get in.
		require.False(t, fuzzcheck.HasNaN(w), "a NaN in:\n%s", out)
		w2, err := parse(out, "fuzz.yaml")
		require.NoError(t, err, "the parsed workload, written back:\n%s", out)
		// Compared as YAML: a nil list and an empty one are the same workload.
		out2, err := yaml.Marshal(w2)
		require.NoError(t, err)
		require.Equal(t, string(out), string(out2), "round trip of:\n%s", data)
	})
}
