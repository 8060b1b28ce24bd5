package topology

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// Issue 38: with virtual threads the app tier's jobs are bounded by a
// concurrency limit's permits, beside its JDBC pool; the file names them so.
func TestDeploymentPermits(t *testing.T) {
	df, err := ParseDeployment([]byte("name: v\ntiers:\n  - {name: web, role: web, replicas: 1, pools: {threads: 100}}\n"+
		"  - {name: app, role: app, replicas: 1, software: tomcat, pools: {connections: 10, permits: 20}}\n  - {name: db, role: db, replicas: 1}\n"), "x.yaml")
	require.NoError(t, err)
	app := df.Deployment.Tiers[1]
	assert.True(t, app.Permits)
	assert.Equal(t, []string{"threads", "connections"}, app.Pools)
	assert.Equal(t, "permits", app.PoolLabel(algorithms.PoolThreads))
	assert.Equal(t, "connections", app.PoolLabel(algorithms.PoolConnections))
	assert.Equal(t, algorithms.Allocation{"web": {Threads: 100}, "app": {Threads: 20, Connections: 10}}, df.Allocation)
	// Not the notation's app threads: the keyed form names the permits.
	assert.Equal(t, "v", df.Deployment.Topology)
	a, err := ParseAllocationIn(df.Deployment, "web.threads=150,app.permits=30,app.connections=12")
	require.NoError(t, err)
	assert.Equal(t, algorithms.Allocation{"web": {Threads: 150}, "app": {Threads: 30, Connections: 12}}, a)
	assert.Equal(t, "web.threads=150,app.permits=30,app.connections=12", FormatAllocationIn(df.Deployment, a))
	_, err = ParseAllocationIn(df.Deployment, "web.threads=150,app.threads=30,app.connections=12")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `app.threads: tier "app"'s jobs are bounded by its permits (a concurrency limit over virtual threads), not threads: write app.permits=N`)
}

func TestDeploymentPermitsErrors(t *testing.T) {
	const db = "{name: db, role: db, replicas: 1}"
	tests := []struct{ name, in, want string }{
		{"permits and threads", "tiers: [{name: app, role: app, replicas: 1, pools: {permits: 5, threads: 5}}, " + db + "]\n",
			`tiers[0] ("app"): pools: permits bound the jobs of a tier on virtual threads, where threads bound nothing; give permits or threads, not both`},
		{"threads and permits", "tiers: [{name: app, role: app, replicas: 1, pools: {threads: 5, permits: 5}}, " + db + "]\n",
			`tiers[0] ("app"): pools: permits bound the jobs of a tier on virtual threads, where threads bound nothing; give permits or threads, not both`},
		{"permits twice", "tiers: [{name: app, role: app, replicas: 1, pools: {permits: 5, permits: 6}}, " + db + "]\n",
			`tiers[0] ("app"): pools: permits given twice`},
		{"zero permits", "tiers: [{name: app, role: app, replicas: 1, pools: {permits: 0}}, " + db + "]\n",
			`tiers[0] ("app"): pools: permits: want a positive integer, got 0`},
		{"permits and children", "tiers: [{name: app, role: app, replicas: 1, pools: {children: 5, permits: 5}}, " + db + "]\n",
			`tiers[0] ("app"): pools: children are the tier's workers and its connections both; give children alone, not with permits`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseDeployment([]byte(tt.in), "x.yaml")
			require.Error(t, err)
			assert.Equal(t, `deployment "x.yaml": `+tt.want, err.Error())
		})
	}
}
