package evaluate

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/topology"
)

// CoverageConfig says how the coverage of adaptive trials' intervals is
// measured: Seeds short trials (the simulator's default adaptive trial,
// Timing) at each of Workloads, against the long-run mean of LongSeeds
// fixed trials of LongRuntime each, on one topology and allocation; and
// how much common random numbers narrow the difference between
// neighbouring workloads (CRNSeeds pairs, Step users apart).
type CoverageConfig struct {
	Topology, Allocation string
	Workloads            []int
	Seeds                int
	Timing               algorithms.Timing
	LongSeeds            int
	LongRuntime          time.Duration
	CRNSeeds, Step       int
	SLAs                 []float64
}

// DefaultCoverage: 50 seeds at three workloads of 1/4/1/4 with the
// practitioners' allocation (below saturation, near it, at it), against
// four 30-minute trials each.
func DefaultCoverage() CoverageConfig {
	t := AdaptiveTiming()
	t.SLAs = []float64{0.5, 2}
	return CoverageConfig{Topology: "1/4/1/4", Allocation: "400-150-60", Workloads: []int{3000, 6000, 6500}, Seeds: 50,
		Timing: t, LongSeeds: 4, LongRuntime: 30 * time.Minute, CRNSeeds: 20, Step: 100, SLAs: t.SLAs}
}

// CoverageRow is one workload and kind of figure.
type CoverageRow struct {
	Users int    `json:"users"`
	Kind  string `json:"kind"` // throughput, goodput, cpu, busy
	// Intervals is how many intervals were checked, Covered how many held
	// the long-run mean.
	Intervals int     `json:"intervals"`
	Covered   int     `json:"covered"`
	Rate      float64 `json:"rate"`
	// ReferenceHalfWidth is the long-run means' own mean half-width over
	// the short intervals' mean half-width: how exact the reference is.
	ReferenceHalfWidth float64 `json:"referenceHalfWidth"`
}

// CoverageWorkload summarises the short trials at one workload.
type CoverageWorkload struct {
	Users         int     `json:"users"`
	WindowSeconds float64 `json:"windowSeconds"` // mean window
	WarmUpSeconds float64 `json:"warmUpSeconds"` // mean warm-up
	Precise       float64 `json:"precise"`       // share of trials that reached the precision
}

// CRNRow compares the spread of a difference between neighbouring
// workloads with common random numbers (one seed for both) and without.
type CRNRow struct {
	Users, Step   int
	SameSeedSD    float64 `json:"sameSeedSD"`    // pages/s
	IndependentSD float64 `json:"independentSD"` // pages/s
}

// Coverage is the coverage section.
type Coverage struct {
	Topology       string             `json:"topology"`
	Allocation     string             `json:"allocation"`
	Precision      float64            `json:"precision"`
	Seeds          int                `json:"seeds"`
	LongSeeds      int                `json:"longSeeds"`
	LongRunSeconds float64            `json:"longRunSeconds"`
	CRNSeeds       int                `json:"crnSeeds"`
	Workloads      []CoverageWorkload `json:"workloads"`
	Rows           []CoverageRow      `json:"rows"`
	Overall        float64            `json:"overall"`
	CRN            []CRNRow           `json:"crn"`
	// TruthFromReference says the long-run means and CRN came from the
	// reference (Report.CoverageTruth), measured once.
	TruthFromReference bool `json:"truthFromReference,omitempty"`
}

// figures are an observation's intervals by figure name.
func figures(o algorithms.Observation) map[string]algorithms.Interval {
	m := map[string]algorithms.Interval{"throughput": o.ThroughputInterval()}
	for _, g := range o.GoodputIntervals {
		m["goodput "+strconv.FormatFloat(g.SLA, 'g', -1, 64)] = algorithms.Interval{Mean: g.Goodput, HalfWidth: g.HalfWidth}
	}
	for _, s := range o.Servers {
		m["cpu "+s.Name] = s.CPUInterval()
		for _, p := range s.Pools {
			m["busy "+s.Name+" "+p.Name] = algorithms.Interval{Mean: p.Busy, HalfWidth: p.BusyHalfWidth}
		}
	}
	return m
}

func kindOf(name string) string { return strings.Fields(name)[0] }

// CoverageTruth is what the coverage is measured against: each figure's
// long-run mean at each workload (the mean of LongSeeds fixed trials of
// LongRunSeconds), and what common random numbers do to the difference
// between neighbouring workloads. Both come from fixed-length trials, so a
// fixed-length evaluation measures them once (Report.CoverageTruth) for
// the adaptive evaluations that use it as their reference.
type CoverageTruth struct {
	Topology       string    `json:"topology"`
	Allocation     string    `json:"allocation"`
	Workloads      []int     `json:"workloads"`
	SLAs           []float64 `json:"slas"`
	LongSeeds      int       `json:"longSeeds"`
	LongRunSeconds float64   `json:"longRunSeconds"`
	WarmUpSeconds  float64   `json:"warmUpSeconds"`
	// Means has, per workload, every figure's long-run mean and the
	// half-width of that mean.
	Means    []map[string]algorithms.Interval `json:"means"`
	CRNSeeds int                              `json:"crnSeeds"`
	Step     int                              `json:"step"`
	CRN      []CRNRow                         `json:"crn"`
}

// coverageRun is the coverage's trials, as jobs, and what they found.
type coverageRun struct {
	cfg   Config
	d     algorithms.Deployment
	a     algorithms.Allocation
	truth *CoverageTruth
	// measured says this run measures the truth (no reference holds it).
	measured bool
	long     [][]algorithms.Observation // per workload, per long seed
	shorts   [][]algorithms.Observation // per workload, per seed
	crn      [][3][]algorithms.Observation
}

// newCoverageRun lays out the coverage's trials: the truth's, unless the
// reference measured it with this run's settings, and the adaptive trials
// whose intervals are checked against it (an adaptive run with seeds).
// Nil: nothing to measure.
func newCoverageRun(cfg Config) (*coverageRun, error) {
	cc := cfg.Coverage
	short := cc.Seeds > 0 && cfg.Timing.Adaptive()
	if !short && (cfg.Timing.Adaptive() || cc.LongSeeds == 0) {
		return nil, nil
	}
	c := &coverageRun{cfg: cfg}
	var err error
	if c.d, err = parse(cc.Topology); err != nil {
		return nil, err
	}
	if c.a, err = topology.ParseAllocation(cc.Allocation); err != nil {
		return nil, err
	}
	want := CoverageTruth{Topology: cc.Topology, Allocation: cc.Allocation, Workloads: cc.Workloads, SLAs: cc.SLAs, LongSeeds: cc.LongSeeds,
		LongRunSeconds: cc.LongRuntime.Seconds(), WarmUpSeconds: cfg.FixedTiming.RampUp.Seconds(), CRNSeeds: cc.CRNSeeds, Step: cc.Step}
	if r := cfg.Reference; r != nil && r.CoverageTruth != nil && r.CoverageTruth.sameSettings(want) {
		c.truth = r.CoverageTruth
	} else {
		c.truth, c.measured = &want, true
		c.long = make([][]algorithms.Observation, len(cc.Workloads))
		c.crn = make([][3][]algorithms.Observation, len(cc.Workloads))
		for k := range cc.Workloads {
			c.long[k] = make([]algorithms.Observation, cc.LongSeeds)
			for v := range c.crn[k] {
				c.crn[k][v] = make([]algorithms.Observation, cc.CRNSeeds)
			}
		}
	}
	if short {
		c.shorts = make([][]algorithms.Observation, len(cc.Workloads))
		for k := range cc.Workloads {
			c.shorts[k] = make([]algorithms.Observation, cc.Seeds)
		}
	}
	return c, nil
}

// sameSettings says t was measured as want would be.
func (t CoverageTruth) sameSettings(want CoverageTruth) bool {
	return t.Topology == want.Topology && t.Allocation == want.Allocation && slices.Equal(t.Workloads, want.Workloads) &&
		slices.Equal(t.SLAs, want.SLAs) && t.LongSeeds == want.LongSeeds && t.LongRunSeconds == want.LongRunSeconds &&
		t.WarmUpSeconds == want.WarmUpSeconds && t.CRNSeeds == want.CRNSeeds && t.Step == want.Step && len(t.Means) == len(t.Workloads)
}

// Seeds of the coverage's trials: the short ones from 1, the long ones
// and common random numbers' pairs far from them.
const (
	longSeedBase = 10001
	crnSeedBase  = 20001
	crnOtherBase = 30001
)

// jobs are one trial each, the long ones first.
func (c *coverageRun) jobs() []job {
	cc := c.cfg.Coverage
	trial := func(name string, users int, seed uint64, t algorithms.Timing, out *algorithms.Observation) job {
		return job{name: name, run: func(ctx context.Context) error {
			x, err := c.cfg.experimenter(seed)
			if err != nil {
				return err
			}
			*out, err = x.RunExperiment(ctx, algorithms.Experiment{Deployment: c.d, Allocation: c.a, Workload: algorithms.Workload{Users: users}, Timing: t})
			return err
		}}
	}
	var jobs []job
	if c.measured {
		long := c.cfg.FixedTiming
		long.Runtime, long.SLAs = cc.LongRuntime, cc.SLAs
		for k, users := range cc.Workloads {
			for i := range cc.LongSeeds {
				seed := uint64(longSeedBase + i)
				jobs = append(jobs, trial(fmt.Sprintf("coverage: the long trial at %d users, seed %d", users, seed), users, seed, long, &c.long[k][i]))
			}
		}
	}
	if c.shorts != nil {
		for k, users := range cc.Workloads {
			for i := range cc.Seeds {
				seed := uint64(1 + i)
				jobs = append(jobs, trial(fmt.Sprintf("coverage: the adaptive trial at %d users, seed %d", users, seed), users, seed, cc.Timing, &c.shorts[k][i]))
			}
		}
	}
	if c.measured {
		// Fixed trials, so that both windows of a pair are alike.
		short := c.cfg.FixedTiming
		short.Runtime = 2 * time.Minute
		for k, users := range cc.Workloads {
			for i := range cc.CRNSeeds {
				for v, w := range [3]struct {
					users int
					base  int
				}{{users, crnSeedBase}, {users + cc.Step, crnSeedBase}, {users + cc.Step, crnOtherBase}} {
					seed := uint64(w.base + i)
					jobs = append(jobs, trial(fmt.Sprintf("coverage: common random numbers at %d users, seed %d", w.users, seed), w.users, seed, short, &c.crn[k][v][i]))
				}
			}
		}
	}
	return jobs
}

// result is the coverage of the short trials' intervals (nil without
// short trials) and its truth if this run measured it (nil: the
// reference's).
func (c *coverageRun) result() (*Coverage, *CoverageTruth) {
	cc, t := c.cfg.Coverage, c.truth
	if c.measured {
		t.Means = make([]map[string]algorithms.Interval, len(cc.Workloads))
		for k := range cc.Workloads {
			// The long-run mean: the mean of the long trials, with the
			// half-width of a mean of independent estimates.
			ref := map[string]algorithms.Interval{}
			for _, o := range c.long[k] {
				for name, v := range figures(o) {
					r := ref[name]
					r.Mean += v.Mean / float64(len(c.long[k]))
					r.HalfWidth += v.HalfWidth * v.HalfWidth
					ref[name] = r
				}
			}
			for name, r := range ref {
				r.HalfWidth = math.Sqrt(r.HalfWidth) / float64(len(c.long[k]))
				ref[name] = r
			}
			t.Means[k] = ref
		}
		for k, users := range cc.Workloads {
			if cc.CRNSeeds == 0 {
				break
			}
			base, same, other := c.crn[k][0], c.crn[k][1], c.crn[k][2]
			var ds, di []float64
			for i := range base {
				ds = append(ds, same[i].Throughput-base[i].Throughput)
				di = append(di, other[i].Throughput-base[i].Throughput)
			}
			t.CRN = append(t.CRN, CRNRow{Users: users, Step: cc.Step, SameSeedSD: sd(ds), IndependentSD: sd(di)})
		}
	}
	measured := t
	if !c.measured {
		measured = nil
	}
	if c.shorts == nil {
		return nil, measured
	}
	cov := &Coverage{Topology: cc.Topology, Allocation: cc.Allocation, Precision: cc.Timing.Precision, Seeds: cc.Seeds,
		LongSeeds: t.LongSeeds, LongRunSeconds: t.LongRunSeconds, CRNSeeds: t.CRNSeeds, CRN: t.CRN, TruthFromReference: !c.measured}
	hit, total := 0, 0
	for k, users := range cc.Workloads {
		ref := t.Means[k]
		shorts := c.shorts[k]
		type acc struct {
			n, hit       int
			refHW, ourHW float64
		}
		kinds := map[string]*acc{}
		wl := CoverageWorkload{Users: users}
		for _, o := range shorts {
			wl.WindowSeconds += o.RuntimeSeconds / float64(len(shorts))
			if o.Window != nil {
				wl.WarmUpSeconds += o.Window.WarmUpSeconds / float64(len(shorts))
				if o.Window.Precise {
					wl.Precise += 1 / float64(len(shorts))
				}
			}
			for k, v := range figures(o) {
				r, ok := ref[k]
				if !ok || (v.HalfWidth == 0 && r.HalfWidth == 0) {
					continue // a constant: a pool never or always full
				}
				ac := kinds[kindOf(k)]
				if ac == nil {
					ac = &acc{}
					kinds[kindOf(k)] = ac
				}
				ac.n++
				ac.refHW += r.HalfWidth
				ac.ourHW += v.HalfWidth
				if math.Abs(v.Mean-r.Mean) <= v.HalfWidth {
					ac.hit++
				}
			}
		}
		cov.Workloads = append(cov.Workloads, wl)
		names := make([]string, 0, len(kinds))
		for k := range kinds {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			ac := kinds[k]
			row := CoverageRow{Users: users, Kind: k, Intervals: ac.n, Covered: ac.hit, Rate: float64(ac.hit) / float64(ac.n)}
			if ac.ourHW > 0 {
				row.ReferenceHalfWidth = ac.refHW / ac.ourHW
			}
			cov.Rows = append(cov.Rows, row)
			hit += ac.hit
			total += ac.n
		}
	}
	if total > 0 {
		cov.Overall = float64(hit) / float64(total)
	}
	return cov, measured
}

func sd(x []float64) float64 {
	if len(x) < 2 {
		return 0
	}
	var m, s float64
	for _, v := range x {
		m += v
	}
	m /= float64(len(x))
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return math.Sqrt(s / float64(len(x)-1))
}

// loadAverage is /proc/loadavg's three figures (zeros where there is none).
func loadAverage() [3]float64 {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l
	}
	f := strings.Fields(string(b))
	for i := 0; i < 3 && i < len(f); i++ {
		l[i], _ = strconv.ParseFloat(f[i], 64)
	}
	return l
}

// Reference compares this evaluation's ratios with a fixed-length one's.
type Reference struct {
	Date           string  `json:"date"`
	WallSeconds    float64 `json:"wallSeconds"`
	CPUSeconds     float64 `json:"cpuSeconds,omitempty"`
	RuntimeSeconds float64 `json:"runtimeSeconds"`
	// GridSimulatedSeconds is the simulated time of the reference's grids
	// of this run's topologies and seeds.
	GridSimulatedSeconds float64        `json:"gridSimulatedSeconds"`
	Rows                 []ReferenceRow `json:"rows"`
	// MaxDiff is the largest difference of any ratio, in points (0.01);
	// MaxRecommendedDiff and MaxRecommendedShortfall the recommendation's
	// (ReferenceRow).
	MaxDiff                 float64 `json:"maxDiffPoints"`
	MaxRecommendedDiff      float64 `json:"maxRecommendedDiffPoints"`
	MaxRecommendedShortfall float64 `json:"maxRecommendedShortfallPoints"`
}

// ReferenceRow is one topology and seed.
type ReferenceRow struct {
	Topology string `json:"topology"`
	Seed     uint64 `json:"seed"`
	// Fixed and Adaptive are the default campaign's answers.
	Fixed    string `json:"fixed"`
	Adaptive string `json:"adaptive"`
	Same     bool   `json:"same"`
	// MaxDiff is the largest difference of a role's ratio at any SLA, in
	// points, and Where names it.
	MaxDiff float64 `json:"maxDiffPoints"`
	Where   string  `json:"where"`
	// RecommendedDiff is the largest difference of the recommendation's
	// ratios (the adaptive answer's against the reference's) at any SLA,
	// in points, and RecommendedShortfall the most the adaptive one's is
	// below (0: never below).
	RecommendedDiff      float64 `json:"recommendedDiffPoints"`
	RecommendedShortfall float64 `json:"recommendedShortfallPoints"`
}

func compareReference(ref, rep Report) Reference {
	out := Reference{Date: ref.Machine.Date, WallSeconds: ref.WallTotal, CPUSeconds: ref.CPUTotal, RuntimeSeconds: ref.Config.RuntimeSeconds}
	for _, r := range rep.Results {
		for _, f := range ref.Results {
			if f.Topology != r.Topology || f.Seed != r.Seed || len(f.Campaigns) == 0 || len(r.Campaigns) == 0 {
				continue
			}
			out.GridSimulatedSeconds += f.GridSimulatedSeconds
			row := ReferenceRow{Topology: r.Topology, Seed: r.Seed, Fixed: f.Campaigns[0].Allocation, Adaptive: r.Campaigns[0].Allocation}
			row.Same = row.Fixed == row.Adaptive
			// The reference's answers on this run's grid when it is the
			// reference's (the same ground truth), else on its own.
			fq := map[string]Quality{}
			theirs := append([]Quality{f.GridBest}, f.Compared...)
			if len(r.ReferenceCompared) > 0 {
				theirs = r.ReferenceCompared
			}
			for _, q := range theirs {
				fq[q.Role] = q
			}
			for _, q := range r.Compared {
				fr, ok := fq[q.Role]
				if !ok || q.Role == "random search" || q.Role == roleFixed {
					continue
				}
				for s, v := range q.Ratio {
					w, ok := fr.Ratio[s]
					if !ok {
						continue
					}
					if q.Role == algorithms.RoleRecommended {
						row.RecommendedDiff = math.Max(row.RecommendedDiff, math.Abs(v-w)*100)
						row.RecommendedShortfall = math.Max(row.RecommendedShortfall, (w-v)*100)
					}
					if math.Abs(v-w)*100 > row.MaxDiff {
						row.MaxDiff, row.Where = math.Abs(v-w)*100, fmt.Sprintf("%s at %s s", q.Role, s)
					}
				}
			}
			out.MaxDiff = math.Max(out.MaxDiff, row.MaxDiff)
			out.MaxRecommendedDiff = math.Max(out.MaxRecommendedDiff, row.RecommendedDiff)
			out.MaxRecommendedShortfall = math.Max(out.MaxRecommendedShortfall, row.RecommendedShortfall)
			out.Rows = append(out.Rows, row)
		}
	}
	return out
}
