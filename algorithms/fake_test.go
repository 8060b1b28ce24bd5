package algorithms_test

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/softalloc/softalloc/algorithms"
)

// mvaExperimenter is an analytic stand-in for a deployment: exact mean value
// analysis of the closed network (processor sharing, think time), with each
// soft-resource pool as a limit on the population of the sub-network behind
// it. Response times are exponential around the MVA mean. It is the
// "analytic fake" the procedures are unit-tested on: no canned answers.
type mvaExperimenter struct {
	think float64
	// demands per page of one server of each tier (visits included), seconds.
	web, app, cluster, db float64
	queries               float64 // queries per page (cluster and db visits)
	// hidden adds an unmonitored station: throughput stops growing with no
	// hardware resource reported saturated.
	hidden float64
	// capped names a tier under a CPU quota that loses a share of it
	// (quotaLoss): its usage reads that much below the utilisation, and
	// throttled (when reportThrottled) is the utilisation itself.
	capped          string
	quotaLoss       float64
	reportThrottled bool
	// throttleLoss lowers the throttled share below the utilisation: a
	// capped server that idles in some quota periods (issue 36's php-fpm,
	// throttled in 0.90 of them at 0.94 of its quota).
	throttleLoss float64
	// memTier's servers report a memory utilisation of memBase plus
	// memPerUnit for each unit of its pools (a php-fpm child's memory).
	memTier             string
	memBase, memPerUnit float64
	calls               atomic.Int64 // RunAll calls it from several goroutines
}

func rubbosFake() *mvaExperimenter {
	// Table I's demands (RUBBOS.md's calibration), per page.
	return &mvaExperimenter{think: 7, web: 0.0005, app: 0.0027, cluster: 0.00118, db: 0.00097, queries: 3.22}
}

func (m *mvaExperimenter) stations(d algorithms.Deployment, from int) []algorithms.Station {
	var st []algorithms.Station
	for i, t := range d.Tiers {
		if i < from {
			continue
		}
		var dem float64
		switch t.Role {
		case algorithms.RoleWeb:
			dem = m.web
		case algorithms.RoleApp:
			dem = m.app
		case algorithms.RoleCluster:
			dem = m.cluster
		case algorithms.RoleDB:
			dem = m.db
		}
		for r := 0; r < t.Replicas; r++ {
			st = append(st, algorithms.Station{Name: t.ServerName(r), Demand: dem / float64(t.Replicas), Servers: 1})
		}
	}
	if m.hidden > 0 {
		st = append(st, algorithms.Station{Name: "hidden", Demand: m.hidden, Servers: 1})
	}
	return st
}

func (m *mvaExperimenter) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	m.calls.Add(1)
	d, n := e.Deployment, e.Workload.Users
	all := m.stations(d, 0)
	pts, err := algorithms.MVA(all, m.think, n)
	if err != nil {
		return algorithms.Observation{}, err
	}
	x := pts[n-1].Throughput
	// Each pool bounds the population of the sub-network behind it.
	binding := map[string]bool{}
	limit := func(tier int, pool string, size int) {
		if size <= 0 {
			return
		}
		p := size * d.Tiers[tier].Replicas
		// The pool binds when the unbounded network would hold more jobs behind it.
		jobs, k := 0.0, 0
		for i, t := range d.Tiers {
			for r := 0; r < t.Replicas; r++ {
				if i >= tier {
					jobs += pts[n-1].QueueLength[k]
				}
				k++
			}
		}
		if m.hidden > 0 {
			jobs += pts[n-1].QueueLength[k] // the hidden station is behind every tier
		}
		if jobs < float64(p) {
			return
		}
		sub, _ := algorithms.MVA(m.stations(d, tier), 0, p)
		x = math.Min(x, sub[p-1].Throughput)
		binding[d.Tiers[tier].Name+"/"+pool] = true
	}
	for i, t := range d.Tiers {
		p := e.Allocation[t.Name]
		limit(i, algorithms.PoolThreads, p.Threads)
		limit(i, algorithms.PoolConnections, p.Connections)
	}
	// Re-solve the unbounded network at the population that gives x, so
	// queue lengths inside the system match the throughput.
	inside := n
	for inside > 1 && pts[inside-1].Throughput > x {
		inside--
	}
	at := pts[inside-1]
	r := float64(n)/x - m.think
	runtime := e.Timing.Runtime.Seconds()
	o := algorithms.Observation{RuntimeSeconds: runtime, Throughput: x, ResponseTimes: exponentialHistogram(r, x*runtime)}
	k := 0
	for _, t := range d.Tiers {
		// A server's response time runs from its thread to its answer:
		// its own residence and everything behind it, per request.
		visits := 1.0
		if t.Role == algorithms.RoleCluster || t.Role == algorithms.RoleDB {
			visits = m.queries
		}
		behind := 0.0
		for j := k + t.Replicas; j < len(at.Residence); j++ {
			behind += at.Residence[j]
		}
		if t.Role == algorithms.RoleDB {
			behind = 0
		}
		for rep := 0; rep < t.Replicas; rep++ {
			u := at.Utilization[k+rep] * x / at.Throughput
			tp := x / float64(t.Replicas) * visits
			own := at.Residence[k+rep] * float64(t.Replicas) // per page of this server
			s := algorithms.ServerObservation{Name: t.ServerName(rep), Tier: t.Name, CPU: math.Min(u, 1),
				Throughput: tp, ResponseTime: (own + behind) / visits}
			if t.Name == m.memTier {
				p := e.Allocation[t.Name]
				s.Resources = map[string]float64{"memory": math.Min(1, m.memBase+m.memPerUnit*float64(p.Threads+p.Connections))}
			}
			if t.Name == m.capped {
				s.CPU *= 1 - m.quotaLoss
				if m.reportThrottled {
					s.Throttled = math.Min(u, 1) * (1 - m.throttleLoss)
				}
			}
			p := e.Allocation[t.Name]
			for _, pool := range []struct {
				name string
				size int
			}{{algorithms.PoolThreads, p.Threads}, {algorithms.PoolConnections, p.Connections}} {
				if pool.size == 0 {
					continue
				}
				busy := math.Min(float64(pool.size), algorithms.LittlesLaw(tp, s.ResponseTime))
				full := 0.0
				if binding[t.Name+"/"+pool.name] {
					busy, full = float64(pool.size), 1
				}
				s.Pools = append(s.Pools, algorithms.PoolObservation{Name: pool.name, Size: pool.size, Busy: busy, FullShare: full})
			}
			o.Servers = append(o.Servers, s)
		}
		k += t.Replicas
	}
	if err := o.Validate(); err != nil {
		return o, fmt.Errorf("fake: %w", err)
	}
	return o, nil
}

// exponentialHistogram spreads count values of an exponential distribution
// with the given mean over log-spaced buckets.
func exponentialHistogram(mean, count float64) algorithms.Histogram {
	h := algorithms.Histogram{Sum: mean * count}
	prev := 0.0
	for b := 1e-4; b < 1e4; b *= 1.02 {
		f := 1 - math.Exp(-b/mean)
		c := int64(math.Round(count * (f - prev)))
		prev = f
		if c > 0 {
			h.Buckets = append(h.Buckets, algorithms.Bucket{LE: b, Count: c})
		}
	}
	return h
}
