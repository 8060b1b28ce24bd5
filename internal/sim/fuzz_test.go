package sim

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/internal/fuzzcheck"
	"github.com/softalloc/softalloc/internal/sim/engine"
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
			fuzzcheck.RequireOneLine(t, err)
			return
		}
		require.NoError(t, m.Validate())
		require.False(t, fuzzcheck.HasNaN(*m), "a NaN in %+v", *m)
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
			fuzzcheck.RequireOneLine(t, err)
			return
		}
		require.Len(t, mx.states, len(mx.Interactions))
		require.False(t, fuzzcheck.HasNaN(*mx), "a NaN in %+v", *mx)
		require.False(t, math.IsInf(float64(mx.ThinkTime.Mean), 0), "an infinite think time")
		var sum float64
		for i, s := range mx.Shares() {
			require.True(t, s >= 0 && s <= 1, "share %d: %g", i, s)
			require.False(t, math.IsInf(mx.QueryMean(i), 0), "interaction %d: query mean", i)
			sum += s
		}
		require.InDelta(t, 1, sum, 1e-9)
		r := engine.NewStream(1, purposeMix, 0)
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
