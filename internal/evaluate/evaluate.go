// Package evaluate measures softalloc on the simulator: how fast the
// simulator is, how few experiments a recommendation needs, and how close it
// comes to the best allocation of an exhaustive grid (algorithms.Compare,
// which `softalloc validate` runs too). `softalloc evaluate` writes the report.
package evaluate

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/report"
	"github.com/softalloc/softalloc/internal/runner"
	"github.com/softalloc/softalloc/internal/sim"
	"github.com/softalloc/softalloc/internal/topology"
)

// Config says what to measure.
type Config struct {
	// Topologies for the experiment and quality sections.
	Topologies []string
	Seeds      []uint64
	// Timing of every campaign and grid trial: adaptive (a precision above
	// 0: its least ramp-up and longest window) or fixed. The speed section
	// always uses the simulator's default fixed trial.
	Timing algorithms.Timing
	// FixedTiming is the fixed-length trial the default campaign is run
	// with too, beside the adaptive one (unused when Timing is fixed).
	FixedTiming algorithms.Timing
	SLAs        []float64
	// Parallel trials of a grid at once.
	Parallel int
	// ModelPath is the simulator's parameter file ("": the embedded RUBBoS testbed).
	ModelPath string
	// SpeedUsers are the workloads of the growth-with-users trials;
	// SpeedTiming the speed section's trial (the simulator's default trial).
	SpeedUsers  []int
	SpeedTiming algorithms.Timing
	// Coverage says how the intervals' coverage is measured (no seeds: not).
	Coverage CoverageConfig
	// Precisions are tried for the default campaign as users run it (the
	// simulator's default trials, 12 min at most), beside --fixed: the
	// measurement behind the default precision (none: not).
	Precisions []float64
	// Reference is a fixed-length evaluation to compare the ratios with.
	Reference *Report
	// ReferenceGrids are the Reference's grids (its GridsFile): the ground
	// truth this run's answers are judged against on every topology and
	// seed they hold, measured once with fixed-length trials. A topology and
	// seed they lack measures its own grid.
	ReferenceGrids map[GridKey][]GridCurves
	// ScreenedGrid names the topology and seed whose own grid is measured
	// too when the reference's is the ground truth, as validate measures
	// one (adaptive trials, screened): what such a grid costs, and whether
	// it ranks the allocations as the reference's does.
	ScreenedGrid GridKey
	// RampTiming is the trial of the ramp campaign and of today's default
	// campaign set beside it (section 4), both as recommend runs them on the
	// simulator (AdaptiveTiming: windows of at most 12 min), whatever
	// Timing's longest window. Not adaptive, or a fixed run: no section 4.
	RampTiming algorithms.Timing
	// Log receives one line per finished piece of work (nil: silent).
	Log func(format string, a ...any)
}

// AdaptiveTiming is the simulator's default adaptive trial, as --runner
// sim runs it: the least ramp-up, the 12-minute longest window, the
// default precision.
func AdaptiveTiming() algorithms.Timing {
	t := sim.DefaultTiming()
	t.RampUp, t.Precision = sim.AdaptiveRampUp, algorithms.DefaultPrecision
	return t
}

// DefaultConfig measures six topologies on two seeds.
func DefaultConfig() Config {
	return Config{
		Topologies:   []string{"1/1/1/1", "1/2/1/2", "1/4/1/4", "1/2/1", "2/4/1/4", "1/6/2/6"},
		Seeds:        []uint64{1, 2},
		Timing:       AdaptiveTiming(),
		FixedTiming:  sim.DefaultTiming(),
		SLAs:         []float64{0.2, 0.5, 2},
		Parallel:     runtime.GOMAXPROCS(0),
		SpeedUsers:   []int{1000, 10000, 100000},
		SpeedTiming:  sim.DefaultTiming(),
		Coverage:     DefaultCoverage(),
		Precisions:   []float64{0.01, 0.02, 0.05},
		ScreenedGrid: GridKey{"1/4/1/4", 1},
		RampTiming:   AdaptiveTiming(),
	}
}

// PrecisionRun is the default campaign on one topology and seed at one
// precision (0: --fixed), with the simulator's default trials.
type PrecisionRun struct {
	Topology   string  `json:"topology"`
	Seed       uint64  `json:"seed"`
	Precision  float64 `json:"precision"`
	Allocation string  `json:"allocation"`
	Critical   string  `json:"critical"`
	MinJobs    float64 `json:"minJobs"`
	// Experiments, CPU and simulated seconds of the campaign.
	Experiments      int     `json:"experiments"`
	CPUSeconds       float64 `json:"cpuSeconds"`
	SimulatedSeconds float64 `json:"simulatedSeconds"`
	// FromReference says a fixed campaign is the reference's, measured once.
	FromReference bool `json:"fromReference,omitempty"`
}

// precisionJobs are the default campaign on every topology and seed at
// each precision and fixed, one job each, writing into out in that order.
// An adaptive run takes the fixed ones from a reference that holds them
// all, and a fixed run measures only those.
func precisionJobs(cfg Config, logf func(string, ...any)) ([]job, []PrecisionRun, error) {
	ps := append([]float64{0}, cfg.Precisions...)
	if !cfg.Timing.Adaptive() {
		ps = ps[:1]
	}
	out := make([]PrecisionRun, 0, len(cfg.Topologies)*len(cfg.Seeds)*len(ps))
	if fixed := cfg.referenceFixedRuns(); fixed != nil && cfg.Timing.Adaptive() {
		out, ps = append(out, fixed...), ps[1:]
	}
	var jobs []job
	for _, p := range ps {
		for _, topo := range cfg.Topologies {
			d, err := parse(topo)
			if err != nil {
				return nil, nil, err
			}
			for _, seed := range cfg.Seeds {
				t := sim.DefaultTiming()
				if p > 0 {
					t = AdaptiveTiming()
					t.Precision = p
				}
				slot := len(out)
				out = append(out, PrecisionRun{Topology: topo, Seed: seed, Precision: p})
				jobs = append(jobs, job{name: fmt.Sprintf("the default campaign on %s seed %d at %s", topo, seed, precisionName(p)),
					run: func(ctx context.Context) error {
						_, c, err := runCampaign(ctx, cfg, d, seed, algorithms.ModeEfficient, algorithms.DefaultOptions().MinJobsAt, t)
						if err != nil {
							return err
						}
						r := &out[slot]
						r.Allocation, r.Critical, r.MinJobs, r.Experiments, r.CPUSeconds, r.SimulatedSeconds = c.Allocation, c.Critical,
							c.MinJobs, c.Experiments, c.CPUSeconds, c.SimulatedSeconds
						logf("precision %s: %s seed %d: %s (%.2f s)", precisionName(p), topo, seed, c.Allocation, c.CPUSeconds)
						return nil
					}})
			}
		}
	}
	return jobs, out, nil
}

// referenceFixedRuns are the reference's fixed campaigns of the precision
// table, if it holds one for every topology and seed of this run (nil if
// not), in this run's order.
func (cfg Config) referenceFixedRuns() []PrecisionRun {
	if cfg.Reference == nil {
		return nil
	}
	have := map[GridKey]PrecisionRun{}
	for _, r := range cfg.Reference.Precisions {
		if r.Precision == 0 {
			have[GridKey{r.Topology, r.Seed}] = r
		}
	}
	var out []PrecisionRun
	for _, topo := range cfg.Topologies {
		for _, seed := range cfg.Seeds {
			r, ok := have[GridKey{topo, seed}]
			if !ok {
				return nil
			}
			r.FromReference = true
			out = append(out, r)
		}
	}
	return out
}

// precisionName is a precision as the reports write it (0: fixed).
func precisionName(p float64) string {
	if p == 0 {
		return "fixed"
	}
	return report.Percent(100*p, 0, false)
}

// experimenter is the sim runner with a seed, as --runner sim builds it.
func (cfg Config) experimenter(seed uint64) (algorithms.Experimenter, error) {
	r, err := runner.New(runner.Config{Name: "sim", Seed: seed, ModelPath: cfg.ModelPath})
	if err != nil {
		return nil, err
	}
	return r.Experimenter, nil
}

// Machine describes where the figures were measured.
type Machine struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	GoVersion string `json:"goVersion"`
	OS        string `json:"os"`
	Date      string `json:"date"`
}

func describeMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH,
		Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), CPU: "unknown"}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// SpeedTrial is one timed trial of the simulator, on one core.
type SpeedTrial struct {
	Label           string  `json:"label"`
	Topology        string  `json:"topology"`
	Users           int     `json:"users"`
	WallSeconds     float64 `json:"wallSeconds"`
	Events          int64   `json:"events"`
	Pages           int64   `json:"pages"`
	EventsPerSecond float64 `json:"eventsPerSecond"`
	EventsPerPage   float64 `json:"eventsPerPage"`
	NsPerEvent      float64 `json:"nsPerEvent"`
	// SimulatedPerWall is simulated seconds per wall second.
	SimulatedPerWall float64 `json:"simulatedPerWall"`
}

// Speed is the simulator-speed section.
type Speed struct {
	Trials []SpeedTrial `json:"trials"`
	// Fit of wall time against events over the trials: wall = a + b x events.
	InterceptSeconds float64 `json:"interceptSeconds"`
	NsPerEvent       float64 `json:"nsPerEvent"`
	R2               float64 `json:"r2"`
	// Linear says whether growth is linear in simulated events: R2 >= 0.98
	// and every trial's ns/event within 35% of the fit's.
	Linear bool `json:"linear"`
}

// Campaign is one recommend campaign.
type Campaign struct {
	Mode        string  `json:"mode"`
	Seed        uint64  `json:"seed"`
	Allocation  string  `json:"allocation"`
	Critical    string  `json:"critical"`
	Saturation  int     `json:"saturationWorkload"`
	Predicted   int     `json:"predictedSaturation,omitempty"`
	MinJobs     float64 `json:"minJobs"`
	Reading     string  `json:"reading"`
	Experiments int     `json:"experiments"`
	WallSeconds float64 `json:"wallSeconds"`
	// CPUSeconds is the process's CPU time over the campaign (it runs
	// alone); SimulatedSeconds the simulated time of its trials, warm-ups
	// included; Precision its trials' (0: fixed).
	CPUSeconds       float64 `json:"cpuSeconds"`
	SimulatedSeconds float64 `json:"simulatedSeconds"`
	Precision        float64 `json:"precision,omitempty"`
	// Imprecise counts its trials that ended at the longest window.
	Imprecise int    `json:"imprecise,omitempty"`
	Error     string `json:"error,omitempty"`
	// EngineSeconds is the simulated time the simulator ran for the
	// campaign: a refined trial adds only what it went on past the coarser
	// one (sim.Trials), where SimulatedSeconds counts it whole; a ramp's
	// windows are one simulation, never simulated twice.
	EngineSeconds float64 `json:"engineSeconds,omitempty"`
	// Ramps and Windows are a ramp campaign's (recommend --ramp): its
	// ramps and their windows; Experiments counts its ramps and its
	// confirming trials.
	Ramps   int `json:"ramps,omitempty"`
	Windows int `json:"windows,omitempty"`
}

// Quality is one allocation's maximum goodput over the grid's best, per SLA.
type Quality struct {
	Role       string             `json:"role"`
	Allocation string             `json:"allocation"`
	Ratio      map[string]float64 `json:"ratio"` // keyed by SLA threshold as written
	// Indistinguishable lists the thresholds at which the allocation
	// cannot be told from the grid's best (algorithms.Compared).
	Indistinguishable []string `json:"indistinguishable,omitempty"`
}

// TopologyResult is everything measured on one topology with one seed.
type TopologyResult struct {
	Topology  string     `json:"topology"`
	Seed      uint64     `json:"seed"`
	Campaigns []Campaign `json:"campaigns"`
	// Fixed is the default campaign with fixed-length trials, beside the
	// adaptive Campaigns[0] (nil when every trial is fixed).
	Fixed *Campaign `json:"fixed,omitempty"`
	// GridAllocations x GridWorkloads is the exhaustive grid's cost.
	GridAllocations int       `json:"gridAllocations"`
	GridWorkloads   []int     `json:"gridWorkloads"`
	GridBest        Quality   `json:"gridBest"`
	Compared        []Quality `json:"compared"`
	// RandomBudget is the efficient mode's experiment count, spent on
	// random (allocation, workload) picks from the grid.
	RandomBudget int `json:"randomBudget"`
	// GridSimulatedSeconds and GridImprecise: the grid's simulated time and
	// its trials that ended at the longest window; GridTrials what it ran,
	// the screening's re-measures included, and GridWallSeconds how long.
	GridSimulatedSeconds float64 `json:"gridSimulatedSeconds"`
	GridTrials           int     `json:"gridTrials"`
	GridWallSeconds      float64 `json:"gridWallSeconds"`
	GridImprecise        int     `json:"gridImprecise,omitempty"`
	// GridSource is where the grid's curves came from: "measured" by this
	// run, or the "reference" (Config.ReferenceGrids), this run having
	// measured only the allocations it lacked (GridTrials and the other
	// grid figures count those).
	GridSource string `json:"gridSource,omitempty"`
	// ReferenceCompared are the reference's own answers (its roles) judged
	// on the same grid as Compared, when the grid is the reference's.
	ReferenceCompared []Quality `json:"referenceCompared,omitempty"`
	// Grid is the grid's curves when this run measured it (GridsFile).
	Grid []GridCurves `json:"-"`
}

// ScreenedGrid is a topology's own grid as validate measures one
// (adaptive trials, screened) beside the reference's fixed-length grid of
// the same topology and seed.
type ScreenedGrid struct {
	Topology    string `json:"topology"`
	Seed        uint64 `json:"seed"`
	Allocations int    `json:"allocations"`
	Workloads   []int  `json:"workloads"`
	// Trials (re-measures included), their simulated time, how many ended
	// at the longest window, and the grid's wall and CPU time (one core).
	Trials           int     `json:"trials"`
	SimulatedSeconds float64 `json:"simulatedSeconds"`
	Imprecise        int     `json:"imprecise"`
	WallSeconds      float64 `json:"wallSeconds"`
	CPUSeconds       float64 `json:"cpuSeconds"`
	// The reference's grid of the same topology and seed: its allocations,
	// trials and their simulated time.
	ReferenceAllocations      int     `json:"referenceAllocations"`
	ReferenceTrials           int     `json:"referenceTrials"`
	ReferenceSimulatedSeconds float64 `json:"referenceSimulatedSeconds"`
	// Best is this grid's best at the highest threshold; BestOnReference its
	// ratios on the reference's grid (measured there if the grid lacks it).
	Best            Quality            `json:"best"`
	BestOnReference map[string]float64 `json:"bestOnReference,omitempty"`
	// Compared are this run's roles on this grid (their ratios on the
	// reference's grid are the topology's Compared).
	Compared []Quality `json:"compared"`
}

// Report is the whole evaluation.
type Report struct {
	Machine  Machine          `json:"machine"`
	Config   ReportConfig     `json:"config"`
	Speed    Speed            `json:"speed"`
	Results  []TopologyResult `json:"results"`
	Coverage *Coverage        `json:"coverage,omitempty"`
	// CoverageTruth is the long-run means the coverage is measured
	// against, and common random numbers' effect: fixed-length trials, so
	// a fixed-length evaluation measures them once for the adaptive ones.
	CoverageTruth *CoverageTruth `json:"coverageTruth,omitempty"`
	ScreenedGrid  *ScreenedGrid  `json:"screenedGrid,omitempty"`
	Reference     *Reference     `json:"reference,omitempty"`
	Precisions    []PrecisionRun `json:"precisions,omitempty"`
	// Ramps is the ramp campaign beside today's default campaign and the
	// fixed-length one on every topology and seed (adaptive runs only).
	Ramps     []RampRow `json:"ramps,omitempty"`
	WallTotal float64   `json:"wallSeconds"`
	CPUTotal  float64   `json:"cpuSeconds,omitempty"`
	// Sections is the time of each part of the run.
	Sections Sections `json:"sections"`
	// Load is the machine's load average (1, 5, 15 min) at the start and
	// the end of the run: the machine is shared.
	Load [2][3]float64 `json:"load,omitempty"`
}

// Sections is the time of each part of an evaluation, seconds. The speed
// trials run alone first; every other part is made of jobs that run
// Config.Parallel at a time, one core each, so a part's cost is the CPU
// time of its jobs.
type Sections struct {
	Speed float64 `json:"speedSeconds"`
	// Topologies is every topology and seed's campaigns and grid (the
	// reference's, with the allocations it lacked, or its own), and
	// ScreenedGrid the one grid measured beside the reference's.
	TopologiesCPU   float64 `json:"topologiesCPUSeconds"`
	ScreenedGridCPU float64 `json:"screenedGridCPUSeconds,omitempty"`
	PrecisionsCPU   float64 `json:"precisionsCPUSeconds,omitempty"`
	CoverageCPU     float64 `json:"coverageCPUSeconds,omitempty"`
}

// ReportConfig records the settings of the run.
type ReportConfig struct {
	Topologies     []string `json:"topologies"`
	Seeds          []uint64 `json:"seeds"`
	RuntimeSeconds float64  `json:"runtimeSeconds"`
	WarmUpSeconds  float64  `json:"warmUpSeconds"`
	Precision      float64  `json:"precision,omitempty"`
	FixedWarmUp    float64  `json:"fixedWarmUpSeconds,omitempty"`
	// RampRuntimeSeconds and RampPrecision are Config.RampTiming's: the
	// longest window and the precision of the ramp campaign and of the
	// default campaign beside it, as recommend runs them.
	RampRuntimeSeconds float64   `json:"rampRuntimeSeconds,omitempty"`
	RampPrecision      float64   `json:"rampPrecision,omitempty"`
	SLAs               []float64 `json:"slas"`
	// Parallel is how many jobs ran at once.
	Parallel int `json:"parallel,omitempty"`
}

// Run measures everything: the speed trials alone, then every other
// measurement as independent jobs, Config.Parallel at a time.
func Run(ctx context.Context, cfg Config) (Report, error) {
	start := time.Now()
	logf := cfg.logger()
	cpu0 := cpuSeconds()
	rep := Report{Machine: describeMachine(), Config: ReportConfig{Topologies: cfg.Topologies, Seeds: cfg.Seeds,
		RuntimeSeconds: cfg.Timing.Runtime.Seconds(), WarmUpSeconds: cfg.Timing.RampUp.Seconds(), Precision: cfg.Timing.Precision,
		SLAs: cfg.SLAs, Parallel: cfg.Parallel}}
	if !threadCPU {
		rep.Config.Parallel = 1
	}
	if cfg.Timing.Adaptive() {
		rep.Config.FixedWarmUp = cfg.FixedTiming.RampUp.Seconds()
	}
	if cfg.ramps() {
		rep.Config.RampRuntimeSeconds, rep.Config.RampPrecision = cfg.RampTiming.Runtime.Seconds(), cfg.RampTiming.Precision
	}
	rep.Load[0] = loadAverage()
	var err error
	if rep.Speed, err = measureSpeed(ctx, cfg, logf); err != nil {
		return rep, err
	}
	rep.Sections.Speed = time.Since(start).Seconds()

	// The jobs, longest first: the topology with the screened grid, the
	// other topologies, the campaigns at each precision (fixed ones first),
	// the coverage's trials.
	var jobs []job
	var sections []*float64
	add := func(section *float64, js ...job) {
		jobs = append(jobs, js...)
		for range js {
			sections = append(sections, section)
		}
	}
	rep.Results = make([]TopologyResult, len(cfg.Topologies)*len(cfg.Seeds))
	if cfg.ramps() {
		rep.Ramps = make([]RampRow, len(rep.Results))
	}
	var topoJobs []job
	// The largest deployments first: their campaigns and grids take longest.
	order := make([]int, len(cfg.Topologies))
	servers := make([]int, len(cfg.Topologies))
	for ti, topo := range cfg.Topologies {
		order[ti] = ti
		if d, err := parse(topo); err == nil {
			for _, t := range d.Tiers {
				servers[ti] += t.Replicas
			}
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return servers[order[i]] > servers[order[j]] })
	for _, ti := range order {
		topo := cfg.Topologies[ti]
		for si, seed := range cfg.Seeds {
			slot := ti*len(cfg.Seeds) + si
			j := job{name: fmt.Sprintf("evaluate %s seed %d", topo, seed), run: func(ctx context.Context) error {
				r, sg, rr, err := evaluateTopology(ctx, cfg, topo, seed, logf)
				rep.Results[slot] = r
				if sg != nil {
					rep.ScreenedGrid = sg
				}
				if rr != nil {
					rep.Ramps[slot] = *rr
				}
				return err
			}}
			if (GridKey{topo, seed}) == cfg.ScreenedGrid && cfg.referenceGrid(topo, seed) != nil && cfg.Timing.Adaptive() {
				topoJobs = append([]job{j}, topoJobs...)
			} else {
				topoJobs = append(topoJobs, j)
			}
		}
	}
	add(&rep.Sections.TopologiesCPU, topoJobs...)
	if len(cfg.Precisions) > 0 {
		pj, runs, err := precisionJobs(cfg, logf)
		if err != nil {
			return rep, fmt.Errorf("evaluate precisions: %w", err)
		}
		rep.Precisions = runs
		add(&rep.Sections.PrecisionsCPU, pj...)
	}
	cov, err := newCoverageRun(cfg)
	if err != nil {
		return rep, fmt.Errorf("evaluate coverage: %w", err)
	}
	if cov != nil {
		add(&rep.Sections.CoverageCPU, cov.jobs()...)
	}
	cpu, err := runJobs(ctx, cfg.Parallel, jobs)
	if err != nil {
		return rep, err
	}
	for i, c := range cpu {
		*sections[i] += c
	}
	if sg := rep.ScreenedGrid; sg != nil {
		// Counted in its topology's job, shown apart.
		rep.Sections.ScreenedGridCPU = sg.CPUSeconds
		rep.Sections.TopologiesCPU -= sg.CPUSeconds
	}
	if cov != nil {
		rep.Coverage, rep.CoverageTruth = cov.result()
	}
	rep.WallTotal = time.Since(start).Seconds()
	rep.CPUTotal = cpuSeconds() - cpu0
	rep.Load[1] = loadAverage()
	if cfg.Reference != nil {
		ref := compareReference(*cfg.Reference, rep)
		rep.Reference = &ref
	}
	return rep, nil
}

// checkReferenceCampaign wants this run's fixed-length default campaign
// to be the reference's, trial for trial (the same answer, experiments and
// minJobs to the last digit), where the reference ran it with the same
// trials: else the reference was measured by another campaign or
// simulator, and its fixed-length figures are not this code's.
func (cfg Config) checkReferenceCampaign(topo string, seed uint64, c Campaign) error {
	ref := cfg.Reference
	if ref == nil || ref.Config.Precision > 0 || ref.Config.RuntimeSeconds != cfg.FixedTiming.Runtime.Seconds() ||
		ref.Config.WarmUpSeconds != cfg.FixedTiming.RampUp.Seconds() {
		return nil
	}
	for _, r := range ref.Results {
		if r.Topology != topo || r.Seed != seed || len(r.Campaigns) == 0 {
			continue
		}
		f := r.Campaigns[0]
		if f.Allocation != c.Allocation || f.Experiments != c.Experiments || f.MinJobs != c.MinJobs {
			return fmt.Errorf("the reference is stale: its fixed-length campaign recommended %s from minJobs %g in %d experiments, "+
				"this run's %s from %g in %d (regenerate it: make evaluate-fixed)", f.Allocation, f.MinJobs, f.Experiments,
				c.Allocation, c.MinJobs, c.Experiments)
		}
	}
	return nil
}

// logger is cfg.Log made safe for the jobs' goroutines (nil: silent).
func (cfg Config) logger() func(string, ...any) {
	if cfg.Log == nil {
		return func(string, ...any) {}
	}
	var mu sync.Mutex
	return func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		cfg.Log(format, a...)
	}
}

// counting counts what an experimenter ran: simulated seconds (warm-up
// and window), and trials that ended at the longest window.
type counting struct {
	x         algorithms.Experimenter
	mu        sync.Mutex
	simulated float64
	imprecise int
	// engine is the simulated time the simulator ran: a finer trial of an
	// experiment that ended precise at a coarser precision goes on from it
	// (sim.Trials), so it adds only its excess; ran holds each such
	// trial's length and precision, by the experiment but its precision.
	engine float64
	ran    map[string]ranTrial
}

type ranTrial struct{ seconds, precision float64 }

func (c *counting) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	o, err := c.x.RunExperiment(ctx, e)
	if err == nil {
		c.mu.Lock()
		whole := o.RuntimeSeconds
		if o.Window != nil {
			whole += o.Window.WarmUpSeconds
			if e.Timing.Adaptive() && !o.Window.Precise {
				c.imprecise++
			}
		}
		c.simulated += whole
		c.engine += whole
		if e.Timing.Adaptive() && o.Window != nil {
			t := e.Timing
			t.Precision = 0
			key := fmt.Sprintf("%v|%s|%v|%v", e.Deployment, e.Allocation.Key(), e.Workload, t)
			if prev, ok := c.ran[key]; ok && prev.precision > e.Timing.Precision {
				c.engine -= min(prev.seconds, whole)
			}
			// The simulator keeps only a trial that ended precise (and
			// drops the oldest past its budget of users, not counted here).
			if c.ran == nil {
				c.ran = map[string]ranTrial{}
			}
			delete(c.ran, key)
			if o.Window.Precise {
				c.ran[key] = ranTrial{whole, e.Timing.Precision}
			}
		}
		c.mu.Unlock()
	}
	return o, err
}

func parse(topo string) (algorithms.Deployment, error) { return topology.ParseTopology(topo) }

func measureSpeed(ctx context.Context, cfg Config, logf func(string, ...any)) (Speed, error) {
	type job struct {
		label, topo string
		users       int
	}
	jobs := []job{{"default trial", "1/2/1/2", 7000}, {"default trial", "1/4/1/4", 7000}}
	for _, u := range cfg.SpeedUsers {
		jobs = append(jobs, job{"users", "1/4/1/4", u})
	}
	// Four times the replicas take four times the users to load alike.
	jobs = append(jobs, job{"replicas", "1/16/4/16", 28000})
	var sp Speed
	practitioners, _ := topology.ParseAllocation("400-150-60")
	var model *sim.Model
	if cfg.ModelPath != "" {
		var err error
		if model, err = sim.LoadModel(cfg.ModelPath); err != nil {
			return sp, err
		}
	}
	for _, j := range jobs {
		d, err := parse(j.topo)
		if err != nil {
			return sp, err
		}
		e := algorithms.Experiment{Deployment: d, Allocation: practitioners, Workload: algorithms.Workload{Users: j.users}, Timing: cfg.SpeedTiming}
		t0 := time.Now()
		_, st, err := sim.Simulate(ctx, model, e, 1)
		if err != nil {
			return sp, fmt.Errorf("speed %s at %d users: %w", j.topo, j.users, err)
		}
		wall := time.Since(t0).Seconds()
		tr := SpeedTrial{Label: j.label, Topology: j.topo, Users: j.users, WallSeconds: wall, Events: st.Events,
			Pages: st.Pages + st.WarmUpPages, EventsPerSecond: float64(st.Events) / wall, EventsPerPage: st.EventsPerPage(),
			NsPerEvent: wall * 1e9 / float64(st.Events), SimulatedPerWall: st.SimulatedSeconds / wall}
		sp.Trials = append(sp.Trials, tr)
		logf("speed: %s %s at %d users: %.2f s, %d events, %.1f events/page", j.label, j.topo, j.users, wall, st.Events, tr.EventsPerPage)
	}
	x := make([]float64, len(sp.Trials))
	y := make([]float64, len(sp.Trials))
	for i, t := range sp.Trials {
		x[i], y[i] = float64(t.Events), t.WallSeconds
	}
	a, b := stat.LinearRegression(x, y, nil, false)
	sp.InterceptSeconds, sp.NsPerEvent, sp.R2 = a, b*1e9, stat.RSquared(x, y, nil, a, b)
	sp.Linear = sp.R2 >= 0.98
	for _, t := range sp.Trials {
		if math.Abs(t.NsPerEvent/sp.NsPerEvent-1) > 0.35 {
			sp.Linear = false
		}
	}
	return sp, nil
}

// campaignTiming is t as the CLI gives it to a campaign: an adaptive
// trial measures goodput at the SLA to its precision.
func campaignTiming(t algorithms.Timing) algorithms.Timing {
	if t.Adaptive() {
		t.SLAs = []float64{algorithms.DefaultOptions().SLA}
	}
	return t
}

// runCampaign runs one recommend campaign on the simulator with trials of
// timing t (campaignTiming).
func runCampaign(ctx context.Context, cfg Config, d algorithms.Deployment, seed uint64, mode algorithms.Mode, reading algorithms.MinJobsReading, t algorithms.Timing) (algorithms.Recommendation, Campaign, error) {
	opts := algorithms.DefaultOptions()
	opts.Mode, opts.Timing, opts.MinJobsAt = mode, campaignTiming(t), reading
	start, _ := topology.ParseAllocation("400-150-60")
	t0, cpu0 := time.Now(), threadCPUSeconds()
	sx, err := cfg.experimenter(seed)
	if err != nil {
		return algorithms.Recommendation{}, Campaign{}, err
	}
	x := &counting{x: sx}
	rec, err := algorithms.Recommend(ctx, x, d, start, opts)
	c := Campaign{Mode: string(mode) + " (" + string(reading) + ")", Seed: seed, Experiments: rec.Experiments, WallSeconds: time.Since(t0).Seconds(),
		CPUSeconds: threadCPUSeconds() - cpu0, SimulatedSeconds: x.simulated, EngineSeconds: x.engine, Precision: t.Precision, Imprecise: x.imprecise,
		Critical: rec.Critical.Tier + "/" + rec.Critical.Resource, Saturation: rec.Critical.SaturationWorkload,
		Predicted: rec.Critical.PredictedSaturation, MinJobs: rec.MinJobs.MinJobs, Reading: rec.MinJobs.Reading}
	if err != nil {
		if ctx.Err() != nil {
			return rec, c, err
		}
		c.Error = err.Error()
		return rec, c, nil
	}
	if s, ferr := topology.FormatAllocation(rec.Allocation); ferr == nil {
		c.Allocation = s
	}
	return rec, c, nil
}

func evaluateTopology(ctx context.Context, cfg Config, topo string, seed uint64, logf func(string, ...any)) (TopologyResult, *ScreenedGrid, *RampRow, error) {
	res, sg, rr, err := evaluateTopologyRuns(ctx, cfg, topo, seed, logf)
	if rr == nil {
		return res, sg, nil, err
	}
	return res, sg, &rr.row, err
}

// evaluateTopologyRuns is evaluateTopology with the ramp's answers as
// measured (nil: no ramp section).
func evaluateTopologyRuns(ctx context.Context, cfg Config, topo string, seed uint64, logf func(string, ...any)) (TopologyResult, *ScreenedGrid, *rampRun, error) {
	res := TopologyResult{Topology: topo, Seed: seed}
	d, err := parse(topo)
	if err != nil {
		return res, nil, nil, err
	}
	var rr *rampRun
	// The default reading of minJobs, the other one, and the paper's procedure.
	defReading := algorithms.DefaultOptions().MinJobsAt
	other := algorithms.ReadAtKnee
	if defReading == algorithms.ReadAtKnee {
		other = algorithms.ReadAtSaturation
	}
	recE, cE, err := runCampaign(ctx, cfg, d, seed, algorithms.ModeEfficient, defReading, cfg.Timing)
	if err != nil {
		return res, nil, rr, err
	}
	logf("%s seed %d: efficient recommend %s in %d experiments (%.1f s)", topo, seed, cE.Allocation, cE.Experiments, cE.WallSeconds)
	var recF algorithms.Recommendation
	if cfg.Timing.Adaptive() {
		var cF Campaign
		if recF, cF, err = runCampaign(ctx, cfg, d, seed, algorithms.ModeEfficient, defReading, cfg.FixedTiming); err != nil {
			return res, nil, rr, err
		}
		res.Fixed = &cF
		logf("%s seed %d: efficient recommend with fixed trials %s in %d experiments (%.1f s)", topo, seed, cF.Allocation, cF.Experiments, cF.WallSeconds)
		if err := cfg.checkReferenceCampaign(topo, seed, cF); err != nil {
			return res, nil, rr, err
		}
	}
	recO, cO, err := runCampaign(ctx, cfg, d, seed, algorithms.ModeEfficient, other, cfg.Timing)
	if err != nil {
		return res, nil, rr, err
	}
	recP, cP, err := runCampaign(ctx, cfg, d, seed, algorithms.ModePaper, algorithms.ReadAtKnee, cfg.Timing)
	if err != nil {
		return res, nil, rr, err
	}
	logf("%s seed %d: paper recommend %s in %d experiments (%.1f s)", topo, seed, cP.Allocation, cP.Experiments, cP.WallSeconds)
	if cfg.ramps() {
		if rr, err = runRampRow(ctx, cfg, topo, d, seed); err != nil {
			return res, nil, nil, err
		}
		rr.row.Fixed = res.Fixed
		logf("%s seed %d: ramp recommend %s in %d windows (%.0f s simulated), the default campaign %s (%.0f s)", topo, seed,
			rr.row.Ramp.Allocation, rr.row.Ramp.Windows, rr.row.Ramp.EngineSeconds, rr.row.Default.Allocation, rr.row.Default.EngineSeconds)
	}
	res.Campaigns = []Campaign{cE, cP, cO}
	if cE.Error != "" {
		return res, nil, rr, nil
	}
	// The roles, in the report's order; a failed campaign has none.
	answer := func(c Campaign, r algorithms.Recommendation) algorithms.Allocation {
		if c.Error != "" {
			return nil
		}
		return r.Allocation
	}
	roles := []role{{algorithms.RoleRecommended, recE.Allocation}}
	if res.Fixed != nil {
		roles = append(roles, role{roleFixed, answer(*res.Fixed, recF)})
	}
	roles = append(roles, role{"recommended-" + string(other), answer(cO, recO)}, role{"recommended-paper", answer(cP, recP)})
	for _, g := range algorithms.Grid(d, recE.Allocation, []int{}, []int{}) {
		if g.Role != algorithms.RoleRecommended {
			roles = append(roles, role{g.Role, g.Allocation})
		}
	}
	var cmp algorithms.Comparison
	var sg *ScreenedGrid
	if ref := cfg.referenceGrid(topo, seed); ref != nil {
		sx, err := cfg.experimenter(seed)
		if err != nil {
			return res, nil, rr, err
		}
		x := &counting{x: sx}
		t0 := time.Now()
		if err := ref.checkReproduced(ctx, x, d); err != nil {
			return res, nil, rr, err
		}
		wall := time.Since(t0).Seconds()
		// The screened grid next: its best is measured on the reference's
		// grid too, if that lacks it.
		var also []algorithms.Allocation
		var screened gridRun
		if (GridKey{topo, seed}) == cfg.ScreenedGrid && cfg.Timing.Adaptive() {
			cpu0 := threadCPUSeconds()
			if screened, err = measureGrid(ctx, cfg, d, seed, withAnswers(algorithms.Grid(d, recE.Allocation, nil, nil), roles),
				ref.curves[0].Workloads); err != nil {
				return res, nil, rr, fmt.Errorf("screened grid: %w", err)
			}
			screened.cpu = threadCPUSeconds() - cpu0
			also = append(also, screened.cmp.Entries[screened.cmp.Best[len(cfg.SLAs)-1]].Allocation)
		}
		t0 = time.Now()
		var trials int
		if cmp, trials, err = judgeOnReference(ctx, x, d, ref, append(roles[:len(roles):len(roles)], rr.roles()...), also); err != nil {
			return res, nil, rr, err
		}
		res.GridSource, res.GridTrials = "reference", 1+trials
		res.GridSimulatedSeconds, res.GridWallSeconds = x.simulated, wall+time.Since(t0).Seconds()
		res.ReferenceCompared = referenceRoles(*cfg.Reference, topo, seed, cmp, cfg.SLAs)
		if screened.cmp.Entries != nil {
			sg = screenedGrid(cfg, res, screened, roles, cmp)
		}
	} else {
		m, err := measureGrid(ctx, cfg, d, seed, withAnswers(algorithms.Grid(d, recE.Allocation, nil, nil), append(roles[:len(roles):len(roles)], rr.roles()...)),
			algorithms.GridWorkloads(recE.Critical.SaturationWorkload))
		if err != nil {
			return res, nil, rr, err
		}
		cmp = m.cmp
		res.GridSource, res.Grid = "measured", curvesOf(topo, seed, cmp)
		res.GridSimulatedSeconds, res.GridImprecise, res.GridWallSeconds, res.GridTrials = m.simulated, m.imprecise, m.wall, cmp.Experiments
	}
	res.GridWorkloads = cmp.Options.Workloads
	res.GridAllocations = distinctAllocations(cmp)
	res.GridBest, res.Compared = qualities(cmp, roles, cfg.SLAs)
	if rr != nil {
		var fixed algorithms.Allocation
		if res.Fixed != nil {
			fixed = answer(*res.Fixed, recF)
		}
		rr.judge(cmp, fixed, cfg.SLAs)
	}
	// Random search: the efficient mode's budget of random (allocation,
	// workload) picks; it recommends the allocation with the best goodput it
	// saw, judged by that allocation's true maximum.
	res.RandomBudget = cE.Experiments
	nw := len(cmp.Options.Workloads)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	cells := len(cmp.Entries) * nw
	picks := rng.Perm(cells)[:min(res.RandomBudget, cells)]
	for s, t := range cfg.SLAs {
		chosen, seen := -1, -1.0
		for _, p := range picks {
			if g := cmp.Entries[p/nw].Goodput[s][p%nw]; g > seen {
				chosen, seen = p/nw, g
			}
		}
		best := cmp.Entries[cmp.Best[s]].MaxGoodput[s]
		q := Quality{Role: "random search", Allocation: format(cmp.Entries[chosen].Allocation),
			Ratio: map[string]float64{slaKey(t): cmp.Entries[chosen].MaxGoodput[s] / best}}
		res.Compared = append(res.Compared, q)
	}
	top := slaKey(cfg.SLAs[len(cfg.SLAs)-1])
	logf("%s seed %d: grid (%s) of %d allocations x %d workloads; recommended at %s s: %.3f", topo, seed, res.GridSource,
		res.GridAllocations, nw, top, res.Compared[0].Ratio[top])
	return res, sg, rr, nil
}

// role is a named allocation of a comparison: an answer of this run's
// campaigns, or one the practitioners would pick.
type role struct {
	name       string
	allocation algorithms.Allocation
}

func slaKey(t float64) string { return fmt.Sprintf("%g", t) }

// qualities are the grid's best at the highest threshold and each role's
// showing, from a ranked comparison that holds every role's allocation.
func qualities(cmp algorithms.Comparison, roles []role, slas []float64) (Quality, []Quality) {
	at := map[string]int{}
	for i := len(cmp.Entries) - 1; i >= 0; i-- {
		at[cmp.Entries[i].Allocation.Key()] = i
	}
	quality := func(name string, i int) Quality {
		q := Quality{Role: name, Allocation: format(cmp.Entries[i].Allocation), Ratio: map[string]float64{}}
		for s, t := range slas {
			if cmp.Entries[cmp.Best[s]].MaxGoodput[s] > 0 {
				q.Ratio[slaKey(t)] = cmp.Entries[i].Ratio[s]
			}
			if cmp.Entries[i].Indistinguishable[s] && cmp.Best[s] != i {
				q.Indistinguishable = append(q.Indistinguishable, slaKey(t))
			}
		}
		return q
	}
	top := len(slas) - 1
	best := quality("grid best at "+slaKey(slas[top])+" s", cmp.Best[top])
	var out []Quality
	for _, r := range roles {
		if r.allocation == nil {
			continue
		}
		if i, ok := at[r.allocation.Key()]; ok {
			out = append(out, quality(r.name, i))
		}
	}
	return best, out
}

// withAnswers is grid with the campaigns' other answers (the other
// reading's, the paper mode's, the fixed trials') as named entries: their
// maxima are measured as finely as the recommendation's.
func withAnswers(grid []algorithms.GridEntry, roles []role) []algorithms.GridEntry {
	for _, r := range roles[1:] {
		if r.allocation != nil && strings.HasPrefix(r.name, "recommended-") {
			grid = append(grid, algorithms.GridEntry{Allocation: r.allocation, Role: r.name})
		}
	}
	return grid
}

// gridRun is a grid this run measured.
type gridRun struct {
	cmp                  algorithms.Comparison
	simulated, wall, cpu float64
	imprecise            int
}

// measureGrid runs a grid (algorithms.Compare, screened when its trials
// are adaptive) in the caller's goroutine, one trial at a time: the job
// runs on one core, beside others.
func measureGrid(ctx context.Context, cfg Config, d algorithms.Deployment, seed uint64, grid []algorithms.GridEntry, workloads []int) (gridRun, error) {
	var g gridRun
	sx, err := cfg.experimenter(seed)
	if err != nil {
		return g, err
	}
	x := &counting{x: sx}
	t0 := time.Now()
	// Fixed trials too measure each goodput with its interval (the
	// simulator's batch means): a fixed grid is the ground truth of others.
	timing := cfg.Timing
	timing.SLAs = cfg.SLAs
	g.cmp, err = algorithms.Compare(ctx, []algorithms.Experimenter{x}, d, grid,
		algorithms.CompareOptions{Workloads: workloads, SLAs: cfg.SLAs, Timing: timing, Parallel: 1,
			Screening: algorithms.DefaultScreening, NamedPrecision: cfg.Timing.Precision / 4})
	g.simulated, g.imprecise, g.wall = x.simulated, x.imprecise, time.Since(t0).Seconds()
	return g, err
}

// judgeOnReference ranks the roles on the reference's grid: it measures
// the allocations the grid lacks (the roles', and also) at its workloads
// with its trials, and ranks them with the reference's. It returns the
// trials it ran.
func judgeOnReference(ctx context.Context, x algorithms.Experimenter, d algorithms.Deployment, ref *referenceGrid, roles []role,
	also []algorithms.Allocation) (algorithms.Comparison, int, error) {
	cmp, err := ref.comparison()
	if err != nil {
		return cmp, 0, fmt.Errorf("the reference's grid: %w", err)
	}
	have := map[string]bool{}
	for _, e := range cmp.Entries {
		have[e.Allocation.Key()] = true
	}
	for _, r := range roles {
		also = append(also, r.allocation)
	}
	var lacking []algorithms.GridEntry
	for _, a := range also {
		if a != nil && !have[a.Key()] {
			have[a.Key()] = true
			lacking = append(lacking, algorithms.GridEntry{Allocation: a, Role: algorithms.RoleGrid})
		}
	}
	trials := 0
	if len(lacking) > 0 {
		m, err := algorithms.Compare(ctx, []algorithms.Experimenter{x}, d, lacking,
			algorithms.CompareOptions{Workloads: cmp.Options.Workloads, SLAs: cmp.Options.SLAs, Timing: ref.timing, Parallel: 1})
		if err != nil {
			return cmp, 0, err
		}
		cmp.Entries = append(cmp.Entries, m.Entries...)
		trials = m.Experiments
	}
	cmp.Rank()
	return cmp, trials, nil
}

// referenceRoles are the reference's answers for topo and seed (its
// campaigns' roles), judged on cmp, the same grid as this run's.
func referenceRoles(ref Report, topo string, seed uint64, cmp algorithms.Comparison, slas []float64) []Quality {
	for _, r := range ref.Results {
		if r.Topology != topo || r.Seed != seed {
			continue
		}
		var roles []role
		for _, q := range r.Compared {
			if !strings.HasPrefix(q.Role, algorithms.RoleRecommended) {
				continue
			}
			if a, err := topology.ParseAllocation(q.Allocation); err == nil {
				roles = append(roles, role{q.Role, a})
			}
		}
		_, out := qualities(cmp, roles, slas)
		return out
	}
	return nil
}

// screenedGrid sets the grid measured as validate would (around this
// run's recommendation, adaptive trials, screened, at the reference grid's
// workloads) beside the reference's, ranked in onReference.
func screenedGrid(cfg Config, res TopologyResult, m gridRun, roles []role, onReference algorithms.Comparison) *ScreenedGrid {
	sg := &ScreenedGrid{Topology: res.Topology, Seed: res.Seed, Allocations: distinctAllocations(m.cmp), Workloads: m.cmp.Options.Workloads,
		Trials: m.cmp.Experiments, SimulatedSeconds: m.simulated, Imprecise: m.imprecise, WallSeconds: m.wall, CPUSeconds: m.cpu}
	sg.Best, sg.Compared = qualities(m.cmp, roles, cfg.SLAs)
	best := m.cmp.Entries[m.cmp.Best[len(cfg.SLAs)-1]].Allocation
	if _, on := qualities(onReference, []role{{"best", best}}, cfg.SLAs); len(on) == 1 {
		sg.BestOnReference = on[0].Ratio
	}
	for _, r := range cfg.Reference.Results {
		if r.Topology == res.Topology && r.Seed == res.Seed {
			sg.ReferenceAllocations, sg.ReferenceTrials, sg.ReferenceSimulatedSeconds = r.GridAllocations, r.GridTrials, r.GridSimulatedSeconds
		}
	}
	return sg
}

// roleFixed is the default campaign's answer with fixed-length trials.
const roleFixed = "recommended-fixed"

func format(a algorithms.Allocation) string {
	if s, err := topology.FormatAllocation(a); err == nil {
		return s
	}
	return a.Key()
}
