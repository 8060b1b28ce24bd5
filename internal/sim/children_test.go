package sim

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// The simulator models the RUBBoS chain (Tomcat's threads and connection
// pool): a tier of php-fpm children it cannot simulate is refused in one
// line that says so and where a PHP stack runs, not as a pool of 0
// connections.
func TestAChildrenTierIsRefusedSayingWhy(t *testing.T) {
	e := experiment(t, "1/2/1/2", "400-150-60", 100, time.Second, 10*time.Second)
	app := e.Deployment.TierIndex("app")
	e.Deployment.Topology = "php"
	e.Deployment.Tiers[app].Children, e.Deployment.Tiers[app].Software = true, algorithms.SoftwarePHPFPM
	e.Deployment.Tiers[app].Pools = []string{algorithms.PoolThreads}
	e.Allocation["app"] = algorithms.TierPools{Threads: 20}
	err := Runner{}.CheckExperiment(e)
	require.Error(t, err)
	const want = `deployment "php": tier "app"'s pool is php-fpm children, each holding its own connections to the next tier; ` +
		`the simulator models the RUBBoS chain (web threads, app threads and app connections) and has no children: ` +
		`run a PHP stack with --runner live (a runner section in the deployment file) or --runner exec`
	assert.Equal(t, want, err.Error())
	_, _, serr := Simulate(context.Background(), nil, e, 1)
	assert.EqualError(t, serr, "simulate: "+want)
}
