package topology

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

const samples = "../../testdata/deployments"

func TestLoadDeploymentSamples(t *testing.T) {
	t.Run("rubbos-1414 is 1/4/1/4 with 400-150-60", func(t *testing.T) {
		df, err := LoadDeployment(filepath.Join(samples, "rubbos-1414.yaml"))
		require.NoError(t, err)
		d, err := ParseTopology("1/4/1/4")
		require.NoError(t, err)
		a, err := ParseAllocation("400-150-60")
		require.NoError(t, err)
		assert.Equal(t, "rubbos-1414", df.Name)
		assert.Equal(t, d, df.Deployment)
		assert.Equal(t, a, df.Allocation)
		assert.Nil(t, df.Runner)
		assert.NoError(t, ValidateAllocation(df.Deployment, df.Allocation))
	})
	t.Run("shop is a named three-tier chain", func(t *testing.T) {
		df, err := LoadDeployment(filepath.Join(samples, "shop.yaml"))
		require.NoError(t, err)
		want := algorithms.Deployment{Topology: "shop", Tiers: []algorithms.Tier{
			{Name: "nginx", Role: algorithms.RoleWeb, Replicas: 1, Cores: 2, Pools: []string{"threads"}},
			{Name: "api", Role: algorithms.RoleApp, Replicas: 2, Cores: 2, Pools: []string{"threads", "connections"}},
			{Name: "postgres", Role: algorithms.RoleDB, Replicas: 1, Cores: 4},
		}}
		assert.Equal(t, want, df.Deployment)
		assert.Equal(t, algorithms.Allocation{"nginx": {Threads: 200}, "api": {Threads: 64, Connections: 16}}, df.Allocation)
		assert.Equal(t, map[string]any{"name": "exec", "command": []any{"./trial.sh", "--fast"}, "timeout": "30m"}, df.Runner)
		assert.NoError(t, ValidateAllocation(df.Deployment, df.Allocation))
	})
}

func TestParseDeployment(t *testing.T) {
	standard := func(topology, alloc string) DeploymentFile {
		d, err := ParseTopology(topology)
		require.NoError(t, err)
		a, err := ParseAllocation(alloc)
		require.NoError(t, err)
		return DeploymentFile{Deployment: d, Allocation: a}
	}
	tests := []struct {
		name, in string
		want     DeploymentFile
	}{
		{"JSON with tabs", "{\n\t\"tiers\": [\n\t\t{\"name\": \"web\", \"role\": \"web\", \"replicas\": 1, \"pools\": {\"threads\": 400}},\n" +
			"\t\t{\"name\": \"app\", \"role\": \"app\", \"replicas\": 2, \"pools\": {\"connections\": 60, \"threads\": 150}},\n" +
			"\t\t{\"name\": \"db\", \"role\": \"db\", \"replicas\": 1, \"cores\": 1}\n\t]\n}\n",
			standard("1/2/1", "400-150-60")},
		{"merge keys and null cores", `
tiers:
  - {name: web, role: web, replicas: 1, cores: ~, pools: {threads: 10}}
  - {name: app, <<: &server {role: app, replicas: 3}, pools: {threads: 5, connections: 2}}
  - {name: db, role: db, replicas: 3}
`, standard("1/3/3", "10-5-2")},
		{"trailing document markers", "---\n" + rubbos121 + "---\n", standard("1/2/1", "400-150-60")},
		{"one tier, no pools", "name: solo\ntiers: [{name: api, role: app, replicas: 0x10}]\n",
			DeploymentFile{Name: "solo", Allocation: algorithms.Allocation{}, Deployment: algorithms.Deployment{
				Topology: "solo", Tiers: []algorithms.Tier{{Name: "api", Role: algorithms.RoleApp, Replicas: 16, Cores: 1}},
			}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDeployment([]byte(tt.in), "x.yaml")
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

const rubbos121 = `tiers:
  - {name: web, role: web, replicas: 1, pools: {threads: 400}}
  - {name: app, role: app, replicas: 2, pools: {threads: 150, connections: 60}}
  - {name: db, role: db, replicas: 1}
`

func TestParseDeploymentErrors(t *testing.T) {
	const web = "{name: web, role: web, replicas: 1}"
	tests := []struct{ name, in, want string }{
		{"empty", "# nothing\n", `empty; want a mapping with tiers (and optionally name and runner)`},
		{"not a mapping", "[1, 2]", `want a mapping with tiers (and optionally name and runner), got a list`},
		{"syntax", "tiers:\n\t- x\n", `cannot parse: yaml: line 2: found character that cannot start any token`},
		{"two documents", "name: a\ntiers: [" + web + "]\n---\nname: b\n", `want one YAML document, found more`},
		{"bad second document", rubbos121 + "---\n\t- x\n", `cannot parse: yaml: line 6: found character that cannot start any token`},
		{"misspelt key", "nmae: x\ntiers: [" + web + "]\n", `unknown field "nmae"; want name, tiers or runner`},
		{"misspelt tier key", "tiers:\n  - " + web + "\n  - {name: app, role: app, replica: 1}\n",
			`tiers[1] ("app"): unknown field "replica"; want name, role, replicas, surge, cores, software, pools or connectionLimit`},
		{"duplicate tier key", "tiers:\n  - name: web\n    role: web\n    replicas: 1\n    name: foo\n",
			`tiers[0] ("web"): line 5: mapping key "name" already defined at line 2`},
		{"tiers not a list", "tiers: 5\n", `tiers: want a list of tiers, got 5`},
		{"tier not a mapping", "tiers: [web]\n", `tiers[0]: want a mapping of name, role, replicas, surge, cores, software, pools or connectionLimit, got "web"`},
		{"no tiers", "name: x\ntiers: []\n", `tiers: want at least one tier`},
		{"zero replicas", "tiers: [" + web + ", {name: app, role: app, replicas: 0}]\n",
			`tiers[1] ("app"): replicas: want a positive integer, got 0`},
		{"text replicas", "tiers: [{name: web, role: web, replicas: x}]\n", `tiers[0] ("web"): replicas: want a positive integer or a range min..max (e.g. 2..12), got "x"`},
		{"fractional replicas", "tiers: [{name: web, role: web, replicas: 1.5}]\n", `tiers[0] ("web"): replicas: want a positive integer, got 1.5`},
		{"too many replicas", "tiers: [{name: web, role: web, replicas: 5000}]\n", `tiers[0] ("web"): replicas: want at most 1024, got 5000`},
		{"no replicas", "tiers: [{name: web, role: web}]\n", `tiers[0] ("web"): replicas: missing; want a positive integer`},
		{"zero cores", "tiers: [{name: web, role: web, replicas: 1, cores: 0}]\n", `tiers[0] ("web"): cores: want a positive integer, got 0`},
		{"unknown role", "tiers: [{name: web, role: tomcat, replicas: 1}]\n", `tiers[0] ("web"): role: want web, app, cluster, db or pooler, got "tomcat"`},
		{"no role", "tiers: [{name: web, replicas: 1}]\n", `tiers[0] ("web"): role: missing; want web, app, cluster, db or pooler`},
		{"no name", "tiers: [{role: web, replicas: 1}]\n", `tiers[0]: name: missing`},
		{"bad name", "tiers: [{name: 'a b', role: web, replicas: 1}]\n",
			`tiers[0] ("a b"): name: want letters, digits, '-', '_' or '.' (at most 64, starting with a letter or digit), got "a b"`},
		{"duplicate name", "tiers: [" + web + ", {name: web, role: app, replicas: 1}]\n", `tiers[1] ("web"): name: tiers[0] is already named "web"`},
		{"unknown pool", "tiers: [{name: web, role: web, replicas: 1, pools: {thread: 5}}]\n",
			`tiers[0] ("web"): pools: unknown pool "thread"; want threads, connections, children or permits`},
		{"zero pool", "tiers: [{name: web, role: web, replicas: 1, pools: {threads: 0}}]\n",
			`tiers[0] ("web"): pools: threads: want a positive integer, got 0`},
		{"huge pool", "tiers: [{name: web, role: web, replicas: 1, pools: {threads: 200000}}]\n",
			`tiers[0] ("web"): pools: threads: want at most 100000, got 200000`},
		{"pool twice", "tiers: [{name: web, role: web, replicas: 1, pools: {threads: 5, threads: 6}}]\n",
			`tiers[0] ("web"): pools: threads given twice`},
		{"pools a list", "tiers: [{name: web, role: web, replicas: 1, pools: [threads]}]\n",
			`tiers[0] ("web"): pools: want a mapping of threads, connections or children to sizes, got a list`},
		{"runner not a mapping", "name: s\ntiers: [" + web + "]\nrunner: exec\n", `runner: want a mapping, got "exec"`},
		{"unnamed other chain", "tiers: [" + web + "]\n",
			`name: missing; a deployment needs one unless its tiers are exactly those of #W/#A/#C/#D (e.g. 1/4/1/4) or #W/#A/#D (e.g. 1/2/1)`},
		{"bad deployment name", "name: 1/2/1\ntiers: [" + web + "]\n",
			`name: want letters, digits, '-', '_' or '.' (at most 64, starting with a letter or digit), got "1/2/1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			df, err := ParseDeployment([]byte(tt.in), "x.yaml")
			require.Error(t, err)
			assert.Equal(t, `deployment "x.yaml": `+tt.want, err.Error())
			assert.NotContains(t, err.Error(), "\n")
			assert.Zero(t, df)
			var te *Error
			require.True(t, errors.As(err, &te))
			assert.Equal(t, "deployment", te.Kind)
		})
	}
}

func TestLoadDeploymentFileErrors(t *testing.T) {
	_, err := LoadDeployment(filepath.Join(t.TempDir(), "missing.yaml"))
	require.Error(t, err)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Contains(t, err.Error(), `load deployment "`)

	big := filepath.Join(t.TempDir(), "big.yaml")
	require.NoError(t, os.WriteFile(big, make([]byte, maxFileSize+1), 0o600))
	_, err = LoadDeployment(big)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "file is larger than 1048576 bytes")
}

// Issue 35: a 328 KB file that aliases a 300 KB string 5,000 times in the
// runner's hook passed the 1 MiB cap and yaml's alias ratio (some plain
// entries dilute it), and ran the live runner out of memory writing 1.5 GB
// of hook out again. What the aliases expand to is bounded like the file.
func TestAliasesExpandWithinTheFileCap(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: s\ntiers: [{name: web, role: web, replicas: 1}]\nrunner:\n  label: &big \"")
	b.WriteString(strings.Repeat("x", 300<<10))
	b.WriteString("\"\n  hook: [")
	for i := 0; i < 5000; i++ {
		b.WriteString("*big, ")
	}
	b.WriteString(strings.Repeat("a, ", 200) + "a]\n")
	require.Less(t, b.Len(), maxFileSize)
	path := filepath.Join(t.TempDir(), "bomb.yaml")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	_, err := LoadDeployment(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "its aliases expanded, the document is larger than 1048576 bytes (the cap on a deployment file)")

	// Aliases that stay small are YAML as usual.
	df, err := ParseDeployment([]byte("name: s\ntiers: [{name: web, role: web, replicas: 1}]\nrunner:\n  label: &l lab\n  hook: [*l, *l]\n"), "x.yaml")
	require.NoError(t, err)
	assert.Equal(t, []any{"lab", "lab"}, df.Runner["hook"])
}
