package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/safefile"
	"github.com/softalloc/softalloc/internal/topology"
)

// HTMLReport is what a campaign's page shows. Everything on it comes from
// the campaign's result, never from the process that ran it: a campaign
// resumed from its journal has every trial the journal answered.
type HTMLReport struct {
	// Command is "find-critical" or "recommend".
	Command    string
	Deployment algorithms.Deployment
	// DeploymentFile is the file the deployment came from; "" for --topology.
	DeploymentFile string
	Runner         string
	Seed           uint64
	Version        string
	// SLA (seconds) is goodput's threshold; HardwareThreshold the
	// utilisation at which a hardware resource counts as saturated (0: not
	// drawn).
	SLA               float64
	HardwareThreshold float64
	Critical          algorithms.Critical
	// Recommendation is recommend's result; nil for find-critical.
	Recommendation *algorithms.Recommendation
	// Advice is advise's result, and Windows the windows it read (no
	// experiment ran: they are its evidence); nil for a campaign.
	Advice   *algorithms.Advice
	Windows  []algorithms.Window
	Snippets []Snippet
	// Steps are the workload steps the campaign used.
	Steps *algorithms.Steps
	// Warnings are the runner's own (what it could not measure), shown
	// beside the result's.
	Warnings []string
	// Generated is when the page was written; Elapsed the wall time of the
	// run that wrote it (a resumed run's own, not the campaign's).
	Generated time.Time
	Elapsed   time.Duration
}

//go:embed html.tmpl
var htmlTemplateText string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"f1":      func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	"pct":     func(v float64) string { return Percent(100*v, 1, false) },
	"mul1000": func(v float64) float64 { return 1000 * v },
}).Parse(htmlTemplateText))

// SaveHTML writes the report's page to path atomically: a reader (a browser
// reloading it, a CI job archiving it) never sees half a page.
func SaveHTML(path string, r HTMLReport) error {
	if err := safefile.Write(path, 0o644, func(w io.Writer) error { return WriteHTML(w, r) }); err != nil {
		return fmt.Errorf("report %q: %w", path, err)
	}
	return nil
}

// WriteHTML writes one self-contained HTML page: the answer first, the
// evidence below it, the figures as inline SVG and the style inline, so
// that the page reads offline and fetches nothing. html/template escapes
// every name from the deployment; the figures' text is escaped by vgsvg.
func WriteHTML(w io.Writer, r HTMLReport) error {
	page, err := newHTMLPage(r)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := htmlTemplate.Execute(w, page); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// htmlPage is the template's data: every figure drawn and every number
// formatted beforehand, so that the template only lays them out.
type htmlPage struct {
	HTMLReport
	Title       string
	Reserve     string
	Allocation  string
	MinJobs     *algorithms.MinJobs
	KneeText    string
	Pools       []htmlPoolRow
	Evidence    []TierEvidenceJSON
	Figures     []htmlFigure
	Fits        []htmlFitRow
	FontCSS     template.CSS
	Compared    []htmlAllocationRow
	Range       *algorithms.PoolRange
	Trials      []htmlTrialRow
	Experiments int
	Measured    string
	Notes       []string
	Deployed    string
	GeneratedAt string
}

// htmlPoolRow is one pool of the answer's allocation: per tier, the pools
// the deployment names, with the recommended size (or the reserve's).
type htmlPoolRow struct {
	Tier, Role, Pool string
	Replicas         int
	PerServer, Total int
	Minimum          string
}

// htmlFitRow is one of advise's fits, with where it reaches the threshold
// ("-": never, a resource that does not grow with load).
type htmlFitRow struct {
	algorithms.DemandFit
	At string
}

// adviceNotes are the windows advise left out, the first few of each kind:
// a week of windows can drop hundreds.
func adviceNotes(a *algorithms.Advice) []string {
	const shown = 5
	var out []string
	for i, d := range a.Dropped {
		if i == shown {
			out = append(out, fmt.Sprintf("%d more windows left out", len(a.Dropped)-shown))
			break
		}
		out = append(out, fmt.Sprintf("window %s left out: %s", d.Label, d.Problem))
	}
	for i, g := range a.TierGaps {
		if i == shown {
			out = append(out, fmt.Sprintf("%d more windows left out of a tier's time per page", len(a.TierGaps)-shown))
			break
		}
		out = append(out, fmt.Sprintf("window %s left out of tier %s's time per page: %s", g.Label, g.Tier, g.Problem))
	}
	return out
}

type htmlFigure struct {
	ID, Title, Caption string
	SVG                template.HTML
}

type htmlAllocationRow struct {
	Allocation string
	Trials     int
	Workloads  string
	Throughput float64
	Goodput    string
	Errors     int64
	Saturated  string
}

type htmlTrialRow struct {
	N          int
	Procedure  string
	Allocation string
	Users      int
	Throughput string
	Goodput    string
	Errors     int64
	Seconds    string
	Saturated  string
}

func newHTMLPage(r HTMLReport) (htmlPage, error) {
	if a := r.Advice; a != nil {
		r.Critical, r.Recommendation = a.Critical, &a.Recommendation
	}
	c := r.Critical
	p := htmlPage{HTMLReport: r, Reserve: topology.FormatAllocationIn(r.Deployment, c.Reserve), Experiments: c.Experiments,
		Title: fmt.Sprintf("softalloc %s: %s", r.Command, r.Deployment.Topology)}
	trials := c.Trials
	if rec := r.Recommendation; rec != nil {
		p.Experiments = rec.Experiments
		p.Allocation = topology.FormatAllocationIn(r.Deployment, rec.Allocation)
		p.MinJobs = &rec.MinJobs
		p.Range = rec.Range
		p.Evidence = NewRecommendJSON(r.Deployment, *rec, p.Allocation).Evidence.Tiers
		trials = distinctTrials(rec.Critical.Trials, rec.MinJobs.Trials)
		p.KneeText = kneeText(rec.MinJobs)
	}
	if r.Advice != nil {
		trials = nil // advise runs none: its evidence is the windows
	}
	p.Pools = poolRows(r.Deployment, r.Recommendation, c.Reserve)
	p.Trials, p.Measured = trialRows(r.Deployment, trials, r.SLA)
	p.Compared = allocationRows(r.Deployment, trials, r.SLA)
	p.Notes = append(append(append([]string{}, r.Warnings...), c.Warnings...), unmeasured(trials)...)
	if r.Recommendation != nil {
		p.Notes = append(p.Notes, r.Recommendation.MinJobs.Warnings...)
	}
	if a := r.Advice; a != nil {
		p.KneeText = fmt.Sprintf("predicted by the %s model where the critical resource reaches the threshold", a.Model)
		p.Notes = append(p.Notes, adviceNotes(a)...)
		for _, f := range a.Fits {
			at := "-"
			if !math.IsInf(f.SaturationThroughput, 0) {
				at = strconv.FormatFloat(f.SaturationThroughput, 'f', 1, 64)
			}
			p.Fits = append(p.Fits, htmlFitRow{DemandFit: f, At: at})
		}
	}
	p.Deployed = "topology " + r.Deployment.Topology
	if r.DeploymentFile != "" {
		p.Deployed = fmt.Sprintf("%s (%s)", r.DeploymentFile, r.Deployment.Topology)
	}
	if !r.Generated.IsZero() {
		p.GeneratedAt = r.Generated.UTC().Format("2006-01-02 15:04 UTC")
	}
	figs, fonts, err := figures(r, trials)
	if err != nil {
		return p, err
	}
	p.Figures, p.FontCSS = figs, fonts
	return p, nil
}

// kneeText says where minJobs was read.
func kneeText(m algorithms.MinJobs) string {
	switch m.Reading {
	case string(algorithms.ReadAtSaturation):
		return "the smallest workload found with the critical resource saturated"
	case "throughput-peak":
		return "where throughput stopped growing (no knee found; see the notes)"
	}
	return fmt.Sprintf("the knee of SLO satisfaction at %.3g s", m.KneeThreshold)
}

func poolRows(d algorithms.Deployment, rec *algorithms.Recommendation, reserve algorithms.Allocation) []htmlPoolRow {
	var rows []htmlPoolRow
	recs := map[string]algorithms.TierRecommendation{}
	if rec != nil {
		for _, t := range rec.Tiers {
			recs[t.Name] = t
		}
	}
	for _, t := range d.Tiers {
		for _, pool := range t.Pools {
			row := htmlPoolRow{Tier: t.Name, Role: t.Role, Pool: t.PoolLabel(pool), Replicas: t.Replicas}
			tr, ok := recs[t.Name]
			switch {
			case ok && pool == algorithms.PoolThreads:
				row.PerServer, row.Total = tr.ThreadsPerServer, tr.TotalThreads
				if tr.Minimum != nil && tr.Minimum.ThreadsPerServer != tr.ThreadsPerServer {
					row.Minimum = strconv.Itoa(tr.Minimum.ThreadsPerServer)
				}
			case ok && pool == algorithms.PoolConnections && tr.ConnectionsPerServer != nil:
				row.PerServer, row.Total = *tr.ConnectionsPerServer, *tr.TotalConnections
				if m := tr.Minimum; m != nil && m.ConnectionsPerServer != nil && *m.ConnectionsPerServer != row.PerServer {
					row.Minimum = strconv.Itoa(*m.ConnectionsPerServer)
				}
			default:
				row.PerServer = reserve[t.Name].Size(pool)
				row.Total = row.PerServer * t.Replicas
			}
			rows = append(rows, row)
		}
		// A tier with no pools of its own (C-JDBC, MySQL behind a connection
		// pool) runs a thread per connection from the tier in front: its
		// sizing shows what the allocation gives it.
		if tr, ok := recs[t.Name]; ok && len(t.Pools) == 0 && tr.ThreadsPerServer > 0 {
			rows = append(rows, htmlPoolRow{Tier: t.Name, Role: t.Role, Replicas: t.Replicas, PerServer: tr.ThreadsPerServer, Total: tr.TotalThreads,
				Pool: "threads (one per connection from the tier in front; not set by the allocation)"})
		}
		// Behind a children tier the connection limit is derived, not a pool.
		if tr, ok := recs[t.Name]; ok && tr.MaxConnections != nil {
			m := tr.MaxConnections
			rows = append(rows, htmlPoolRow{Tier: t.Name, Role: t.Role, Replicas: t.Replicas, PerServer: m.PerServer, Total: m.PerServer * t.Replicas,
				Pool: fmt.Sprintf("connection limit (%d children of %s x %.2g connections each + %d reserved)", m.Children, m.From, m.PerChild, m.Reserve)})
		}
	}
	return rows
}

// goodput is the trial's pages/s within the SLA: the runner's interval at
// that threshold, else its response times; "-" when it measured neither
// (a Prometheus reading has no distribution).
func goodput(o algorithms.Observation, sla float64) (float64, bool) {
	for _, g := range o.GoodputIntervals {
		if g.SLA == sla {
			return g.Goodput, true
		}
	}
	if sla > 0 && o.ResponseTimes.Count() > 0 {
		return o.Goodput(sla), true
	}
	return 0, false
}

func goodputText(o algorithms.Observation, sla float64) string {
	if g, ok := goodput(o, sla); ok {
		return strconv.FormatFloat(g, 'f', 1, 64)
	}
	return "-"
}

func trialRows(d algorithms.Deployment, trials []algorithms.Trial, sla float64) ([]htmlTrialRow, string) {
	rows := make([]htmlTrialRow, len(trials))
	var window, warm float64
	for i, t := range trials {
		o := t.Observation
		tp := strconv.FormatFloat(o.Throughput, 'f', 1, 64)
		if o.ThroughputHalfWidth > 0 {
			tp += " ± " + strconv.FormatFloat(o.ThroughputHalfWidth, 'f', 1, 64)
		}
		rows[i] = htmlTrialRow{N: i + 1, Procedure: t.Procedure, Allocation: topology.FormatAllocationIn(d, t.Experiment.Allocation),
			Users: t.Experiment.Workload.Users, Throughput: tp, Goodput: goodputText(o, sla), Errors: o.Errors,
			Seconds: strconv.FormatFloat(o.RuntimeSeconds, 'f', 0, 64), Saturated: strings.Join(t.Saturated, " ")}
		window += o.RuntimeSeconds
		if o.Window != nil {
			warm += o.Window.WarmUpSeconds
		}
	}
	measured := fmt.Sprintf("%s of measured windows", duration(window))
	if warm > 0 {
		measured += fmt.Sprintf(" after %s of warm-up", duration(warm))
	}
	return rows, measured
}

func duration(seconds float64) string {
	return (time.Duration(math.Round(seconds)) * time.Second).String()
}

// allocationRows compares the allocations the campaign tried, each at its
// highest throughput: find-critical doubles a pool that saturates first.
func allocationRows(d algorithms.Deployment, trials []algorithms.Trial, sla float64) []htmlAllocationRow {
	var rows []htmlAllocationRow
	index := map[string]int{}
	users := map[string][]int{}
	for _, t := range trials {
		k := t.Experiment.Allocation.Key()
		i, ok := index[k]
		if !ok {
			i = len(rows)
			index[k] = i
			rows = append(rows, htmlAllocationRow{Allocation: topology.FormatAllocationIn(d, t.Experiment.Allocation), Throughput: -1})
		}
		row := &rows[i]
		row.Trials++
		row.Errors += t.Observation.Errors
		users[k] = append(users[k], t.Experiment.Workload.Users)
		if t.Observation.Throughput > row.Throughput {
			row.Throughput = t.Observation.Throughput
			row.Goodput = goodputText(t.Observation, sla)
			row.Saturated = strings.Join(t.Saturated, " ")
		}
	}
	for k, i := range index {
		u := users[k]
		rows[i].Workloads = fmt.Sprintf("%d to %d users", slices.Min(u), slices.Max(u))
		if slices.Min(u) == slices.Max(u) {
			rows[i].Workloads = fmt.Sprintf("%d users", u[0])
		}
	}
	return rows
}

// unmeasured names what the runner could not measure: pools whose full
// share it did not read.
func unmeasured(trials []algorithms.Trial) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range trials {
		for _, s := range t.Observation.Servers {
			for _, p := range s.Pools {
				k := s.Name + " " + p.Name
				if p.FullShare < 0 && !seen[k] {
					seen[k] = true
					out = append(out, fmt.Sprintf("the runner did not measure how long %s's %s pool was full", s.Name, p.Name))
				}
			}
		}
	}
	return out
}

// reserveTrials are the trials at allocation a, one per workload (a refined
// trial replaces the coarser one), by workload.
func reserveTrials(trials []algorithms.Trial, a algorithms.Allocation) []algorithms.Trial {
	key := a.Key()
	return lastPerWorkload(slices.DeleteFunc(slices.Clone(trials), func(t algorithms.Trial) bool { return t.Experiment.Allocation.Key() != key }))
}

// lastPerWorkload is the last trial at each workload, by workload: the
// search only enlarges the allocation, so the last is the one it went on
// from (or a refined trial of it).
func lastPerWorkload(trials []algorithms.Trial) []algorithms.Trial {
	byUsers := map[int]algorithms.Trial{}
	for _, t := range trials {
		byUsers[t.Experiment.Workload.Users] = t
	}
	out := make([]algorithms.Trial, 0, len(byUsers))
	for _, t := range byUsers {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b algorithms.Trial) int { return a.Experiment.Workload.Users - b.Experiment.Workload.Users })
	return out
}

// tierSeries collects one value per trial for each series name, in the
// order names first appear.
type tierSeries struct {
	names []string
	x, y  map[string][]float64
}

func (s *tierSeries) add(name string, x, y float64) {
	if s.x == nil {
		s.x, s.y = map[string][]float64{}, map[string][]float64{}
	}
	if _, ok := s.x[name]; !ok {
		s.names = append(s.names, name)
	}
	s.x[name] = append(s.x[name], x)
	s.y[name] = append(s.y[name], y)
}

func (s *tierSeries) curves() []Curve {
	out := make([]Curve, len(s.names))
	for i, n := range s.names {
		out[i] = Curve{Label: n, X: s.x[n], Y: s.y[n]}
	}
	return out
}

// busiest is the largest value of a tier's servers per key: saturation is
// any one server's, so a tier is as busy as its busiest server.
func busiest(o algorithms.Observation, tier string, value func(algorithms.ServerObservation, func(string, float64))) map[string]float64 {
	out := map[string]float64{}
	for _, s := range o.Servers {
		if s.Tier != tier {
			continue
		}
		value(s, func(k string, v float64) {
			if old, ok := out[k]; !ok || v > old {
				out[k] = v
			}
		})
	}
	return out
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// marker is a vertical line at x from 0 to top.
func marker(label string, x, top float64) Curve {
	return Curve{Label: label, X: []float64{x, x}, Y: []float64{0, top}, Mark: LineOnly}
}

func level(label string, y, x0, x1 float64) Curve {
	return Curve{Label: label, X: []float64{x0, x1}, Y: []float64{y, y}, Mark: LineOnly}
}

// figures draws the evidence: throughput, the critical tier's SLO
// satisfaction, every tier's resources and pools against workload, and the
// pool sizes compared.
// figureSet collects a page's figures and the fonts they were drawn with.
type figureSet struct {
	figs  []htmlFigure
	fonts []string
}

// add draws curves as a figure; one with no data is left out.
func (fs *figureSet) add(id, title, caption, x, y string, curves []Curve, ymax float64) error {
	var kept []Curve
	for _, cv := range curves {
		if len(cv.X) > 0 {
			kept = append(kept, cv)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	p, err := CurvesPlot(title, x, y, kept)
	if err != nil {
		return fmt.Errorf("figure %q: %w", title, err)
	}
	p.Y.Min = 0
	if ymax > 0 {
		p.Y.Max = ymax
	}
	svg, css, err := inlineSVG(p, title, PlotWidth, PlotHeight*0.8)
	if err != nil {
		return fmt.Errorf("figure %q: %w", title, err)
	}
	if css != "" && !slices.Contains(fs.fonts, css) {
		fs.fonts = append(fs.fonts, css)
	}
	fs.figs = append(fs.figs, htmlFigure{ID: id, Title: title, Caption: caption, SVG: svg})
	return nil
}

// css is vgsvg's own CSS: the @font-face rules of the fonts it measured,
// base64 data.
func (fs *figureSet) css() template.CSS { return template.CSS(strings.Join(fs.fonts, "")) }

// rangeFigure draws goodput against the bounding pool's sizes, measured
// (recommend --range) or predicted (advise).
func (fs *figureSet) rangeFigure(rg *algorithms.PoolRange) error {
	if rg == nil || len(rg.Points) == 0 {
		return nil
	}
	var g tierSeries
	best := 0.0
	for _, pt := range rg.Points {
		g.add(fmt.Sprintf("%s %s", rg.Tier, rg.Pool), float64(pt.Size), pt.Goodput)
		best = math.Max(best, pt.Goodput)
	}
	curves := append(g.curves(), marker(fmt.Sprintf("recommended: %d", rg.Recommended), float64(rg.Recommended), best*1.1))
	return fs.add("fig-range", "Goodput against pool size", fmt.Sprintf("Goodput at the SLA of each size of the bounding pool (%s).", rg.Source),
		"pool size per server", "goodput (pages/s)", curves, best*1.1)
}

func figures(r HTMLReport, trials []algorithms.Trial) ([]htmlFigure, template.CSS, error) {
	c := r.Critical
	fs := &figureSet{}
	if r.Advice != nil {
		if err := adviceFigures(fs, r); err != nil {
			return nil, "", err
		}
		return fs.figs, fs.css(), nil
	}
	add := fs.add
	// Throughput against workload, one curve per allocation tried.
	var tp tierSeries
	maxTP := 0.0
	for _, key := range allocationOrder(trials) {
		for _, t := range reserveTrials(trials, key) {
			tp.add("allocation "+topology.FormatAllocationIn(r.Deployment, key), float64(t.Experiment.Workload.Users), t.Observation.Throughput)
			maxTP = math.Max(maxTP, t.Observation.Throughput)
		}
	}
	top := maxTP * 1.1
	curves := tp.curves()
	if c.SaturationWorkload > 0 {
		curves = append(curves, marker(fmt.Sprintf("saturation: %d users", c.SaturationWorkload), float64(c.SaturationWorkload), top))
	}
	var m *algorithms.MinJobs
	if r.Recommendation != nil {
		m = &r.Recommendation.MinJobs
		if m.WLmin > 0 {
			curves = append(curves, marker(fmt.Sprintf("WLmin (%s): %d users", m.Reading, m.WLmin), float64(m.WLmin), top))
		}
	}
	caption := "Pages per second of each trial, one line per allocation tried. The vertical line marks where the critical resource first saturated."
	if m != nil {
		caption = "Pages per second of each trial, one line per allocation tried. The vertical lines mark where the critical resource first saturated and the workload minJobs was read at (WLmin)."
	}
	if err := add("fig-throughput", "Throughput against workload", caption,
		"workload (users)", "throughput (pages/s)", curves, top); err != nil {
		return nil, "", err
	}
	if m != nil && len(m.Points) > 0 {
		var slo tierSeries
		for _, pt := range m.Points {
			slo.add(fmt.Sprintf("within %.3g s", m.KneeThreshold), float64(pt.Workload), pt.SLOSatisfaction)
		}
		curves := slo.curves()
		if m.WLmin > 0 {
			curves = append(curves, marker(fmt.Sprintf("WLmin: %d users", m.WLmin), float64(m.WLmin), 1.05))
		}
		if err := add("fig-slo", "SLO satisfaction against workload", "The share of pages within the threshold in the small-step scan; intervention analysis reads the knee of this curve.",
			"workload (users)", "share of pages within the threshold", curves, 1.05); err != nil {
			return nil, "", err
		}
	}
	at := lastPerWorkload(trials)
	var util, pools, full tierSeries
	for _, tier := range r.Deployment.Tiers {
		for _, t := range at {
			o, x := t.Observation, float64(t.Experiment.Workload.Users)
			hw := busiest(o, tier.Name, func(s algorithms.ServerObservation, put func(string, float64)) {
				put("cpu", s.CPU)
				if s.Throttled > 0 {
					put("cpu throttled", s.Throttled)
				}
				for k, v := range s.Resources {
					put(k, v)
				}
			})
			for _, k := range sortedKeys(hw) {
				util.add(tier.Name+" "+k, x, hw[k])
			}
			ps := busiest(o, tier.Name, func(s algorithms.ServerObservation, put func(string, float64)) {
				for _, p := range s.Pools {
					put(tier.PoolLabel(p.Name), p.Utilization())
				}
			})
			fs := busiest(o, tier.Name, func(s algorithms.ServerObservation, put func(string, float64)) {
				for _, p := range s.Pools {
					if p.FullShare >= 0 {
						put(tier.PoolLabel(p.Name), p.FullShare)
					}
				}
			})
			for _, k := range sortedKeys(ps) {
				pools.add(tier.Name+" "+k, x, ps[k])
			}
			for _, k := range sortedKeys(fs) {
				full.add(tier.Name+" "+k, x, fs[k])
			}
		}
	}
	hwCurves := util.curves()
	if r.HardwareThreshold > 0 && len(at) > 0 {
		hwCurves = append(hwCurves, level(fmt.Sprintf("saturation threshold %.2g", r.HardwareThreshold), r.HardwareThreshold,
			float64(at[0].Experiment.Workload.Users), float64(at[len(at)-1].Experiment.Workload.Users)))
	}
	reserveNote := "The last trial at each workload (a pool that saturates first doubles the allocation: see the allocations compared); each tier is its busiest server."
	if err := add("fig-utilisation", "Hardware utilisation against workload", "Each resource's utilisation. "+reserveNote,
		"workload (users)", "utilisation", hwCurves, 1.05); err != nil {
		return nil, "", err
	}
	if err := add("fig-pools", "Pools: busy / size against workload", "The mean share of each pool's units in use. "+reserveNote,
		"workload (users)", "busy / size", pools.curves(), 1.05); err != nil {
		return nil, "", err
	}
	if err := add("fig-full", "Pools: share of the time full against workload", "The share of the window in which every unit of the pool was busy. "+reserveNote,
		"workload (users)", "share of the time full", full.curves(), 1.05); err != nil {
		return nil, "", err
	}
	if r.Recommendation != nil {
		if err := fs.rangeFigure(r.Recommendation.Range); err != nil {
			return nil, "", err
		}
	}
	return fs.figs, fs.css(), nil
}

// adviceFigures draws advise's evidence: no workload was set, so each
// window's readings stand against the page throughput it served, beside
// the utilisation law fitted through them.
func adviceFigures(fs *figureSet, r HTMLReport) error {
	a := r.Advice
	var util, pools tierSeries
	maxX := 0.0
	for _, w := range r.Windows {
		if w.Problem != "" {
			continue
		}
		o, x := w.Observation, w.Observation.Throughput
		maxX = math.Max(maxX, x)
		for _, tier := range r.Deployment.Tiers {
			hw := busiest(o, tier.Name, func(s algorithms.ServerObservation, put func(string, float64)) {
				put("cpu", s.CPU)
				for k, v := range s.Resources {
					put(k, v)
				}
			})
			for _, k := range sortedKeys(hw) {
				util.add(tier.Name+" "+k, x, hw[k])
			}
			ps := busiest(o, tier.Name, func(s algorithms.ServerObservation, put func(string, float64)) {
				for _, p := range s.Pools {
					put(tier.PoolLabel(p.Name), p.Utilization())
				}
			})
			for _, k := range sortedKeys(ps) {
				pools.add(tier.Name+" "+k, x, ps[k])
			}
		}
	}
	curves := util.curves()
	for i := range curves {
		curves[i].Mark = PointsOnly // windows in time order: a line would invent a path
	}
	// Per tier and resource, the fit of the server that reaches the
	// threshold first, drawn up to the predicted saturation.
	xEnd := math.Max(maxX, a.SaturationThroughput) * 1.05
	binding := map[string]algorithms.DemandFit{}
	var order []string
	for _, f := range a.Fits {
		k := f.Tier + " " + f.Resource
		old, seen := binding[k]
		if !seen {
			order = append(order, k)
		}
		if !seen || f.SaturationThroughput < old.SaturationThroughput {
			binding[k] = f
		}
	}
	for _, k := range order {
		f := binding[k]
		x1 := xEnd // up to the figure's edge or its top, whichever comes first
		if f.PerPage > 0 {
			x1 = math.Min(x1, (1.05-f.Idle)/f.PerPage)
		}
		curves = append(curves, Curve{Label: fmt.Sprintf("%s fit (%s)", k, f.Server), X: []float64{0, x1},
			Y: []float64{f.Idle, f.Idle + f.PerPage*x1}, Mark: LineOnly})
	}
	if r.HardwareThreshold > 0 {
		curves = append(curves, level(fmt.Sprintf("saturation threshold %.2g", r.HardwareThreshold), r.HardwareThreshold, 0, xEnd))
	}
	if a.SaturationThroughput > 0 && !math.IsInf(a.SaturationThroughput, 0) {
		curves = append(curves, marker(fmt.Sprintf("predicted saturation: %.1f pages/s", a.SaturationThroughput), a.SaturationThroughput, 1.05))
	}
	if err := fs.add("fig-utilisation", "Hardware utilisation against page throughput",
		"Each window's utilisation of each resource (each tier is its busiest server), and the utilisation law fitted through the windows of the server that reaches the threshold first.",
		"page throughput (pages/s)", "utilisation", curves, 1.05); err != nil {
		return err
	}
	pc := pools.curves()
	for i := range pc {
		pc[i].Mark = PointsOnly
	}
	if err := fs.add("fig-pools", "Pools: busy / size against page throughput", "The mean share of each pool's units in use in each window; each tier is its busiest server.",
		"page throughput (pages/s)", "busy / size", pc, 1.05); err != nil {
		return err
	}
	return fs.rangeFigure(a.Range)
}

// allocationOrder is the allocations the trials tried, in the order tried.
func allocationOrder(trials []algorithms.Trial) []algorithms.Allocation {
	var out []algorithms.Allocation
	seen := map[string]bool{}
	for _, t := range trials {
		k := t.Experiment.Allocation.Key()
		if !seen[k] {
			seen[k] = true
			out = append(out, t.Experiment.Allocation)
		}
	}
	return out
}

// inlineSVG draws p as an <svg> element to put in an HTML page: the XML
// prolog and the namespace declarations go (HTML gives an inline <svg> its
// namespace; the declarations are URLs a reader of the page might take for
// something it fetches), and the title is the figure's label. The fonts
// the figure was laid out with come back apart as CSS, for the page to
// carry once (half a megabyte a face): without them a browser lays the
// text out in a wider font than gonum measured, and the legends spill out
// of the figure.
func inlineSVG(p *plot.Plot, title string, w, h vg.Length) (svg template.HTML, fontCSS string, err error) {
	c := vgsvg.NewWith(vgsvg.UseWH(w, h), vgsvg.EmbedFonts(true))
	drawFigure(p, draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", "", err
	}
	s := b.String()
	start := strings.Index(s, "<svg")
	if start < 0 {
		return "", "", fmt.Errorf("vgsvg wrote no <svg> element")
	}
	end := strings.IndexByte(s[start:], '>')
	if end < 0 {
		return "", "", fmt.Errorf("vgsvg wrote an unterminated <svg> element")
	}
	body := strings.TrimLeft(s[start+end+1:], "\n")
	const defsOpen, defsClose = "<defs>\n\t<style>\n", "\t</style>\n</defs>\n"
	if rest, ok := strings.CutPrefix(body, defsOpen); ok {
		i := strings.Index(rest, defsClose)
		if i < 0 {
			return "", "", fmt.Errorf("vgsvg wrote an unterminated font style")
		}
		fontCSS, body = rest[:i], rest[i+len(defsClose):]
	}
	open := fmt.Sprintf(`<svg viewBox="0 0 %.6g %.6g" width="%.6g" height="%.6g" role="img" aria-label="%s">`,
		w.Points(), h.Points(), w.Points(), h.Points(), html.EscapeString(title))
	// Safe to mark as HTML: vgsvg escapes every text it draws, and the rest
	// is numbers and colours.
	return template.HTML(open + "\n" + body), fontCSS, nil
}
