package sim

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// fuzzSeeds are the package's model or mix files (and the embedded ones),
// then a few broken documents.
func fuzzSeeds(f *testing.F, embedded []byte, names ...string) {
	f.Add(embedded)
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{"", "{}", "[1]", "name: 5", "a: &a [*a, *a]\nname: *a", "x: 1\n---\ny: 2",
		`"a\nb": 1`, "warmUp: nan", "warmUp: inf", "warmUp: 1e400s", "warmUp: [1]",
		"interactions: [{name: \"a\\nb\", next: {\"c\\nd\": 1}}]\nstart: \"a\\nb\"",
		"interactions: [{name: a, next: {a: nan}}]\nstart: a", "interactions: [{name: a}]\nstart: a\nthinkTime: {mean: inf}"} {
		f.Add([]byte(s))
	}
}

// FuzzParseModel feeds arbitrary model files to the parser behind LoadModel,
// with every mix name answered by the embedded mix. A model that parses
// passes Validate, holds no NaN, and reads back the same once written as
// YAML; a bad one is refused on one line.
func FuzzParseModel(f *testing.F) {
	fuzzSeeds(f, defaultModelYAML, "small.yaml", "no-mix.yaml", "bad-duration.yaml", "bad-enum.yaml",
		"bad-mix.yaml", "bad-value.yaml", "unknown-field.yaml")
	mix := DefaultModel().Mix
	loadMix := func(name string) (*Mix, error) {
		if strings.Contains(name, "missing") {
			return nil, errors.New("no such mix") // the error path, as LoadMix takes it
		}
		return mix, nil
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseModel(data, "fuzz.yaml", loadMix)
		if err != nil {
			requireOneLine(t, err)
			return
		}
		require.NoError(t, m.Validate())
		require.False(t, hasNaN(reflect.ValueOf(*m)), "a NaN in %+v", *m)
		out, err := yaml.Marshal(m)
		require.NoError(t, err)
		m2, err := parseModel(out, "fuzz.yaml", loadMix)
		require.NoError(t, err, "the parsed model, written back:\n%s", out)
		out2, err := yaml.Marshal(m2)
		require.NoError(t, err)
		require.Equal(t, string(out), string(out2), "round trip of:\n%s", data)
	})
}

// FuzzParseMix feeds arbitrary mix files to the parser behind LoadMix. A mix
// that parses has a stationary share per interaction summing to 1, finite
// query means, and users who walk it without leaving it.
func FuzzParseMix(f *testing.F) {
	fuzzSeeds(f, defaultMixYAML, "small-mix.yaml", "bad-mix-mix.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		mx, err := parseMix(data, "fuzz.yaml")
		if err != nil {
			requireOneLine(t, err)
			return
		}
		require.Len(t, mx.states, len(mx.Interactions))
		require.False(t, hasNaN(reflect.ValueOf(*mx)), "a NaN in %+v", *mx)
		require.False(t, math.IsInf(float64(mx.ThinkTime.Mean), 0), "an infinite think time")
		var sum float64
		for i, s := range mx.Shares() {
			require.True(t, s >= 0 && s <= 1, "share %d: %g", i, s)
			require.False(t, math.IsInf(mx.QueryMean(i), 0), "interaction %d: query mean", i)
			sum += s
		}
		require.InDelta(t, 1, sum, 1e-9)
		r := newStream(1, purposeMix, 0)
		var n nav
		mx.begin(&n)
		for i := 0; i < 200; i++ {
			mx.step(&n, &r)
			require.Less(t, int(n.state), len(mx.states))
			require.GreaterOrEqual(t, mx.queries(n.state, &r), 0)
			require.GreaterOrEqual(t, mx.think(&r), 0.0)
		}
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
