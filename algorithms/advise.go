package algorithms

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/gonum/stat"
)

// AdviseOptions tune Advise.
type AdviseOptions struct {
	// HardwareThreshold, SoftThreshold and DemandDrift mean what they mean
	// in Options (0: the same defaults).
	HardwareThreshold float64
	SoftThreshold     float64
	DemandDrift       float64
	// MinUtilization: the windows must load the critical resource to at
	// least this utilisation somewhere (default 0.3); below it the fit
	// would extrapolate too far to be trusted.
	MinUtilization float64
	// MinWindows: at least this many usable windows (default 5).
	MinWindows int
	// MinLoadSpread: the busiest usable window must carry at least this
	// many times the pages per second of the quietest (default 1.5), or the
	// fit cannot tell a server's demand from its idle cost.
	MinLoadSpread float64
	// ThinkTime, when > 0, is the users' think time in seconds; otherwise
	// it is read from windows that know their users, and with none the
	// workload is modelled as open (arrivals independent of response times).
	ThinkTime float64
	// WorkloadThinkTime, when > 0, is the think time of the workload the
	// deployment's users follow (its workload file), in seconds: taken for a
	// closed model when ThinkTime is 0 and no window counts its users, in
	// place of an open one. WorkloadThinkTimeSource says where it came from.
	WorkloadThinkTime       float64
	WorkloadThinkTimeSource string
	// Reserve is the deployment's current allocation: pools in front of the
	// tier that bounds the critical server's jobs keep at least these sizes,
	// as recommend's front tiers keep their reserved size. Nil: the largest
	// pool sizes the windows report, and Configured's where they report none.
	Reserve    Allocation
	Configured Allocation
}

// DefaultAdviseOptions are the documented defaults.
func DefaultAdviseOptions() AdviseOptions {
	d := DefaultOptions()
	return AdviseOptions{HardwareThreshold: d.HardwareThreshold, SoftThreshold: d.SoftThreshold, DemandDrift: d.DemandDrift,
		MinUtilization: 0.3, MinWindows: 5, MinLoadSpread: 1.5}
}

func (o AdviseOptions) withDefaults() AdviseOptions {
	d := DefaultAdviseOptions()
	if o.HardwareThreshold == 0 {
		o.HardwareThreshold = d.HardwareThreshold
	}
	if o.SoftThreshold == 0 {
		o.SoftThreshold = d.SoftThreshold
	}
	if o.DemandDrift == 0 {
		o.DemandDrift = d.DemandDrift
	}
	if o.MinUtilization == 0 {
		o.MinUtilization = d.MinUtilization
	}
	if o.MinWindows == 0 {
		o.MinWindows = d.MinWindows
	}
	if o.MinLoadSpread == 0 {
		o.MinLoadSpread = d.MinLoadSpread
	}
	return o
}

func (o AdviseOptions) validate() error {
	switch {
	case !(o.HardwareThreshold > 0 && o.HardwareThreshold <= 1):
		return fmt.Errorf("hardware threshold %g: want a utilisation in (0,1]", o.HardwareThreshold)
	case !(o.SoftThreshold > 0 && o.SoftThreshold <= 1):
		return fmt.Errorf("soft threshold %g: want a share of the window in (0,1]", o.SoftThreshold)
	case o.DemandDrift >= 1:
		return fmt.Errorf("demand drift %g: want a share below 1 (negative: no check)", o.DemandDrift)
	case !(o.MinUtilization > 0 && o.MinUtilization < o.HardwareThreshold):
		return fmt.Errorf("minimum utilisation %g: want a utilisation above 0 and below the hardware threshold %g", o.MinUtilization, o.HardwareThreshold)
	case o.MinWindows < 3:
		return fmt.Errorf("minimum windows %d: want at least 3 (a line and its error)", o.MinWindows)
	case !(o.MinLoadSpread >= 1) || math.IsInf(o.MinLoadSpread, 0):
		return fmt.Errorf("minimum load spread %g: want a finite ratio >= 1", o.MinLoadSpread)
	case !(o.ThinkTime >= 0) || math.IsInf(o.ThinkTime, 0):
		return fmt.Errorf("think time %g: want a finite number of seconds >= 0", o.ThinkTime)
	}
	return nil
}

// ErrNotEnoughData: the windows cannot support advice; the error says what
// data would.
var ErrNotEnoughData = errors.New("not enough data")

// DemandFit is one server resource's utilisation law fitted over the
// windows: utilisation = Idle + PerPage x pages/s.
type DemandFit struct {
	Server   string `json:"server"`
	Tier     string `json:"tier"`
	Resource string `json:"resource"` // "cpu" or another hardware resource
	// Cores is the capacity the utilisation is a share of (1 for non-CPU).
	Cores int `json:"cores"`
	// PerPage is the utilisation each page/s adds; Demand = PerPage x Cores
	// is the service demand, seconds of one core per page.
	PerPage float64 `json:"perPage"`
	Demand  float64 `json:"demand"`
	// Idle is the fit's intercept: the utilisation with no traffic.
	Idle float64 `json:"idle"`
	// RSquared is the fit's coefficient of determination.
	RSquared float64 `json:"rSquared"`
	// MaxUtilization is the highest utilisation any window saw.
	MaxUtilization float64 `json:"maxUtilization"`
	// SaturationThroughput is the page throughput at which the fit reaches
	// the hardware threshold.
	SaturationThroughput float64 `json:"saturationThroughput"`
}

// DroppedWindow is a window left out, and why.
type DroppedWindow struct {
	Label   string `json:"label"`
	Problem string `json:"problem"`
}

// TierGap is a window left out of one tier's time per page (Little's law),
// and why; the demand fits still use it.
type TierGap struct {
	Tier    string `json:"tier"`
	Label   string `json:"label"`
	Problem string `json:"problem"`
}

// SaturatedPool is a pool that was full in some windows: a soft bottleneck
// already seen in production.
type SaturatedPool struct {
	Server  string `json:"server"`
	Pool    string `json:"pool"`
	Size    int    `json:"size"`
	Windows int    `json:"windows"`
	First   string `json:"first"` // the first window it was full in
}

// Advice is Advise's answer: a Recommendation predicted from windows, with
// its evidence.
type Advice struct {
	Recommendation
	// Model is "closed" (users with a think time: exact MVA) or "open"
	// (arrivals independent of response times: M/M/c stations).
	Model string `json:"model"`
	// ThinkTime is the think time used (closed model), ThinkTimeSource where it came from.
	ThinkTime       float64 `json:"thinkTime,omitempty"`
	ThinkTimeSource string  `json:"thinkTimeSource,omitempty"`
	// Windows counts every window given; Used those the fit used.
	Windows int             `json:"windows"`
	Used    int             `json:"used"`
	Dropped []DroppedWindow `json:"dropped"`
	// TierGaps are the used windows that lack a tier's throughput or
	// response time: left out of that tier's time per page alone.
	TierGaps []TierGap `json:"tierGaps"`
	// LoadRange is the quietest and the busiest used window's pages/s.
	LoadRange [2]float64  `json:"loadRange"`
	Fits      []DemandFit `json:"fits"`
	// SaturationThroughput is the predicted page throughput at which the
	// critical resource reaches the hardware threshold.
	SaturationThroughput float64         `json:"saturationThroughput"`
	SaturatedPools       []SaturatedPool `json:"saturatedPools"`

	notes []string // warnings found before the critical resource is known
}

// Advise is Algorithm 1 on passive data: the operational laws the paper
// applies to experiments, applied to windows of a deployment's own traffic.
// No experiment is run.
//
//  1. Per server and hardware resource, the utilisation law with an
//     intercept for idle cost, fitted over the windows by least squares.
//  2. The critical resource is the one whose fit reaches the hardware
//     threshold at the lowest page throughput: the largest demand per unit
//     of capacity, the idle cost included (where the paper, with only
//     experiments, reads it off a saturated trial).
//  3. A queueing model of the chain with the fitted demands predicts the
//     critical tier's jobs where the critical resource reaches the
//     threshold: exact MVA of the closed network when the users' think time
//     is known, M/M/c stations of an open network otherwise. Time a tier
//     spends outside the modelled resources (the network, locks, I/O that
//     is not measured) is read from the windows as a constant per tier.
//  4. Formula 3 and recommend's front-tier buffer, as in
//     CalculateMinAllocation and RecommendAllocation.
//
// It says what data it needs instead of guessing (ErrNotEnoughData) when
// too few windows are usable, their load hardly varies, or none loads the
// critical resource past MinUtilization.
func Advise(d Deployment, windows []Window, opts AdviseOptions) (Advice, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return Advice{}, err
	}
	adv := Advice{Windows: len(windows), Dropped: []DroppedWindow{}, TierGaps: []TierGap{}, SaturatedPools: []SaturatedPool{}}
	used := adv.screen(d, windows)
	adv.Used = len(used)
	if len(used) < opts.MinWindows {
		return adv, fmt.Errorf("%d of %d windows are usable (%s): want at least %d, each with page throughput and every server's readings: %w",
			len(used), len(windows), droppedSummary(adv.Dropped), opts.MinWindows, ErrNotEnoughData)
	}
	xs := make([]float64, len(used))
	for i, w := range used {
		xs[i] = w.Observation.Throughput
	}
	lo, hi := slices.Min(xs), slices.Max(xs)
	adv.LoadRange = [2]float64{lo, hi}
	if hi < opts.MinLoadSpread*lo {
		return adv, fmt.Errorf("no load variation: page throughput ranged %.3g-%.3g pages/s over %d windows (%s to %s): want the busiest at least %.3g times the quietest, so that a server's demand per page can be told from its idle cost: %w",
			lo, hi, len(used), used[0].Label, used[len(used)-1].Label, opts.MinLoadSpread, ErrNotEnoughData)
	}
	if err := adv.fit(d, used, xs, opts); err != nil {
		return adv, err
	}
	crit := adv.Fits[0]
	for _, f := range adv.Fits[1:] {
		if f.SaturationThroughput < crit.SaturationThroughput {
			crit = f
		}
	}
	if crit.MaxUtilization < opts.MinUtilization {
		return adv, fmt.Errorf("the windows load the critical resource, %s %s, to at most %.0f%% (%.3g pages/s): want a window at %.0f%% or more, such as a peak hour, before extrapolating to %.0f%% at %.3g pages/s: %w",
			crit.Server, crit.Resource, 100*crit.MaxUtilization, hi, 100*opts.MinUtilization, 100*opts.HardwareThreshold,
			crit.SaturationThroughput, ErrNotEnoughData)
	}
	adv.driftWarnings(used, opts)
	adv.saturatedPools(used, opts)
	net, err := newAdviseNetwork(d, adv.Fits, used, opts)
	if err != nil {
		return adv, err
	}
	adv.Model, adv.ThinkTime, adv.ThinkTimeSource = net.model, net.shownThink, net.thinkSource
	pred, err := net.atThreshold(crit, opts.HardwareThreshold)
	if err != nil {
		return adv, err
	}
	adv.SaturationThroughput = pred.throughput
	adv.Critical = Critical{Tier: crit.Tier, Server: crit.Server, Resource: crit.Resource, Utilization: opts.HardwareThreshold,
		SaturationWorkload: pred.users, MaxThroughput: net.maxThroughput(),
		Saturated: []Saturation{{Server: crit.Server, Tier: crit.Tier, Resource: crit.Resource, Utilization: opts.HardwareThreshold, Hardware: true}},
		Warnings:  append(adv.notes, net.notes...)}
	ci := d.TierIndex(crit.Tier)
	var meas []TierMeasurement
	for i, t := range d.Tiers {
		tp, rt := pred.tierThroughput[i], pred.tierResponseTime[i]
		if tp > 0 && rt > 0 {
			meas = append(meas, TierMeasurement{Tier: t.Name, Throughput: tp, ResponseTime: rt})
			continue
		}
		if i <= ci {
			return adv, net.noTierReadings(i, len(used), map[bool]string{true: "the critical tier", false: "a tier in front of the critical one"}[i == ci])
		}
	}
	// A children tier's connections per child over every window (a ratio
	// of sums: windows of little load weigh little).
	var all Observation
	for _, w := range used {
		all.Servers = append(all.Servers, w.Observation.Servers...)
	}
	for k := range meas {
		meas[k].ConnectionsPerChild, _ = ConnectionsPerChild(d, meas[k].Tier, all)
	}
	for i := range d.Tiers {
		if net.hasRT[i] {
			adv.TierGaps = append(adv.TierGaps, net.gaps[i]...)
		}
	}
	minJobs := LittlesLaw(pred.tierThroughput[ci], pred.tierResponseTime[ci])
	reading := fmt.Sprintf("predicted by the %s model from demands fitted over %d windows (%.3g-%.3g pages/s), where %s %s reaches %.0f%% at %.4g pages/s",
		adv.Model, len(used), lo, hi, crit.Server, crit.Resource, 100*opts.HardwareThreshold, pred.throughput)
	adv.MinJobs = MinJobs{MinJobs: minJobs, WLmin: pred.users, Reading: reading, Measurements: meas, Warnings: nil}
	if c := queueCaveat(d, used, crit, minJobs, opts.HardwareThreshold); c != "" {
		adv.Critical.Warnings = append(adv.Critical.Warnings, c)
	}
	sz, err := CalculateMinAllocation(d, crit.Tier, minJobs, meas)
	if err != nil {
		return adv, fmt.Errorf("calculate-min-allocation: %w", err)
	}
	reserve := opts.Reserve
	if reserve == nil {
		reserve = observedAllocation(d, used, opts.Configured)
	}
	bt, bp := BoundingPool(d, crit.Tier)
	for i, t := range d.Tiers {
		for _, p := range t.Pools {
			if inFront(i, p, bt, bp) && reserve[t.Name].Size(p) == 0 {
				adv.Critical.Warnings = append(adv.Critical.Warnings, fmt.Sprintf("%s %s: its current size is unknown (no size query, no --alloc): the formula's minimum is given, where recommend keeps a front pool's buffer",
					t.Name, p))
			}
		}
	}
	adv.Critical.Reserve = reserve
	adv.Sizing = sz
	adv.Allocation, adv.Tiers = RecommendAllocation(d, sz, reserve)
	adv.Replicas = PlanReplicas(d, sz, reserve, meas)
	if r, err := net.poolRange(adv.Allocation, crit.Tier); err == nil {
		adv.Range = &r
	} else {
		adv.Critical.Warnings = append(adv.Critical.Warnings, fmt.Sprintf("no recommended range: %v", err))
	}
	return adv, nil
}

// screen keeps the windows the fit can use and records why it drops the others.
func (adv *Advice) screen(d Deployment, windows []Window) []Window {
	var used []Window
	for _, w := range windows {
		if p := windowProblem(d, w); p != "" {
			adv.Dropped = append(adv.Dropped, DroppedWindow{Label: w.Label, Problem: p})
			continue
		}
		used = append(used, w)
	}
	return used
}

func windowProblem(d Deployment, w Window) string {
	if w.Problem != "" {
		return w.Problem
	}
	o := w.Observation
	// A window's page response times may be absent; every other field counts.
	o.ResponseTimes = Histogram{}
	if o.RuntimeSeconds == 0 {
		o.RuntimeSeconds = 1
	}
	if p := o.Problems(); len(p) > 0 {
		return strings.Join(p, "; ")
	}
	if !(w.Users >= 0) || math.IsInf(w.Users, 0) || !(w.ResponseTime >= 0) || math.IsInf(w.ResponseTime, 0) {
		return fmt.Sprintf("users %g and response time %g: want finite numbers >= 0", w.Users, w.ResponseTime)
	}
	if o.Throughput == 0 {
		return "no pages served (throughput 0): an idle window says nothing about demand per page"
	}
	if p := ForeignServers(d, o); p != "" {
		return p
	}
	for _, t := range d.Tiers {
		for i := 0; i < t.Replicas; i++ {
			if _, ok := o.Server(t.ServerName(i)); !ok {
				return fmt.Sprintf("server %s missing (the deployment has %d in tier %s)", t.ServerName(i), t.Replicas, t.Name)
			}
		}
	}
	return ""
}

// ForeignServers says which of the observation's servers are not d's, or ""
// when all are. Observations of 1/2/1/2 advised as 1/1/1 were read as one app
// server doing two servers' work, the servers 1/1/1 lacks ignored.
func ForeignServers(d Deployment, o Observation) string {
	tiers := map[string]string{}
	var names []string
	for _, t := range d.Tiers {
		for i := 0; i < t.Replicas; i++ {
			tiers[t.ServerName(i)] = t.Name
			names = append(names, t.ServerName(i))
		}
	}
	var foreign []string
	for _, s := range o.Servers {
		tier, ok := tiers[s.Name]
		switch {
		case !ok:
			foreign = append(foreign, s.Name)
		case s.Tier != "" && s.Tier != tier:
			return fmt.Sprintf("server %s is in tier %s, not %s", s.Name, s.Tier, tier)
		}
	}
	switch len(foreign) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("server %s is not the deployment's (%s has %s)", foreign[0], d.Topology, strings.Join(names, ", "))
	}
	return fmt.Sprintf("servers %s are not the deployment's (%s has %s)", strings.Join(foreign, ", "), d.Topology, strings.Join(names, ", "))
}

func droppedSummary(dropped []DroppedWindow) string {
	if len(dropped) == 0 {
		return "none dropped"
	}
	first := dropped[0]
	if len(dropped) == 1 {
		return fmt.Sprintf("dropped %s: %s", first.Label, first.Problem)
	}
	return fmt.Sprintf("%d dropped, the first %s: %s", len(dropped), first.Label, first.Problem)
}

// fit fits the utilisation law per server and resource.
func (adv *Advice) fit(d Deployment, used []Window, xs []float64, opts AdviseOptions) error {
	for _, t := range d.Tiers {
		for i := 0; i < t.Replicas; i++ {
			name := t.ServerName(i)
			first, _ := used[0].Observation.Server(name)
			resources := append([]string{"cpu"}, slices.Sorted(maps.Keys(first.Resources))...)
			for _, r := range resources {
				us := make([]float64, len(used))
				for j, w := range used {
					s, _ := w.Observation.Server(name)
					if r == "cpu" {
						us[j] = s.CPU
					} else {
						u, ok := s.Resources[r]
						if !ok {
							return fmt.Errorf("%s resource %q: in %s but not in %s: want every window to measure the same resources: %w",
								name, r, used[0].Label, w.Label, ErrNotEnoughData)
						}
						us[j] = u
					}
				}
				if err := stillResource(name, r, us, xs, opts); err != nil {
					return err
				}
				cores := 1
				if r == "cpu" {
					cores = max(1, t.Cores)
				}
				idle, perPage := stat.LinearRegression(xs, us, nil, false)
				f := DemandFit{Server: name, Tier: t.Name, Resource: r, Cores: cores, PerPage: perPage, Idle: idle,
					RSquared: stat.RSquared(xs, us, nil, idle, perPage), MaxUtilization: slices.Max(us)}
				f.Demand = f.PerPage * float64(cores)
				f.SaturationThroughput = math.Inf(1)
				if perPage > 0 {
					f.SaturationThroughput = (opts.HardwareThreshold - max(0, idle)) / perPage
				}
				if math.IsNaN(f.RSquared) {
					f.RSquared = 0 // a resource that never moved
				}
				adv.Fits = append(adv.Fits, f)
			}
		}
	}
	return nil
}

// stillResource refuses a resource whose utilisation the windows cannot fit:
// one at or above the hardware threshold in every window (saturated
// throughout: the line is flat at its capacity), and a CPU that reads the
// same in every window while the load varies (0%: no metric; else a stuck
// one). Either fitted a demand of 0, never critical, and another server was
// named critical in its place.
func stillResource(server, resource string, us, xs []float64, opts AdviseOptions) error {
	lo, hi := slices.Min(us), slices.Max(us)
	pages := fmt.Sprintf("%.3g-%.3g pages/s", slices.Min(xs), slices.Max(xs))
	switch {
	case lo >= opts.HardwareThreshold:
		return fmt.Errorf("%s %s is at or above the hardware threshold %.3g%% in every window (%.3g%%-%.3g%%) while the deployment served %s: "+
			"it is saturated throughout, the bottleneck already, and its demand per page cannot be fitted from windows that never load it less: "+
			"want windows where it is below the threshold too, such as quieter hours: %w",
			server, resource, 100*opts.HardwareThreshold, 100*lo, 100*hi, pages, ErrNotEnoughData)
	case resource != "cpu" || lo != hi:
		return nil
	case lo == 0:
		return fmt.Errorf("%s cpu reads 0%% in every window while the deployment served %s: its CPU metric is missing or wrong (check its query): %w",
			server, pages, ErrNotEnoughData)
	}
	return fmt.Errorf("%s cpu reads %.3g%% in every window while the deployment served %s: a CPU that does not move with the load is a stuck or wrong metric (check its query): %w",
		server, 100*lo, pages, ErrNotEnoughData)
}

// driftWarnings applies recommend's demand-drift check to the fits: the CPU
// each page adds in the busier half of the windows against the quieter half.
// A server doing more work per CPU-second as load rises reaches the
// threshold later than the straight line says. Poor fits are named too.
func (adv *Advice) driftWarnings(used []Window, opts AdviseOptions) {
	order := make([]int, len(used))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		return used[order[a]].Observation.Throughput < used[order[b]].Observation.Throughput
	})
	half := len(order) / 2
	// slope is the CPU each page adds over the windows below the hardware
	// threshold: at its cap a CPU is flat whatever the pages, and on
	// WordPress a busier half mostly at the cap fitted -2.37 ms a page,
	// which read as a fall of 102% (ok is false with fewer than 2 windows).
	slope := func(idx []int, server string) (b float64, ok bool) {
		var x, u []float64
		for _, i := range idx {
			s, _ := used[i].Observation.Server(server)
			if s.CPU >= opts.HardwareThreshold {
				continue
			}
			x, u = append(x, used[i].Observation.Throughput), append(u, s.CPU)
		}
		if len(x) < 2 {
			return 0, false
		}
		_, b = stat.LinearRegression(x, u, nil, false)
		return b, true
	}
	for _, f := range adv.Fits {
		if f.Resource != "cpu" || f.MaxUtilization < 0.05 {
			continue // an idle server's noise is no finding
		}
		if f.RSquared < 0.9 {
			adv.notes = append(adv.notes, fmt.Sprintf("%s cpu: the utilisation law fits poorly (R² %.2f over %d windows): its demand per page varies with more than the load",
				f.Server, f.RSquared, len(used)))
		}
		if opts.DemandDrift < 0 || half < 2 || len(order)-half < 2 {
			continue
		}
		low, lok := slope(order[:half], f.Server)
		high, hok := slope(order[half:], f.Server)
		if lok && hok && low > 0 && high > 0 && high < (1-opts.DemandDrift)*low {
			adv.notes = append(adv.notes, fmt.Sprintf("%s: CPU per page fell %.0f%% from the quieter half of the windows (%.3g ms per page) to the busier half (%.3g ms): "+
				"it does more work per CPU-second as load rises, so it saturates later than the fit predicts",
				f.Server, 100*(1-high/low), 1000*low*float64(f.Cores), 1000*high*float64(f.Cores)))
		}
	}
}

// saturatedPools names the pools that were full in some windows.
func (adv *Advice) saturatedPools(used []Window, opts AdviseOptions) {
	at := map[string]int{}
	for _, w := range used {
		for _, s := range w.Observation.Servers {
			for _, p := range s.Pools {
				full := p.FullShare >= opts.SoftThreshold
				if p.FullShare < 0 {
					full = p.Utilization() >= opts.HardwareThreshold
				}
				if !full {
					continue
				}
				k := s.Name + "/" + p.Name
				if i, ok := at[k]; ok {
					adv.SaturatedPools[i].Windows++
					continue
				}
				at[k] = len(adv.SaturatedPools)
				adv.SaturatedPools = append(adv.SaturatedPools, SaturatedPool{Server: s.Name, Pool: p.Name, Size: p.Size, Windows: 1, First: w.Label})
			}
		}
	}
	for _, p := range adv.SaturatedPools {
		adv.notes = append(adv.notes, fmt.Sprintf("%s %s (size %d) was full in %d of %d windows, first in %s: it already limits throughput there",
			p.Server, p.Pool, p.Size, p.Windows, len(used), p.First))
	}
}

// observedAllocation is the largest pool size per tier the windows report,
// and configured's where they report none.
func observedAllocation(d Deployment, used []Window, configured Allocation) Allocation {
	a := Allocation{}
	for _, t := range d.Tiers {
		if len(t.Pools) == 0 {
			continue
		}
		var p TierPools
		for _, w := range used {
			for _, s := range w.Observation.Servers {
				if s.Tier != t.Name {
					continue
				}
				for _, po := range s.Pools {
					switch po.Name {
					case PoolThreads:
						p.Threads = max(p.Threads, po.Size)
					case PoolConnections:
						p.Connections = max(p.Connections, po.Size)
					}
				}
			}
		}
		if p.Threads == 0 {
			p.Threads = configured[t.Name].Threads
		}
		if p.Connections == 0 {
			p.Connections = configured[t.Name].Connections
		}
		a[t.Name] = p
	}
	return a
}
