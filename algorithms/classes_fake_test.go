package algorithms_test

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync/atomic"

	"github.com/softalloc/softalloc/algorithms"
)

// classServer is an analytic stand-in for a multi-class server, the fake the
// class procedures are unit-tested on (no canned answers). Every class is
// closed users with no think time, so each user always has a request out:
// the requests holding a thread are the users up to the pool (a shared pool
// is split in proportion to users), the cores are divided among those jobs
// by the CPU policy, and Little's law gives the response time (users over
// throughput). Response times are exponential around that mean. With a
// heap, the bytes live in requests slow the cores by the collector's share,
// 1 / (1 + gcCost x live / (heap - live)), as in docs/classes.md.
type classServer struct {
	name    string
	cores   float64
	policy  algorithms.CPUPolicy
	quantum float64
	pool    int
	classes []fakeClass
	// heap, base and gcCost model the collector (heap 0: none).
	heap, base, gcCost float64
	// fail, when set, makes the trials it returns true for fail.
	fail   func(algorithms.ClassTrial) bool
	trials atomic.Int64
}

type fakeClass struct {
	name     string
	demand   float64 // CPU seconds per request
	users    int
	limit    float64 // client limit, seconds
	adequacy float64 // objective; 0 for best effort
	ramp     bool
	weight   float64
	priority int
	memory   float64 // bytes held from thread to response
}

// seed000Fake is seed 000's workload set 1 on processor sharing: 30 light
// (3.9 ms) and 40 heavy (400 ms) users on 4 cores, one pool of 150.
func seed000Fake() *classServer {
	return &classServer{name: "seed000", cores: 4, policy: algorithms.PolicyPS, pool: 150, classes: []fakeClass{
		{name: "light", demand: 0.0039, users: 30, limit: 1, weight: 1},
		{name: "heavy", demand: 0.4, users: 40, limit: 1, weight: 1},
	}}
}

func (s *classServer) workload() algorithms.ClassWorkload {
	w := algorithms.ClassWorkload{Name: s.name, Cores: int(s.cores), Policy: s.policy, QuantumSeconds: s.quantum, SharedPool: s.pool}
	for _, k := range s.classes {
		w.Classes = append(w.Classes, algorithms.ServiceClass{Name: k.name, Adequacy: k.adequacy, LimitSeconds: k.limit,
			Users: k.users, Ramp: k.ramp, StartUsers: k.users, EndUsers: k.users})
	}
	return w
}

func (s *classServer) RunClassTrial(ctx context.Context, t algorithms.ClassTrial) (algorithms.ClassObservation, error) {
	if err := ctx.Err(); err != nil {
		return algorithms.ClassObservation{}, err
	}
	s.trials.Add(1)
	if s.fail != nil && s.fail(t) {
		return algorithms.ClassObservation{}, fmt.Errorf("fake: trial failed")
	}
	known := map[string]bool{}
	for _, k := range s.classes {
		known[k.name] = true
	}
	for _, m := range []map[string]int{t.Users, t.Setup.PoolSizes, t.Setup.Priorities} {
		for n := range m {
			if !known[n] {
				return algorithms.ClassObservation{}, fmt.Errorf("fake: no class %q", n)
			}
		}
	}
	policy := s.policy
	if t.Setup.Policy != "" {
		policy = t.Setup.Policy
	}
	n := len(s.classes)
	users, jobs := make([]float64, n), make([]float64, n)
	var total float64
	for i, k := range s.classes {
		users[i] = float64(k.users)
		if t.Users != nil {
			users[i] = float64(t.Users[k.name])
		}
		total += users[i]
	}
	pool := float64(s.pool)
	if t.Setup.PoolSize > 0 {
		pool = float64(t.Setup.PoolSize)
	}
	for i, k := range s.classes {
		if t.Setup.PerClassPools {
			size := pool
			if p, ok := t.Setup.PoolSizes[k.name]; ok {
				size = float64(p)
			}
			jobs[i] = math.Min(users[i], size)
		} else if total > 0 {
			jobs[i] = users[i] * math.Min(1, pool/total)
		}
	}
	speed := 1.0
	if s.heap > 0 {
		live := s.base
		for i, k := range s.classes {
			live += jobs[i] * k.memory
		}
		speed = 1 / (1 + s.gcCost*live/(s.heap-live))
	}
	cores := s.coresPerJob(policy, t.Setup, jobs)
	o := algorithms.ClassObservation{}
	var busy float64
	for i, k := range s.classes {
		busy += jobs[i] * cores[i]
		m := algorithms.ClassMeasurement{Name: k.name, Throughput: jobs[i] * cores[i] * speed / k.demand}
		if m.Throughput > 0 {
			m.ResponseTime = users[i] / m.Throughput
			m.Adequacy = 1 - math.Exp(-k.limit/m.ResponseTime)
			m.Goodput = m.Throughput * m.Adequacy
			m.P90 = m.ResponseTime * math.Log(10)
		}
		o.Classes = append(o.Classes, m)
	}
	o.CPU = busy / s.cores
	return o, nil
}

// coresPerJob is the share of a core each job of a class gets.
func (s *classServer) coresPerJob(policy algorithms.CPUPolicy, setup algorithms.ClassSetup, jobs []float64) []float64 {
	share := make([]float64, len(jobs))
	switch policy {
	case algorithms.PolicyPS, algorithms.PolicyRR:
		var all float64
		for _, j := range jobs {
			all += j
		}
		for i := range share {
			share[i] = math.Min(1, s.cores/all)
		}
	case algorithms.PolicyPriority:
		// Levels take the cores in order, highest first, one per job.
		prio := make([]int, len(jobs))
		levels := map[int]float64{}
		for i, k := range s.classes {
			prio[i] = k.priority
			if p, ok := setup.Priorities[k.name]; ok {
				prio[i] = p
			}
			levels[prio[i]] += jobs[i]
		}
		order := make([]int, 0, len(levels))
		for l := range levels {
			order = append(order, l)
		}
		sort.Sort(sort.Reverse(sort.IntSlice(order)))
		free, got := s.cores, map[int]float64{}
		for _, l := range order {
			if levels[l] > 0 {
				got[l] = math.Min(1, free/levels[l])
				free -= math.Min(free, levels[l])
			}
		}
		for i := range share {
			share[i] = got[prio[i]]
		}
	case algorithms.PolicyWeighted:
		// Water-filling: busy classes split the cores by weight, at most
		// one core per job, the excess shared on.
		weight := make([]float64, len(jobs))
		for i, k := range s.classes {
			weight[i] = k.weight
			if w, ok := setup.Weights[k.name]; ok {
				weight[i] = w
			}
		}
		cores := make([]float64, len(jobs))
		capped := make([]bool, len(jobs))
		free := s.cores
		for free > 1e-12 {
			var sum float64
			for i := range jobs {
				if jobs[i] > 0 && !capped[i] {
					sum += weight[i]
				}
			}
			if sum == 0 {
				break
			}
			left := free
			for i := range jobs {
				if jobs[i] > 0 && !capped[i] {
					give := math.Min(left*weight[i]/sum, jobs[i]-cores[i])
					cores[i] += give
					free -= give
					capped[i] = cores[i] >= jobs[i]-1e-12
				}
			}
		}
		for i := range share {
			if jobs[i] > 0 {
				share[i] = cores[i] / jobs[i]
			}
		}
	}
	return share
}
