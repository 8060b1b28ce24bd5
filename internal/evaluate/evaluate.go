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
	"slices"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/softalloc/softalloc/algorithms"
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
		Topologies:  []string{"1/1/1/1", "1/2/1/2", "1/4/1/4", "1/2/1", "2/4/1/4", "1/6/2/6"},
		Seeds:       []uint64{1, 2},
		Timing:      AdaptiveTiming(),
		FixedTiming: sim.DefaultTiming(),
		SLAs:        []float64{0.2, 0.5, 2},
		Parallel:    runtime.GOMAXPROCS(0),
		SpeedUsers:  []int{1000, 10000, 100000},
		SpeedTiming: sim.DefaultTiming(),
		Coverage:    DefaultCoverage(),
		Precisions:  []float64{0.01, 0.02, 0.05},
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
}

// measurePrecisions runs the default campaign at each precision and fixed.
func measurePrecisions(ctx context.Context, cfg Config, logf func(string, ...any)) ([]PrecisionRun, error) {
	var out []PrecisionRun
	for _, topo := range cfg.Topologies {
		d, err := parse(topo)
		if err != nil {
			return nil, err
		}
		for _, seed := range cfg.Seeds {
			for _, p := range append([]float64{0}, cfg.Precisions...) {
				t := sim.DefaultTiming()
				if p > 0 {
					t = AdaptiveTiming()
					t.Precision = p
				}
				_, c, err := runCampaign(ctx, cfg, d, seed, algorithms.ModeEfficient, algorithms.DefaultOptions().MinJobsAt, t)
				if err != nil {
					return nil, err
				}
				out = append(out, PrecisionRun{Topology: topo, Seed: seed, Precision: p, Allocation: c.Allocation, Critical: c.Critical,
					MinJobs: c.MinJobs, Experiments: c.Experiments, CPUSeconds: c.CPUSeconds, SimulatedSeconds: c.SimulatedSeconds})
			}
			logf("precisions: %s seed %d done", topo, seed)
		}
	}
	return out, nil
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
}

// Report is the whole evaluation.
type Report struct {
	Machine    Machine          `json:"machine"`
	Config     ReportConfig     `json:"config"`
	Speed      Speed            `json:"speed"`
	Results    []TopologyResult `json:"results"`
	Coverage   *Coverage        `json:"coverage,omitempty"`
	Reference  *Reference       `json:"reference,omitempty"`
	Precisions []PrecisionRun   `json:"precisions,omitempty"`
	WallTotal  float64          `json:"wallSeconds"`
	CPUTotal   float64          `json:"cpuSeconds,omitempty"`
	// Sections is the wall time of each part of the run.
	Sections Sections `json:"sections"`
	// Load is the machine's load average (1, 5, 15 min) at the start and
	// the end of the run: the machine is shared.
	Load [2][3]float64 `json:"load,omitempty"`
}

// Sections is the wall time of each part of an evaluation, seconds: a
// fixed-length run has no precision or coverage section, so only Speed
// and Topologies compare with it.
type Sections struct {
	Speed float64 `json:"speedSeconds"`
	// Topologies is the campaigns and grids of every topology and seed
	// (each grid's own is TopologyResult.GridWallSeconds).
	Topologies float64 `json:"topologiesSeconds"`
	Precisions float64 `json:"precisionsSeconds,omitempty"`
	Coverage   float64 `json:"coverageSeconds,omitempty"`
}

// ReportConfig records the settings of the run.
type ReportConfig struct {
	Topologies     []string  `json:"topologies"`
	Seeds          []uint64  `json:"seeds"`
	RuntimeSeconds float64   `json:"runtimeSeconds"`
	WarmUpSeconds  float64   `json:"warmUpSeconds"`
	Precision      float64   `json:"precision,omitempty"`
	FixedWarmUp    float64   `json:"fixedWarmUpSeconds,omitempty"`
	SLAs           []float64 `json:"slas"`
}

// Run measures everything.
func Run(ctx context.Context, cfg Config) (Report, error) {
	start := time.Now()
	logf := cfg.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	cpu0 := cpuSeconds()
	rep := Report{Machine: describeMachine(), Config: ReportConfig{Topologies: cfg.Topologies, Seeds: cfg.Seeds,
		RuntimeSeconds: cfg.Timing.Runtime.Seconds(), WarmUpSeconds: cfg.Timing.RampUp.Seconds(), Precision: cfg.Timing.Precision,
		SLAs: cfg.SLAs}}
	if cfg.Timing.Adaptive() {
		rep.Config.FixedWarmUp = cfg.FixedTiming.RampUp.Seconds()
	}
	rep.Load[0] = loadAverage()
	var err error
	if rep.Speed, err = measureSpeed(ctx, cfg, logf); err != nil {
		return rep, err
	}
	rep.Sections.Speed = time.Since(start).Seconds()
	mark := time.Now()
	for _, topo := range cfg.Topologies {
		for _, seed := range cfg.Seeds {
			r, err := evaluateTopology(ctx, cfg, topo, seed, logf)
			if err != nil {
				return rep, fmt.Errorf("evaluate %s seed %d: %w", topo, seed, err)
			}
			rep.Results = append(rep.Results, r)
		}
	}
	rep.Sections.Topologies = time.Since(mark).Seconds()
	mark = time.Now()
	if len(cfg.Precisions) > 0 && cfg.Timing.Adaptive() {
		if rep.Precisions, err = measurePrecisions(ctx, cfg, logf); err != nil {
			return rep, fmt.Errorf("evaluate precisions: %w", err)
		}
	}
	rep.Sections.Precisions = time.Since(mark).Seconds()
	mark = time.Now()
	if cfg.Coverage.Seeds > 0 {
		cov, err := measureCoverage(ctx, cfg, logf)
		if err != nil {
			return rep, fmt.Errorf("evaluate coverage: %w", err)
		}
		rep.Coverage = &cov
	}
	rep.Sections.Coverage = time.Since(mark).Seconds()
	rep.WallTotal = time.Since(start).Seconds()
	rep.CPUTotal = cpuSeconds() - cpu0
	rep.Load[1] = loadAverage()
	if cfg.Reference != nil {
		ref := compareReference(*cfg.Reference, rep)
		rep.Reference = &ref
	}
	return rep, nil
}

// counting counts what an experimenter ran: simulated seconds (warm-up
// and window), and trials that ended at the longest window.
type counting struct {
	x         algorithms.Experimenter
	mu        sync.Mutex
	simulated float64
	imprecise int
}

func (c *counting) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	o, err := c.x.RunExperiment(ctx, e)
	if err == nil {
		c.mu.Lock()
		c.simulated += o.RuntimeSeconds
		if o.Window != nil {
			c.simulated += o.Window.WarmUpSeconds
			if e.Timing.Adaptive() && !o.Window.Precise {
				c.imprecise++
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
	t0, cpu0 := time.Now(), cpuSeconds()
	sx, err := cfg.experimenter(seed)
	if err != nil {
		return algorithms.Recommendation{}, Campaign{}, err
	}
	x := &counting{x: sx}
	rec, err := algorithms.Recommend(ctx, x, d, start, opts)
	c := Campaign{Mode: string(mode) + " (" + string(reading) + ")", Seed: seed, Experiments: rec.Experiments, WallSeconds: time.Since(t0).Seconds(),
		CPUSeconds: cpuSeconds() - cpu0, SimulatedSeconds: x.simulated, Precision: t.Precision, Imprecise: x.imprecise,
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

func evaluateTopology(ctx context.Context, cfg Config, topo string, seed uint64, logf func(string, ...any)) (TopologyResult, error) {
	res := TopologyResult{Topology: topo, Seed: seed}
	d, err := parse(topo)
	if err != nil {
		return res, err
	}
	// The default reading of minJobs, the other one, and the paper's procedure.
	defReading := algorithms.DefaultOptions().MinJobsAt
	other := algorithms.ReadAtKnee
	if defReading == algorithms.ReadAtKnee {
		other = algorithms.ReadAtSaturation
	}
	recE, cE, err := runCampaign(ctx, cfg, d, seed, algorithms.ModeEfficient, defReading, cfg.Timing)
	if err != nil {
		return res, err
	}
	logf("%s seed %d: efficient recommend %s in %d experiments (%.1f s)", topo, seed, cE.Allocation, cE.Experiments, cE.WallSeconds)
	var recF algorithms.Recommendation
	if cfg.Timing.Adaptive() {
		var cF Campaign
		if recF, cF, err = runCampaign(ctx, cfg, d, seed, algorithms.ModeEfficient, defReading, cfg.FixedTiming); err != nil {
			return res, err
		}
		res.Fixed = &cF
		logf("%s seed %d: efficient recommend with fixed trials %s in %d experiments (%.1f s)", topo, seed, cF.Allocation, cF.Experiments, cF.WallSeconds)
	}
	recO, cO, err := runCampaign(ctx, cfg, d, seed, algorithms.ModeEfficient, other, cfg.Timing)
	if err != nil {
		return res, err
	}
	recP, cP, err := runCampaign(ctx, cfg, d, seed, algorithms.ModePaper, algorithms.ReadAtKnee, cfg.Timing)
	if err != nil {
		return res, err
	}
	logf("%s seed %d: paper recommend %s in %d experiments (%.1f s)", topo, seed, cP.Allocation, cP.Experiments, cP.WallSeconds)
	res.Campaigns = []Campaign{cE, cP, cO}
	if cE.Error != "" {
		return res, nil
	}
	grid := algorithms.Grid(d, recE.Allocation, nil, nil)
	if cO.Error == "" {
		grid = append(grid, algorithms.GridEntry{Allocation: recO.Allocation, Role: "recommended-" + string(other)})
	}
	if cP.Error == "" {
		grid = append(grid, algorithms.GridEntry{Allocation: recP.Allocation, Role: "recommended-paper"})
	}
	if res.Fixed != nil && res.Fixed.Error == "" {
		grid = append(grid, algorithms.GridEntry{Allocation: recF.Allocation, Role: roleFixed})
	}
	res.GridWorkloads = algorithms.GridWorkloads(recE.Critical.SaturationWorkload)
	res.GridAllocations = len(grid)
	sx, err := cfg.experimenter(seed)
	if err != nil {
		return res, err
	}
	x := &counting{x: sx}
	gt := cfg.Timing // Compare holds its trials to the thresholds it compares
	gridStart := time.Now()
	cmp, err := algorithms.Compare(ctx, []algorithms.Experimenter{x}, d, grid,
		algorithms.CompareOptions{Workloads: res.GridWorkloads, SLAs: cfg.SLAs, Timing: gt, Parallel: cfg.Parallel,
			Screening: algorithms.DefaultScreening, NamedPrecision: gt.Precision / 4})
	if err != nil {
		return res, err
	}
	res.GridSimulatedSeconds, res.GridImprecise = x.simulated, x.imprecise
	res.GridWallSeconds, res.GridTrials = time.Since(gridStart).Seconds(), cmp.Experiments
	nw := len(res.GridWorkloads)
	key := func(t float64) string { return fmt.Sprintf("%g", t) }
	ratio := func(i int) map[string]float64 {
		r := map[string]float64{}
		for s, t := range cfg.SLAs {
			if cmp.Entries[cmp.Best[s]].MaxGoodput[s] > 0 {
				r[key(t)] = cmp.Entries[i].Ratio[s]
			}
		}
		return r
	}
	same := func(i int) []string {
		var out []string
		for s, t := range cfg.SLAs {
			if cmp.Entries[i].Indistinguishable[s] && cmp.Best[s] != i {
				out = append(out, key(t))
			}
		}
		return out
	}
	top := len(cfg.SLAs) - 1
	slaTop := key(cfg.SLAs[top])
	res.GridBest = Quality{Role: "grid best at " + slaTop + " s", Allocation: format(grid[cmp.Best[top]].Allocation), Ratio: ratio(cmp.Best[top]),
		Indistinguishable: same(cmp.Best[top])}
	// An allocation can fill several roles (the two readings may agree).
	for _, role := range []string{algorithms.RoleRecommended, roleFixed, "recommended-" + string(other), "recommended-paper",
		algorithms.RolePractitioners, algorithms.RoleTomcatDefaults, algorithms.RoleHikari} {
		var a algorithms.Allocation
		switch role {
		case algorithms.RoleRecommended:
			a = recE.Allocation
		case roleFixed:
			a = recF.Allocation
		case "recommended-" + string(other):
			a = recO.Allocation
		case "recommended-paper":
			a = recP.Allocation
		default:
			for _, g := range grid {
				if g.Role == role || slices.Contains(g.Also, role) {
					a = g.Allocation
				}
			}
		}
		for i, g := range grid {
			if a != nil && g.Allocation.Key() == a.Key() {
				res.Compared = append(res.Compared, Quality{Role: role, Allocation: format(g.Allocation), Ratio: ratio(i), Indistinguishable: same(i)})
				break
			}
		}
	}
	// Random search: the efficient mode's budget of random (allocation,
	// workload) picks; it recommends the allocation with the best goodput it
	// saw, judged by that allocation's true maximum.
	res.RandomBudget = cE.Experiments
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	cells := len(grid) * nw
	picks := rng.Perm(cells)[:min(res.RandomBudget, cells)]
	for s, t := range cfg.SLAs {
		chosen, seen := -1, -1.0
		for _, p := range picks {
			if g := cmp.Entries[p/nw].Goodput[s][p%nw]; g > seen {
				chosen, seen = p/nw, g
			}
		}
		best := cmp.Entries[cmp.Best[s]].MaxGoodput[s]
		q := Quality{Role: "random search", Allocation: format(grid[chosen].Allocation), Ratio: map[string]float64{key(t): cmp.Entries[chosen].MaxGoodput[s] / best}}
		res.Compared = append(res.Compared, q)
	}
	logf("%s seed %d: grid of %d allocations x %d workloads; recommended at %s s: %.3f", topo, seed, len(grid), nw, slaTop, ratio(0)[slaTop])
	return res, nil
}

// roleFixed is the default campaign's answer with fixed-length trials.
const roleFixed = "recommended-fixed"

func format(a algorithms.Allocation) string {
	if s, err := topology.FormatAllocation(a); err == nil {
		return s
	}
	return a.Key()
}
