// Package wire holds the experiment and observation as softalloc publishes
// them: the lines of a journal and of a replay campaign, and the body of the
// exec protocol's messages. They are structs of their own, converted to and
// from the algorithms package's types at the edge, so that a field of the
// algorithm can be renamed or retyped without changing a file format that
// users keep and programs write. Version 1 is the format as of softalloc's
// first journals; a change an existing reader could misread is a new version.
package wire

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/softalloc/softalloc/algorithms"
)

// Version is the format version of the types below.
//
// Adaptive trials (issue 21) added optional fields only, each omitted when
// empty: a timing's precision and SLA thresholds, an observation's
// half-widths, goodput intervals and window. A record without them reads
// as it always did (a fixed trial, bare means), and a record with them is
// still version 1: no existing field changed its meaning.
const Version = 1

// Experiment is one trial: hardware, allocation, load and schedule.
type Experiment struct {
	Deployment Deployment       `json:"deployment"`
	Allocation map[string]Pools `json:"allocation"`
	Workload   Workload         `json:"workload"`
	Timing     Timing           `json:"timing"`
}

// Deployment is the chain of tiers, front first.
type Deployment struct {
	// Topology is "1/2/1/2" or the deployment file's name.
	Topology string `json:"topology"`
	Tiers    []Tier `json:"tiers"`
}

// Tier is one tier of replicated servers.
type Tier struct {
	Name     string   `json:"name"`
	Role     string   `json:"role"`
	Replicas int      `json:"replicas"`
	Cores    int      `json:"cores"`
	Pools    []string `json:"pools,omitempty"`
	// Software and Children are what the tier runs and whether its threads
	// are children that each hold their own connections (algorithms.Tier):
	// a different deployment for a journal's key, absent when unset so that
	// the keys and records of tiers without them stay what they were.
	Software string `json:"software,omitempty"`
	Children bool   `json:"children,omitempty"`
	// Permits: the tier's threads are a concurrency limit's permits (virtual threads).
	Permits bool `json:"permits,omitempty"`
}

// Pools are one tier's per-server pool sizes (0: the tier has no such pool).
type Pools struct {
	Threads     int `json:"threads,omitempty"`
	Connections int `json:"connections,omitempty"`
}

// Workload is the number of emulated users.
type Workload struct {
	Users int `json:"users"`
}

// Timing is the trial's schedule, in seconds. With a precision above 0 the
// trial is adaptive: the ramp-up is its least warm-up, the runtime its
// longest window (algorithms.Timing).
type Timing struct {
	RampUpSeconds   float64   `json:"rampUpSeconds"`
	RuntimeSeconds  float64   `json:"runtimeSeconds"`
	RampDownSeconds float64   `json:"rampDownSeconds"`
	Precision       float64   `json:"precision,omitempty"`
	SLAs            []float64 `json:"slas,omitempty"`
	GoodputOnly     bool      `json:"goodputOnly,omitempty"`
}

// Observation is what one trial measured, over its runtime window.
type Observation struct {
	RuntimeSeconds      float64         `json:"runtimeSeconds"`
	Throughput          float64         `json:"throughput"`
	ResponseTimes       Histogram       `json:"responseTimes"`
	Servers             []Server        `json:"servers"`
	Drops               int64           `json:"drops"`
	Retries             int64           `json:"retries"`
	Errors              int64           `json:"errors"`
	ThroughputHalfWidth float64         `json:"throughputHalfWidth,omitempty"`
	Goodput             []Goodput       `json:"goodput,omitempty"`
	Window              *MeasuredWindow `json:"window,omitempty"`
}

// Goodput is goodput at one SLA threshold with its 95% half-width.
type Goodput struct {
	SLA       float64 `json:"sla"`
	Goodput   float64 `json:"goodput"`
	HalfWidth float64 `json:"halfWidth"`
}

// MeasuredWindow says how the trial's window was chosen (algorithms.MeasuredWindow).
type MeasuredWindow struct {
	WarmUpSeconds    float64 `json:"warmUpSeconds"`
	TransientSeconds float64 `json:"transientSeconds,omitempty"`
	IntervalSeconds  float64 `json:"intervalSeconds"`
	Batches          int     `json:"batches"`
	Precision        float64 `json:"precision,omitempty"`
	Precise          bool    `json:"precise"`
	Limit            string  `json:"limit,omitempty"`
	Excess           float64 `json:"excess,omitempty"`
}

// Histogram is a response-time distribution as sparse, ascending buckets.
type Histogram struct {
	Buckets []Bucket `json:"buckets"`
	Sum     float64  `json:"sum"`
}

// Bucket counts the values in (the previous bucket's le, le].
type Bucket struct {
	LE    float64 `json:"le"`
	Count int64   `json:"count"`
}

// Server is one server's share of an observation.
type Server struct {
	Name         string             `json:"name"`
	Tier         string             `json:"tier"`
	CPU          float64            `json:"cpu"`
	Resources    map[string]float64 `json:"resources,omitempty"`
	Pools        []Pool             `json:"pools,omitempty"`
	Throughput   float64            `json:"throughput"`
	ResponseTime float64            `json:"responseTime"`
	GCShare      float64            `json:"gcShare,omitempty"`
	Throttled    float64            `json:"throttled,omitempty"`
	CPUHalfWidth float64            `json:"cpuHalfWidth,omitempty"`
}

// Pool is one soft-resource pool of a server.
type Pool struct {
	Name          string  `json:"name"`
	Size          int     `json:"size"`
	Busy          float64 `json:"busy"`
	FullShare     float64 `json:"fullShare"`
	BusyHalfWidth float64 `json:"busyHalfWidth,omitempty"`
}

// Record is one finished experiment: a replay campaign's line, and the part
// of a journal's line that a campaign reads.
type Record struct {
	Experiment  Experiment  `json:"experiment"`
	Observation Observation `json:"observation"`
}

// FromExperiment converts an experiment for writing.
func FromExperiment(e algorithms.Experiment) Experiment {
	w := Experiment{
		Deployment: FromDeployment(e.Deployment),
		Workload:   Workload{Users: e.Workload.Users},
		Timing:     FromTiming(e.Timing),
	}
	if e.Allocation != nil {
		w.Allocation = make(map[string]Pools, len(e.Allocation))
		for k, p := range e.Allocation {
			w.Allocation[k] = Pools{Threads: p.Threads, Connections: p.Connections}
		}
	}
	return w
}

// FromDeployment converts a deployment for writing.
func FromDeployment(d algorithms.Deployment) Deployment {
	w := Deployment{Topology: d.Topology}
	if d.Tiers != nil {
		w.Tiers = make([]Tier, len(d.Tiers))
		for i, t := range d.Tiers {
			w.Tiers[i] = Tier{Name: t.Name, Role: t.Role, Replicas: t.Replicas, Cores: t.Cores, Pools: t.Pools,
				Software: t.Software, Children: t.Children, Permits: t.Permits}
		}
	}
	return w
}

// FromTiming converts a schedule for writing. The SLA thresholds are
// written for an adaptive trial only: they decide when it ends, while a
// fixed trial measures the same whatever they are, so its journal key and
// exec message stay what they were before trials were adaptive.
func FromTiming(t algorithms.Timing) Timing {
	w := Timing{RampUpSeconds: t.RampUp.Seconds(), RuntimeSeconds: t.Runtime.Seconds(), RampDownSeconds: t.RampDown.Seconds()}
	if t.Adaptive() {
		w.Precision, w.SLAs, w.GoodputOnly = t.Precision, t.SLAs, t.GoodputOnly
	}
	return w
}

// Algorithms converts a read experiment. Validate it first.
func (e Experiment) Algorithms() algorithms.Experiment {
	x := algorithms.Experiment{Deployment: e.Deployment.Algorithms(), Workload: algorithms.Workload{Users: e.Workload.Users}}
	x.Timing, _ = e.Timing.Algorithms()
	if e.Allocation != nil {
		x.Allocation = make(algorithms.Allocation, len(e.Allocation))
		for k, p := range e.Allocation {
			x.Allocation[k] = algorithms.TierPools{Threads: p.Threads, Connections: p.Connections}
		}
	}
	return x
}

// Algorithms converts a read deployment.
func (d Deployment) Algorithms() algorithms.Deployment {
	x := algorithms.Deployment{Topology: d.Topology}
	if d.Tiers != nil {
		x.Tiers = make([]algorithms.Tier, len(d.Tiers))
		for i, t := range d.Tiers {
			x.Tiers[i] = algorithms.Tier{Name: t.Name, Role: t.Role, Replicas: t.Replicas, Cores: t.Cores, Pools: t.Pools,
				Software: t.Software, Children: t.Children, Permits: t.Permits}
		}
	}
	return x
}

// maxSeconds is the longest time a time.Duration holds (about 292 years):
// a larger float converts to whatever the platform gives, a negative runtime
// on amd64.
const maxSeconds = float64(math.MaxInt64) / float64(time.Second)

// Algorithms converts a read schedule, refusing times no trial can have.
func (t Timing) Algorithms() (algorithms.Timing, error) {
	if !(t.RampUpSeconds >= 0 && t.RampUpSeconds < maxSeconds) || !(t.RuntimeSeconds > 0 && t.RuntimeSeconds < maxSeconds) ||
		!(t.RampDownSeconds >= 0 && t.RampDownSeconds < maxSeconds) {
		return algorithms.Timing{}, fmt.Errorf("timing: want rampUpSeconds >= 0, runtimeSeconds > 0, rampDownSeconds >= 0, each below %.0f, got %g, %g, %g",
			maxSeconds, t.RampUpSeconds, t.RuntimeSeconds, t.RampDownSeconds)
	}
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	x := algorithms.Timing{RampUp: sec(t.RampUpSeconds), Runtime: sec(t.RuntimeSeconds), RampDown: sec(t.RampDownSeconds),
		Precision: t.Precision, SLAs: t.SLAs, GoodputOnly: t.GoodputOnly}
	return x, x.CheckAdaptive()
}

// UnmarshalJSON refuses a schedule no trial can have while reading, so that
// every reader of the format gets the same message.
func (t *Timing) UnmarshalJSON(b []byte) error {
	type plain Timing
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	if _, err := Timing(p).Algorithms(); err != nil {
		return err
	}
	*t = Timing(p)
	return nil
}

// Validate checks what every reader of a recorded experiment needs.
func (e Experiment) Validate() error {
	if e.Workload.Users < 1 || e.Deployment.Topology == "" {
		return fmt.Errorf("experiment: want a topology and users >= 1, got %q and %d", e.Deployment.Topology, e.Workload.Users)
	}
	_, err := e.Timing.Algorithms()
	return err
}

// FromObservation converts an observation for writing.
func FromObservation(o algorithms.Observation) Observation {
	w := Observation{RuntimeSeconds: o.RuntimeSeconds, Throughput: o.Throughput, Drops: o.Drops, Retries: o.Retries, Errors: o.Errors,
		ResponseTimes: Histogram{Sum: o.ResponseTimes.Sum}, ThroughputHalfWidth: o.ThroughputHalfWidth}
	for _, g := range o.GoodputIntervals {
		w.Goodput = append(w.Goodput, Goodput(g))
	}
	if o.Window != nil {
		win := MeasuredWindow(*o.Window)
		w.Window = &win
	}
	if o.ResponseTimes.Buckets != nil {
		w.ResponseTimes.Buckets = make([]Bucket, len(o.ResponseTimes.Buckets))
		for i, b := range o.ResponseTimes.Buckets {
			w.ResponseTimes.Buckets[i] = Bucket{LE: b.LE, Count: b.Count}
		}
	}
	if o.Servers != nil {
		w.Servers = make([]Server, len(o.Servers))
		for i, s := range o.Servers {
			ws := Server{Name: s.Name, Tier: s.Tier, CPU: s.CPU, Resources: s.Resources, Throughput: s.Throughput,
				ResponseTime: s.ResponseTime, GCShare: s.GCShare, Throttled: s.Throttled, CPUHalfWidth: s.CPUHalfWidth}
			if s.Pools != nil {
				ws.Pools = make([]Pool, len(s.Pools))
				for j, p := range s.Pools {
					ws.Pools[j] = Pool(p)
				}
			}
			w.Servers[i] = ws
		}
	}
	return w
}

// Algorithms converts a read observation and validates it: every way an
// observation enters softalloc (a journal, a replay campaign, an exec
// program) passes this one check.
func (o Observation) Algorithms() (algorithms.Observation, error) {
	x := algorithms.Observation{RuntimeSeconds: o.RuntimeSeconds, Throughput: o.Throughput, Drops: o.Drops, Retries: o.Retries,
		Errors: o.Errors, ResponseTimes: algorithms.Histogram{Sum: o.ResponseTimes.Sum}, ThroughputHalfWidth: o.ThroughputHalfWidth}
	for _, g := range o.Goodput {
		x.GoodputIntervals = append(x.GoodputIntervals, algorithms.GoodputInterval(g))
	}
	if o.Window != nil {
		win := algorithms.MeasuredWindow(*o.Window)
		x.Window = &win
	}
	if o.ResponseTimes.Buckets != nil {
		x.ResponseTimes.Buckets = make([]algorithms.Bucket, len(o.ResponseTimes.Buckets))
		for i, b := range o.ResponseTimes.Buckets {
			x.ResponseTimes.Buckets[i] = algorithms.Bucket{LE: b.LE, Count: b.Count}
		}
	}
	if o.Servers != nil {
		x.Servers = make([]algorithms.ServerObservation, len(o.Servers))
		for i, s := range o.Servers {
			xs := algorithms.ServerObservation{Name: s.Name, Tier: s.Tier, CPU: s.CPU, Resources: s.Resources, Throughput: s.Throughput,
				ResponseTime: s.ResponseTime, GCShare: s.GCShare, Throttled: s.Throttled, CPUHalfWidth: s.CPUHalfWidth}
			if s.Pools != nil {
				xs.Pools = make([]algorithms.PoolObservation, len(s.Pools))
				for j, p := range s.Pools {
					xs.Pools[j] = algorithms.PoolObservation(p)
				}
			}
			x.Servers[i] = xs
		}
	}
	return x, x.Validate()
}

// FromRecord converts a finished experiment for writing.
func FromRecord(e algorithms.Experiment, o algorithms.Observation) Record {
	return Record{Experiment: FromExperiment(e), Observation: FromObservation(o)}
}

// Algorithms converts and validates a read record.
func (r Record) Algorithms() (algorithms.Experiment, algorithms.Observation, error) {
	if err := r.Experiment.Validate(); err != nil {
		return algorithms.Experiment{}, algorithms.Observation{}, err
	}
	o, err := r.Observation.Algorithms()
	return r.Experiment.Algorithms(), o, err
}
