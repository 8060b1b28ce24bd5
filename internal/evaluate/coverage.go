package evaluate

import (
	"context"
	"fmt"
	"math"
	"os"
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

func measureCoverage(ctx context.Context, cfg Config, logf func(string, ...any)) (Coverage, error) {
	cc := cfg.Coverage
	cov := Coverage{Topology: cc.Topology, Allocation: cc.Allocation, Precision: cc.Timing.Precision, Seeds: cc.Seeds,
		LongSeeds: cc.LongSeeds, LongRunSeconds: cc.LongRuntime.Seconds(), CRNSeeds: cc.CRNSeeds}
	d, err := parse(cc.Topology)
	if err != nil {
		return cov, err
	}
	a, err := topology.ParseAllocation(cc.Allocation)
	if err != nil {
		return cov, err
	}
	run := func(users int, seeds []uint64, t algorithms.Timing) ([]algorithms.Observation, error) {
		out := make([]algorithms.Observation, len(seeds))
		errs := make(chan error, len(seeds))
		next := make(chan int)
		for w := 0; w < max(1, cfg.Parallel); w++ {
			go func() {
				for i := range next {
					x, err := cfg.experimenter(seeds[i])
					if err == nil {
						out[i], err = x.RunExperiment(ctx, algorithms.Experiment{Deployment: d, Allocation: a, Workload: algorithms.Workload{Users: users}, Timing: t})
					}
					errs <- err
				}
			}()
		}
		go func() {
			for i := range seeds {
				next <- i
			}
			close(next)
		}()
		var first error
		for range seeds {
			if err := <-errs; err != nil && first == nil {
				first = err
			}
		}
		return out, first
	}
	seedRange := func(from, n int) []uint64 {
		s := make([]uint64, n)
		for i := range s {
			s[i] = uint64(from + i)
		}
		return s
	}
	long := cfg.FixedTiming
	long.Runtime, long.SLAs = cc.LongRuntime, cc.SLAs
	hit, total := 0, 0
	for _, users := range cc.Workloads {
		refs, err := run(users, seedRange(10001, cc.LongSeeds), long)
		if err != nil {
			return cov, err
		}
		// The long-run mean: the mean of the long trials, with the
		// half-width of a mean of independent estimates.
		ref := map[string]algorithms.Interval{}
		for _, o := range refs {
			for k, v := range figures(o) {
				r := ref[k]
				r.Mean += v.Mean / float64(len(refs))
				r.HalfWidth += v.HalfWidth * v.HalfWidth
				ref[k] = r
			}
		}
		for k, r := range ref {
			r.HalfWidth = math.Sqrt(r.HalfWidth) / float64(len(refs))
			ref[k] = r
		}
		shorts, err := run(users, seedRange(1, cc.Seeds), cc.Timing)
		if err != nil {
			return cov, err
		}
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
		logf("coverage at %d users: %d trials, mean window %.0f s", users, len(shorts), wl.WindowSeconds)
	}
	if total > 0 {
		cov.Overall = float64(hit) / float64(total)
	}
	// Common random numbers: the same seed at two neighbouring workloads
	// against two seeds. Fixed trials, so that both windows are alike.
	if cc.CRNSeeds > 0 {
		short := cfg.FixedTiming
		short.Runtime = 2 * time.Minute
		for _, users := range cc.Workloads {
			base, err := run(users, seedRange(20001, cc.CRNSeeds), short)
			if err != nil {
				return cov, err
			}
			same, err := run(users+cc.Step, seedRange(20001, cc.CRNSeeds), short)
			if err != nil {
				return cov, err
			}
			other, err := run(users+cc.Step, seedRange(30001, cc.CRNSeeds), short)
			if err != nil {
				return cov, err
			}
			var ds, di []float64
			for i := range base {
				ds = append(ds, same[i].Throughput-base[i].Throughput)
				di = append(di, other[i].Throughput-base[i].Throughput)
			}
			cov.CRN = append(cov.CRN, CRNRow{Users: users, Step: cc.Step, SameSeedSD: sd(ds), IndependentSD: sd(di)})
		}
	}
	return cov, nil
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
	// GridSimulatedSeconds is the simulated time of the reference's grids.
	GridSimulatedSeconds float64        `json:"gridSimulatedSeconds"`
	Rows                 []ReferenceRow `json:"rows"`
	// MaxDiff is the largest difference of any ratio, in points (0.01).
	MaxDiff float64 `json:"maxDiffPoints"`
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
}

func compareReference(ref, rep Report) Reference {
	out := Reference{Date: ref.Machine.Date, WallSeconds: ref.WallTotal, CPUSeconds: ref.CPUTotal, RuntimeSeconds: ref.Config.RuntimeSeconds}
	for _, f := range ref.Results {
		out.GridSimulatedSeconds += f.GridSimulatedSeconds
	}
	for _, r := range rep.Results {
		for _, f := range ref.Results {
			if f.Topology != r.Topology || f.Seed != r.Seed || len(f.Campaigns) == 0 || len(r.Campaigns) == 0 {
				continue
			}
			row := ReferenceRow{Topology: r.Topology, Seed: r.Seed, Fixed: f.Campaigns[0].Allocation, Adaptive: r.Campaigns[0].Allocation}
			row.Same = row.Fixed == row.Adaptive
			fq := map[string]Quality{}
			for _, q := range append([]Quality{f.GridBest}, f.Compared...) {
				fq[q.Role] = q
			}
			for _, q := range r.Compared {
				fr, ok := fq[q.Role]
				if !ok || q.Role == "random search" || q.Role == roleFixed {
					continue
				}
				for s, v := range q.Ratio {
					if w, ok := fr.Ratio[s]; ok && math.Abs(v-w)*100 > row.MaxDiff {
						row.MaxDiff, row.Where = math.Abs(v-w)*100, fmt.Sprintf("%s at %s s", q.Role, s)
					}
				}
			}
			out.MaxDiff = math.Max(out.MaxDiff, row.MaxDiff)
			out.Rows = append(out.Rows, row)
		}
	}
	return out
}
