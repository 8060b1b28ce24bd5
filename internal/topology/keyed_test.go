package topology

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// keyedDeployments are the deployments the keyed form is tested on: the
// notation's chains, the PHP stack (children), a file with other tier names
// and one whose tier names hold dots.
func keyedDeployments(t testing.TB) map[string]algorithms.Deployment {
	out := map[string]algorithms.Deployment{}
	for _, topo := range []string{"1/2/1/2", "1/2/1"} {
		d, err := ParseTopology(topo)
		require.NoError(t, err)
		out[topo] = d
	}
	for _, f := range []string{"php.yaml", "shop.yaml", "rubbos-1414.yaml"} {
		df, err := LoadDeployment(filepath.Join(samples, f))
		require.NoError(t, err)
		out[f] = df.Deployment
	}
	df, err := ParseDeployment([]byte("name: dots\ntiers:\n  - {name: lb.1, role: web, replicas: 1, pools: {threads: 10}}\n"+
		"  - {name: app.v2, role: app, replicas: 2, pools: {children: 8}}\n  - {name: db, role: db, replicas: 1, pools: {connections: 30}}\n"), "dots.yaml")
	require.NoError(t, err)
	out["dots"] = df.Deployment
	return out
}

func TestParseAllocationInKeyed(t *testing.T) {
	ds := keyedDeployments(t)
	php := algorithms.Allocation{"web": {Threads: 150}, "php": {Threads: 20}, "db": {Connections: 51}}
	tests := []struct {
		deployment, in string
		want           algorithms.Allocation
	}{
		{"php.yaml", "web.threads=150,php.children=20,db.connections=51", php},
		{"php.yaml", " db.connections = 51 , php.children=020,web.threads=150\n", php},
		{"shop.yaml", "nginx.threads=200,api.threads=64,api.connections=16",
			algorithms.Allocation{"nginx": {Threads: 200}, "api": {Threads: 64, Connections: 16}}},
		// The keyed form is accepted for the notation's chains too.
		{"1/2/1/2", "web.threads=400,app.threads=150,app.connections=60",
			algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 150, Connections: 60}}},
		{"1/2/1/2", "400-150-60", algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 150, Connections: 60}}},
		{"dots", "lb.1.threads=10,app.v2.children=8,db.connections=30",
			algorithms.Allocation{"lb.1": {Threads: 10}, "app.v2": {Threads: 8}, "db": {Connections: 30}}},
	}
	for _, tt := range tests {
		t.Run(tt.deployment+" "+tt.in, func(t *testing.T) {
			a, err := ParseAllocationIn(ds[tt.deployment], tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, a)
			require.NoError(t, ValidateAllocation(ds[tt.deployment], a))
		})
	}
}

func TestParseAllocationInErrors(t *testing.T) {
	ds := keyedDeployments(t)
	const phpWant = "want web.threads=N,php.children=N,db.connections=N"
	tests := []struct{ deployment, in, want string }{
		{"php.yaml", "web.threads=150,php.children=20", `db.connections missing: ` + phpWant},
		{"php.yaml", "web.threads=150", `php.children, db.connections missing: ` + phpWant},
		{"php.yaml", "web.threads=150,php.children=20,db.connections=51,cache.threads=4",
			`unknown tier "cache": deployment "php" has web, php or db`},
		{"php.yaml", "web.thread=150,php.children=20,db.connections=51", `web: unknown pool "thread": want threads, connections, children or permits`},
		{"php.yaml", "web.threads=150,php.threads=20,db.connections=51",
			`php.threads: tier "php"'s workers are its children (each opens its own connections), not threads: write php.children=N`},
		{"php.yaml", "web.threads=150,php.children=20,db.threads=51",
			`db.threads: tier "db" has no threads pool in deployment "php"; its pools: db.connections`},
		{"php.yaml", "web.connections=1,web.threads=150,php.children=20,db.connections=51",
			`web.connections: tier "web" has no connections pool in deployment "php"; its pools: web.threads`},
		{"php.yaml", "web.threads=150,php.children=20,php.children=21,db.connections=51", `php.children given twice`},
		{"php.yaml", "web.threads=150,php.children=0,db.connections=51", `php.children "0" is not a positive integer`},
		{"php.yaml", "web.threads=150,php.children=-3,db.connections=51", `php.children "-3" is not a positive integer`},
		{"php.yaml", "web.threads=150,php.children=2.5,db.connections=51", `php.children "2.5" is not a positive integer`},
		{"php.yaml", "web.threads=150,php.children=,db.connections=51", `php.children "" is not a positive integer`},
		{"php.yaml", "web.threads=150,php.children=100001,db.connections=51", `php.children "100001" is more than the maximum of 100000`},
		{"php.yaml", "web.threads=150,php.children=99999999999999999999,db.connections=51",
			`php.children "99999999999999999999" is more than the maximum of 100000`},
		{"php.yaml", "web.threads=150,,php.children=20,db.connections=51", `item 2 is empty: ` + phpWant + `, separated by commas`},
		{"php.yaml", "web.threads=150,php.children=20,db.connections=51,", `item 4 is empty: ` + phpWant + `, separated by commas`},
		{"php.yaml", "web.threads=150,php,db.connections=51", `"php" is not tier.pool=N: ` + phpWant},
		{"php.yaml", "threads=150,php.children=20,db.connections=51", `"threads=150": want tier.pool before the =, e.g. web.threads=N`},
		{"php.yaml", ".threads=150", `".threads=150": want tier.pool before the =, e.g. web.threads=N`},
		{"php.yaml", "web.=150", `"web.=150": want tier.pool before the =, e.g. web.threads=N`},
		{"php.yaml", "100-20-51", `tier "php": threads: want a positive size, got 0; deployment "php"'s pools are not the notation's web threads, app threads and app connections: ` + phpWant},
		{"php.yaml", "100-20", `want #W_T-#A_T-#A_C (e.g. 400-150-60), got 2 numbers; deployment "php"'s pools are not the notation's web threads, app threads and app connections: ` + phpWant},
		{"1/2/1/2", "web.threads=400,app.threads=150", `app.connections missing: want web.threads=N,app.threads=N,app.connections=N`},
		{"1/2/1/2", "web.threads=400,app.children=150,app.connections=60",
			`app.children: tier "app" has no children pool in deployment "1/2/1/2"; its pools: app.threads, app.connections`},
		{"1/2/1/2", "web.threads=400,app.threads=150,app.connections=60,db.connections=5",
			`db.connections: tier "db" has no pools in deployment "1/2/1/2": want web.threads=N,app.threads=N,app.connections=N`},
		{"1/2/1/2", "400-150", `want #W_T-#A_T-#A_C (e.g. 400-150-60), got 2 numbers`},
		{"1/2/1/2", "", `want #W_T-#A_T-#A_C (e.g. 400-150-60), got an empty string`},
	}
	for _, tt := range tests {
		t.Run(tt.deployment+" "+tt.in, func(t *testing.T) {
			a, err := ParseAllocationIn(ds[tt.deployment], tt.in)
			require.Error(t, err)
			assert.Nil(t, a)
			assert.Equal(t, fmt.Sprintf("allocation %q: %s", tt.in, tt.want), err.Error())
			var te *Error
			require.True(t, errors.As(err, &te), "a usage error the CLI can tell apart")
		})
	}
}

// Every allocation printed for a deployment reads back as the same
// allocation, and the notation's chains print as they always have.
func TestFormatAllocationInRoundTrip(t *testing.T) {
	ds := keyedDeployments(t)
	for name, d := range ds {
		base := algorithms.Allocation{}
		for _, p := range keyedPools(d) {
			setPool(base, p.tier, p.model, 7+len(base))
		}
		for _, a := range []algorithms.Allocation{base, base.Scaled(3), base.Scaled(MaxPoolSize / 30)} {
			s := FormatAllocationIn(d, a)
			got, err := ParseAllocationIn(d, s)
			require.NoError(t, err, "%s: %s", name, s)
			assert.Equal(t, a, got, "%s: %s", name, s)
			assert.Equal(t, s, FormatAllocationIn(d, got))
		}
	}
	notation := algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 150, Connections: 60}}
	assert.Equal(t, "400-150-60", FormatAllocationIn(ds["1/2/1/2"], notation))
	assert.Equal(t, "400-150-60", FormatAllocationIn(ds["rubbos-1414.yaml"], notation))
	assert.Equal(t, "web.threads=150,php.children=20,db.connections=51",
		FormatAllocationIn(ds["php.yaml"], algorithms.Allocation{"db": {Connections: 51}, "php": {Threads: 20}, "web": {Threads: 150}}))
	assert.Equal(t, "nginx.threads=200,api.threads=64,api.connections=16",
		FormatAllocationIn(ds["shop.yaml"], algorithms.Allocation{"nginx": {Threads: 200}, "api": {Threads: 64, Connections: 16}}))
	// What does not fit the deployment is printed whole, not dropped.
	assert.Equal(t, "web.threads=150,php.children=0,db.connections=51,x.threads=2",
		FormatAllocationIn(ds["php.yaml"], algorithms.Allocation{"db": {Connections: 51}, "web": {Threads: 150}, "x": {Threads: 2}}))
}
