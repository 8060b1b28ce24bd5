package topology

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// Issue 36: a php-fpm tier has one pool that is both its workers and its
// connections (each child opens its own); the file says so as children,
// and what each tier runs as software.
func TestDeploymentChildrenAndSoftware(t *testing.T) {
	df, err := LoadDeployment(filepath.Join(samples, "php.yaml"))
	require.NoError(t, err)
	want := algorithms.Deployment{Topology: "php", Tiers: []algorithms.Tier{
		{Name: "web", Role: algorithms.RoleWeb, Replicas: 1, Cores: 2, Pools: []string{"threads"}, Software: "apache"},
		{Name: "php", Role: algorithms.RoleApp, Replicas: 1, Cores: 2, Pools: []string{"threads"}, Software: "php-fpm", Children: true},
		{Name: "db", Role: algorithms.RoleDB, Replicas: 1, Cores: 2, Pools: []string{"connections"}, Software: "mariadb"},
	}}
	assert.Equal(t, want, df.Deployment)
	// The children are the tier's workers: an allocation sets them as its threads.
	assert.Equal(t, algorithms.Allocation{"web": {Threads: 100}, "php": {Threads: 20}, "db": {Connections: 151}}, df.Allocation)
	require.NoError(t, ValidateAllocation(df.Deployment, df.Allocation))
	assert.Equal(t, "php-fpm children", df.Deployment.Tiers[1].PoolLabel(algorithms.PoolThreads))
	assert.Equal(t, "threads", df.Deployment.Tiers[0].PoolLabel(algorithms.PoolThreads))

	// Children without a software are children all the same.
	df, err = ParseDeployment([]byte("name: g\ntiers:\n  - {name: app, role: app, replicas: 2, pools: {children: 8}}\n  - {name: db, role: db, replicas: 1}\n"), "x.yaml")
	require.NoError(t, err)
	assert.True(t, df.Deployment.Tiers[0].Children)
	assert.Equal(t, "children", df.Deployment.Tiers[0].PoolLabel(algorithms.PoolThreads))
	assert.Equal(t, algorithms.Allocation{"app": {Threads: 8}}, df.Allocation)

	// The notation's tiers with a software are still the notation.
	df, err = ParseDeployment([]byte("tiers:\n  - {name: web, role: web, replicas: 1, software: apache, pools: {threads: 400}}\n"+
		"  - {name: app, role: app, replicas: 2, software: tomcat, pools: {threads: 150, connections: 60}}\n  - {name: db, role: db, replicas: 1, software: mysql}\n"), "x.yaml")
	require.NoError(t, err)
	assert.Equal(t, "1/2/1", df.Deployment.Topology)
	assert.Equal(t, "tomcat", df.Deployment.Tiers[1].Software)

	// A children tier is not the notation's app tier: the simulator has no such pool.
	df, err = ParseDeployment([]byte("name: p\ntiers:\n  - {name: web, role: web, replicas: 1, pools: {children: 40}}\n"+
		"  - {name: app, role: app, replicas: 1, pools: {threads: 10, connections: 5}}\n  - {name: db, role: db, replicas: 1}\n"), "x.yaml")
	require.NoError(t, err)
	assert.Equal(t, "p", df.Deployment.Topology)
}

func TestDeploymentChildrenErrors(t *testing.T) {
	const db = "{name: db, role: db, replicas: 1}"
	tests := []struct{ name, in, want string }{
		{"children and threads", "tiers: [{name: php, role: app, replicas: 1, pools: {children: 5, threads: 5}}, " + db + "]\n",
			`tiers[0] ("php"): pools: children are the tier's workers and its connections both; give children alone, not with threads`},
		{"children and connections", "tiers: [{name: php, role: app, replicas: 1, pools: {connections: 5, children: 5}}, " + db + "]\n",
			`tiers[0] ("php"): pools: children are the tier's workers and its connections both; give children alone, not with connections`},
		{"children twice", "tiers: [{name: php, role: app, replicas: 1, pools: {children: 5, children: 6}}, " + db + "]\n",
			`tiers[0] ("php"): pools: children given twice`},
		{"zero children", "tiers: [{name: php, role: app, replicas: 1, pools: {children: 0}}, " + db + "]\n",
			`tiers[0] ("php"): pools: children: want a positive integer, got 0`},
		{"children in the last tier", "tiers: [{name: php, role: app, replicas: 1, pools: {children: 5}}]\n",
			`tiers[0] ("php"): pools: children open connections to the next tier, and "php" is the last; give it threads`},
		{"php-fpm threads", "tiers: [{name: php, role: app, replicas: 1, software: php-fpm, pools: {threads: 5}}, " + db + "]\n",
			`tiers[0] ("php"): pools: php-fpm's pool is its children, each with its own DB connections: write pools: {children: N}`},
		{"unknown software", "tiers: [{name: php, role: app, replicas: 1, software: php}, " + db + "]\n",
			`tiers[0] ("php"): software: want apache, nginx, php-fpm, tomcat, hikari, go, mariadb, mysql, postgresql or pgbouncer, got "php"`},
		{"software a list", "tiers: [{name: php, role: app, replicas: 1, software: [php-fpm]}, " + db + "]\n",
			`tiers[0] ("php"): software: want apache, nginx, php-fpm, tomcat, hikari, go, mariadb, mysql, postgresql or pgbouncer, got a list`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			df, err := ParseDeployment([]byte(tt.in), "x.yaml")
			require.Error(t, err)
			assert.Equal(t, `deployment "x.yaml": `+tt.want, err.Error())
			assert.Zero(t, df)
			var te *Error
			require.True(t, errors.As(err, &te))
		})
	}
}
