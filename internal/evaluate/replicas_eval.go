package evaluate

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/topology"
)

// ReplicasConfig says what evaluate --replicas measures: on each ranged
// topology, at every count, recommend's campaign at that count (the
// per-count campaign's) and a grid at that count to judge it on.
type ReplicasConfig struct {
	// Ranges are topologies with one tier's replicas a range: 1/2..8/1/2.
	Ranges []string
	Seeds  []uint64
	// Timing of campaigns and grids (adaptive: the grids are screened).
	Timing algorithms.Timing
	SLAs   []float64
	// Target is the least ratio to the count's grid best, at the
	// campaign's SLA, that every count must reach.
	Target    float64
	Parallel  int
	ModelPath string
	Log       func(format string, a ...any)
	// Progress, if not nil, receives the report as it stands after each
	// count's grid (the counts not yet judged left out), so that a run
	// cut short leaves the rows it measured.
	Progress func(ReplicasReport)
}

// DefaultReplicasConfig is issue 37's measurement: the app tier at 2..8
// replicas in front of two and four database servers, one seed.
func DefaultReplicasConfig() ReplicasConfig {
	c := DefaultConfig()
	return ReplicasConfig{Ranges: []string{"1/2..8/1/2", "1/2..8/1/4"}, Seeds: []uint64{1}, Timing: c.Timing, SLAs: c.SLAs,
		Target: 0.97, Parallel: c.Parallel}
}

// ReplicasReport is evaluate --replicas' report (replicas-evaluation.json).
type ReplicasReport struct {
	Machine Machine              `json:"machine"`
	Config  ReplicasReportConfig `json:"config"`
	Ranges  []ReplicaRangeResult `json:"ranges"`
	// Misses names every count below the target, with its figures.
	Misses      []string      `json:"misses"`
	WallSeconds float64       `json:"wallSeconds"`
	CPUSeconds  float64       `json:"cpuSeconds"`
	Load        [2][3]float64 `json:"load"`
}

// ReplicasReportConfig records the run's settings.
type ReplicasReportConfig struct {
	Ranges         []string  `json:"ranges"`
	Seeds          []uint64  `json:"seeds"`
	Precision      float64   `json:"precision"`
	RuntimeSeconds float64   `json:"runtimeSeconds"`
	SLAs           []float64 `json:"slas"`
	CampaignSLA    float64   `json:"campaignSLA"`
	Target         float64   `json:"target"`
	Parallel       int       `json:"parallel"`
}

// ReplicaRangeResult is one ranged topology on one seed.
type ReplicaRangeResult struct {
	Range  string        `json:"range"`
	Seed   uint64        `json:"seed"`
	Tier   string        `json:"tier"`
	Counts []CountResult `json:"counts"`
}

// CountResult is one count: its campaign's answer judged on its grid, and
// its total connections against its critical tier's minJobs.
type CountResult struct {
	Replicas    int     `json:"replicas"`
	Topology    string  `json:"topology"`
	Critical    string  `json:"critical"`
	Saturation  int     `json:"saturationWorkload"`
	MinJobs     float64 `json:"minJobs"`
	Experiments int     `json:"experiments"`
	Allocation  string  `json:"allocation"`
	// ConnectionsPerReplica x Replicas = TotalConnections: the app tier's
	// connections the count's answer opens; BestTotalConnections the grid
	// best's (at the campaign's SLA).
	ConnectionsPerReplica int `json:"connectionsPerReplica"`
	TotalConnections      int `json:"totalConnections"`
	// Recommended is the answer's ratio to the grid's best per SLA;
	// Extrapolated the arithmetic from the lowest count's campaign
	// (recommend without --per-count), judged on the same grid.
	Recommended          Quality  `json:"recommended"`
	Extrapolated         *Quality `json:"extrapolated,omitempty"`
	GridBest             Quality  `json:"gridBest"`
	BestTotalConnections int      `json:"bestTotalConnections"`
	// Ratio is Recommended's at the campaign's SLA; MeetsTarget says it
	// reaches the target (Recommended.Indistinguishable says where it
	// cannot be told from the grid's best).
	Ratio                float64 `json:"ratio"`
	MeetsTarget          bool    `json:"meetsTarget"`
	GridAllocations      int     `json:"gridAllocations"`
	GridWorkloads        []int   `json:"gridWorkloads"`
	GridTrials           int     `json:"gridTrials"`
	GridSimulatedSeconds float64 `json:"gridSimulatedSeconds"`
	GridImprecise        int     `json:"gridImprecise,omitempty"`
	CampaignCPUSeconds   float64 `json:"campaignCPUSeconds"`
	GridCPUSeconds       float64 `json:"gridCPUSeconds"`
}

// countRun is one count's campaign and grid as the jobs fill them.
type countRun struct {
	d     algorithms.Deployment
	seed  uint64
	rec   algorithms.Recommendation
	camp  Campaign
	res   CountResult
	extra algorithms.Allocation // the arithmetic's answer at this count
}

// RunReplicas measures every count of every range: first the campaigns,
// one job a count, then the grids, one job a count, each judging that
// count's answer and the arithmetic's from the range's lowest count.
func RunReplicas(ctx context.Context, rc ReplicasConfig) (ReplicasReport, error) {
	start, cpu0 := time.Now(), cpuSeconds()
	cfg := DefaultConfig()
	cfg.Timing, cfg.SLAs, cfg.Parallel, cfg.ModelPath, cfg.Log = rc.Timing, rc.SLAs, rc.Parallel, rc.ModelPath, rc.Log
	logf := cfg.logger()
	rep := ReplicasReport{Machine: describeMachine(), Misses: []string{}, Config: ReplicasReportConfig{Ranges: rc.Ranges, Seeds: rc.Seeds,
		Precision: rc.Timing.Precision, RuntimeSeconds: rc.Timing.Runtime.Seconds(), SLAs: rc.SLAs,
		CampaignSLA: algorithms.DefaultOptions().SLA, Target: rc.Target, Parallel: rc.Parallel}}
	rep.Load[0] = loadAverage()
	var runs [][]*countRun
	var ds []algorithms.Deployment // each run's ranged deployment
	var campaigns, grids []job
	for _, r := range rc.Ranges {
		d, err := topology.ParseRangedTopology(r)
		if err != nil {
			return rep, err
		}
		vi := RangedTier(d)
		sc := *d.Tiers[vi].Scaling
		for _, seed := range rc.Seeds {
			rr := ReplicaRangeResult{Range: topology.FormatRangedTopology(d), Seed: seed, Tier: d.Tiers[vi].Name}
			var counts []*countRun
			for n := sc.Min; n <= sc.Max; n++ {
				c := &countRun{d: AtReplicas(d, vi, n), seed: seed}
				counts = append(counts, c)
				campaigns = append(campaigns, job{name: fmt.Sprintf("the campaign on %s seed %d", c.d.Topology, seed), run: func(ctx context.Context) error {
					rec, camp, err := runCampaign(ctx, cfg, c.d, seed, algorithms.ModeEfficient, algorithms.DefaultOptions().MinJobsAt, cfg.Timing)
					if err == nil && camp.Error != "" {
						err = fmt.Errorf("%s", camp.Error)
					}
					c.rec, c.camp = rec, camp
					logf("%s seed %d: %s critical, minJobs %.1f, %s in %d experiments", c.d.Topology, seed, camp.Critical, camp.MinJobs,
						camp.Allocation, camp.Experiments)
					return err
				}})
			}
			runs, ds = append(runs, counts), append(ds, d)
			rep.Ranges = append(rep.Ranges, rr)
			for _, c := range counts {
				grids = append(grids, job{name: fmt.Sprintf("the grid of %s seed %d", c.d.Topology, seed), run: func(ctx context.Context) error {
					return judgeCount(ctx, cfg, rc, c, logf)
				}})
			}
		}
	}
	cpuC, err := runJobs(ctx, rc.Parallel, campaigns)
	if err != nil {
		return rep, err
	}
	// The arithmetic from each range's lowest count, as recommend plans it
	// without --per-count.
	k := 0
	for ri, counts := range runs {
		d := ds[ri]
		plan := Extrapolated(d, counts[0].rec)
		at := map[int]algorithms.Allocation{}
		if plan != nil {
			for _, row := range plan.Counts {
				at[row.Replicas] = row.Allocation
			}
		}
		for _, c := range counts {
			c.extra = at[c.d.Tiers[RangedTier(d)].Replicas]
			c.res.CampaignCPUSeconds = cpuC[k]
			k++
		}
	}
	// The counts in turns across the ranges, each range's ends first and
	// then its middle: a run cut short has judged every range across its
	// span.
	var order []job
	var where [][2]int // order's (run, count)
	for turn := 0; ; turn++ {
		added := false
		for ri, counts := range runs {
			if turn < len(counts) {
				ci := spanOrder(len(counts))[turn]
				order, where, added = append(order, grids[gridIndex(runs, ri, ci)]), append(where, [2]int{ri, ci}), true
			}
		}
		if !added {
			break
		}
	}
	var mu sync.Mutex
	judged := map[[2]int]bool{}
	snapshot := func() ReplicasReport {
		out := rep
		out.Ranges = make([]ReplicaRangeResult, len(rep.Ranges))
		out.Misses = []string{}
		for ri, counts := range runs {
			out.Ranges[ri] = rep.Ranges[ri]
			out.Ranges[ri].Counts = []CountResult{}
			for ci, c := range counts {
				if !judged[[2]int{ri, ci}] {
					continue
				}
				out.Ranges[ri].Counts = append(out.Ranges[ri].Counts, c.res)
				if !c.res.MeetsTarget {
					out.Misses = append(out.Misses, fmt.Sprintf("%s seed %d at %d replicas: %s reaches %.3f of the grid's best %s at %g s",
						rep.Ranges[ri].Range, c.seed, c.res.Replicas, c.res.Allocation, c.res.Ratio, c.res.GridBest.Allocation, rep.Config.CampaignSLA))
				}
			}
		}
		out.WallSeconds, out.CPUSeconds = time.Since(start).Seconds(), cpuSeconds()-cpu0
		out.Load[1] = loadAverage()
		return out
	}
	for i := range order {
		run, w := order[i].run, where[i]
		order[i].run = func(ctx context.Context) error {
			t0 := threadCPUSeconds()
			if err := run(ctx); err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			runs[w[0]][w[1]].res.GridCPUSeconds = threadCPUSeconds() - t0
			judged[w] = true
			if rc.Progress != nil {
				rc.Progress(snapshot())
			}
			return nil
		}
	}
	if _, err := runJobs(ctx, rc.Parallel, order); err != nil {
		return rep, err
	}
	return snapshot(), nil
}

// gridIndex is the index in the grids' list of run ri's count ci.
func gridIndex(runs [][]*countRun, ri, ci int) int {
	k := 0
	for i := 0; i < ri; i++ {
		k += len(runs[i])
	}
	return k + ci
}

// spanOrder orders 0..n-1 ends first, then halves: 0, n-1, n/2, ...
func spanOrder(n int) []int {
	out := []int{}
	seen := map[int]bool{}
	add := func(i int) {
		if i >= 0 && i < n && !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	add(0)
	add(n - 1)
	for step := n / 2; step >= 1 && len(out) < n; step /= 2 {
		for i := step; i < n; i += step {
			add(i)
		}
	}
	for i := 0; i < n; i++ {
		add(i)
	}
	return out
}

// judgeCount measures a count's grid around its answer, with the
// arithmetic's answer named in it, and fills the count's result.
func judgeCount(ctx context.Context, cfg Config, rc ReplicasConfig, c *countRun, logf func(string, ...any)) error {
	roles := []role{{algorithms.RoleRecommended, c.rec.Allocation}}
	if c.extra != nil {
		roles = append(roles, role{roleExtrapolated, c.extra})
	}
	m, err := measureGrid(ctx, cfg, c.d, c.seed, withAnswers(algorithms.Grid(c.d, c.rec.Allocation, nil, nil), roles),
		algorithms.GridWorkloads(c.rec.Critical.SaturationWorkload))
	if err != nil {
		return err
	}
	cmp := m.cmp
	vi := -1
	for i, t := range c.d.Tiers {
		if t.Scaling != nil {
			vi = i
		}
	}
	n := c.d.Tiers[vi].Replicas
	r := &c.res
	*r = CountResult{Replicas: n, Topology: c.d.Topology, Critical: c.camp.Critical, Saturation: c.camp.Saturation, MinJobs: c.camp.MinJobs,
		Experiments: c.camp.Experiments, Allocation: c.camp.Allocation, CampaignCPUSeconds: r.CampaignCPUSeconds,
		GridAllocations: distinctAllocations(cmp), GridWorkloads: cmp.Options.Workloads, GridTrials: cmp.Experiments,
		GridSimulatedSeconds: m.simulated, GridImprecise: m.imprecise}
	name := c.d.Tiers[vi].Name
	r.ConnectionsPerReplica = c.rec.Allocation[name].Connections
	r.TotalConnections = r.ConnectionsPerReplica * n
	best, qs := qualities(cmp, roles, rc.SLAs)
	r.GridBest = best
	// The best at the campaign's SLA, whose connections are compared.
	sla := algorithms.DefaultOptions().SLA
	si := -1
	for i, t := range rc.SLAs {
		if t == sla {
			si = i
		}
	}
	if si < 0 {
		return fmt.Errorf("the campaign's SLA %g s is not among the grid's %v", sla, rc.SLAs)
	}
	bestAt := cmp.Entries[cmp.Best[si]]
	r.BestTotalConnections = bestAt.Allocation[name].Connections * n
	for _, q := range qs {
		switch q.Role {
		case algorithms.RoleRecommended:
			r.Recommended = q
		case roleExtrapolated:
			q := q
			r.Extrapolated = &q
		}
	}
	key := slaKey(sla)
	r.Ratio = r.Recommended.Ratio[key]
	r.MeetsTarget = r.Ratio >= rc.Target
	logf("%s seed %d: %s at %.3f of the grid's best (%d allocations, %d trials)", c.d.Topology, c.seed, r.Allocation, r.Ratio,
		r.GridAllocations, r.GridTrials)
	return nil
}

// roleExtrapolated is the arithmetic's answer at a count, from the range's
// lowest count's campaign.
const roleExtrapolated = "recommended-extrapolated"
