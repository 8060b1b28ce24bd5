package classes

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// Setup is one server configuration to compare: a scheduling policy and
// its parameters, and shared or per-class pools.
type Setup struct {
	// Label names the setup in tables and plots (default: derived).
	Label string `json:"label"`
	// Policy is ps, rr, priority or weighted ("" keeps the workload's).
	Policy string `json:"policy"`
	// Quantum is the rr time slice in seconds (0 keeps the workload's).
	Quantum float64 `json:"quantum,omitempty"`
	// PerClassPools gives every class its own pool named after it.
	PerClassPools bool `json:"perClassPools"`
	// PoolSizes sizes per-class pools by class (default: the first
	// pool's size); PoolSize resizes the shared pool (0 keeps it).
	PoolSizes map[string]int `json:"poolSizes,omitempty"`
	PoolSize  int            `json:"poolSize,omitempty"`
	// Weights and Priorities override the classes' (weighted, priority).
	Weights    map[string]float64 `json:"weights,omitempty"`
	Priorities map[string]int     `json:"priorities,omitempty"`
}

// Name is the label, or one derived from the policy.
func (s Setup) Name() string {
	if s.Label != "" {
		return s.Label
	}
	n := s.Policy
	if n == "" {
		n = "file"
	}
	if s.Policy == PolicyRR && s.Quantum > 0 {
		n += fmt.Sprintf(" %gms", s.Quantum*1000)
	}
	if s.PerClassPools {
		n += " per-class pools"
	}
	return n
}

// Apply returns a copy of w configured by s; unknown class names are errors.
func (s Setup) Apply(w *Workload) (*Workload, error) {
	c := w.Clone()
	if s.Policy != "" {
		c.Server.Policy = s.Policy
	}
	if s.Quantum > 0 {
		c.Server.Quantum = Duration(s.Quantum)
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
		return nil, err
	}
	return c, nil
}

// DegradationOptions describe seed 000's experiment: hold some classes'
// concurrency, raise one class's, compare each class with its solo value.
type DegradationOptions struct {
	// Classes take part; the others get no load (default: all).
	Classes []string
	// Swept is the class whose closed users are raised through Levels.
	Swept  string
	Levels []int
	// Held overrides the users of held classes (default: the file's).
	Held map[string]int
	// Setups to compare (default: the workload as it is).
	Setups []Setup
	Seed   uint64
	// Parallel trials at once (default GOMAXPROCS).
	Parallel int
}

// Scheme is one setup's degradation scheme: per-class throughput at each
// level of the swept class, and the drop from each class's solo value.
type Scheme struct {
	Setup  string        `json:"setup"`
	Points []SchemePoint `json:"points"`
}

// SchemePoint is one level of the swept class.
type SchemePoint struct {
	Level   int           `json:"level"`
	CPU     float64       `json:"cpu"`
	Classes []SchemeClass `json:"classes"`
}

// SchemeClass is one class at one level.
type SchemeClass struct {
	Name  string `json:"name"`
	Users int    `json:"users"`
	// Throughput is requests/s beside Solo, the class alone with the same
	// users on the same setup; Drop is 1 - Throughput/Solo.
	Throughput   float64 `json:"throughput"`
	Solo         float64 `json:"solo"`
	Drop         float64 `json:"drop"`
	Goodput      float64 `json:"goodput"`
	Adequacy     float64 `json:"adequacy"`
	ResponseTime float64 `json:"responseTime"`
}

// Class is the named class at this point, or nil.
func (p *SchemePoint) Class(name string) *SchemeClass {
	for i := range p.Classes {
		if p.Classes[i].Name == name {
			return &p.Classes[i]
		}
	}
	return nil
}

// Degradation runs the experiment for every setup. Trials are independent
// and run in parallel; the numbers do not depend on Parallel.
func Degradation(ctx context.Context, w *Workload, o DegradationOptions) ([]Scheme, error) {
	names, err := o.classes(w)
	if err != nil {
		return nil, err
	}
	setups := o.Setups
	if len(setups) == 0 {
		setups = []Setup{{}}
	}
	// Trials: for each setup, each held class alone, the swept class alone
	// at each level, and the mix at each level.
	type trial struct {
		setup int
		users map[string]int
	}
	var trials []trial
	held := map[string]int{}
	for _, n := range names {
		if n == o.Swept {
			continue
		}
		held[n] = w.Class(n).Load.Users
		if v, ok := o.Held[n]; ok {
			held[n] = v
		}
	}
	mix := func(level int) map[string]int {
		u := map[string]int{o.Swept: level}
		for n, v := range held {
			u[n] = v
		}
		return u
	}
	apps := make([]*Workload, len(setups))
	for i, s := range setups {
		if apps[i], err = s.Apply(w); err != nil {
			return nil, fmt.Errorf("setup %q: %w", s.Name(), err)
		}
		for _, n := range names {
			if n != o.Swept {
				trials = append(trials, trial{i, map[string]int{n: held[n]}})
			}
		}
		for _, l := range o.Levels {
			trials = append(trials, trial{i, map[string]int{o.Swept: l}}, trial{i, mix(l)})
		}
	}
	results := make([]Result, len(trials))
	err = runAll(ctx, o.Parallel, len(trials), func(ctx context.Context, i int) error {
		t := trials[i]
		c := withUsers(apps[t.setup], t.users)
		r, err := Simulate(ctx, c, o.Seed)
		results[i] = r
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]Scheme, len(setups))
	i := 0
	for si, s := range setups {
		solo := map[string]float64{}
		for _, n := range names {
			if n != o.Swept {
				solo[n] = results[i].Class(n).Throughput
				i++
			}
		}
		sc := Scheme{Setup: s.Name()}
		for _, l := range o.Levels {
			alone, both := results[i], results[i+1]
			i += 2
			solo[o.Swept] = alone.Class(o.Swept).Throughput
			p := SchemePoint{Level: l, CPU: both.CPU}
			users := mix(l)
			for _, n := range names {
				r := both.Class(n)
				c := SchemeClass{Name: n, Users: users[n], Throughput: r.Throughput, Solo: solo[n],
					Goodput: r.Goodput, Adequacy: r.Adequacy, ResponseTime: r.ResponseTime}
				if c.Solo > 0 {
					c.Drop = 1 - c.Throughput/c.Solo
				}
				p.Classes = append(p.Classes, c)
			}
			sc.Points = append(sc.Points, p)
		}
		out[si] = sc
	}
	return out, nil
}

func (o DegradationOptions) classes(w *Workload) ([]string, error) {
	names := o.Classes
	if len(names) == 0 {
		for _, k := range w.Classes {
			names = append(names, k.Name)
		}
	}
	seen := map[string]bool{}
	for _, n := range names {
		k := w.Class(n)
		if k == nil {
			return nil, fmt.Errorf("class %q: not in workload %q (it has %s)", n, w.Name, strings.Join(classNames(w), ", "))
		}
		if seen[n] {
			return nil, fmt.Errorf("class %q: named twice", n)
		}
		seen[n] = true
		if k.Load.Arrivals != nil || k.Load.Ramp != nil {
			return nil, fmt.Errorf("class %q: the degradation experiment holds closed users; it has arrivals or a ramp", n)
		}
	}
	if !seen[o.Swept] {
		return nil, fmt.Errorf("swept class %q: not among the classes %s", o.Swept, strings.Join(names, ","))
	}
	if len(o.Levels) == 0 {
		return nil, errors.New("no levels for the swept class")
	}
	for n := range o.Held {
		if !seen[n] {
			return nil, fmt.Errorf("held class %q: not among the classes %s", n, strings.Join(names, ","))
		}
	}
	return names, nil
}

func classNames(w *Workload) []string {
	var n []string
	for _, k := range w.Classes {
		n = append(n, k.Name)
	}
	sort.Strings(n)
	return n
}

// withUsers is a copy of w where the named classes have those closed users
// and every other class has no load.
func withUsers(w *Workload, users map[string]int) *Workload {
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
	return c
}

// runAll calls f(i) for i in [0, n) on up to parallel goroutines and
// returns the first error; the others are cancelled.
func runAll(ctx context.Context, parallel, n int, f func(context.Context, int) error) error {
	if parallel <= 0 {
		parallel = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  int
	)
	for range min(parallel, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				stop := first != nil
				mu.Unlock()
				if i >= n || stop {
					return
				}
				if err := f(ctx, i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
						cancel()
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}
