package sim

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/internal/fuzzcheck"
)

// FuzzParseModel feeds arbitrary model files to the parser behind LoadModel,
// with every mix name answered by the embedded mix. A model that parses
// passes validate, holds no NaN, and reads back the same once written as
// YAML; a bad one is refused on one line.
func FuzzParseModel(f *testing.F) {
	f.Add(defaultModelYAML)
	for _, n := range []string{"small.yaml", "no-mix.yaml", "bad-duration.yaml", "bad-enum.yaml",
		"bad-mix.yaml", "bad-value.yaml", "unknown-field.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{"", "{}", "[1]", "name: 5", "a: &a [*a, *a]\nname: *a", "x: 1\n---\ny: 2",
		`"a\nb": 1`, "warmUp: nan", "warmUp: inf", "warmUp: 1e400s", "admission: {retryFactor: .inf}", "warmUp: [1]", "warmUp: 1m30s"} {
		f.Add([]byte(s))
	}
	mix := DefaultModel().Mix
	loadMix := func(name string) (*Mix, error) {
		if strings.Contains(name, "missing") {
			return nil, errors.New("no such mix") // the error path, as readMix takes it
		}
		return mix, nil
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseModel(data, "fuzz.yaml", loadMix)
		if err != nil {
			fuzzcheck.RequireOneLine(t, err)
			return
		}
		require.NoError(t, m.validate())
		require.False(t, fuzzcheck.HasNaN(*m), "a NaN in %+v", *m)
		// The sim runner keys its journal on the model's JSON: no infinity.
		_, err = json.Marshal(m)
		require.NoError(t, err)
		out, err := yaml.Marshal(m)
		require.NoError(t, err)
		m2, err := parseModel(out, "fuzz.yaml", loadMix)
		require.NoError(t, err, "the parsed model, written back:\n%s", out)
		out2, err := yaml.Marshal(m2)
		require.NoError(t, err)
		require.Equal(t, string(out), string(out2), "round trip of:\n%s", data)
	})
}
