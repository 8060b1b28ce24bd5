package sim

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// topology builds the paper's deployments: "1/2/1/2" (web/app/cluster/db) or
// "1/2/2" (web/app/db), one core per server.
func topology(t testing.TB, s string) algorithms.Deployment {
	t.Helper()
	parts := strings.Split(s, "/")
	roles := []string{algorithms.RoleWeb, algorithms.RoleApp, algorithms.RoleCluster, algorithms.RoleDB}
	if len(parts) == 3 {
		roles = []string{algorithms.RoleWeb, algorithms.RoleApp, algorithms.RoleDB}
	}
	require.Len(t, parts, len(roles), "topology %q", s)
	d := algorithms.Deployment{Topology: s}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		require.NoError(t, err)
		tr := algorithms.Tier{Name: roles[i], Role: roles[i], Replicas: n, Cores: 1}
		switch roles[i] {
		case algorithms.RoleWeb:
			tr.Pools = []string{algorithms.PoolThreads}
		case algorithms.RoleApp:
			tr.Pools = []string{algorithms.PoolThreads, algorithms.PoolConnections}
		}
		d.Tiers = append(d.Tiers, tr)
	}
	return d
}

// allocation reads "400-150-60".
func allocation(t testing.TB, s string) algorithms.Allocation {
	t.Helper()
	var w, a, c int
	_, err := fmt.Sscanf(s, "%d-%d-%d", &w, &a, &c)
	require.NoError(t, err, "allocation %q", s)
	return algorithms.Allocation{
		algorithms.RoleWeb: {Threads: w},
		algorithms.RoleApp: {Threads: a, Connections: c},
	}
}

func experiment(t testing.TB, topo, alloc string, users int, warm, run time.Duration) algorithms.Experiment {
	return algorithms.Experiment{
		Deployment: topology(t, topo),
		Allocation: allocation(t, alloc),
		Workload:   algorithms.Workload{Users: users},
		Timing:     algorithms.Timing{RampUp: warm, Runtime: run},
	}
}

// trial runs one simulation and fails the test on error.
func trial(t testing.TB, m *Model, topo, alloc string, users int, warm, run time.Duration, seed uint64) (algorithms.Observation, Stats) {
	t.Helper()
	o, st, err := Simulate(context.Background(), m, experiment(t, topo, alloc, users, warm, run), seed)
	require.NoError(t, err)
	return o, st
}

// tierCPU is the mean CPU of a tier's servers.
func tierCPU(o algorithms.Observation, tier string) float64 {
	var sum float64
	n := 0
	for _, s := range o.Servers {
		if s.Tier == tier {
			sum += s.CPU
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

func server(t testing.TB, o algorithms.Observation, name string) algorithms.ServerObservation {
	t.Helper()
	s, ok := o.Server(name)
	require.True(t, ok, "server %s", name)
	return s
}

func maxProcs() int { return runtime.GOMAXPROCS(0) }
