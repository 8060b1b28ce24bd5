package live

import (
	"encoding/json"
	"go/ast"
	goparser "go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/internal/schematest"
	"github.com/softalloc/softalloc/internal/topology"
)

// The deployment file's schema (docs/deployment.schema.json) is what
// editors check a file against: it must say what the parsers say.
var repoRoot = filepath.Join("..", "..", "..")

func loadSchemaJSON(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(schematest.Path(t))
	require.NoError(t, err)
	var s map[string]any
	require.NoError(t, json.Unmarshal(b, &s))
	return s
}

// parse is what softalloc says of a deployment file: the topology's parser,
// then the live runner's (passive: Prometheus and the queries, as advise
// needs them) when the runner section names the live runner.
func parse(data []byte, name string) error {
	df, err := topology.ParseDeployment(data, name)
	if err != nil {
		return err
	}
	if df.Runner != nil && df.Runner["name"] == "live" {
		_, err = parseConfig(df.Runner, name, true)
	}
	return err
}

// deploymentFiles are the repository's YAML and JSON files whose top level is
// a list of tiers with roles: deployment files, whatever their folder.
func deploymentFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != repoRoot || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !slices.Contains([]string{".yaml", ".yml", ".json"}, filepath.Ext(p)) {
			return nil
		}
		if info, err := d.Info(); err != nil || info.Size() > 1<<20 {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var doc struct {
			Tiers []map[string]any `yaml:"tiers"`
		}
		var top map[string]any
		if yaml.Unmarshal(b, &doc) != nil || len(doc.Tiers) == 0 || yaml.Unmarshal(b, &top) != nil {
			return nil
		}
		for k := range top {
			// The exec protocol's experiments have tiers with roles too.
			if k != "name" && k != "tiers" && k != "runner" {
				return nil
			}
		}
		for _, tier := range doc.Tiers {
			if _, ok := tier["role"]; !ok {
				return nil
			}
		}
		out = append(out, p)
		return nil
	})
	require.NoError(t, err)
	return out
}

// Every deployment file in the repository gets the schema's verdict that
// softalloc gives it: the testbed's, the examples', the test data's.
func TestRepositoryDeploymentFilesMatchTheSchema(t *testing.T) {
	s := schematest.Deployment(t)
	files := deploymentFiles(t)
	require.GreaterOrEqual(t, len(files), 4, "the testbed's and testdata's deployment files: %v", files)
	t.Logf("%d deployment files: %v", len(files), files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		perr, serr := parse(b, f), schematest.Validate(t, s, b)
		assert.Equal(t, perr == nil, serr == nil, "%s: softalloc says %v; the schema says %v", f, perr, serr)
		if !slices.Contains(strings.Split(filepath.ToSlash(f), "/"), "testdata") {
			// The testbed's and the examples' files are meant to be valid.
			assert.NoError(t, perr, f)
		}
	}
}

// A few mistakes users make: the schema refuses each, as softalloc does.
func TestSchemaRefusesWhatSoftallocRefuses(t *testing.T) {
	s := schematest.Deployment(t)
	const tiers = "name: x\ntiers:\n  - {name: web, role: web, replicas: 1, pools: {threads: 100}}\n  - {name: db, role: db, replicas: 1}\n"
	const live = tiers + "runner:\n  name: live\n  prometheus: http://127.0.0.1:9090\n"
	valid := live + "  rampUp: 3s\n  runtime: 0.5\n  tiers:\n    web:\n      presets: [apache]\n      servers: [{instance: \"h:9117\"}]\n      queries:\n        pools: {threads: {fullShare: x}}\n        resources: {disk: y}\n"
	require.NoError(t, parse([]byte(valid), "valid.yaml"))
	require.NoError(t, schematest.Validate(t, s, []byte(valid)), "the valid file")
	for _, extra := range []string{
		"  warmUp: 30s\n", "  warmUp: settle\n", "  warmUp: {settle: true, max: 3m, interval: 5s, within: 0.05, users: 10}\n",
		"  warmUp: {duration: 30s}\n", "  fingerprint: [git, rev-parse, HEAD]\n", "  fingerprint: {files: [app/], command: [git, describe]}\n",
	} {
		assert.NoError(t, parse([]byte(live+extra), "valid.yaml"), extra)
		assert.NoError(t, schematest.Validate(t, s, []byte(live+extra)), extra)
	}
	for name, doc := range map[string]string{
		"unknown top key":    tiers + "tier: []\n",
		"no tiers":           "name: x\n",
		"tier without role":  "name: x\ntiers:\n  - {name: web, replicas: 1}\n",
		"unknown role":       "name: x\ntiers:\n  - {name: web, role: cache, replicas: 1}\n",
		"no replicas":        "name: x\ntiers:\n  - {name: web, role: web, replicas: 0}\n",
		"unknown pool":       "name: x\ntiers:\n  - {name: web, role: web, replicas: 1, pools: {sockets: 3}}\n",
		"bad tier name":      "name: x\ntiers:\n  - {name: 'a b', role: web, replicas: 1}\n",
		"misspelt live key":  live + "  tragets: http://x\n",
		"misspelt query":     live + "  tiers: {web: {queries: {cpuu: x}}}\n",
		"misspelt pool key":  live + "  tiers: {web: {queries: {pools: {threads: {bussy: x}}}}}\n",
		"unknown preset":     live + "  tiers: {web: {presets: [nginx-plus]}}\n",
		"precision too high": live + "  precision: 0.9\n",
		"not a duration":     live + "  rampUp: soon\n",
		"no prometheus":      tiers + "runner:\n  name: live\n",
		"keepAlive not bool": live + "  keepAlive: maybe\n",
		"page key":           live + "  pages: {visits: x}\n",
		"unknown runner":     tiers + "runner:\n  name: k8s\n",
		"warmUp misspelt":    live + "  warmUp: {setle: true}\n",
		"warmUp not a time":  live + "  warmUp: soon\n",
		"fingerprint key":    live + "  fingerprint: {cmd: [git]}\n",
		"fingerprint string": live + "  fingerprint: git rev-parse HEAD\n",
		"unknown software":   "name: x\ntiers:\n  - {name: web, role: web, replicas: 1, software: iis}\n",
		"children beside threads": "name: x\ntiers:\n  - {name: php, role: app, replicas: 1, pools: {children: 4, threads: 2}}\n" +
			"  - {name: db, role: db, replicas: 1}\n",
		"php-fpm sized as threads": "name: x\ntiers:\n  - {name: php, role: app, replicas: 1, software: php-fpm, pools: {threads: 4}}\n" +
			"  - {name: db, role: db, replicas: 1}\n",
	} {
		assert.Error(t, schematest.Validate(t, s, []byte(doc)), "%s: the schema takes it", name)
		// "unknown runner" is refused when the runner is built.
		if name != "unknown runner" {
			assert.Error(t, parse([]byte(doc), name), "%s: softalloc takes it", name)
		}
	}
}

// The schema cannot drift from the live runner's parser: every key of
// Config (and, below it, of TierConfig, Queries, PoolQueries and
// PageQueries) is in the schema where the parser reads it, the schema has no
// key the parser refuses, and its preset names are the presets.
func TestSchemaHasTheLiveRunnersKeys(t *testing.T) {
	s := loadSchemaJSON(t)
	defs := s["$defs"].(map[string]any)
	runner := defs["runner"].(map[string]any)
	props := runner["properties"].(map[string]any)
	assert.Equal(t, false, runner["additionalProperties"], "runner: a misspelt key is refused")

	// The keys every runner shares (runner.sectionKeys) pass the live parser
	// untouched: they are in the schema too (TestSchemaHasTheSharedRunnerKeys
	// checks them against the runner package).
	var shared []string
	for k := range cliKeys {
		shared = append(shared, k)
		assert.Contains(t, props, k, "runner.%s: a key the CLI reads, not in the schema", k)
	}
	compareStruct(t, defs, "runner", runner, reflect.TypeFor[Config](), shared)

	preset := defs["preset"].(map[string]any)
	var enum []string
	for _, v := range preset["enum"].([]any) {
		enum = append(enum, v.(string))
	}
	sort.Strings(enum)
	assert.Equal(t, PresetNames(), enum, "$defs.preset.enum: the presets (live.Presets)")
}

// compareStruct checks that the schema object s has exactly the yaml keys of
// typ (beside extra, keys another parser reads), and recurses into the
// keys whose values are structs, maps of structs or lists of maps.
func compareStruct(t *testing.T, defs map[string]any, path string, s map[string]any, typ reflect.Type, extra []string) {
	t.Helper()
	s = resolveRef(t, defs, s)
	props, _ := s["properties"].(map[string]any)
	require.NotNil(t, props, "%s: the schema gives no properties", path)
	assert.Equal(t, false, s["additionalProperties"], "%s: a misspelt key is refused", path)
	keys := map[string]bool{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if !f.IsExported() || tag == "-" {
			continue
		}
		require.NotEmpty(t, tag, "%s.%s: a field without a yaml tag", typ.Name(), f.Name)
		keys[tag] = true
		sub, ok := props[tag].(map[string]any)
		if !assert.True(t, ok, "%s.%s: the parser reads it (%s.%s); the schema lacks it", path, tag, typ.Name(), f.Name) {
			continue
		}
		sub = resolveRef(t, defs, sub)
		ft := f.Type
		if base := derefType(ft); base.Kind() == reflect.Struct && base.PkgPath() == typ.PkgPath() &&
			reflect.PointerTo(base).Implements(reflect.TypeFor[yaml.Unmarshaler]()) {
			// A type that reads itself: its keys are the cases of its
			// UnmarshalYAML, and the schema's mapping form has them.
			compareKeys(t, path+"."+tag, objectForm(t, defs, sub), unmarshalKeys(t, base.Name()))
			continue
		}
		switch {
		case ft.Kind() == reflect.Struct && ft.NumField() > 0 && ft.PkgPath() == typ.PkgPath():
			compareStruct(t, defs, path+"."+tag, sub, ft, nil)
		case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct:
			elem, ok := sub["additionalProperties"].(map[string]any)
			if assert.True(t, ok, "%s.%s: a mapping by name; the schema gives no additionalProperties", path, tag) {
				compareStruct(t, defs, path+"."+tag+".*", elem, ft.Elem(), nil)
			}
		}
	}
	for k := range props {
		assert.True(t, keys[k] || slices.Contains(extra, k), "%s.%s: in the schema, refused by the parser (no such field in %s)", path, k, typ.Name())
	}
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// objectForm is the mapping among a schema's forms (oneOf, anyOf).
func objectForm(t *testing.T, defs map[string]any, s map[string]any) map[string]any {
	t.Helper()
	if _, ok := s["properties"]; ok {
		return s
	}
	for _, key := range []string{"oneOf", "anyOf"} {
		alts, _ := s[key].([]any)
		for _, a := range alts {
			if a := resolveRef(t, defs, a.(map[string]any)); a["properties"] != nil {
				return a
			}
		}
	}
	return map[string]any{}
}

func compareKeys(t *testing.T, path string, s map[string]any, keys []string) {
	t.Helper()
	props, _ := s["properties"].(map[string]any)
	var have []string
	for k := range props {
		have = append(have, k)
	}
	sort.Strings(have)
	assert.Equal(t, keys, have, "%s: the keys its UnmarshalYAML reads are the schema's", path)
	if len(props) > 0 {
		assert.Equal(t, false, s["additionalProperties"], "%s: a misspelt key is refused", path)
	}
}

// unmarshalKeys are the string cases of the switches in typ's
// UnmarshalYAML, read from this package's source: the keys it takes.
func unmarshalKeys(t *testing.T, typ string) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var keys []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := goparser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Name.Name != "UnmarshalYAML" || fn.Recv == nil || len(fn.Recv.List) != 1 {
				continue
			}
			recv := fn.Recv.List[0].Type
			if star, ok := recv.(*ast.StarExpr); ok {
				recv = star.X
			}
			if id, ok := recv.(*ast.Ident); !ok || id.Name != typ {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if cc, ok := n.(*ast.CaseClause); ok {
					for _, e := range cc.List {
						if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
							v, err := strconv.Unquote(lit.Value)
							require.NoError(t, err)
							keys = append(keys, v)
						}
					}
				}
				return true
			})
		}
	}
	require.NotEmpty(t, keys, "%s.UnmarshalYAML: no string cases found; read its keys some other way", typ)
	sort.Strings(keys)
	return slices.Compact(keys)
}

func resolveRef(t *testing.T, defs map[string]any, s map[string]any) map[string]any {
	t.Helper()
	for {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		name, found := strings.CutPrefix(ref, "#/$defs/")
		require.True(t, found, "%s: want a reference into $defs", ref)
		s = defs[name].(map[string]any)
	}
}

// The deployment files of docs/deployment.md are valid, to softalloc and to
// the schema: a runner section alone gets a tier in front of it.
func TestDeploymentDocExamplesAreValid(t *testing.T) {
	s := schematest.Deployment(t)
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "deployment.md"))
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	n := 0
	for _, b := range blocks {
		text := b[1]
		switch {
		case strings.HasPrefix(text, "name:"):
		case strings.HasPrefix(text, "runner:"):
			text = "name: x\ntiers:\n  - {name: web, role: web, replicas: 1}\n" + text
		default:
			continue // a fragment: the editor's line, a preset's queries
		}
		n++
		assert.NoError(t, parse([]byte(text), "docs/deployment.md"), text)
		assert.NoError(t, schematest.Validate(t, s, []byte(text)), text)
	}
	assert.GreaterOrEqual(t, n, 4, "the tiers' examples and the runner sections' are checked")
}
