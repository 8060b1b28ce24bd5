//go:build !race

package sim

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// mvaModel is the default model made a product-form network: pools too large
// to bind, no GC, no FIN wait, random load balancing.
func mvaModel() *Model {
	m := DefaultModel()
	m.App.GC = GC{}
	m.Cluster.GC = GC{}
	m.Web.FINWait = FINWait{}
	m.LoadBalancing = BalanceRandom
	m.Admission.Mode = AdmissionUnbounded
	return m
}

// mvaNetwork is the closed network that mvaModel simulates: one station per
// server with its demand per page, and the think time plus the constant
// delays (infinite servers) as the delay station.
func mvaNetwork(m *Model, d algorithms.Deployment) (stations []algorithms.Station, z, delays float64) {
	mx := m.Mix
	shares := mx.shares
	var servlet, static, images float64
	for i, it := range mx.Interactions {
		if it.Static {
			static += shares[i]
		} else {
			servlet += shares[i]
		}
		images += shares[i] * float64(it.Images)
	}
	q := servlet * mx.queriesPerServletPageMean() // queries per page
	demand := map[string]float64{
		algorithms.RoleWeb:     servlet*float64(m.Web.PageDemand) + static*float64(m.Web.StaticDemand) + images*float64(m.Web.ImageDemand),
		algorithms.RoleApp:     servlet * float64(m.App.ServletDemand),
		algorithms.RoleCluster: q * float64(m.Cluster.QueryDemand),
		algorithms.RoleDB:      q * float64(m.DB.QueryDemand),
	}
	for _, t := range d.Tiers {
		for i := 0; i < t.Replicas; i++ {
			stations = append(stations, algorithms.Station{Name: t.ServerName(i), Demand: demand[t.Role] / float64(t.Replicas), Servers: max(t.Cores, 1)})
		}
	}
	mean, limit := float64(mx.ThinkTime.Mean), float64(mx.ThinkTime.Cap)
	z = mean - (limit+mean)*math.Exp(-limit/mean) // E[X; X <= cap]: longer draws become 0
	delays = servlet*float64(m.Web.ForwardDelay) + q*float64(m.App.QueryDelay)
	return stations, z, delays
}

// TestMVAAgreement: with nothing but processor sharing and think time, the
// simulator is the closed product-form network that exact MVA solves.
func TestMVAAgreement(t *testing.T) {
	m := mvaModel()
	type point struct {
		topo  string
		users int
		seeds int
		run   time.Duration
	}
	var points []point
	for _, topo := range []string{"1/2/1/2", "1/4/1/4"} {
		d := topology(t, topo)
		st, z, delays := mvaNetwork(m, d)
		var dmax, dsum float64
		for _, s := range st {
			dmax = max(dmax, s.Demand)
			dsum += s.Demand
		}
		knee := int((z + delays + dsum) / dmax) // where the asymptotes cross
		t.Logf("%s: bottleneck demand %.4f ms, knee %d users", topo, dmax*1e3, knee)
		points = append(points,
			point{topo, 1000, 2, 600 * time.Second},
			// R = N/X - Z is most sensitive at the knee: average long trials.
			point{topo, knee, 3, 900 * time.Second},
			point{topo, knee * 6 / 5, 1, 300 * time.Second})
	}
	type result struct{ x, r float64 }
	results := make([]result, len(points))
	parallel(len(points), func(i int) {
		p := points[i]
		e := experiment(t, p.topo, "100000-100000-100000", p.users, 60*time.Second, p.run)
		var res result
		for s := 0; s < p.seeds; s++ {
			o, _, err := Simulate(context.Background(), m, e, uint64(100+s))
			if err != nil {
				t.Error(err)
				return
			}
			res.x += o.Throughput / float64(p.seeds)
			res.r += o.ResponseTimes.Mean() / float64(p.seeds)
		}
		results[i] = res
	})
	for i, p := range points {
		st, z, delays := mvaNetwork(m, topology(t, p.topo))
		sol, err := algorithms.MVA(st, z+delays, p.users)
		require.NoError(t, err)
		want := sol[p.users-1]
		wantR := want.ResponseTime + delays
		got := results[i]
		t.Logf("%s %5d users: X %.1f vs MVA %.1f (%+.2f%%), R %.4f vs %.4f s (%+.2f%%)", p.topo, p.users,
			got.x, want.Throughput, 100*(got.x/want.Throughput-1), got.r, wantR, 100*(got.r/wantR-1))
		assert.InEpsilon(t, want.Throughput, got.x, 0.03, "%s at %d users: throughput", p.topo, p.users)
		assert.InEpsilon(t, wantR, got.r, 0.03, "%s at %d users: response time", p.topo, p.users)
	}
}

// parallel runs f(0..n-1) on GOMAXPROCS goroutines. Each trial is
// single-threaded and deterministic, so the results do not depend on it.
func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	workers := max(1, min(n, maxProcs()))
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

var _ = fmt.Sprint
