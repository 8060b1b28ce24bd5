package topology

import (
	"encoding/json"
	"go/ast"
	goparser "go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/schematest"
)

// The deployment file's schema (docs/deployment.schema.json) has the keys
// the parser reads, at the top and in a tier, and no other; its roles, pool
// names and limits are the parser's. It fails when a key is added to one
// side only (the live runner's section is checked in internal/runner/live).
func TestSchemaHasTheDeploymentKeys(t *testing.T) {
	b, err := os.ReadFile(schematest.Path(t))
	require.NoError(t, err)
	var s struct {
		Properties           map[string]any
		AdditionalProperties bool
		Defs                 map[string]struct {
			Properties           map[string]map[string]any
			AdditionalProperties bool
		} `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(b, &s))

	yamlKeys := func(typ reflect.Type) []string {
		var keys []string
		for i := range typ.NumField() {
			if tag := strings.Split(typ.Field(i).Tag.Get("yaml"), ",")[0]; tag != "" && tag != "-" {
				keys = append(keys, tag)
			}
		}
		sort.Strings(keys)
		return keys
	}
	sortedKeys := func(m map[string]map[string]any) []string {
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return keys
	}
	var top []string
	for k := range s.Properties {
		top = append(top, k)
	}
	sort.Strings(top)
	assert.Equal(t, yamlKeys(reflect.TypeFor[fileDoc]()), top, "the schema's top-level keys are fileDoc's")
	assert.False(t, s.AdditionalProperties, "an unknown top-level key is refused")
	tier := s.Defs["tier"]
	assert.Equal(t, yamlKeys(reflect.TypeFor[fileTier]()), sortedKeys(tier.Properties), "$defs.tier's keys are fileTier's")
	assert.False(t, tier.AdditionalProperties)

	// The pools are no struct's fields: the parser compares a key with
	// algorithms' Pool* constants. Each such constant is a pool the parser
	// takes and the schema has, and the schema has no other.
	pools := sortedKeys(s.Defs["pools"].Properties)
	consts := poolConstants(t)
	require.NotEmpty(t, consts)
	assert.Equal(t, consts, pools, "the schema's pools are algorithms' Pool* constants")
	for _, p := range pools {
		_, err := ParseDeployment([]byte("name: x\ntiers:\n  - {name: a, role: app, replicas: 1, pools: {"+p+": 2}}\n  - {name: b, role: db, replicas: 1}\n"), "pools.yaml")
		assert.NoError(t, err, "pool %s: in the schema, refused by the parser", p)
	}

	var software []string
	for _, v := range tier.Properties["software"]["enum"].([]any) {
		software = append(software, v.(string))
	}
	assert.Equal(t, algorithms.KnownSoftware, software, "tiers[].software: algorithms.KnownSoftware")

	var roles []string
	for _, r := range tier.Properties["role"]["enum"].([]any) {
		roles = append(roles, r.(string))
	}
	assert.Equal(t, strings.Split(strings.ReplaceAll(roles0, " or ", ", "), ", "), roles, "the roles")
	for key, limit := range map[string]int{"replicas": MaxReplicas, "cores": MaxCores} {
		assert.EqualValues(t, limit, tier.Properties[key]["maximum"], "tiers[].%s's maximum", key)
	}
	for _, p := range pools {
		assert.EqualValues(t, MaxPoolSize, s.Defs["pools"].Properties[p]["maximum"], "pools.%s's maximum", p)
	}
}

var roles0 = roles

// poolConstants are the values of algorithms' exported string constants
// named Pool*, read from its source.
func poolConstants(t *testing.T) []string {
	t.Helper()
	dir := filepath.Join("..", "..", "algorithms")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	fset := token.NewFileSet()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := goparser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Pool") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, err := strconv.Unquote(lit.Value)
						require.NoError(t, err)
						out = append(out, v)
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out
}
