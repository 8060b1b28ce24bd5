package algorithms

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// This file holds the seam of the service-class procedures (per-class pool
// sizing and the degradation scheme sweep): one server whose requests fall
// into classes with their own demands, loads and objectives, run trial by
// trial by a ClassExperimenter.

// ClassExperimenter runs one trial of a multi-class workload and returns what
// was measured. Runners (the class simulator today) implement it; the class
// procedures drive one. Implementations must be safe for concurrent use:
// the procedures run independent trials at once.
type ClassExperimenter interface {
	RunClassTrial(ctx context.Context, t ClassTrial) (ClassObservation, error)
}

// ClassTrial is one trial: the server's setup and the users of each class.
type ClassTrial struct {
	Setup ClassSetup
	// Users, when not nil, gives the named classes that many closed users
	// and every other class no load; nil runs the workload's own load (open
	// arrivals and ramps included).
	Users map[string]int
}

// String names the trial in errors: its setup and its users by class.
func (t ClassTrial) String() string {
	if t.Users == nil {
		return fmt.Sprintf("setup %q at the workload's load", t.Setup.Name())
	}
	names := make([]string, 0, len(t.Users))
	for n := range t.Users {
		names = append(names, n)
	}
	sort.Strings(names)
	users := make([]string, len(names))
	for i, n := range names {
		users[i] = fmt.Sprintf("%s=%d", n, t.Users[n])
	}
	return fmt.Sprintf("setup %q with users %s", t.Setup.Name(), strings.Join(users, ","))
}

// CPUPolicy is how a server's cores are shared among the requests holding a
// thread.
type CPUPolicy string

// The CPU policies of the class model (docs/classes.md).
const (
	// PolicyPS is egalitarian processor sharing: n jobs on c cores each
	// progress at min(1, c/n).
	PolicyPS CPUPolicy = "ps"
	// PolicyRR is round robin from one FIFO run queue with a time slice.
	PolicyRR CPUPolicy = "rr"
	// PolicyPriority is strict preemptive priority by class.
	PolicyPriority CPUPolicy = "priority"
	// PolicyWeighted splits the cores among busy classes by weight.
	PolicyWeighted CPUPolicy = "weighted"
)

// ClassSetup is one server configuration to compare: the CPU policy and its
// parameters, and a shared pool or one pool per class. The zero value keeps
// the workload's configuration.
type ClassSetup struct {
	// Label names the setup in tables and plots (default: derived).
	Label string
	// Policy is the CPU policy ("" keeps the workload's).
	Policy CPUPolicy
	// QuantumSeconds is the rr time slice (0 keeps the workload's).
	QuantumSeconds float64
	// PerClassPools gives every class its own pool named after it.
	PerClassPools bool
	// PoolSize resizes every pool, the shared one or each per-class one
	// (0 keeps the size of the workload's first pool); PoolSizes sizes the
	// named classes' own pools (with PerClassPools).
	PoolSize  int
	PoolSizes map[string]int
	// Weights and Priorities override the classes' (weighted, priority;
	// a higher priority is served first).
	Weights    map[string]float64
	Priorities map[string]int
}

// Name is the label, or one derived from the policy ("file" for the
// workload's own).
func (s ClassSetup) Name() string {
	if s.Label != "" {
		return s.Label
	}
	n := string(s.Policy)
	if n == "" {
		n = "file"
	}
	if s.Policy == PolicyRR && s.QuantumSeconds > 0 {
		n += fmt.Sprintf(" %gms", s.QuantumSeconds*1000)
	}
	if s.PerClassPools {
		n += " per-class pools"
	}
	return n
}

// ClassObservation is what a load generator and the server's monitors report
// for one trial, over its measured window.
type ClassObservation struct {
	// CPU is the server's mean CPU utilisation, all cores, in [0,1].
	CPU float64
	// Classes holds one measurement per class of the workload.
	Classes []ClassMeasurement
}

// ClassMeasurement is one class over the measured window.
type ClassMeasurement struct {
	Name string
	// Throughput is responses per second; Goodput those within the SLA.
	Throughput float64
	Goodput    float64
	// ErrorsPerSecond are refused or failed requests.
	ErrorsPerSecond float64
	// Adequacy is the share of requests answered within the class's client
	// limit, in [0,1]; refused ones count as inadequate.
	Adequacy float64
	// ResponseTime is the mean and P90 the 90th percentile response time,
	// in seconds (0 when nothing completed).
	ResponseTime float64
	P90          float64
}

// Class is the measurement of the named class (the zero value when absent).
func (o ClassObservation) Class(name string) ClassMeasurement {
	for _, c := range o.Classes {
		if c.Name == name {
			return c
		}
	}
	return ClassMeasurement{}
}

// ClassWorkload describes a multi-class workload as the class procedures
// need it: the server and each class's load and objective.
type ClassWorkload struct {
	Name  string
	Cores int
	// Policy and QuantumSeconds are the workload's own CPU policy and rr
	// time slice (0 when it has none).
	Policy         CPUPolicy
	QuantumSeconds float64
	// SharedPool is the size of the workload's (first) shared pool.
	SharedPool int
	Classes    []ServiceClass
}

// ServiceClass is one request class of a workload.
type ServiceClass struct {
	Name string
	// Adequacy is the objective: the least share of responses within
	// LimitSeconds; 0 for a best-effort class.
	Adequacy     float64
	LimitSeconds float64
	// Users is the closed users the workload gives the class (with a ramp,
	// the most there will be; 0 for no cap). Open says its load is open
	// arrivals instead, Ramp that its users grow over the trial.
	Users int
	Open  bool
	Ramp  bool
	// StartUsers and EndUsers are its closed users at the start of a trial
	// and at the end of the measured window (0 for open arrivals).
	StartUsers int
	EndUsers   int
}

// HasObjective says the class is not best effort.
func (c ServiceClass) HasObjective() bool { return c.Adequacy > 0 }

// SteadyUsers says the class's load is a fixed number of closed users: the
// load the degradation experiment can hold.
func (c ServiceClass) SteadyUsers() bool { return !c.Open && !c.Ramp && c.Users > 0 }

// Class is the named class, or nil.
func (w ClassWorkload) Class(name string) *ServiceClass {
	for i := range w.Classes {
		if w.Classes[i].Name == name {
			return &w.Classes[i]
		}
	}
	return nil
}

// Validate reports the first value out of range, naming it.
func (w ClassWorkload) Validate() error {
	if w.Cores < 1 {
		return fmt.Errorf("class workload %q: cores: want an integer >= 1, got %d", w.Name, w.Cores)
	}
	if w.SharedPool < 1 {
		return fmt.Errorf("class workload %q: shared pool: want a size >= 1, got %d", w.Name, w.SharedPool)
	}
	if len(w.Classes) == 0 {
		return fmt.Errorf("class workload %q: want at least one class", w.Name)
	}
	seen := map[string]bool{}
	for _, c := range w.Classes {
		if c.Name == "" || seen[c.Name] {
			return fmt.Errorf("class workload %q: class name: want a unique name, got %q", w.Name, c.Name)
		}
		seen[c.Name] = true
		if !(c.Adequacy >= 0 && c.Adequacy <= 1) {
			return fmt.Errorf("class workload %q: class %q: adequacy: want a share in [0, 1], got %g", w.Name, c.Name, c.Adequacy)
		}
		if !(c.LimitSeconds > 0) || math.IsInf(c.LimitSeconds, 0) {
			return fmt.Errorf("class workload %q: class %q: limit: want a time > 0, got %g", w.Name, c.Name, c.LimitSeconds)
		}
		if c.Users < 0 || c.StartUsers < 0 || c.EndUsers < 0 {
			return fmt.Errorf("class workload %q: class %q: users: want >= 0, got %d (%d at the start, %d at the end)",
				w.Name, c.Name, c.Users, c.StartUsers, c.EndUsers)
		}
	}
	return nil
}

// CheckSetup reports a setup that names no class of the workload or that the
// server cannot run, before any trial is spent on it.
func (w ClassWorkload) CheckSetup(s ClassSetup) error {
	for name, v := range s.Weights {
		if w.Class(name) == nil {
			return fmt.Errorf("weight for %q: no such class", name)
		}
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("weight for %q: want a number > 0, got %g", name, v)
		}
	}
	for name := range s.Priorities {
		if w.Class(name) == nil {
			return fmt.Errorf("priority for %q: no such class", name)
		}
	}
	for name, n := range s.PoolSizes {
		if w.Class(name) == nil {
			return fmt.Errorf("pool for %q: no such class", name)
		}
		if n < 1 {
			return fmt.Errorf("pool for %q: want a size >= 1, got %d", name, n)
		}
	}
	if s.PoolSize < 0 {
		return fmt.Errorf("pool size: want a size >= 1 (0 keeps the workload's), got %d", s.PoolSize)
	}
	if !(s.QuantumSeconds >= 0) || math.IsInf(s.QuantumSeconds, 0) {
		return fmt.Errorf("quantum: want a time > 0 (0 keeps the workload's), got %g", s.QuantumSeconds)
	}
	policy := s.Policy
	if policy == "" {
		policy = w.Policy
	}
	switch policy {
	case PolicyPS, PolicyPriority, PolicyWeighted:
	case PolicyRR:
		if s.QuantumSeconds == 0 && !(w.QuantumSeconds > 0) {
			return fmt.Errorf("policy rr: want a quantum (workload %q has none)", w.Name)
		}
	default:
		return fmt.Errorf("policy %q: want ps, rr, priority or weighted", policy)
	}
	return nil
}

// ErrNoClassObjective is returned when no class states an objective.
var ErrNoClassObjective = errors.New("no class has an objective (objective: {adequacy: 0.9})")

// classTrials runs class trials and checks that each observation measures
// every class of the workload, so that the procedures can look classes up
// without checking.
type classTrials struct {
	x ClassExperimenter
	w ClassWorkload
}

func (c classTrials) run(ctx context.Context, procedure string, t ClassTrial) (ClassObservation, error) {
	o, err := c.x.RunClassTrial(ctx, t)
	if err != nil {
		return ClassObservation{}, fmt.Errorf("%s: trial on %s: %w", procedure, t, err)
	}
	for _, k := range c.w.Classes {
		found := false
		for _, m := range o.Classes {
			found = found || m.Name == k.Name
		}
		if !found {
			return ClassObservation{}, fmt.Errorf("%s: trial on %s: the observation has no class %q", procedure, t, k.Name)
		}
	}
	return o, nil
}
