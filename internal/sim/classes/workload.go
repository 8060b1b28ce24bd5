// Package classes is a multi-class application server model on the event
// core of internal/sim/engine: request classes with their own CPU demands, SLA
// threshold, client limit, weight and priority; per-class or shared thread
// pools with a bounded or unbounded accept queue; a CPU scheduling policy
// (processor sharing, round robin with a quantum, strict priority, weighted
// share); closed users (think time, ramps) and open arrivals (steady Poisson,
// bursty on/off); and degradable services with the approach selector of
// Mitrovic et al. It reproduces the degradation schemes, priorities,
// controlled degradation and overload behaviours of the seed texts 000, 001,
// 002 and 004 (see docs/classes.md). Runner runs its trials for the class
// procedures of package algorithms (per-class pool sizing, the degradation
// sweep).
package classes

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/internal/duration"
	"github.com/softalloc/softalloc/internal/oneline"
	"github.com/softalloc/softalloc/internal/safefile"
)

// Duration is seconds; YAML takes "3.9ms", "10s", "1m" or plain seconds.
type Duration = duration.Seconds

// Workload is one server, its request classes and their load: the whole
// input of a trial, read from a YAML workload file.
type Workload struct {
	Name    string  `yaml:"name"`
	Server  Server  `yaml:"server"`
	Classes []Class `yaml:"classes"`
	Run     Run     `yaml:"run"`
}

// Scheduling policies of the CPU.
const (
	// policyPS is egalitarian processor sharing: n jobs on c cores each
	// progress at min(1, c/n).
	policyPS = "ps"
	// policyRR is round robin from one FIFO run queue: a job runs for at
	// most Quantum, then goes to the back.
	policyRR = "rr"
	// policyPriority is strict preemptive priority: higher Priority classes
	// take the cores first (one per job); processor sharing within a level.
	policyPriority = "priority"
	// policyWeighted is weighted share: backlogged classes split the cores
	// in proportion to Weight (at most one core per job, the excess shared
	// on); processor sharing within a class.
	policyWeighted = "weighted"
)

// Admission at a full pool.
const (
	// admissionBounded: at most Backlog requests wait for a thread; the
	// next connection is refused and counts as an error (seed 004's
	// Windows Tomcat).
	admissionBounded = "bounded"
	// admissionUnbounded: every request waits, first come first served
	// (seed 004's Linux Tomcat).
	admissionUnbounded = "unbounded"
)

// Demand distributions.
const (
	deterministic = "deterministic"
	exponential   = "exponential"
)

// Server is one application server.
type Server struct {
	// Cores of the CPU.
	Cores int `yaml:"cores"`
	// Policy is ps, rr, priority or weighted (default ps).
	Policy string `yaml:"policy"`
	// Quantum is the round-robin time slice (policy rr).
	Quantum Duration `yaml:"quantum"`
	// Admission is bounded or unbounded (default unbounded).
	Admission string `yaml:"admission"`
	// Pools are the thread pools; a class names its pool (default: the
	// first). One pool for every class is the shared pool.
	Pools []Pool `yaml:"pools"`
	// Slumps are temporary losses of capacity (seed 004's memory slump).
	Slumps []Slump `yaml:"slumps"`
	// Memory is the heap the requests' memory lives in (nil: memory is not
	// modelled).
	Memory *Memory `yaml:"memory"`
}

// Memory is a garbage-collected heap. A request holds its class's Memory
// from the moment a thread takes it until its response. With L bytes live
// (Base included) in a heap of Heap bytes, the collector runs about once per
// Heap - L bytes allocated and traces L each time, so it costs GCCost x
// L / (Heap - L) of CPU per unit of request work: the cores serve requests
// at speed 1 / (1 + GCCost x L / (Heap - L)). A request whose memory does
// not fit fails at once (OutOfMemoryError) and counts as an error.
type Memory struct {
	Heap Bytes `yaml:"heap"`
	// Base is live whatever the load (the server's own data).
	Base   Bytes   `yaml:"base"`
	GCCost float64 `yaml:"gcCost"`
}

// Bytes is a size; YAML takes "512MB", "1.5GB", "64KB" (powers of 1024,
// as the JVM's -Xmx reads them) or a plain number of bytes.
type Bytes float64

// UnmarshalYAML reads a size.
func (b *Bytes) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseBytes(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: want a size like 512MB, 1GB or 4096, got %q", n.Line, n.Value)}}
	}
	*b = Bytes(v)
	return nil
}

func parseBytes(s string) (float64, error) {
	unit := 1.0
	for _, u := range []struct {
		suffix string
		scale  float64
	}{{"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, unit = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.scale
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, errors.New("bad size")
	}
	return v * unit, nil
}

// Pool is a thread pool: a request holds a thread from the moment it is
// accepted until its response, and waits in the accept queue before that.
type Pool struct {
	Name string `yaml:"name"`
	Size int    `yaml:"size"`
	// Backlog bounds the accept queue under bounded admission (Tomcat's
	// acceptCount).
	Backlog int `yaml:"backlog"`
}

// Slump runs the CPU at Speed (0 < Speed <= 1) from From to To.
type Slump struct {
	From  Duration `yaml:"from"`
	To    Duration `yaml:"to"`
	Speed float64  `yaml:"speed"`
}

// Class is one request class (a service).
type Class struct {
	Name string `yaml:"name"`
	// Demand is the mean CPU time of one request (of its full approach).
	Demand Duration `yaml:"demand"`
	// Distribution of the demand: deterministic or exponential (default).
	Distribution string `yaml:"distribution"`
	// Pool is the name of the class's thread pool (default: the first).
	Pool string `yaml:"pool"`
	// Priority orders classes under policy priority (higher first).
	Priority int `yaml:"priority"`
	// Weight is the class's share under policy weighted (default 1).
	Weight float64 `yaml:"weight"`
	// SLA is the goodput threshold (default: Limit).
	SLA Duration `yaml:"sla"`
	// Limit is the client acceptable time limit of service adequacy
	// (default 1 s).
	Limit Duration `yaml:"limit"`
	// Network is a constant time outside the server per request (wire,
	// client); it counts in the response time, not in the server's.
	Network Duration `yaml:"network"`
	// Approaches are the versions of a degradable service, most costly
	// first; Cost multiplies Demand. None: one approach of cost 1.
	Approaches []Approach `yaml:"approaches"`
	// Selector switches approaches; nil means always the first.
	Selector *Selector `yaml:"selector"`
	// Load is the class's users or arrivals.
	Load Load `yaml:"load"`
	// Objective is what recommend must keep (nil: best effort).
	Objective *Objective `yaml:"objective"`
	// Memory is held by each request from thread to response (needs
	// server.memory).
	Memory Bytes `yaml:"memory"`
}

// Approach is one version of a degradable service.
type Approach struct {
	Name string  `yaml:"name"`
	Cost float64 `yaml:"cost"`
}

// Selector is seed 002's approach selector. The cost of an approach is the
// worst server time (thread pick-up to response, the accept queue excluded)
// of its last Window calls. Past TimeLimit the approach is deactivated (the
// cheapest never is); a cost below Reactivation reactivates the next more
// costly approach, its cost reset. Requests use the most costly active one.
type Selector struct {
	TimeLimit    Duration `yaml:"timeLimit"`
	Reactivation Duration `yaml:"reactivation"`
	Window       int      `yaml:"window"`
}

// Load is closed users (Users, ThinkTime, Ramp) or open Arrivals.
type Load struct {
	// Users is the number of closed users (with Ramp: the most there will
	// be, 0 for no cap).
	Users int `yaml:"users"`
	// ThinkTime is the mean think time (exponential) between a response
	// and the next request; 0 sends at once.
	ThinkTime Duration `yaml:"thinkTime"`
	// Ramp adds users over time.
	Ramp *Ramp `yaml:"ramp"`
	// Arrivals are open Poisson arrivals.
	Arrivals *Arrivals `yaml:"arrivals"`
}

// Ramp starts From users at time 0 and adds By every Every.
type Ramp struct {
	From  int      `yaml:"from"`
	By    int      `yaml:"by"`
	Every Duration `yaml:"every"`
}

// Arrivals are Poisson at Rate per second; with On > 0 only during the
// first On of every Period (bursty on/off), otherwise steady.
type Arrivals struct {
	Rate   float64  `yaml:"rate"`
	On     Duration `yaml:"on"`
	Period Duration `yaml:"period"`
}

// Objective of a class for recommend.
type Objective struct {
	// Adequacy is the least share of responses within the class's Limit.
	Adequacy float64 `yaml:"adequacy"`
	// BestEffort classes have no objective: recommend gives them what the
	// others leave.
	BestEffort bool `yaml:"bestEffort"`
}

// Run is the trial's timing.
type Run struct {
	// WarmUp is simulated before measurement.
	WarmUp Duration `yaml:"warmUp"`
	// Duration is the measured window.
	Duration Duration `yaml:"duration"`
	// Interval bins the time series of hits, errors and durations (0:
	// none). Bins cover the whole trial, warm-up included.
	Interval Duration `yaml:"interval"`
}

// Clone is a deep copy the caller may change.
func (w *Workload) Clone() *Workload {
	c := *w
	c.Server.Pools = append([]Pool(nil), w.Server.Pools...)
	c.Server.Slumps = append([]Slump(nil), w.Server.Slumps...)
	if w.Server.Memory != nil {
		m := *w.Server.Memory
		c.Server.Memory = &m
	}
	c.Classes = make([]Class, len(w.Classes))
	for i, k := range w.Classes {
		k.Approaches = append([]Approach(nil), k.Approaches...)
		if k.Selector != nil {
			s := *k.Selector
			k.Selector = &s
		}
		if k.Load.Ramp != nil {
			r := *k.Load.Ramp
			k.Load.Ramp = &r
		}
		if k.Load.Arrivals != nil {
			a := *k.Load.Arrivals
			k.Load.Arrivals = &a
		}
		if k.Objective != nil {
			o := *k.Objective
			k.Objective = &o
		}
		c.Classes[i] = k
	}
	return &c
}

// Class is the class named name, or nil.
func (w *Workload) Class(name string) *Class {
	for i := range w.Classes {
		if w.Classes[i].Name == name {
			return &w.Classes[i]
		}
	}
	return nil
}

// LoadWorkload reads a workload file; errors name the file and the field.
func LoadWorkload(path string) (*Workload, error) {
	b, err := safefile.Read(path, safefile.MaxInput)
	if err != nil {
		return nil, fmt.Errorf("load workload %q: %w", path, err)
	}
	return parse(b, path)
}

// parse reads a workload from YAML; name labels errors.
func parse(b []byte, name string) (*Workload, error) {
	w := &Workload{}
	if err := oneline.DecodeYAML(b, w); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("load workload %q: the file is empty; want a workload: server (cores, policy, admission, pools), classes and run, as in internal/sim/classes/seed000.yaml", name)
		}
		return nil, fmt.Errorf("load workload %q: %w", name, err)
	}
	w.defaults()
	if err := w.Validate(); err != nil {
		return nil, fmt.Errorf("load workload %q: %w", name, err)
	}
	return w, nil
}

//go:embed seed000.yaml
var seed000YAML []byte

// Seed000 is the embedded seed 000 workload (light, middle and heavy
// services on a 4-CPU Tomcat with a pool of 150), the default of
// `softalloc degradation`.
func Seed000() *Workload {
	w, err := parse(seed000YAML, "seed000.yaml")
	if err != nil {
		panic("classes: embedded seed000.yaml: " + err.Error()) // a build defect, caught by the tests
	}
	return w
}

// defaults fills what a file may leave out.
func (w *Workload) defaults() {
	if w.Server.Policy == "" {
		w.Server.Policy = policyPS
	}
	if w.Server.Admission == "" {
		w.Server.Admission = admissionUnbounded
	}
	for i := range w.Classes {
		k := &w.Classes[i]
		if k.Distribution == "" {
			k.Distribution = exponential
		}
		if k.Pool == "" && len(w.Server.Pools) > 0 {
			k.Pool = w.Server.Pools[0].Name
		}
		if k.Weight == 0 {
			k.Weight = 1
		}
		if k.Limit == 0 {
			k.Limit = 1
		}
		if k.SLA == 0 {
			k.SLA = k.Limit
		}
		if len(k.Approaches) == 0 {
			k.Approaches = []Approach{{Name: "full", Cost: 1}}
		}
	}
}

// Validate reports the first value out of range by its YAML path.
func (w *Workload) Validate() error {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	pos := func(v Duration) bool { return v > 0 && finite(float64(v)) }
	nonneg := func(v Duration) bool { return v >= 0 && finite(float64(v)) }
	s := &w.Server
	if s.Cores < 1 {
		return fmt.Errorf("server.cores: want an integer >= 1, got %d", s.Cores)
	}
	switch s.Policy {
	case policyPS, policyPriority, policyWeighted:
	case policyRR:
		if !pos(s.Quantum) {
			return fmt.Errorf("server.quantum: policy rr wants a time > 0, got %g", float64(s.Quantum))
		}
	default:
		return fmt.Errorf("server.policy: want ps, rr, priority or weighted, got %q", s.Policy)
	}
	switch s.Admission {
	case admissionBounded, admissionUnbounded:
	default:
		return fmt.Errorf("server.admission: want bounded or unbounded, got %q", s.Admission)
	}
	if len(s.Pools) == 0 {
		return errors.New("server.pools: want at least one pool")
	}
	pools := map[string]bool{}
	for i, p := range s.Pools {
		f := fmt.Sprintf("server.pools[%d]", i)
		if p.Name == "" || pools[p.Name] {
			return fmt.Errorf("%s.name: want a unique name, got %q", f, p.Name)
		}
		pools[p.Name] = true
		if p.Size < 1 {
			return fmt.Errorf("%s.size: want an integer >= 1, got %d", f, p.Size)
		}
		if p.Backlog < 0 {
			return fmt.Errorf("%s.backlog: want an integer >= 0, got %d", f, p.Backlog)
		}
	}
	for i, sl := range s.Slumps {
		f := fmt.Sprintf("server.slumps[%d]", i)
		if !nonneg(sl.From) || !(sl.To > sl.From) || !finite(float64(sl.To)) {
			return fmt.Errorf("%s: want 0 <= from < to, got %g..%g", f, float64(sl.From), float64(sl.To))
		}
		if !(sl.Speed > 0 && sl.Speed <= 1) {
			return fmt.Errorf("%s.speed: want a number in (0, 1], got %g", f, sl.Speed)
		}
		if i > 0 && sl.From < s.Slumps[i-1].To {
			return fmt.Errorf("%s.from: slumps must be in order and apart", f)
		}
	}
	if m := s.Memory; m != nil {
		if !(m.Heap > 0) || !finite(float64(m.Heap)) {
			return fmt.Errorf("server.memory.heap: want a size > 0, got %g", float64(m.Heap))
		}
		if !(m.Base >= 0 && m.Base < m.Heap) {
			return fmt.Errorf("server.memory.base: want a size below the heap (%g bytes), got %g", float64(m.Heap), float64(m.Base))
		}
		if !(m.GCCost >= 0) || !finite(m.GCCost) {
			return fmt.Errorf("server.memory.gcCost: want a number >= 0, got %g", m.GCCost)
		}
	}
	if len(w.Classes) == 0 {
		return errors.New("classes: want at least one class")
	}
	if len(w.Classes) > 127 {
		return fmt.Errorf("classes: want at most 127 classes, got %d", len(w.Classes))
	}
	names := map[string]bool{}
	for i := range w.Classes {
		k := &w.Classes[i]
		f := fmt.Sprintf("classes[%d]", i)
		// The name goes into field paths below and into setup strings.
		if k.Name == "" || names[k.Name] || strings.ContainsAny(k.Name, ",=") || strings.IndexFunc(k.Name, unicode.IsControl) >= 0 {
			return fmt.Errorf("%s.name: want a unique name without , or = or control characters, got %q", f, k.Name)
		}
		names[k.Name] = true
		f = "classes." + k.Name
		if !pos(k.Demand) {
			return fmt.Errorf("%s.demand: want a time > 0, got %g", f, float64(k.Demand))
		}
		if k.Distribution != deterministic && k.Distribution != exponential {
			return fmt.Errorf("%s.distribution: want deterministic or exponential, got %q", f, k.Distribution)
		}
		if !pools[k.Pool] {
			return fmt.Errorf("%s.pool: no pool %q in server.pools", f, k.Pool)
		}
		if !(k.Weight > 0) || !finite(k.Weight) {
			return fmt.Errorf("%s.weight: want a number > 0, got %g", f, k.Weight)
		}
		if !pos(k.SLA) || !pos(k.Limit) || !nonneg(k.Network) {
			return fmt.Errorf("%s: want sla and limit > 0 and network >= 0", f)
		}
		if len(k.Approaches) > 100 {
			return fmt.Errorf("%s.approaches: want at most 100", f)
		}
		for j, a := range k.Approaches {
			if !(a.Cost > 0) || !finite(a.Cost) {
				return fmt.Errorf("%s.approaches[%d].cost: want a number > 0, got %g", f, j, a.Cost)
			}
			if j > 0 && !(a.Cost < k.Approaches[j-1].Cost) {
				return fmt.Errorf("%s.approaches[%d].cost: approaches go from the most costly to the cheapest", f, j)
			}
		}
		if sel := k.Selector; sel != nil {
			if !pos(sel.TimeLimit) || !nonneg(sel.Reactivation) || sel.Reactivation >= sel.TimeLimit {
				return fmt.Errorf("%s.selector: want 0 <= reactivation < timeLimit", f)
			}
			if sel.Window < 1 || sel.Window > 1e6 {
				return fmt.Errorf("%s.selector.window: want an integer in 1..1000000, got %d", f, sel.Window)
			}
		}
		if k.Memory != 0 {
			m := s.Memory
			if m == nil {
				return fmt.Errorf("%s.memory: needs server.memory (the heap it lives in)", f)
			}
			if !(k.Memory > 0) || float64(k.Memory) > float64(m.Heap-m.Base) {
				return fmt.Errorf("%s.memory: want a size > 0 that fits the heap left by server.memory.base (%g bytes), got %g",
					f, float64(m.Heap-m.Base), float64(k.Memory))
			}
		}
		if err := k.Load.validate(f + ".load"); err != nil {
			return err
		}
		if o := k.Objective; o != nil && (math.IsNaN(o.Adequacy) || !o.BestEffort && !(o.Adequacy > 0 && o.Adequacy <= 1)) {
			return fmt.Errorf("%s.objective.adequacy: want a share in (0, 1], got %g", f, o.Adequacy)
		}
	}
	if !nonneg(w.Run.WarmUp) || !pos(w.Run.Duration) || !nonneg(w.Run.Interval) {
		return fmt.Errorf("run: want warmUp >= 0, duration > 0 and interval >= 0, got %g, %g, %g",
			float64(w.Run.WarmUp), float64(w.Run.Duration), float64(w.Run.Interval))
	}
	if w.Run.Interval > 0 && float64(w.Run.WarmUp+w.Run.Duration)/float64(w.Run.Interval) > 1e6 {
		return errors.New("run.interval: more than a million bins")
	}
	return nil
}

func (l *Load) validate(f string) error {
	if l.Users < 0 || l.Users > 10_000_000 {
		return fmt.Errorf("%s.users: want an integer in 0..10000000, got %d", f, l.Users)
	}
	if l.ThinkTime < 0 || math.IsInf(float64(l.ThinkTime), 0) || math.IsNaN(float64(l.ThinkTime)) {
		return fmt.Errorf("%s.thinkTime: want a time >= 0", f)
	}
	if r := l.Ramp; r != nil {
		if r.From < 0 || r.By < 0 || !(r.Every > 0) || r.From > 10_000_000 {
			return fmt.Errorf("%s.ramp: want from >= 0, by >= 0 and every > 0", f)
		}
	}
	if a := l.Arrivals; a != nil {
		if l.Users > 0 || l.Ramp != nil {
			return fmt.Errorf("%s: give users or arrivals, not both", f)
		}
		if !(a.Rate >= 0) || math.IsInf(a.Rate, 0) || a.Rate > 1e7 {
			return fmt.Errorf("%s.arrivals.rate: want a rate >= 0 per second, got %g", f, a.Rate)
		}
		if a.On < 0 || (a.On > 0 && !(a.Period >= a.On)) {
			return fmt.Errorf("%s.arrivals: want 0 < on <= period for bursts", f)
		}
	}
	return nil
}

// Concurrency is the class's closed users at time t (0 for open arrivals).
func (l *Load) Concurrency(t float64) int {
	if l.Arrivals != nil {
		return 0
	}
	if r := l.Ramp; r != nil {
		n := r.From + r.By*int(t/float64(r.Every))
		if l.Users > 0 {
			n = min(n, l.Users)
		}
		return n
	}
	return l.Users
}
