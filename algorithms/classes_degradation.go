package algorithms

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// DegradationOptions describe seed 000's experiment: hold some classes'
// closed users, raise one class's, and compare each class with its solo
// value (the class alone with the same users on the same setup).
type DegradationOptions struct {
	// Classes take part; the others get no load (default: the swept class,
	// the held ones and every class with steady closed users, in the
	// workload's order; if none of them is in the workload, every class,
	// so that the error says what is wrong with them).
	Classes []string
	// Swept is the class whose closed users are raised through Levels.
	Swept  string
	Levels []int
	// Held overrides the users of held classes (default: the workload's).
	Held map[string]int
	// Setups to compare (default: the workload as it is).
	Setups []ClassSetup
	// Parallel trials at once (default GOMAXPROCS); the numbers do not
	// depend on it.
	Parallel int
}

// DegradationScheme is one setup's degradation scheme: per-class throughput
// at each level of the swept class, and the drop from each class's solo value.
type DegradationScheme struct {
	Setup  string
	Points []DegradationPoint
}

// DegradationPoint is one level of the swept class.
type DegradationPoint struct {
	Level int
	// CPU is the server's utilisation with every class at its users.
	CPU     float64
	Classes []DegradationClass
}

// DegradationClass is one class at one level.
type DegradationClass struct {
	Name  string
	Users int
	// Throughput is responses/s beside Solo, the class alone with the same
	// users on the same setup; Drop is 1 - Throughput/Solo (0 when Solo is 0).
	Throughput   float64
	Solo         float64
	Drop         float64
	Goodput      float64
	Adequacy     float64
	ResponseTime float64
}

// Class is the named class at this point, or nil.
func (p *DegradationPoint) Class(name string) *DegradationClass {
	for i := range p.Classes {
		if p.Classes[i].Name == name {
			return &p.Classes[i]
		}
	}
	return nil
}

// DegradationSchemes runs seed 000's experiment for every setup: for each,
// each held class alone, then at each level the swept class alone and the
// mix. Trials are independent and run in parallel; the numbers do not
// depend on Parallel.
func DegradationSchemes(ctx context.Context, x ClassExperimenter, w ClassWorkload, o DegradationOptions) ([]DegradationScheme, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	names, err := o.classes(w)
	if err != nil {
		return nil, err
	}
	setups := o.Setups
	if len(setups) == 0 {
		setups = []ClassSetup{{}}
	}
	for _, s := range setups {
		if err := w.CheckSetup(s); err != nil {
			return nil, fmt.Errorf("setup %q: %w", s.Name(), err)
		}
	}
	held := map[string]int{}
	for _, n := range names {
		if n == o.Swept {
			continue
		}
		held[n] = w.Class(n).Users
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
	var trials []ClassTrial
	for _, s := range setups {
		for _, n := range names {
			if n != o.Swept {
				trials = append(trials, ClassTrial{Setup: s, Users: map[string]int{n: held[n]}})
			}
		}
		for _, l := range o.Levels {
			trials = append(trials, ClassTrial{Setup: s, Users: map[string]int{o.Swept: l}}, ClassTrial{Setup: s, Users: mix(l)})
		}
	}
	run := classTrials{x, w}
	results := make([]ClassObservation, len(trials))
	err = ForEach(ctx, o.Parallel, len(trials), func(ctx context.Context, i int) error {
		var err error
		results[i], err = run.run(ctx, "degradation", trials[i])
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]DegradationScheme, len(setups))
	i := 0
	for si, s := range setups {
		solo := map[string]float64{}
		for _, n := range names {
			if n != o.Swept {
				solo[n] = results[i].Class(n).Throughput
				i++
			}
		}
		sc := DegradationScheme{Setup: s.Name()}
		for _, l := range o.Levels {
			alone, both := results[i], results[i+1]
			i += 2
			solo[o.Swept] = alone.Class(o.Swept).Throughput
			p := DegradationPoint{Level: l, CPU: both.CPU}
			users := mix(l)
			for _, n := range names {
				r := both.Class(n)
				c := DegradationClass{Name: n, Users: users[n], Throughput: r.Throughput, Solo: solo[n],
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

// defaultDegradationClasses are the swept class, the held ones and every
// class with steady closed users, in the workload's order.
func defaultDegradationClasses(w ClassWorkload, swept string, held map[string]int) []string {
	var names []string
	for _, k := range w.Classes {
		_, given := held[k.Name]
		if k.Name == swept || given || k.SteadyUsers() {
			names = append(names, k.Name)
		}
	}
	return names
}

func (o DegradationOptions) classes(w ClassWorkload) ([]string, error) {
	names := o.Classes
	if len(names) == 0 {
		names = defaultDegradationClasses(w, o.Swept, o.Held)
	}
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
		if k.Open || k.Ramp {
			return nil, fmt.Errorf("class %q: the degradation experiment holds closed users; it has arrivals or a ramp", n)
		}
	}
	if !seen[o.Swept] {
		return nil, fmt.Errorf("swept class %q: not among the classes %s", o.Swept, strings.Join(names, ","))
	}
	if len(o.Levels) == 0 {
		return nil, errors.New("no levels for the swept class")
	}
	for _, l := range o.Levels {
		if l < 0 {
			return nil, fmt.Errorf("level %d of the swept class: want users >= 0", l)
		}
	}
	for n, v := range o.Held {
		if !seen[n] {
			return nil, fmt.Errorf("held class %q: not among the classes %s", n, strings.Join(names, ","))
		}
		if v < 0 {
			return nil, fmt.Errorf("held class %q: want users >= 0, got %d", n, v)
		}
	}
	return names, nil
}

func classNames(w ClassWorkload) []string {
	var n []string
	for _, k := range w.Classes {
		n = append(n, k.Name)
	}
	sort.Strings(n)
	return n
}
