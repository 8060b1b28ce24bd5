package main

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Roles of the configurations: the target compares the limit's against the
// others'.
const (
	rolePlatform = "platform"
	roleNoLimit  = "no-limit"
	roleLimit    = "limit"
)

type config struct {
	Name       string `json:"name"`
	Role       string `json:"role"`
	Threads    string `json:"threads"` // platform or virtual
	ConnTO     string `json:"connectionTimeout"`
	Deployment string `json:"deployment"`
	Alloc      string `json:"allocation"`
}

type server struct {
	Name   string  `json:"name"`
	CPU    float64 `json:"cpu"`
	GC     float64 `json:"gcShare"`
	Pools  []pool  `json:"pools"`
	Thrput float64 `json:"throughput"`
}

type pool struct {
	Name string  `json:"name"`
	Size int     `json:"size"`
	Busy float64 `json:"busy"`
}

// row is one trial: simulate's JSON, with the configuration and repetition.
type row struct {
	Config       string             `json:"config"`
	Rep          int                `json:"rep"`
	Users        int                `json:"users"`
	Throughput   float64            `json:"throughput"`
	Goodput      map[string]float64 `json:"goodput"`
	ResponseTime float64            `json:"responseTime"`
	Errors       int64              `json:"errors"`
	ErrorShare   float64            `json:"errorShare"`
	Servers      []server           `json:"servers"`
}

// recommendation is what softalloc recommend said for a deployment: the web
// threads, the app tier's jobs (the limit's permits on virtual threads,
// Tomcat's threads on platform threads) and HikariCP's pool.
type recommendation struct {
	Web int `json:"webThreads"`
	// App are the app tier's jobs, in Unit: permits or threads.
	App                int      `json:"app"`
	Unit               string   `json:"appUnit"`
	Connections        int      `json:"connections"`
	MinJobs            float64  `json:"minJobs"`
	Reading            string   `json:"reading"`
	WLmin              int      `json:"wlMin"`
	CriticalTier       string   `json:"criticalTier"`
	CriticalResource   string   `json:"criticalResource"`
	SaturationWorkload int      `json:"saturationWorkload"`
	MaxThroughput      float64  `json:"maxThroughput"`
	Experiments        int      `json:"experiments"`
	Seconds            float64  `json:"seconds"`
	Warnings           []string `json:"warnings,omitempty"`
	// Given is set when the permits and pool came from -vrec, not from a
	// recommend run.
	Given bool `json:"given,omitempty"`
}

// parseRecommend reads recommend --output json: the web tier's threads and
// the app tier's jobs, in unit (permits for deployment-java-vthreads.yaml,
// threads for deployment-java.yaml), and connections.
func parseRecommend(b []byte, unit string) (recommendation, error) {
	var doc struct {
		Critical struct {
			Tier               string  `json:"tier"`
			Resource           string  `json:"resource"`
			SaturationWorkload int     `json:"saturationWorkload"`
			MaxThroughput      float64 `json:"maxThroughput"`
		} `json:"critical"`
		MinJobs     float64 `json:"minJobs"`
		Experiments int     `json:"experiments"`
		Tiers       []struct {
			Name                 string `json:"name"`
			ThreadsPerServer     int    `json:"threadsPerServer"`
			ConnectionsPerServer *int   `json:"connectionsPerServer"`
			Permits              bool   `json:"permits"`
		} `json:"tiers"`
		Evidence struct {
			Reading string `json:"reading"`
			WLmin   int    `json:"wlMin"`
		} `json:"evidence"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return recommendation{}, fmt.Errorf("recommend's JSON: %w: %.200s", err, b)
	}
	r := recommendation{MinJobs: doc.MinJobs, Reading: doc.Evidence.Reading, WLmin: doc.Evidence.WLmin, CriticalTier: doc.Critical.Tier,
		CriticalResource: doc.Critical.Resource, SaturationWorkload: doc.Critical.SaturationWorkload, MaxThroughput: doc.Critical.MaxThroughput,
		Experiments: doc.Experiments, Warnings: doc.Warnings, Unit: unit}
	for _, t := range doc.Tiers {
		switch t.Name {
		case "web":
			r.Web = t.ThreadsPerServer
		case "app":
			switch {
			case unit == "permits" && !t.Permits:
				return r, fmt.Errorf("recommend's app tier has threads, not permits: want the virtual-thread deployment (deployment-java-vthreads.yaml)")
			case unit == "threads" && t.Permits:
				return r, fmt.Errorf("recommend's app tier has permits, not threads: want the platform deployment (deployment-java.yaml)")
			}
			r.App = t.ThreadsPerServer
			if t.ConnectionsPerServer != nil {
				r.Connections = *t.ConnectionsPerServer
			}
		}
	}
	if r.Web < 1 || r.App < 1 || r.Connections < 1 {
		return r, fmt.Errorf("recommend gave web threads %d, app %s %d, app connections %d: want all three positive", r.Web, unit, r.App, r.Connections)
	}
	if r.SaturationWorkload < 1 {
		return r, fmt.Errorf("recommend's critical resource has saturation workload %d: want a positive number of users", r.SaturationWorkload)
	}
	return r, nil
}

// slasFromLowLoad gives the SLA thresholds as factors of the response time
// at low load, rounded to two significant figures (as seconds, the way
// simulate --sla takes them and keys its goodput).
func slasFromLowLoad(rt float64, factors []float64) ([]string, error) {
	if !(rt > 0) || math.IsInf(rt, 0) {
		return nil, fmt.Errorf("low-load response time %v s: want a positive number of seconds", rt)
	}
	var out []string
	seen := map[string]bool{}
	for _, f := range factors {
		v := f * rt
		p := math.Pow(10, math.Floor(math.Log10(v))-1)
		s := strconv.FormatFloat(math.Round(v/p)*p, 'f', max(0, int(-math.Floor(math.Log10(v))+1)), 64)
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out, nil
}

// workloads are the fractions of the saturation workload, rounded, at least
// one user, in increasing order without repeats.
func workloads(saturation int, fractions []float64) []int {
	seen := map[int]bool{}
	var out []int
	for _, f := range fractions {
		u := max(1, int(math.Round(f*float64(saturation))))
		if !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	sort.Ints(out)
	return out
}

// cell is one configuration at one workload over its repetitions: the
// means and, for throughput and goodput, the smallest and largest.
type cell struct {
	Config         string
	Users          int
	N              int
	Throughput     float64
	ThroughputMin  float64
	ThroughputMax  float64
	Goodput        map[string]float64
	GoodputMin     map[string]float64
	GoodputMax     map[string]float64
	ResponseTime   float64
	Errors         int64
	CPU, GC        float64
	Jobs, Conns    float64
	JobsSize, Size int
}

// queues says the configuration held more pages in the app than HikariCP
// had connections: the rest waited in its queue for one.
func (c cell) queues() bool { return c.Size > 0 && c.Jobs > float64(c.Size)+0.5 }

func (r report) cells() []cell {
	var out []cell
	for _, c := range r.Configs {
		for _, u := range r.Users {
			x := cell{Config: c.Name, Users: u, Goodput: map[string]float64{}, GoodputMin: map[string]float64{}, GoodputMax: map[string]float64{}}
			for _, t := range r.Rows {
				if t.Config != c.Name || t.Users != u {
					continue
				}
				app := t.app()
				if x.N == 0 || t.Throughput < x.ThroughputMin {
					x.ThroughputMin = t.Throughput
				}
				x.ThroughputMax = max(x.ThroughputMax, t.Throughput)
				for _, s := range r.SLAs {
					g := t.Goodput[s]
					if x.N == 0 || g < x.GoodputMin[s] {
						x.GoodputMin[s] = g
					}
					x.GoodputMax[s] = max(x.GoodputMax[s], g)
					x.Goodput[s] += g
				}
				x.N++
				x.Throughput += t.Throughput
				x.ResponseTime += t.ResponseTime
				x.Errors += t.Errors
				x.CPU += app.CPU
				x.GC += app.GC
				j, js := poolOf(app, "threads")
				k, ks := poolOf(app, "connections")
				x.Jobs += j
				x.Conns += k
				x.JobsSize, x.Size = js, ks
			}
			if x.N == 0 {
				continue
			}
			n := float64(x.N)
			x.Throughput /= n
			x.ResponseTime /= n
			x.CPU /= n
			x.GC /= n
			x.Jobs /= n
			x.Conns /= n
			for _, s := range r.SLAs {
				x.Goodput[s] /= n
			}
			out = append(out, x)
		}
	}
	return out
}

// verdict is the target at one SLA threshold.
type verdict struct {
	SLA string `json:"sla"`
	// Best is each configuration's best mean goodput over the workloads.
	Best map[string]float64 `json:"best"`
	// GridBest is the largest of them; Share the limit's share of it.
	GridBest float64 `json:"gridBest"`
	Share    float64 `json:"share"`
	Reached  bool    `json:"reached"` // Share >= 0.95
	// VirtualBest is the best on virtual threads alone, VirtualShare the
	// limit's share of it: a user who turned virtual threads on compares
	// with those, and the platform threads cost less CPU per page here.
	VirtualBest  float64 `json:"virtualBest"`
	VirtualShare float64 `json:"virtualShare"`
	// Against are the cells where a no-limit configuration timed out or
	// queued, with the limit's goodput at the same workload.
	Against []duel `json:"against"`
}

type duel struct {
	Config   string  `json:"config"`
	Users    int     `json:"users"`
	Why      string  `json:"why"`
	Limit    float64 `json:"limit"`
	NoLimit  float64 `json:"noLimit"`
	LimitWon bool    `json:"limitWon"`
}

// target judges the target at each threshold: the limit's best
// goodput reaches 0.95 of the grid's best, and beats no limit wherever that
// timed out (errors) or queued (more pages in the app than connections).
func (r report) target() []verdict {
	cells := r.cells()
	var limit string
	virtual := map[string]bool{}
	for _, c := range r.Configs {
		if c.Role == roleLimit {
			limit = c.Name
		}
		virtual[c.Name] = c.Threads == "virtual"
	}
	at := map[string]map[int]cell{}
	for _, c := range cells {
		if at[c.Config] == nil {
			at[c.Config] = map[int]cell{}
		}
		at[c.Config][c.Users] = c
	}
	var out []verdict
	for _, s := range r.SLAs {
		v := verdict{SLA: s, Best: map[string]float64{}, Against: []duel{}}
		for _, c := range cells {
			v.Best[c.Config] = max(v.Best[c.Config], c.Goodput[s])
			v.GridBest = max(v.GridBest, c.Goodput[s])
			if virtual[c.Config] {
				v.VirtualBest = max(v.VirtualBest, c.Goodput[s])
			}
		}
		if v.GridBest > 0 {
			v.Share = v.Best[limit] / v.GridBest
		}
		if v.VirtualBest > 0 {
			v.VirtualShare = v.Best[limit] / v.VirtualBest
		}
		v.Reached = limit != "" && v.Share >= 0.95
		for _, c := range r.Configs {
			if c.Role != roleNoLimit {
				continue
			}
			for _, u := range r.Users {
				x, ok := at[c.Name][u]
				l, lok := at[limit][u]
				if !ok || !lok {
					continue
				}
				var why []string
				if x.Errors > 0 {
					why = append(why, fmt.Sprintf("%d errors", x.Errors))
				}
				if x.queues() {
					why = append(why, fmt.Sprintf("%.0f pages in the app for %d connections", x.Jobs, x.Size))
				}
				if len(why) == 0 {
					continue
				}
				v.Against = append(v.Against, duel{Config: c.Name, Users: u, Why: strings.Join(why, ", "), Limit: l.Goodput[s], NoLimit: x.Goodput[s],
					LimitWon: l.Goodput[s] > x.Goodput[s]})
			}
		}
		out = append(out, v)
	}
	return out
}

// cpuPerPage is the app's CPU time per page, ms, with its cap: the tier's
// CPU is a share of its 0.1 cores.
func cpuPerPage(x row) float64 {
	if x.Throughput <= 0 {
		return 0
	}
	return 1000 * appCores * x.app().CPU / x.Throughput
}

// appCores is the Java stack's app cap (testbed/stacks/java/stack.sh).
const appCores = 0.1

func (x row) app() server {
	for _, s := range x.Servers {
		if s.Name == "app-1" {
			return s
		}
	}
	return server{}
}

func poolOf(s server, name string) (float64, int) {
	for _, p := range s.Pools {
		if p.Name == name {
			return p.Busy, p.Size
		}
	}
	return 0, 0
}

// report is docs/live-evaluation-vthreads.json; the Markdown is drawn from it.
type report struct {
	// Args are vthreadseval's flags in the run.
	Args         []string `json:"args"`
	Generated    string   `json:"generated"`
	Minutes      float64  `json:"minutes"`
	UptimeBefore string   `json:"uptimeBefore"`
	UptimeAfter  string   `json:"uptimeAfter"`
	JDK          string   `json:"jdk"`
	Runtime      string   `json:"trialRuntime"`
	Warm         string   `json:"warmUp"`
	WarmUsers    int      `json:"warmUsers"`
	// WarmUsersRecommend are the users of the warm-up before recommend.
	WarmUsersRecommend int `json:"warmUsersRecommend"`
	// Warmups are each JVM's warm-up, in the order run.
	Warmups []warmup       `json:"warmups"`
	Reps    int            `json:"repetitions"`
	Rec     recommendation `json:"recommendation"`
	// RecommendArgs are recommend's flags after its deployment file.
	RecommendArgs string `json:"recommendArgs,omitempty"`
	// PlatformRec is recommend's answer for the platform deployment (or
	// -rec's, Given).
	PlatformRec           recommendation `json:"platformRecommendation"`
	PlatformRecommendArgs string         `json:"platformRecommendArgs,omitempty"`
	LowUsers              int            `json:"lowLoadUsers"`
	LowRT                 []float64      `json:"lowLoadResponseTimes"`
	SLAFactors            []float64      `json:"slaFactors"`
	Fractions             []float64      `json:"workloadFractions"`
	SLAs                  []string       `json:"slas"`
	Configs               []config       `json:"configs"`
	Users                 []int          `json:"users"`
	Rows                  []row          `json:"rows"`
	Verdicts              []verdict      `json:"target"`
	Note                  string         `json:"note,omitempty"`
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(max(1, len(xs)))
}

func (r report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Virtual threads: where the concurrency limit goes (issue 38)\n\n")
	fmt.Fprintf(&b, "Generated by `%s` (under `flock -o /tmp/measure.lock`: without -o the JVMs it starts inherit the lock) on %s, in %.0f minutes, on the\n",
		strings.Join(append([]string{"go run ./testbed/vthreadseval"}, r.Args...), " "), r.Generated, r.Minutes)
	fmt.Fprintf(&b, "testbed's Java stack (Apache -> embedded Tomcat 11 with HikariCP 7 -> MariaDB, caps web 0.5, app 0.1, db 0.6 cores) on one 2-core\n")
	fmt.Fprintf(&b, "machine shared with other work. **Every configuration ran on the same JDK**: %s (platform threads too, through\n", r.JDK)
	fmt.Fprintf(&b, "SOFTALLOC_TESTBED_JAVA_HOME). Trials: 3 s ramp-up, %s runtime, 1 s ramp-down, the RUBBoS browse-only mix with 0.5 s think\n", r.Runtime)
	fmt.Fprintf(&b, "time, %d repetitions per cell, in opposite orders (configurations and workloads one way, then the other way). A new JVM wherever the next\n", r.Reps)
	fmt.Fprintf(&b, "configuration needs another (the threads variant, or HikariCP's connectionTimeout, a flag of the JVM), each warmed before anything was measured on it:\n%s.\n", r.Warm)
	fmt.Fprintf(&b, "The trials under the cap ran at %d users before each recommend and at %d (0.8 of the saturation workload) before the grid's configurations.\n\n", r.WarmUsersRecommend, r.WarmUsers)
	fmt.Fprintf(&b, "| JVM | with the app's cap lifted | app CPU per page under the cap (ms), trial by trial | flat | warm-up |\n|---|---|---|---|---|\n")
	for _, w := range r.Warmups {
		hot := "-"
		if w.HotUsers > 0 {
			hot = fmt.Sprintf("%.0f s at %d users (app=%s): %.1f pages/s", w.HotSeconds, w.HotUsers, w.HotCap, w.HotThroughput)
		}
		settled := "**no**"
		if w.Settled {
			settled = "yes"
		}
		fmt.Fprintf(&b, "| %s | %s | %s (%s trials at %d users) | %s | %.0f s |\n", w.JVM, hot, msList(w.CPUPerPage), w.Trial, w.Users, settled, w.Seconds)
	}
	fmt.Fprintf(&b, "\nLoad before: `%s`; after: `%s`.\n\n", r.UptimeBefore, r.UptimeAfter)

	fmt.Fprintf(&b, "## softalloc's recommendations, the SLA thresholds and the workloads\n\n")
	b.WriteString(recommendationLine(r.PlatformRec, "deployment-java.yaml", r.PlatformRecommendArgs, "-rec"))
	b.WriteString(recommendationLine(r.Rec, "deployment-java-vthreads.yaml", r.RecommendArgs, "-vrec"))
	b.WriteString("\n")
	rts := make([]string, len(r.LowRT))
	for i, x := range r.LowRT {
		rts[i] = fmt.Sprintf("%.1f", 1000*x)
	}
	fmt.Fprintf(&b, "SLA thresholds: the mean response time at low load (%d users, the recommendation's allocation, %d trials: %s ms; mean %.1f ms) times",
		r.LowUsers, len(r.LowRT), strings.Join(rts, ", "), 1000*mean(r.LowRT))
	for i, f := range r.SLAFactors {
		sep := ","
		if i == len(r.SLAFactors)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, " %g%s", f, sep)
	}
	fmt.Fprintf(&b, ", rounded: **%s s**. Workloads: %s of the saturation workload, **%s users**.\n\n", strings.Join(r.SLAs, ", "),
		joinFloats(r.Fractions), joinInts(r.Users))

	fmt.Fprintf(&b, "| configuration | allocation | threads | HikariCP connectionTimeout |\n|---|---|---|---|\n")
	for _, c := range r.Configs {
		th := "Tomcat's thread pool"
		if c.Threads == "virtual" {
			th = "a virtual thread per request"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", c.Name, c.Alloc, th, c.ConnTO)
	}

	cells := r.cells()
	fmt.Fprintf(&b, "\n## Each cell: the mean of its repetitions (smallest-largest)\n\n| configuration | users | pages/s |")
	for _, s := range r.SLAs {
		fmt.Fprintf(&b, " goodput %s s |", s)
	}
	b.WriteString(" errors | mean response time | app CPU | app GC share | jobs in the app (threads or permits) | busy connections |\n|---|---|---|")
	for range r.SLAs {
		b.WriteString("---|")
	}
	b.WriteString("---|---|---|---|---|---|\n")
	for _, c := range cells {
		fmt.Fprintf(&b, "| %s | %d | %.1f (%.1f-%.1f) |", c.Config, c.Users, c.Throughput, c.ThroughputMin, c.ThroughputMax)
		for _, s := range r.SLAs {
			fmt.Fprintf(&b, " %.1f (%.1f-%.1f) |", c.Goodput[s], c.GoodputMin[s], c.GoodputMax[s])
		}
		fmt.Fprintf(&b, " %d | %.0f ms | %.2f | %.2f%% | %.1f of %d | %.1f of %d |\n", c.Errors, 1000*c.ResponseTime, c.CPU, 100*c.GC,
			c.Jobs, c.JobsSize, c.Conns, c.Size)
	}

	// The configurations side by side at each workload.
	fmt.Fprintf(&b, "\n## Side by side: pages/s; goodput at %s s; mean response time; errors\n\n| users |", strings.Join(r.SLAs, " / "))
	for _, c := range r.Configs {
		fmt.Fprintf(&b, " %s |", c.Name)
	}
	b.WriteString("\n|---|")
	for range r.Configs {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, u := range r.Users {
		fmt.Fprintf(&b, "| %d |", u)
		for _, c := range r.Configs {
			x, ok := cellAt(cells, c.Name, u)
			if !ok {
				b.WriteString(" - |")
				continue
			}
			g := make([]string, len(r.SLAs))
			for i, s := range r.SLAs {
				g[i] = fmt.Sprintf("%.1f", x.Goodput[s])
			}
			fmt.Fprintf(&b, " %.1f; %s; %.0f ms; %d |", x.Throughput, strings.Join(g, " / "), 1000*x.ResponseTime, x.Errors)
		}
		b.WriteString("\n")
	}

	verdicts := r.Verdicts
	if verdicts == nil {
		verdicts = r.target()
	}
	fmt.Fprintf(&b, "\n## Best mean goodput over the workloads, and its share of the grid's best\n\n| configuration |")
	for _, s := range r.SLAs {
		fmt.Fprintf(&b, " %s s |", s)
	}
	b.WriteString("\n|---|")
	for range r.SLAs {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, c := range r.Configs {
		fmt.Fprintf(&b, "| %s |", c.Name)
		for _, v := range verdicts {
			share := 0.0
			if v.GridBest > 0 {
				share = v.Best[c.Name] / v.GridBest
			}
			fmt.Fprintf(&b, " %.1f (%.2f) |", v.Best[c.Name], share)
		}
		b.WriteString("\n")
	}

	fmt.Fprintf(&b, "\n## The target\n\n")
	met := len(verdicts) > 0
	for _, v := range verdicts {
		word := "reached"
		if !v.Reached {
			word, met = "not reached", false
		}
		fmt.Fprintf(&b, "- %s s: softalloc's limit and pool %.1f of the grid's best %.1f, **%.2f** (0.95: %s)", v.SLA, v.Best[r.limitName()], v.GridBest, v.Share, word)
		if v.VirtualBest > 0 && v.VirtualBest < v.GridBest {
			fmt.Fprintf(&b, "; of the best on virtual threads, %.1f, **%.2f**", v.VirtualBest, v.VirtualShare)
		}
		if len(v.Against) == 0 {
			b.WriteString("; no configuration without a limit timed out or queued.\n")
			continue
		}
		won := 0
		var parts []string
		for _, d := range v.Against {
			if d.LimitWon {
				won++
			} else {
				met = false
			}
			parts = append(parts, fmt.Sprintf("%s at %d users (%s): %.1f against %.1f", d.Config, d.Users, d.Why, d.Limit, d.NoLimit))
		}
		fmt.Fprintf(&b, "; against no limit where it timed out or queued, the limit's goodput was higher in %d of %d cells: %s.\n", won, len(v.Against), strings.Join(parts, "; "))
	}
	if met {
		b.WriteString("\n**The target is met** in this run.\n")
	} else {
		b.WriteString("\n**The target is not met** in this run.\n")
	}
	if r.Note != "" {
		fmt.Fprintf(&b, "\n## Note\n\n%s\n", r.Note)
	}
	return b.String()
}

// recommendationLine says what recommend read and answered for one
// deployment, or that the allocation was given by flag.
func recommendationLine(r recommendation, file, args, flag string) string {
	if r.Given {
		return fmt.Sprintf("- %s: web threads %d, app %s %d, app connections %d, given (%s), not recommended in this run.\n", file, r.Web, r.Unit, r.App, r.Connections, flag)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "- `softalloc recommend --runner live -f %s %s` (its ports moved to this testbed's), on a warm JVM: critical resource ", file, args)
	fmt.Fprintf(&b, "**%s %s**, saturated at **%d users** (%.1f pages/s); minJobs %.1f (%s, at %d users); **web threads %d, app %s %d, app connections %d**; ",
		r.CriticalTier, r.CriticalResource, r.SaturationWorkload, r.MaxThroughput, r.MinJobs, r.Reading, r.WLmin, r.Web, r.Unit, r.App, r.Connections)
	fmt.Fprintf(&b, "%d experiments, %.0f s.", r.Experiments, r.Seconds)
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, " Warning: %s.", strings.TrimSuffix(w, "."))
	}
	b.WriteString("\n")
	return b.String()
}

func cellAt(cells []cell, config string, users int) (cell, bool) {
	for _, c := range cells {
		if c.Config == config && c.Users == users {
			return c, true
		}
	}
	return cell{}, false
}

func (r report) limitName() string {
	for _, c := range r.Configs {
		if c.Role == roleLimit {
			return c.Name
		}
	}
	return ""
}

func msList(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(s, ", ")
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

func joinFloats(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.FormatFloat(x, 'g', -1, 64)
	}
	return strings.Join(s, ", ")
}
