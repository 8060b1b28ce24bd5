package classes

import (
	"context"
	"fmt"
	"time"

	"github.com/softalloc/softalloc/algorithms"
)

// Runner runs class trials of one loaded workload on the model: the
// algorithms.ClassExperimenter of the class procedures. It never changes
// the workload, so one Runner may run trials at once.
type Runner struct {
	Workload *Workload
	// Seed of every trial: the same seed gives the same numbers.
	Seed uint64
}

// RunClassTrial applies the trial's setup and users to a copy of the
// workload and simulates it.
func (r Runner) RunClassTrial(ctx context.Context, t algorithms.ClassTrial) (algorithms.ClassObservation, error) {
	w, err := apply(t.Setup, r.Workload)
	if err != nil {
		return algorithms.ClassObservation{}, err
	}
	if t.Users != nil {
		if w, err = withUsers(w, t.Users); err != nil {
			return algorithms.ClassObservation{}, err
		}
	}
	res, err := simulateWorkload(ctx, w, r.Seed)
	if err != nil {
		return algorithms.ClassObservation{}, err
	}
	o := algorithms.ClassObservation{CPU: res.CPU, Classes: make([]algorithms.ClassMeasurement, len(res.Classes))}
	for i, c := range res.Classes {
		o.Classes[i] = algorithms.ClassMeasurement{Name: c.Name, Throughput: c.Throughput, Goodput: c.Goodput,
			ErrorsPerSecond: c.ErrorsPerSecond, Adequacy: c.Adequacy, ResponseTime: c.ResponseTime, P90: c.P90}
	}
	return o, nil
}

// Simulate runs the workload once as it is, with the runner's seed, and
// returns the model's whole report.
func (r Runner) Simulate(ctx context.Context) (Result, error) {
	return simulateWorkload(ctx, r.Workload, r.Seed)
}

// SetMeasuredWindow replaces the length of the run's measured window.
func (w *Workload) SetMeasuredWindow(d time.Duration) { w.Run.Duration = Duration(d.Seconds()) }

// DisableSelectors serves every request with its full approach (seed 002's
// baseline).
func (w *Workload) DisableSelectors() {
	for i := range w.Classes {
		w.Classes[i].Selector = nil
	}
}

// Description is the workload as the class procedures see it.
func (w *Workload) Description() algorithms.ClassWorkload {
	d := algorithms.ClassWorkload{Name: w.Name, Cores: w.Server.Cores, Policy: algorithms.CPUPolicy(w.Server.Policy),
		QuantumSeconds: float64(w.Server.Quantum), SharedPool: w.Server.Pools[0].Size}
	end := float64(w.Run.WarmUp + w.Run.Duration)
	for _, k := range w.Classes {
		c := algorithms.ServiceClass{Name: k.Name, LimitSeconds: float64(k.Limit), Users: k.Load.Users,
			Open: k.Load.Arrivals != nil, Ramp: k.Load.Ramp != nil,
			StartUsers: k.Load.Concurrency(0), EndUsers: k.Load.Concurrency(end)}
		if o := k.Objective; o != nil && !o.BestEffort {
			c.Adequacy = o.Adequacy
		}
		d.Classes = append(d.Classes, c)
	}
	return d
}

// apply returns a copy of w configured by s; unknown class names are errors.
func apply(s algorithms.ClassSetup, w *Workload) (*Workload, error) {
	c := w.Clone()
	if s.Policy != "" {
		c.Server.Policy = string(s.Policy)
	}
	if s.QuantumSeconds > 0 {
		c.Server.Quantum = Duration(s.QuantumSeconds)
	}
	for name, v := range s.Weights {
		k := c.Class(name)
		if k == nil {
			return nil, fmt.Errorf("weight for %q: no such class", name)
		}
		k.Weight = v
	}
	for name, v := range s.Priorities {
		k := c.Class(name)
		if k == nil {
			return nil, fmt.Errorf("priority for %q: no such class", name)
		}
		k.Priority = v
	}
	base := c.Server.Pools[0]
	if s.PoolSize > 0 {
		base.Size = s.PoolSize
	}
	if s.PerClassPools {
		c.Server.Pools = c.Server.Pools[:0]
		for i := range c.Classes {
			k := &c.Classes[i]
			p := Pool{Name: k.Name, Size: base.Size, Backlog: base.Backlog}
			if n, ok := s.PoolSizes[k.Name]; ok {
				p.Size = n
			}
			c.Server.Pools = append(c.Server.Pools, p)
			k.Pool = k.Name
		}
	} else if s.PoolSize > 0 {
		for i := range c.Server.Pools {
			c.Server.Pools[i].Size = s.PoolSize
		}
	}
	for name := range s.PoolSizes {
		if c.Class(name) == nil {
			return nil, fmt.Errorf("pool for %q: no such class", name)
		}
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("setup %q: %w", s.Name(), err)
	}
	return c, nil
}

// withUsers is a copy of w where the named classes have those closed users
// and every other class has no load.
func withUsers(w *Workload, users map[string]int) (*Workload, error) {
	for name := range users {
		if w.Class(name) == nil {
			return nil, fmt.Errorf("users for %q: no such class", name)
		}
	}
	c := w.Clone()
	for i := range c.Classes {
		k := &c.Classes[i]
		n, ok := users[k.Name]
		if !ok {
			k.Load = Load{}
			continue
		}
		k.Load.Users = n
	}
	return c, nil
}
