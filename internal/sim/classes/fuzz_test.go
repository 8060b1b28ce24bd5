package classes

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// FuzzParse feeds arbitrary workload files to Parse. A workload that parses
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
		w, err := Parse(data, "fuzz.yaml")
		if err != nil {
			requireOneLine(t, err)
			return
		}
		require.NoError(t, w.Validate())
		out, err := yaml.Marshal(w)
		require.NoError(t, err)
		// A NaN passes range checks written as comparisons: none may get in.
		require.False(t, hasNaN(reflect.ValueOf(w)), "a NaN in:\n%s", out)
		w2, err := Parse(out, "fuzz.yaml")
		require.NoError(t, err, "the parsed workload, written back:\n%s", out)
		// Compared as YAML: a nil list and an empty one are the same workload.
		out2, err := yaml.Marshal(w2)
		require.NoError(t, err)
		require.Equal(t, string(out), string(out2), "round trip of:\n%s", data)
	})
}

// requireOneLine: an error is shown and logged as one line of its own.
func requireOneLine(t *testing.T, err error) {
	t.Helper()
	msg := err.Error()
	require.NotEmpty(t, msg)
	require.NotContains(t, msg, "\n", "a multi-line error")
	require.NotContains(t, msg, "\r", "an error with a carriage return")
}

// hasNaN reports whether any float in v, followed through pointers, lists
// and maps, is NaN.
func hasNaN(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		return math.IsNaN(v.Float())
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && hasNaN(v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if hasNaN(v.Field(i)) {
				return true
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			if hasNaN(v.Index(i)) {
				return true
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if hasNaN(it.Value()) {
				return true
			}
		}
	}
	return false
}
