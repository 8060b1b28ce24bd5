// Command wpeval measures softalloc on the testbed's WordPress stack
// (Apache -> php-fpm -> MariaDB, stacks/wordpress) against the allocations
// its operators use, and writes docs/wordpress-evaluation.md and its JSON
// twin.
//
// It drives the built softalloc binary through the live runner, as a user
// would: recommend (with its find-critical) on short fixed trials, advise
// on the Prometheus history that campaign left, the memory calculator's
// children from the php-fpm children's measured RSS, then a grid of the
// allocations (Debian's defaults, the memory rule, 4 x cores, a generous
// one, recommend's and advise's) at workloads around saturation, in rounds
// (-rounds, 2 by default) in alternating orders, so that each figure carries
// its run-to-run spread.
//
// It runs on a testbed of its own beside the shared one: bring it up with
// an offset first, and hold /tmp/measure.lock while it measures:
//
//	export SOFTALLOC_TESTBED_PORT_OFFSET=100 SOFTALLOC_TESTBED_CGROUP=softalloc-wp SOFTALLOC_TESTBED_DIR=/tmp/tb-wp
//	STACK=wordpress testbed/testbed.sh up
//	make build && flock /tmp/measure.lock go run ./testbed/wpeval -out docs
//	testbed/testbed.sh down
//
// -render FILE draws the Markdown again from a JSON twin, without a trial
// (and writes the twin again with -note's lines added).
package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/softalloc/softalloc/testbed/gridnoise"
	"github.com/softalloc/softalloc/testbed/runfiles"
)

func main() {
	var c config
	flag.StringVar(&c.out, "out", "docs", "directory for wordpress-evaluation.md and .json")
	flag.StringVar(&c.bin, "bin", "bin/softalloc", "the softalloc binary (make build)")
	flag.StringVar(&c.work, "work", ".softalloc/wpeval", "directory for the campaign's journal and the deployment file it writes")
	flag.StringVar(&c.users, "users", "8,16,24,32", "the grid's workloads, users (the stack saturates near 15-17)")
	flag.StringVar(&c.slas, "sla", "0.5,1,2", "SLA thresholds of goodput, seconds: about 2, 4 and 8 times a page's response time at low load")
	flag.StringVar(&c.trial, "trial", "--fixed --ramp-up 3s --runtime 6s --ramp-down 1s", "the trials' flags, for the grid (and the campaign, without -campaign-trial)")
	flag.StringVar(&c.campaignTrial, "campaign-trial", "", "the campaign's trials' flags, when longer than the grid's (e.g. --fixed --ramp-up 10s --runtime 40s --ramp-down 1s)")
	flag.StringVar(&c.since, "advise-since", "", "advise's range (default: the campaign's span)")
	flag.IntVar(&c.generous, "generous", 200, "the generous allocation's php-fpm children")
	flag.StringVar(&c.threshold, "hw-threshold", "", "recommend's and advise's --hw-threshold (default: softalloc's)")
	flag.Var(&c.notes, "note", "a line for the report's notes (repeatable): what the run met that the numbers do not say")
	flag.IntVar(&c.rounds, "rounds", 2, "rounds of the grid, in alternating orders (at least 2)")
	flag.Var(&c.also, "also", "another allocation for the grid, ROLE:WEB_THREADS:CHILDREN (repeatable)")
	render := flag.String("render", "", "only write the Markdown again from this wordpress-evaluation.json")
	flag.Parse()
	if *render != "" {
		var r Report
		b, err := os.ReadFile(*render)
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err == nil {
			r.Scores, r.ScoresByRole = scores(r.Grid, r.SLAs), byRole(r.Grid, r.SLAs)
			r.Notes = append(r.Notes, c.notes...)
			// The twin keeps the notes and scores the page shows.
			if b, err = json.MarshalIndent(r, "", "  "); err == nil {
				err = os.WriteFile(*render, append(b, '\n'), 0o644)
			}
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(c.out, "wordpress-evaluation.md"), []byte(r.markdown()), 0o644)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "wpeval: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if err := run(c); err != nil {
		fmt.Fprintf(os.Stderr, "wpeval: %v\n", err)
		os.Exit(1)
	}
}

type config struct {
	out, bin, work, users, slas, trial, since string
	threshold, campaignTrial                  string
	generous, rounds                          int
	notes, also                               list
}

type list []string

func (l *list) String() string     { return strings.Join(*l, "; ") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

// Report is wordpress-evaluation.json.
type Report struct {
	Generated  string `json:"generated"`
	PortOffset int    `json:"portOffset"`
	Trial      string `json:"trial"`
	// CampaignTrial is the campaign's trials, where they differ from the grid's.
	CampaignTrial string   `json:"campaignTrial,omitempty"`
	HWThreshold   string   `json:"hwThreshold,omitempty"`
	SLAs          []string `json:"slas"`
	Users         []int    `json:"users"`
	UptimeBefore  string   `json:"uptimeBefore"`
	UptimeAfter   string   `json:"uptimeAfter"`
	// PHPMemoryMiB is the php-fpm tier's memory limit; ChildRSSMiB the mean
	// RSS of its children after the campaign, which the memory rule divides.
	PHPMemoryMiB float64 `json:"phpMemoryMiB"`
	ChildRSSMiB  float64 `json:"childRSSMiB"`
	// Caps are the tiers' CPU caps the run measured under, in cores, as
	// testbed.sh caps takes them ("web=0.5 app=0.8 db=0.5"; absent in runs
	// before they were recorded, which ran at web=0.5 app=1 db=0.5).
	Caps      string `json:"caps,omitempty"`
	Recommend Answer `json:"recommend"`
	Advise    Answer `json:"advise"`
	// AdviseEvidence is advise's JSON "advice" block as it printed it.
	AdviseEvidence json.RawMessage `json:"adviseEvidence,omitempty"`
	Grid           []GridAlloc     `json:"grid"`
	GridSeconds    float64         `json:"gridSeconds"`
	GridTrials     int             `json:"gridTrials"`
	// Scores: each allocation's goodput summed over the workloads (mean of
	// the rounds), its spread and its share of the grid's best, per SLA.
	Scores []Score `json:"scores"`
	// ScoresByRole is docs/live-evaluation.json's shape: each allocation's
	// best goodput over the workloads (mean of the rounds) and its share of
	// the grid's best, per SLA.
	ScoresByRole []RoleScore `json:"scoresByRole"`
	Notes        []string    `json:"notes,omitempty"`
}

// RoleScore is one allocation's score as docs/live-evaluation.json gives it.
type RoleScore struct {
	Allocation string             `json:"allocation"`
	Role       string             `json:"role"`
	MaxGoodput map[string]float64 `json:"maxGoodput"`
	OfBest     map[string]float64 `json:"ofBest"`
}

// Answer is one of softalloc's answers.
type Answer struct {
	Allocation  string   `json:"allocation"`
	Children    int      `json:"children"`
	WebThreads  int      `json:"webThreads"`
	Critical    string   `json:"critical"`
	MinJobs     float64  `json:"minJobs"`
	Experiments int      `json:"experiments"`
	Seconds     float64  `json:"seconds"`
	Error       string   `json:"error,omitempty"`
	Warnings    []string `json:"warnings,omitempty"`
}

// GridAlloc is one allocation of the grid and its trials.
type GridAlloc struct {
	Role       string   `json:"role"`
	Why        string   `json:"why"`
	WebThreads int      `json:"webThreads"`
	Children   int      `json:"children"`
	Rounds     [][]Cell `json:"rounds"`
	Errors     []string `json:"errors,omitempty"`
}

// Cell is one trial.
type Cell struct {
	Users        int                `json:"users"`
	Throughput   float64            `json:"throughput"`
	Goodput      map[string]float64 `json:"goodput"`
	ResponseTime float64            `json:"responseTime"`
	Errors       int                `json:"errors"`
	CPU          map[string]float64 `json:"cpu"`
	Busy         map[string]float64 `json:"busy"`
}

// Score is one allocation's goodput at one SLA.
type Score struct {
	Role    string  `json:"role"`
	SLA     string  `json:"sla"`
	Goodput float64 `json:"goodput"`
	// Spread is the rounds' range of the sum: |round 1 - round 2| for two.
	Spread float64 `json:"spread"`
	Share  float64 `json:"share"`
	// Noise is the run-to-run standard deviation of a round's sum, pooled
	// over the grid's allocations at this SLA.
	Noise float64 `json:"noise"`
	// Rounds is how many rounds the mean is of.
	Rounds int `json:"rounds"`
	// Resolved is false when the gap to the best is within two standard
	// deviations of the difference of the two means.
	Resolved bool `json:"resolved"`
}

// resolvedGap: gridnoise's rule on two scores (their noise is the grid's).
func resolvedGap(a, b Score) bool {
	return gridnoise.Resolved(a.Goodput, b.Goodput, a.Rounds, b.Rounds, a.Noise)
}

func run(c config) error {
	if _, err := os.Stat(c.bin); err != nil {
		return fmt.Errorf("%s: %w (run from the repository root, after make build)", c.bin, err)
	}
	offset, _ := strconv.Atoi(os.Getenv("SOFTALLOC_TESTBED_PORT_OFFSET"))
	if c.rounds < 2 {
		return fmt.Errorf("-rounds %d: want at least 2, so that each figure has a spread", c.rounds)
	}
	if offset == 0 {
		return fmt.Errorf("SOFTALLOC_TESTBED_PORT_OFFSET is unset or 0: the evaluation runs on a testbed of its own beside the shared one (see the command's comment)")
	}
	if err := os.MkdirAll(c.work, 0o755); err != nil {
		return err
	}
	users, err := ints(c.users)
	if err != nil {
		return err
	}
	dep, err := shiftedDeployment(c.work, offset)
	if err != nil {
		return err
	}
	r := &Report{Generated: time.Now().UTC().Format(time.RFC3339), PortOffset: offset, Trial: c.trial, CampaignTrial: c.campaignTrial, HWThreshold: c.threshold,
		SLAs: strings.Split(c.slas, ","), Users: users, UptimeBefore: uptime()}
	e := &evaluator{c: c, dep: dep}
	fmt.Fprintf(os.Stderr, "wpeval: %s\n", r.UptimeBefore)

	// recommend (with its find-critical) on the trials, then advise on the
	// history that campaign left in Prometheus.
	journal := filepath.Join(c.work, "campaign.jsonl")
	_ = os.Remove(journal)
	var threshold []string
	if c.threshold != "" {
		threshold = []string{"--hw-threshold", c.threshold}
	}
	t0 := time.Now()
	r.Recommend = e.answer(append(append([]string{"recommend", "--runner", "live", "-f", dep, "--journal", journal, "-o", "json", "--quiet"}, threshold...), strings.Fields(cmp.Or(c.campaignTrial, c.trial))...), nil)
	r.Recommend.Seconds = time.Since(t0).Seconds()
	since := c.since
	if since == "" {
		since = fmt.Sprintf("%ds", int(time.Since(t0).Seconds())+10)
	}
	t1 := time.Now()
	r.Advise = e.answer(append([]string{"advise", "-f", dep, "--since", since, "--step", "5s", "-o", "json"}, threshold...), &r.AdviseEvidence)
	r.Advise.Seconds = time.Since(t1).Seconds()

	r.PHPMemoryMiB, r.ChildRSSMiB = phpMemory()
	var appCap float64
	r.Caps, appCap = caps()
	memRule := 0
	if r.ChildRSSMiB > 0 {
		memRule = int(r.PHPMemoryMiB / r.ChildRSSMiB)
	}
	allocs := []GridAlloc{
		{Role: "debian", Why: "Debian's defaults: Apache MaxRequestWorkers 150, php-fpm max_children 5, MariaDB max_connections 151", WebThreads: 150, Children: 5},
		{Role: "memory rule", Why: fmt.Sprintf("the calculators' children: %.0f MiB for PHP / %.1f MiB a child's RSS", r.PHPMemoryMiB, r.ChildRSSMiB), WebThreads: 150, Children: memRule},
		{Role: "4 x cores", Why: fmt.Sprintf("4 children per core of the php-fpm tier's %g-core cap, rounded up to whole cores", appCap),
			WebThreads: 150, Children: 4 * max(1, int(math.Ceil(appCap)))},
		{Role: "generous", Why: "a large over-allocation", WebThreads: 400, Children: c.generous},
	}
	if r.Recommend.Children > 0 {
		allocs = append(allocs, GridAlloc{Role: "recommend", Why: "softalloc recommend: " + r.Recommend.Allocation, WebThreads: r.Recommend.WebThreads, Children: r.Recommend.Children})
	}
	if r.Advise.Children > 0 {
		allocs = append(allocs, GridAlloc{Role: "advise", Why: "softalloc advise: " + r.Advise.Allocation, WebThreads: r.Advise.WebThreads, Children: r.Advise.Children})
	}
	for _, a := range c.also {
		f := strings.Split(a, ":")
		if len(f) != 3 {
			return fmt.Errorf("-also %q: want ROLE:WEB_THREADS:CHILDREN", a)
		}
		w, err1 := strconv.Atoi(f[1])
		ch, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil || w <= 0 || ch <= 0 {
			return fmt.Errorf("-also %q: want positive web threads and children", a)
		}
		allocs = append(allocs, GridAlloc{Role: f[0], Why: "given with -also", WebThreads: w, Children: ch})
	}
	var keep []GridAlloc
	for _, a := range allocs {
		if a.Children > 0 && a.WebThreads > 0 {
			keep = append(keep, a)
		}
	}
	allocs = keep

	// Rounds in alternating orders, the second the first reversed.
	t2 := time.Now()
	for i := range allocs {
		allocs[i].Rounds = make([][]Cell, c.rounds)
	}
	for round := 0; round < c.rounds; round++ {
		order := make([]int, len(allocs))
		for i := range order {
			order[i] = i
			if round%2 == 1 {
				order[i] = len(allocs) - 1 - i
			}
		}
		for _, i := range order {
			a := &allocs[i]
			cells, err := e.grid(a, users)
			if err != nil {
				a.Errors = append(a.Errors, fmt.Sprintf("round %d: %v", round+1, err))
				fmt.Fprintf(os.Stderr, "wpeval: %s round %d: %v\n", a.Role, round+1, err)
			}
			a.Rounds[round] = cells
			r.GridTrials += len(cells)
		}
	}
	r.GridSeconds = time.Since(t2).Seconds()
	r.Grid = allocs
	r.Scores = scores(allocs, r.SLAs)
	r.ScoresByRole = byRole(allocs, r.SLAs)
	r.Notes = c.notes
	r.UptimeAfter = uptime()
	fmt.Fprintf(os.Stderr, "wpeval: %s\n", r.UptimeAfter)

	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.out, "wordpress-evaluation.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.out, "wordpress-evaluation.md"), []byte(r.markdown()), 0o644)
}

type evaluator struct {
	c   config
	dep string
}

func (e *evaluator) softalloc(args ...string) ([]byte, error) {
	cmd := exec.Command(e.c.bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	fmt.Fprintf(os.Stderr, "wpeval: softalloc %s (%.0f s)\n", strings.Join(args, " "), time.Since(start).Seconds())
	if err != nil {
		return out.Bytes(), fmt.Errorf("softalloc %s: %w: %s", args[0], err, lastLines(errb.String(), 3))
	}
	return out.Bytes(), nil
}

// answer runs recommend or advise and reads its allocation.
func (e *evaluator) answer(args []string, evidence *json.RawMessage) Answer {
	out, err := e.softalloc(args...)
	var doc struct {
		Allocation string `json:"allocation"`
		Critical   struct {
			Tier, Resource string
		} `json:"critical"`
		MinJobs     float64         `json:"minJobs"`
		Experiments int             `json:"experiments"`
		Warnings    []string        `json:"warnings"`
		Advice      json.RawMessage `json:"advice"`
	}
	if jerr := json.Unmarshal(out, &doc); jerr != nil {
		msg := fmt.Sprintf("its JSON: %v", jerr)
		if err != nil {
			msg = err.Error()
		}
		return Answer{Error: msg}
	}
	a := Answer{Allocation: doc.Allocation, Critical: doc.Critical.Tier + " " + doc.Critical.Resource, MinJobs: doc.MinJobs,
		Experiments: doc.Experiments, Warnings: doc.Warnings}
	if err != nil {
		a.Error = err.Error()
	}
	a.WebThreads, a.Children = poolOf(doc.Allocation, "web.threads"), poolOf(doc.Allocation, "app.children")
	if evidence != nil {
		*evidence = doc.Advice
	}
	return a
}

var poolRe = regexp.MustCompile(`([a-z]+\.[a-z]+)=(\d+)`)

func poolOf(alloc, key string) int {
	for _, m := range poolRe.FindAllStringSubmatch(alloc, -1) {
		if m[1] == key {
			n, _ := strconv.Atoi(m[2])
			return n
		}
	}
	return 0
}

// grid runs one allocation at every workload, one simulate (its trials in
// the order of the workloads).
func (e *evaluator) grid(a *GridAlloc, users []int) ([]Cell, error) {
	args := append([]string{"simulate", "--runner", "live", "-f", e.dep, "--no-journal", "--quiet", "-o", "json", "--parallel", "1",
		"--alloc", fmt.Sprintf("web.threads=%d,app.children=%d", a.WebThreads, a.Children),
		"--users", joinInts(users), "--sla", e.c.slas}, strings.Fields(e.c.trial)...)
	out, err := e.softalloc(args...)
	if err != nil {
		return nil, err
	}
	var rows []struct {
		Users        int                `json:"users"`
		Throughput   float64            `json:"throughput"`
		Goodput      map[string]float64 `json:"goodput"`
		ResponseTime float64            `json:"responseTime"`
		Errors       int                `json:"errors"`
		Servers      []struct {
			Tier  string  `json:"tier"`
			CPU   float64 `json:"cpu"`
			Pools []struct {
				Name string  `json:"name"`
				Busy float64 `json:"busy"`
			} `json:"pools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(out, &rows); err != nil {
		return nil, fmt.Errorf("simulate's JSON: %w", err)
	}
	var cells []Cell
	for _, row := range rows {
		c := Cell{Users: row.Users, Throughput: row.Throughput, Goodput: row.Goodput, ResponseTime: row.ResponseTime, Errors: row.Errors,
			CPU: map[string]float64{}, Busy: map[string]float64{}}
		for _, s := range row.Servers {
			c.CPU[s.Tier] = s.CPU
			for _, p := range s.Pools {
				c.Busy[s.Tier+"."+p.Name] = p.Busy
			}
		}
		cells = append(cells, c)
	}
	return cells, nil
}

// scores sums each allocation's goodput over the workloads, per round, and
// compares the rounds' mean with the grid's best. An allocation with a
// round that has no trial (killed, failed) has no score.
func scores(allocs []GridAlloc, slas []string) []Score {
	var out []Score
	for _, sla := range slas {
		var ss []Score
		var sums [][]float64
		for _, a := range allocs {
			sum := make([]float64, len(a.Rounds))
			ok := len(a.Rounds) > 0
			for r, cells := range a.Rounds {
				if len(cells) == 0 {
					ok = false
				}
				for _, c := range cells {
					sum[r] += c.Goodput[sla]
				}
			}
			if !ok {
				continue
			}
			sums = append(sums, sum)
			ss = append(ss, Score{Role: a.Role, SLA: sla, Goodput: stat.Mean(sum, nil), Spread: slices.Max(sum) - slices.Min(sum), Rounds: len(sum)})
		}
		noise := gridnoise.Pooled(sums)
		best := -1
		for i, s := range ss {
			if best < 0 || s.Goodput > ss[best].Goodput {
				best = i
			}
		}
		for i := range ss {
			ss[i].Noise = noise
		}
		for i := range ss {
			if best >= 0 && ss[best].Goodput > 0 {
				ss[i].Share = ss[i].Goodput / ss[best].Goodput
				ss[i].Resolved = i != best && resolvedGap(ss[best], ss[i])
			}
		}
		out = append(out, ss...)
	}
	return out
}

// byRole is each allocation's best goodput over the workloads (the rounds'
// mean at each workload every round measured) and its share of the grid's
// best, per SLA.
func byRole(allocs []GridAlloc, slas []string) []RoleScore {
	var out []RoleScore
	best := map[string]float64{}
	for _, a := range allocs {
		rs := RoleScore{Allocation: fmt.Sprintf("web.threads=%d,app.children=%d", a.WebThreads, a.Children), Role: a.Role,
			MaxGoodput: map[string]float64{}, OfBest: map[string]float64{}}
		for _, sla := range slas {
			if len(a.Rounds) == 0 {
				continue
			}
			for _, c1 := range a.Rounds[0] {
				var at []float64
				for _, cells := range a.Rounds {
					if c := cellAt(cells, c1.Users); c != nil {
						at = append(at, c.Goodput[sla])
					}
				}
				if len(at) == len(a.Rounds) {
					rs.MaxGoodput[sla] = max(rs.MaxGoodput[sla], stat.Mean(at, nil))
				}
			}
			best[sla] = max(best[sla], rs.MaxGoodput[sla])
		}
		out = append(out, rs)
	}
	for i := range out {
		for _, sla := range slas {
			if best[sla] > 0 {
				out[i].OfBest[sla] = out[i].MaxGoodput[sla] / best[sla]
			}
		}
	}
	return out
}

// shiftedDeployment writes the wordpress deployment file with the testbed's
// ports moved by offset, and absolute paths for its workload and hook.
func shiftedDeployment(work string, offset int) (string, error) {
	root, err := os.Getwd()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(root, "testbed", "deployment-wordpress.yaml"))
	if err != nil {
		return "", fmt.Errorf("run from the repository root: %w", err)
	}
	s := regexp.MustCompile(`127\.0\.0\.1:(18\d\d\d)`).ReplaceAllStringFunc(string(b), func(m string) string {
		p, _ := strconv.Atoi(strings.TrimPrefix(m, "127.0.0.1:"))
		return fmt.Sprintf("127.0.0.1:%d", p+offset)
	})
	s = strings.Replace(s, "workload: stacks/wordpress/workload.yaml", "workload: "+filepath.Join(root, "testbed", "stacks", "wordpress", "workload.yaml"), 1)
	s = strings.Replace(s, "hook: [./testbed.sh,", "hook: ["+filepath.Join(root, "testbed", "testbed.sh")+",", 1)
	p := filepath.Join(work, "deployment-wordpress.yaml")
	return p, os.WriteFile(p, []byte(s), 0o644)
}

// phpMemory reads the php-fpm tier's memory limit (MiB) and the mean RSS of
// the php-fpm children in the testbed's app cgroup (MiB).
func phpMemory() (limit, rss float64) {
	dir := os.Getenv("SOFTALLOC_TESTBED_DIR")
	if b, err := os.ReadFile(filepath.Join(dir, "run", "mem-app")); err == nil {
		limit, _ = strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	}
	cg := os.Getenv("SOFTALLOC_TESTBED_CGROUP")
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var sum float64
	n := 0
	for _, p := range procs {
		cmd, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil || !strings.HasPrefix(string(cmd), "php-fpm: pool") {
			continue
		}
		if groups, err := os.ReadFile(filepath.Join(p, "cgroup")); err != nil || !strings.Contains(string(groups), "/"+cg+"/") {
			continue
		}
		status, err := os.ReadFile(filepath.Join(p, "status"))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(status), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				sum += kb / 1024
				n++
			}
		}
	}
	if n > 0 {
		rss = sum / float64(n)
	}
	return limit, rss
}

// caps reads the tiers' CPU caps of the testbed (run/cap-TIER, cores),
// as testbed.sh caps writes them, and the php-fpm tier's.
func caps() (string, float64) {
	var parts []string
	var app float64
	for _, tier := range runfiles.Tiers {
		c, err := runfiles.Cap(runfiles.Dir(), tier)
		if err != nil {
			continue
		}
		parts = append(parts, tier+"="+c)
		if tier == "app" {
			app, _ = strconv.ParseFloat(c, 64)
		}
	}
	return strings.Join(parts, " "), app
}

func uptime() string {
	b, err := exec.Command("uptime").Output()
	if err != nil {
		return "uptime: " + err.Error()
	}
	return strings.TrimSpace(string(b))
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("workload %q: want positive integers separated by commas", f)
		}
		out = append(out, n)
	}
	sort.Ints(out)
	return out, nil
}

func joinInts(xs []int) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.Itoa(x))
	}
	return strings.Join(s, ",")
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, " | ")
}
