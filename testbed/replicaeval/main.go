// Command replicaeval measures pools that follow an app tier's replica count
// on the Go testbed (issue 37) and writes docs/replica-evaluation.md and its
// JSON twin: a load at a constant rate while the app's replicas go 1 -> 3 ->
// 2 (testbed.sh scale), under three ways of sizing the pools of the plan
// recommend made for the range (its --output json answer):
//
//	one    the pools planned for the range's lowest count, kept throughout
//	three  the pools planned for its highest count, kept throughout
//	watch  softalloc watch applying each count's pools through testbed.sh apply
//
// For each phase it reports the goodput (pages answered 200 within the SLA,
// per second), the connection errors (pages the database refused a
// connection: MariaDB's "Too many connections", PostgreSQL's "too many
// clients"), the other errors, and the most connections the database held
// (Prometheus's max_over_time of the exporter's count) against its limit.
//
// The testbed must be up (testbed.sh up, with the caps and back end to
// measure; the SOFTALLOC_TESTBED_* environment names it, as for
// testbed.sh); each run measures the back end that is up and merges its rows
// into the JSON, so that MariaDB's and PgBouncer's runs share one report:
//
//	flock -o /tmp/measure.lock testbed/replicaeval/measure.sh
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/softalloc/softalloc/testbed/runfiles"
)

// Plan is the part of recommend's answer this reads.
type Plan struct {
	Replicas struct {
		Tier            string `json:"tier"`
		Min             int    `json:"min"`
		Max             int    `json:"max"`
		Surge           string `json:"surge"`
		Critical        string `json:"critical"`
		MinJobs         float64
		ConnectionLimit *struct {
			Max int `json:"max"`
		} `json:"connectionLimit"`
		Counts []struct {
			Replicas   int                       `json:"replicas"`
			Allocation map[string]map[string]int `json:"allocation"`
		} `json:"counts"`
		Warnings []string `json:"warnings"`
	} `json:"replicas"`
}

// Phase is one replica count's stretch of a run.
type Phase struct {
	Replicas    int     `json:"replicas"`
	Seconds     float64 `json:"seconds"`
	Sent        int64   `json:"sent"`
	Good        int64   `json:"good"`
	Goodput     float64 `json:"goodput"`
	ConnErrors  int64   `json:"connectionErrors"`
	OtherErrors int64   `json:"otherErrors"`
	Late        int64   `json:"late"`
	PeakDBConns float64 `json:"peakDBConnections"`
	// ScaleSeconds is how long testbed.sh scale took to reach this count,
	// ScaleDone when it returned (Prometheus then saw the count).
	ScaleSeconds float64   `json:"scaleSeconds"`
	ScaleDone    time.Time `json:"scaleDone"`
}

// Run is one variant on one back end.
type Run struct {
	Backend string `json:"backend"`
	// Rate is the run's pages per second (a report may hold two rates).
	Rate    float64 `json:"rate"`
	Variant string  `json:"variant"`
	Pools   string  `json:"pools"`
	Phases  []Phase `json:"phases"`
	Watch   string  `json:"watchLog,omitempty"`
}

// Report is docs/replica-evaluation.json.
type Report struct {
	Generated string         `json:"generated"`
	Rate      float64        `json:"rate"`
	PhaseSecs float64        `json:"phaseSeconds"`
	SLA       float64        `json:"slaSeconds"`
	Caps      string         `json:"caps"`
	Limit     int            `json:"connectionLimit"`
	PlanPools map[int]string `json:"planPools"`
	// PlanSurge is the plan's surge, which watch sizes the pools ahead by.
	PlanSurge string `json:"planSurge"`
	Critical  string `json:"critical"`
	// PlanWarnings are the plan's own (a range that does not fit the limit).
	PlanWarnings []string          `json:"planWarnings"`
	Uptime       map[string]string `json:"uptime"`
	Runs         []Run             `json:"runs"`
}

var (
	repo   string
	offset int
)

func main() {
	planPath := flag.String("plan", "", "recommend's --output json answer for the deployment with the app's replica range")
	bin := flag.String("softalloc", "bin/softalloc", "the softalloc binary (watch)")
	out := flag.String("out", "docs", "directory of replica-evaluation.md and .json")
	rate := flag.Float64("rate", 80, "pages per second, constant")
	phase := flag.Duration("phase", 40*time.Second, "time at each replica count")
	sla := flag.Duration("sla", 2*time.Second, "a page later than this is not goodput")
	variants := flag.String("variants", "one,three,watch", "variants to run")
	render := flag.Bool("render", false, "only write the Markdown again from -out's JSON")
	flag.Parse()
	if *render {
		if err := rerender(*out); err != nil {
			fmt.Fprintln(os.Stderr, "replicaeval:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*planPath, *bin, *out, *rate, *phase, *sla, strings.Split(*variants, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "replicaeval:", err)
		os.Exit(1)
	}
}

func tb(args ...string) error {
	cmd := exec.Command(filepath.Join(repo, "testbed", "testbed.sh"), args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("testbed.sh %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

func run(planPath, bin, out string, rate float64, phase, sla time.Duration, variants []string) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	repo = wd
	if v := os.Getenv("SOFTALLOC_TESTBED_PORT_OFFSET"); v != "" {
		if offset, err = strconv.Atoi(v); err != nil {
			return fmt.Errorf("SOFTALLOC_TESTBED_PORT_OFFSET=%q: want a number", v)
		}
	}
	data, err := os.ReadFile(planPath)
	if err != nil {
		return err
	}
	var plan Plan
	if err := json.Unmarshal(data, &plan); err != nil {
		return fmt.Errorf("%s: %w", planPath, err)
	}
	p := plan.Replicas
	if len(p.Counts) == 0 || p.Min != 1 || p.Max != 3 {
		return fmt.Errorf("%s: want a plan for app replicas 1..3", planPath)
	}
	pools := map[int][]string{}
	for _, c := range p.Counts {
		a := c.Allocation
		pools[c.Replicas] = []string{strconv.Itoa(a["web"]["threads"]), strconv.Itoa(a["app"]["threads"]), strconv.Itoa(a["app"]["connections"])}
	}
	dir := runfiles.Dir()
	backend, err := runfiles.Read(dir, "db-engine")
	if err != nil {
		backend = "mariadb"
	}
	if pooler, err := runfiles.Read(dir, "pooler"); err == nil && pooler != "none" {
		backend += "+" + pooler
	}
	caps := []string{}
	for _, t := range runfiles.Tiers {
		c, err := runfiles.Cap(dir, t)
		if err != nil {
			c = "?"
		}
		caps = append(caps, t+"="+c)
	}

	jsonPath := filepath.Join(out, "replica-evaluation.json")
	var rep Report
	if old, err := os.ReadFile(jsonPath); err == nil {
		if err := json.Unmarshal(old, &rep); err != nil {
			return fmt.Errorf("%s: %w", jsonPath, err)
		}
	}
	for i := range rep.Runs {
		if rep.Runs[i].Rate == 0 {
			rep.Runs[i].Rate = rep.Rate // a report of one rate
		}
	}
	rep.Rate, rep.PhaseSecs, rep.SLA, rep.Caps = rate, phase.Seconds(), sla.Seconds(), strings.Join(caps, " ")
	rep.Critical, rep.PlanWarnings, rep.PlanSurge = p.Critical, p.Warnings, p.Surge
	if p.ConnectionLimit != nil {
		rep.Limit = p.ConnectionLimit.Max
	}
	rep.PlanPools = map[int]string{}
	for n, ps := range pools {
		rep.PlanPools[n] = strings.Join(ps, "-")
	}
	if rep.Uptime == nil {
		rep.Uptime = map[string]string{}
	}
	at := fmt.Sprintf("%s at %g pages/s", backend, rate)
	rep.Uptime[at+" before"] = uptime()

	mysqlSock = filepath.Join(dir, "run", "mysqld.sock")
	if backend == "mariadb" && rep.Limit > 0 {
		// The plan's limit is the database's: MariaDB's max_connections at run time.
		if _, err := mariadb(fmt.Sprintf("SET GLOBAL max_connections = %d", rep.Limit)); err != nil {
			return err
		}
	}
	for _, v := range variants {
		var start []string
		switch v {
		case "one", "watch":
			start = pools[1]
		case "three":
			start = pools[3]
		default:
			return fmt.Errorf("-variants: %q: want one, three or watch", v)
		}
		r, err := measure(backend, v, start, planPath, bin, rate, phase, sla)
		if err != nil {
			return fmt.Errorf("%s %s: %w", backend, v, err)
		}
		r.Rate = rate
		kept := rep.Runs[:0]
		for _, old := range rep.Runs {
			if old.Backend != backend || old.Variant != v || old.Rate != rate {
				kept = append(kept, old)
			}
		}
		rep.Runs = append(kept, r)
	}
	rep.Uptime[at+" after"] = uptime()
	rep.Generated = time.Now().UTC().Format(time.RFC3339)
	sort.SliceStable(rep.Runs, func(i, j int) bool {
		a, b := rep.Runs[i], rep.Runs[j]
		return a.Backend < b.Backend || a.Backend == b.Backend && a.Rate > b.Rate
	})
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(jsonPath, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "replica-evaluation.md"), []byte(markdown(rep)), 0o644)
}

func rerender(out string) error {
	var rep Report
	b, err := os.ReadFile(filepath.Join(out, "replica-evaluation.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "replica-evaluation.md"), []byte(markdown(rep)), 0o644)
}

var mysqlSock string

// mariadb runs one statement as root over the testbed's socket, its rows
// tab-separated without headers.
func mariadb(stmt string) (string, error) {
	b, err := exec.Command("mariadb", "--no-defaults", "--socket="+mysqlSock, "-uroot", "-N", "-B", "-e", stmt).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("mariadb -e %q: %v: %s", stmt, err, b)
	}
	return string(b), nil
}

// applied is when watch logged its decision for n replicas, the first
// time at or after since (the log's times are whole seconds): applying
// their pools, or finding them in place (inPlace: no hook ran).
func applied(log string, n int, since time.Time) (at time.Time, inPlace, ok bool) {
	apply := fmt.Sprintf("watch: apply: app at %d replicas", n)
	keep := fmt.Sprintf("watch: keep: app at %d replicas (was", n)
	for _, line := range strings.Split(log, "\n") {
		ts, rest, cut := strings.Cut(line, " ")
		if !cut || !strings.HasPrefix(rest, apply) && !strings.HasPrefix(rest, keep) {
			continue
		}
		at, err := time.Parse(time.RFC3339, ts)
		if err == nil && !at.Before(since.Truncate(time.Second)) {
			return at, strings.HasPrefix(rest, keep), true
		}
	}
	return time.Time{}, false, false
}

func uptime() string {
	b, err := exec.Command("uptime").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

// measure runs one variant: 1 replica, then 3, then 2, a phase each.
func measure(backend, variant string, start []string, planPath, bin string, rate float64, phase, sla time.Duration) (Run, error) {
	r := Run{Backend: backend, Variant: variant, Pools: strings.Join(start, "-")}
	if err := tb("scale", "app=1"); err != nil {
		return r, err
	}
	if err := tb(append([]string{"apply"}, start...)...); err != nil {
		return r, err
	}
	var watchLog syncBuf
	if variant == "watch" {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "watch", "--plan", planPath,
			"--prometheus", fmt.Sprintf("http://127.0.0.1:%d", 18090+offset),
			"--replicas-query", `count(up{job="app"} == 1)`, "--interval", "1s", "--hold", "2",
			"--", filepath.Join(repo, "testbed", "testbed.sh"), "apply", "{web.threads}", "{app.threads}", "{app.connections}")
		cmd.Stdout, cmd.Stderr = &watchLog, &watchLog
		if err := cmd.Start(); err != nil {
			return r, err
		}
		defer func() {
			cancel()
			_ = cmd.Wait()
		}()
	}
	if variant == "watch" {
		// watch's first decision applies the pools of 1 + surge, by a
		// rolling restart: the load starts once it has returned.
		deadline := time.Now().Add(2 * time.Minute)
		for !strings.Contains(watchLog.String(), "watch: apply: app at 1 replicas") {
			if time.Now().After(deadline) {
				return r, fmt.Errorf("watch applied nothing at 1 replica within 2 minutes:\n%s", watchLog.String())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	time.Sleep(5 * time.Second) // the first pools settle
	l := newLoad(rate, sla)
	l.start()
	// A phase's pages are those sent from its start to the next's (or to
	// the load's end), the queries after its sleep included: its length
	// is that span, not the sleep's.
	var starts [3]time.Time
	var lengths [3]time.Duration
	for i, n := range []int{1, 3, 2} {
		// A phase starts when scale begins: the scaling's pages are its.
		t0 := time.Now()
		l.phase.Store(int32(i))
		starts[i] = t0
		if i > 0 {
			lengths[i-1] = t0.Sub(starts[i-1])
		}
		if backend == "mariadb" {
			// Max_used_connections from here: FLUSH STATUS resets it to the
			// connections open now.
			if _, err := mariadb("FLUSH STATUS"); err != nil {
				l.stop()
				return r, err
			}
		}
		var scale float64
		if i > 0 {
			if err := tb("scale", fmt.Sprintf("app=%d", n)); err != nil {
				l.stop()
				return r, err
			}
			scale = time.Since(t0).Seconds()
		}
		done := time.Now()
		time.Sleep(phase)
		peak := peakConns(backend, time.Since(t0))
		if backend == "mariadb" {
			// Exact, where Prometheus's 1 s samples miss a burst.
			out, err := mariadb("SHOW GLOBAL STATUS LIKE 'Max_used_connections'")
			if f := strings.Fields(out); err == nil && len(f) == 2 {
				if v, err := strconv.ParseFloat(f[1], 64); err == nil {
					peak = v
				}
			}
		}
		r.Phases = append(r.Phases, Phase{Replicas: n, ScaleSeconds: scale, ScaleDone: done, PeakDBConns: peak})
	}
	lengths[2] = time.Since(starts[2])
	l.stop()
	for i := range r.Phases {
		ph := l.phaseOf(i, lengths[i])
		ph.Replicas, ph.ScaleSeconds, ph.ScaleDone, ph.PeakDBConns = r.Phases[i].Replicas, r.Phases[i].ScaleSeconds, r.Phases[i].ScaleDone, r.Phases[i].PeakDBConns
		r.Phases[i] = ph
		fmt.Fprintf(os.Stderr, "replicaeval: %s %s at %d replicas: sent %.1f/s, goodput %.1f/s, %d connection errors, %d other, %d late, peak %.0f DB connections\n",
			backend, variant, ph.Replicas, float64(ph.Sent)/ph.Seconds, ph.Goodput, ph.ConnErrors, ph.OtherErrors, ph.Late, ph.PeakDBConns)
	}
	r.Watch = watchLog.String()
	return r, nil
}

// peakConns is the most connections the database held over the last window.
func peakConns(backend string, window time.Duration) float64 {
	q := `max(max_over_time(mysql_global_status_threads_connected[%ds]))`
	if strings.HasPrefix(backend, "postgres") {
		q = `max_over_time(sum(pg_stat_database_numbackends)[%ds:1s])`
	}
	q = fmt.Sprintf(q, int(window.Seconds()))
	for try := 0; try < 5; try++ {
		if v, err := promValue(q); err == nil {
			return v
		}
		time.Sleep(time.Second)
	}
	return -1
}

func promValue(q string) (float64, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/v1/query?query=%s", 18090+offset, url.QueryEscape(q)))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var doc struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return 0, err
	}
	if len(doc.Data.Result) != 1 {
		return 0, fmt.Errorf("%s: %d series", q, len(doc.Data.Result))
	}
	s, _ := doc.Data.Result[0].Value[1].(string)
	return strconv.ParseFloat(s, 64)
}

// load sends pages at a constant rate (open loop: a slow page does not
// slow the sending), from the testbed's workload's page kinds. Each page
// counts in the phase it was sent in, whenever it ends.
type load struct {
	rate   float64
	sla    time.Duration
	client *http.Client
	done   chan struct{}
	wg     sync.WaitGroup
	phase  atomic.Int32
	counts [3]counts
	base   string
}

type counts struct {
	sent, good, late, connErr, other atomic.Int64
}

func newLoad(rate float64, sla time.Duration) *load {
	return &load{rate: rate, sla: sla, done: make(chan struct{}),
		base:   fmt.Sprintf("http://127.0.0.1:%d", 18080+offset),
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 200}}}
}

func (l *load) start() {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		rng := rand.New(rand.NewPCG(1, 2))
		tick := time.NewTicker(time.Duration(float64(time.Second) / l.rate))
		defer tick.Stop()
		for {
			select {
			case <-l.done:
				return
			case <-tick.C:
				path, c := page(rng), &l.counts[l.phase.Load()]
				l.wg.Add(1)
				go func() { defer l.wg.Done(); l.one(c, path) }()
			}
		}
	}()
}

func page(rng *rand.Rand) string {
	switch rng.IntN(6) {
	case 0:
		return "/rubbos/StoriesOfTheDay"
	case 1:
		return fmt.Sprintf("/rubbos/ViewStory?storyId=%d", 1+rng.IntN(10000))
	case 2:
		return fmt.Sprintf("/rubbos/BrowseStoriesByCategory?category=%d&page=%d", 1+rng.IntN(20), rng.IntN(3))
	case 3:
		return fmt.Sprintf("/rubbos/ViewComment?commentId=%d", 1+rng.IntN(100000))
	case 4:
		return fmt.Sprintf("/rubbos/OlderStories?day=%d", 10+rng.IntN(31))
	default:
		return "/rubbos/Search?type=stories&search=" + []string{"apache", "tomcat", "pool", "queue", "kernel"}[rng.IntN(5)]
	}
}

func (l *load) one(c *counts, path string) {
	c.sent.Add(1)
	t0 := time.Now()
	resp, err := l.client.Get(l.base + path)
	if err != nil {
		c.other.Add(1)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK && time.Since(t0) <= l.sla:
		c.good.Add(1)
	case resp.StatusCode == http.StatusOK:
		c.late.Add(1)
	case connRefused(string(body)):
		c.connErr.Add(1)
	default:
		c.other.Add(1)
	}
}

// connRefused: the database refused the app a connection.
func connRefused(body string) bool {
	b := strings.ToLower(body)
	return strings.Contains(b, "too many connections") || strings.Contains(b, "too many clients") ||
		strings.Contains(b, "remaining connection slots are reserved")
}

// phaseOf is phase i's counts, once its pages have ended.
func (l *load) phaseOf(i int, d time.Duration) Phase {
	c := &l.counts[i]
	return Phase{Seconds: d.Seconds(), Sent: c.sent.Load(), Good: c.good.Load(), Goodput: float64(c.good.Load()) / d.Seconds(),
		ConnErrors: c.connErr.Load(), OtherErrors: c.other.Load(), Late: c.late.Load()}
}

func (l *load) stop() {
	close(l.done)
	l.wg.Wait()
}

type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func markdown(rep Report) string {
	var b strings.Builder
	w := bufio.NewWriter(&b)
	fmt.Fprintf(w, "# Pools that follow the replica count: the testbed (issue 37)\n\n")
	fmt.Fprintf(w, "Generated by `go run ./testbed/replicaeval` (testbed/replicaeval/main.go) on %s; do not edit.\n\n", rep.Generated)
	fmt.Fprintf(w, "The Go testbed's app tier goes 1 -> 3 -> 2 replicas (`testbed.sh scale`, %.0f s at each count) under a constant %s pages/s "+
		"(open loop: the workload's page kinds, a page later than %.0f s is not goodput). Caps %s (each app replica its own). "+
		"The database's connection limit: %d (MariaDB's max_connections set to the plan's; PostgreSQL's at up). A phase starts when `scale` begins and its pages count where they were sent. The plan's pools per count (web threads - app threads - app connections per replica), "+
		"recommend's answer for testbed/replicaeval/plan.yaml on the simulator (critical: %s; the testbed's shape with the database critical, not measured on the testbed):", rep.PhaseSecs, rates(rep), rep.SLA, rep.Caps, rep.Limit, rep.Critical)
	var counts []int
	for n := range rep.PlanPools {
		counts = append(counts, n)
	}
	sort.Ints(counts)
	for _, n := range counts {
		fmt.Fprintf(w, " %d: %s;", n, rep.PlanPools[n])
	}
	top, bottom := 3, 1
	if len(counts) > 0 {
		bottom, top = counts[0], counts[len(counts)-1]
	}
	surge := rep.PlanSurge
	if surge == "" {
		surge = "0"
	}
	for _, warn := range rep.PlanWarnings {
		fmt.Fprintf(w, "\n\nThe plan's warning: %s.", warn)
	}
	if len(rep.PlanWarnings) > 0 && surge != "0" {
		fmt.Fprintf(w, " It counts a rollout's surge pods with each row's own pools; watch applies at N replicas the row of N + surge instead, whose pools are sized for the count the scaler reaches.")
	}
	if n, err := strconv.Atoi(surge); err == nil && bottom+n >= top {
		fmt.Fprintf(w, "\n\nWith surge %d on the range %d..%d, N + surge reaches the top from every count: watch applies the pools of %d replicas at every count (three's) and keeps them; its rows differ from three's by the run alone. "+
			"On a wider range (say 2..12 with surge 2) the pools would follow the count, sized two replicas ahead.", n, bottom, top, top)
	}
	if missing := missingRates(rep); len(missing) > 0 {
		fmt.Fprintf(w, "\n\n%s (measure.sh's PGBOUNCER_RATES: at 200 pages/s PostgreSQL under its cap serves fewer pages than are sent, Apache's threads all wait, and scale, finding the health page unanswered for 30 s, refuses to run).", strings.Join(missing, "; "))
	}
	fmt.Fprintf(w, "\n\n- **one**: the pools planned for 1 replica, kept; **three**: those for 3, kept; **watch**: `softalloc watch` applying them through `testbed.sh apply` (a rolling restart of the replicas, each stopped before its successor starts): "+
		"watch applied at N replicas the pools of N + surge (surge %s, at most %d), the count `scale` can reach before watch has read it; a replica `scale` starts opens the pools of the last apply.\n", surge, top)
	fmt.Fprintf(w, "- Connection errors: pages the database refused a connection; peak: the most connections the database held in the phase, every client counted (MariaDB's Max_used_connections since a FLUSH STATUS at the phase's start; PostgreSQL's backends in 1 s samples, which can miss a burst).\n\n")
	fmt.Fprintf(w, "| back end | rate (pages/s) | variant | replicas | sent (pages/s) | goodput (pages/s) | connection errors | other errors | late | peak DB connections | scale (s) |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Runs {
		for _, p := range r.Phases {
			fmt.Fprintf(w, "| %s | %g | %s | %d | %.1f | %.1f | %d | %d | %d | %.0f | %.1f |\n", r.Backend, runRate(rep, r), r.Variant, p.Replicas, float64(p.Sent)/p.Seconds, p.Goodput, p.ConnErrors, p.OtherErrors, p.Late, p.PeakDBConns, p.ScaleSeconds)
		}
	}
	type group struct {
		backend string
		rate    float64
	}
	var groups []group
	for _, r := range rep.Runs {
		g := group{r.Backend, runRate(rep, r)}
		if len(groups) == 0 || groups[len(groups)-1] != g {
			groups = append(groups, g)
		}
	}
	for _, g := range groups {
		if lines := targets(rep, g.backend, g.rate); len(lines) > 0 {
			fmt.Fprintf(w, "\n%s at %g pages/s, issue 37's targets:\n\n", g.backend, g.rate)
			for _, l := range lines {
				fmt.Fprintf(w, "- %s\n", l)
			}
		}
	}
	keys := make([]string, 0, len(rep.Uptime))
	for k := range rep.Uptime {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(w, "\nLoad average (uptime):\n\n")
	for _, k := range keys {
		fmt.Fprintf(w, "- %s: `%s`\n", k, rep.Uptime[k])
	}
	for _, r := range rep.Runs {
		if r.Watch == "" {
			continue
		}
		for _, p := range r.Phases[1:] {
			// From the phase's start: watch may read the count before
			// scale, which waits for the same Prometheus, has returned.
			start := p.ScaleDone.Add(-time.Duration(p.ScaleSeconds * float64(time.Second)))
			at, inPlace, ok := applied(r.Watch, p.Replicas, start)
			d := at.Sub(p.ScaleDone.Truncate(time.Second)).Seconds()
			when := fmt.Sprintf("%.0f s after scale did", d)
			if d < 0 {
				when = fmt.Sprintf("%.0f s before scale returned", -d)
			}
			switch {
			case ok && inPlace:
				fmt.Fprintf(w, "\n%s at %g pages/s: watch found the pools for %d replicas in place (no hook) %s (Prometheus saw the count; 1 s scrapes, readings every 1 s, --hold 2).\n",
					r.Backend, runRate(rep, r), p.Replicas, when)
			case ok:
				fmt.Fprintf(w, "\n%s at %g pages/s: watch's hook for %d replicas returned %s (Prometheus saw the count; 1 s scrapes, readings every 1 s, --hold 2, the hook a rolling restart).\n",
					r.Backend, runRate(rep, r), p.Replicas, when)
			}
		}
	}
	for _, r := range rep.Runs {
		if r.Watch != "" {
			fmt.Fprintf(w, "\nwatch's decisions (%s at %g pages/s), apply and hold lines:\n\n```\n", r.Backend, runRate(rep, r))
			for _, line := range strings.Split(r.Watch, "\n") {
				if strings.Contains(line, "apply") || strings.Contains(line, "hold") {
					fmt.Fprintln(w, line)
				}
			}
			fmt.Fprintf(w, "```\n")
		}
	}
	w.Flush()
	return b.String()
}

// overLimit says whether a phase went over the database's limit: a page
// refused a connection, or more connections than max_connections (MariaDB
// admits one more, for an administrator).
func overLimit(p Phase, limit int) bool {
	return p.ConnErrors > 0 || limit > 0 && p.PeakDBConns > float64(limit)
}

// targets judges issue 37's testbed targets on one back end's rows: watch
// never over the database's connection limit, and at least 0.95 of the
// best static variant's goodput at each count. None without a watch run.
func targets(rep Report, backend string, rate float64) []string {
	runs := map[string]Run{}
	for _, r := range rep.Runs {
		if r.Backend == backend && runRate(rep, r) == rate {
			runs[r.Variant] = r
		}
	}
	w, ok := runs["watch"]
	if !ok {
		return nil
	}
	var peaks []string
	met := true
	for _, p := range w.Phases {
		peaks = append(peaks, fmt.Sprintf("%.0f", p.PeakDBConns))
		met = met && !overLimit(p, rep.Limit)
	}
	refused := int64(0)
	for _, p := range w.Phases {
		refused += p.ConnErrors
	}
	line := fmt.Sprintf("connection limit %d: %s: watch peaked at %s connections with ", rep.Limit, metText(met), andList(peaks))
	if refused == 0 {
		line += "none refused"
	} else {
		line += fmt.Sprintf("%d pages refused", refused)
	}
	for _, v := range []string{"one", "three"} {
		r, ok := runs[v]
		if !ok {
			continue
		}
		var over []string
		for _, p := range r.Phases {
			if !overLimit(p, rep.Limit) {
				continue
			}
			at := fmt.Sprintf("%d", p.Replicas)
			if len(over) == 0 {
				at += " replicas"
			}
			if p.ConnErrors > 0 {
				over = append(over, fmt.Sprintf("%d pages at %s (peak %.0f)", p.ConnErrors, at, p.PeakDBConns))
			} else {
				over = append(over, fmt.Sprintf("a peak of %.0f at %s", p.PeakDBConns, at))
			}
		}
		if len(over) == 0 {
			line += fmt.Sprintf("; %s none", v)
		} else {
			line += fmt.Sprintf("; %s refused %s", v, andList(over))
		}
	}
	out := []string{line}

	met = true
	var ratios []string
	for i, p := range w.Phases {
		best, by := 0.0, ""
		for _, v := range []string{"one", "three"} {
			if r, ok := runs[v]; ok && i < len(r.Phases) && r.Phases[i].Goodput > best {
				best, by = r.Phases[i].Goodput, v
			}
		}
		if best == 0 {
			continue
		}
		ratio := p.Goodput / best
		met = met && ratio >= 0.95
		at := fmt.Sprintf("at %d", p.Replicas)
		if i == 0 {
			at += " replica"
			if p.Replicas != 1 {
				at += "s"
			}
		}
		ratios = append(ratios, fmt.Sprintf("%s %.2f (%.1f against %s's %.1f)", at, ratio, p.Goodput, by, best))
	}
	if len(ratios) > 0 {
		out = append(out, fmt.Sprintf("goodput at least 0.95 of the best static variant's at each count: %s: %s", metText(met), strings.Join(ratios, ", ")))
	}
	return out
}

func metText(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}

// andList is "a", "a and b", "a, b and c".
func andList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// runRate is a run's rate, the report's for a run written before runs had
// their own.
func runRate(rep Report, r Run) float64 {
	if r.Rate == 0 {
		return rep.Rate
	}
	return r.Rate
}

// rates are the report's rates, highest first: "200 and 60".
func rates(rep Report) string {
	seen := map[float64]bool{}
	var rs []float64
	for _, r := range rep.Runs {
		if x := runRate(rep, r); !seen[x] {
			seen[x] = true
			rs = append(rs, x)
		}
	}
	if len(rs) == 0 {
		rs = []float64{rep.Rate}
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(rs)))
	var out []string
	for _, x := range rs {
		out = append(out, fmt.Sprintf("%g", x))
	}
	return andList(out)
}

// missingRates names the back ends not measured at a rate others were.
func missingRates(rep Report) []string {
	has := map[string]map[float64]bool{}
	all := map[float64]bool{}
	var backends []string
	for _, r := range rep.Runs {
		if has[r.Backend] == nil {
			has[r.Backend] = map[float64]bool{}
			backends = append(backends, r.Backend)
		}
		has[r.Backend][runRate(rep, r)] = true
		all[runRate(rep, r)] = true
	}
	var rs []float64
	for x := range all {
		rs = append(rs, x)
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(rs)))
	var out []string
	for _, b := range backends {
		var miss []string
		for _, x := range rs {
			if !has[b][x] {
				miss = append(miss, fmt.Sprintf("%g", x))
			}
		}
		if len(miss) > 0 {
			out = append(out, fmt.Sprintf("%s was not measured at %s pages/s", b, andList(miss)))
		}
	}
	return out
}
