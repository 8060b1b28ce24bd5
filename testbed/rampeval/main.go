// Command rampeval measures issue 39's campaigns on a live testbed stack:
// recommend as one ramp of load (--ramp), as the adaptive staircase and as
// the fixed staircase, -rounds of the three in alternating orders, then the
// allocations they gave measured side by side in one grid, and writes
// docs/live-evaluation-ramp.md and its JSON twin (another stack's:
// live-evaluation-ramp-STACK.md).
//
// It drives testbed.sh (up with the app-critical caps of testbed/e2e, the
// stack given back as it was found) and the built softalloc, as a user
// would. Every finished campaign and grid cell is journaled under -work, so
// a run stopped anywhere resumes without measuring again what it kept. On a
// testbed of its own beside other work:
//
//	go build -o bin/softalloc ./cmd/softalloc
//	export SOFTALLOC_TESTBED_PORT_OFFSET=300 SOFTALLOC_TESTBED_CGROUP=softalloc-ramp SOFTALLOC_TESTBED_DIR=/tmp/tb-ramp
//	flock -o /tmp/measure.lock go run ./testbed/rampeval -out docs
//	testbed/testbed.sh down
//
// The Java stack (journals in .softalloc/rampeval-java, its page
// live-evaluation-ramp-java.md): STACK=java ... go run ./testbed/rampeval -out docs.
// -render FILE draws the Markdown again from a JSON twin, without a trial.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/testbed/jvmwarm"
	"github.com/softalloc/softalloc/testbed/runfiles"
)

// The three campaigns, in round 1's order.
var kinds = []string{"ramp", "adaptive", "fixed"}

// defaultFixed is the fixed staircase's trial the figures come
// from (docs/commands.md: 1,219 s and 14 experiments on the Go testbed).
const defaultFixed = "--fixed --ramp-up 34s --runtime 51s --ramp-down 2s"

// config is the command's flags.
type config struct {
	out, bin, work, deployment, stack, caps string
	rounds, gridRounds                      int
	steps, slas, factors, gridTrial         string
	// trial holds each kind's trial flags.
	trial      map[string]string
	warmUp     time.Duration
	warmUsers  int
	warmTrials int
	// hot is the warm-up's first trial, with the app's cap at hotCap and
	// hotUsers users.
	hot                time.Duration
	hotUsers           int
	hotCap             string
	quick              bool
	notes              list
	testbed, repo, env string
}

type list []string

func (l *list) String() string     { return strings.Join(*l, "; ") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

// stackDefaults are the caps and deployment file by stack: testbed/e2e's
// app-critical caps for the Go stack, the Java stack's own defaults (the JVM
// outruns the database under 0.2 cores, testbed/README.md).
var stackDefaults = map[string]struct{ caps, deployment string }{
	"go":   {"web=0.5 app=0.2 db=0.6", "testbed/deployment.yaml"},
	"java": {"web=0.5 app=0.1 db=0.6", "testbed/deployment-java.yaml"},
}

func main() {
	var c config
	flag.StringVar(&c.out, "out", "docs", "directory for live-evaluation-ramp.md and .json (another stack's: live-evaluation-ramp-STACK)")
	flag.StringVar(&c.bin, "bin", "bin/softalloc", "the softalloc binary (go build -o bin/softalloc ./cmd/softalloc)")
	flag.StringVar(&c.work, "work", ".softalloc/rampeval", "directory for the journals (campaigns.jsonl, grid.jsonl, softalloc's) and the deployment file it writes (another stack's: .softalloc/rampeval-STACK)")
	flag.StringVar(&c.deployment, "f", "", "the deployment file (default: the stack's, testbed/deployment.yaml or testbed/deployment-java.yaml)")
	flag.StringVar(&c.caps, "caps", "", "the caps the campaigns run under (default: web=0.5 app=0.2 db=0.6 on the Go stack, TestLiveTestbed's app-critical; web=0.5 app=0.1 db=0.6 on the Java stack)")
	flag.IntVar(&c.rounds, "rounds", 3, "rounds of the three campaigns, each round in the opposite order of the one before")
	flag.IntVar(&c.gridRounds, "grid-rounds", 2, "rounds of the grid, in alternating orders (at least 2)")
	flag.StringVar(&c.steps, "steps", "--step 40 --small-step 10 --scan-span 40", "every campaign's steps (docs/commands.md's measurement of the staircases on the Go testbed)")
	// The fixed staircase the issue measures against (1,219 s, 14
	// experiments): the paper's trial scaled by the testbed's think time,
	// which measures to about 5% (docs/commands.md); the adaptive trials and
	// the ramp's windows are held to that precision, with its runtime as
	// their longest window. The testbed's deployment files say precision 0,
	// so that no trial flags would give 10 s fixed trials, not adaptive ones.
	fixed := flag.String("fixed", defaultFixed, "the fixed staircase's trial flags (testbed/e2e's and testbed/README's: --fixed --ramp-up 3s --runtime 6s --ramp-down 1s)")
	adaptive := flag.String("adaptive", "--precision 5% --ramp-up 3s --runtime 51s", "the adaptive staircase's trial flags")
	ramp := flag.String("ramp", "--ramp --precision 5% --ramp-up 3s --runtime 51s", "the ramp campaign's flags")
	flag.StringVar(&c.slas, "sla", "0.1,0.25,0.5", "the grid's SLA thresholds, seconds (on the Go testbed 40 users with 0.5 s of think time got 78 pages/s, a page in about 13 ms, and docs/commands.md ranks its grid at 0.25 s)")
	flag.StringVar(&c.factors, "workloads", "0.75,1,1.25,1.5", "the grid's workloads, as multiples of the campaigns' median saturation workload")
	flag.StringVar(&c.gridTrial, "grid-trial", "--fixed --ramp-up 5s --runtime 20s --ramp-down 1s", "the grid's trial flags")
	flag.DurationVar(&c.warmUp, "warm-up", -1, "each warm-up trial's runtime: trials at -warm-users before the first campaign, measured by none, until the app's CPU per page is flat (default: 0, none, on the Go stack; 20s on the Java stack, whose JVM compiles for minutes under its cap)")
	flag.IntVar(&c.warmUsers, "warm-users", 100, "users of the warm-up trials")
	flag.DurationVar(&c.hot, "hot", -1, "the warm-up's first trial, with the app tier's cap lifted to -hot-cap, so that the JIT compiles with a full core (default: 0, none, on the Go stack; 75s on the Java stack, whose warm-up under the cap still fell after ten trials)")
	flag.IntVar(&c.hotUsers, "hot-users", 150, "users of that trial")
	flag.StringVar(&c.hotCap, "hot-cap", "max", "the app tier's cap during that trial, cores (max: none)")
	flag.IntVar(&c.warmTrials, "warm-trials", 10, "at most this many warm-up trials (they stop when the last three's app CPU per page are flat)")
	flag.BoolVar(&c.quick, "quick", false, "one round of short trials and a small grid, to try the program (not for the page: its -work and -out default to /tmp/rampeval-quick)")
	flag.Var(&c.notes, "note", "a line for the page's notes (repeatable): what the run met that the numbers do not say")
	render := flag.String("render", "", "only draw the Markdown again from this live-evaluation-ramp.json (no trial)")
	flag.Parse()
	var err error
	if *render != "" {
		err = rerender(*render, c.out, c.notes)
	} else {
		err = c.setDefaults()
		c.trial = map[string]string{"ramp": *ramp, "adaptive": *adaptive, "fixed": *fixed}
		if err == nil {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			err = run(ctx, c)
			stop()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "rampeval: %s\n", strings.Join(strings.Fields(err.Error()), " "))
		os.Exit(1)
	}
}

// setDefaults fills what depends on the stack and -quick.
func (c *config) setDefaults() error {
	c.stack = cmp.Or(os.Getenv("STACK"), "go")
	d, ok := stackDefaults[c.stack]
	if !ok {
		return fmt.Errorf("STACK=%s: want go or java", c.stack)
	}
	c.deployment, c.caps = cmp.Or(c.deployment, d.deployment), cmp.Or(c.caps, d.caps)
	if c.warmUp < 0 {
		c.warmUp = 0
		if c.stack == "java" {
			c.warmUp = 20 * time.Second
		}
	}
	if c.hot < 0 {
		c.hot = 0
		if c.stack == "java" {
			c.hot = 75 * time.Second
		}
	}
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if c.quick {
		// One round and a grid of two workloads on short trials: about ten
		// minutes on the Go stack.
		quick := map[string]string{"rounds": "1", "steps": "--step 40 --small-step 20 --scan-span 40", "fixed": "--fixed --ramp-up 3s --runtime 6s --ramp-down 1s",
			"adaptive": "--precision 10% --ramp-up 3s --runtime 12s", "ramp": "--ramp --precision 10% --ramp-up 3s --runtime 12s",
			"workloads": "1,1.5", "grid-trial": "--fixed --ramp-up 3s --runtime 6s --ramp-down 1s",
			"work": "/tmp/rampeval-quick", "out": "/tmp/rampeval-quick"}
		for name, v := range quick {
			if !set[name] {
				if err := flag.Set(name, v); err != nil {
					return err
				}
			}
		}
	}
	if !set["work"] && c.stack != "go" {
		// A stack's campaigns never resume another's.
		c.work += "-" + c.stack
	}
	if c.warmUp > 0 && c.warmTrials < jvmwarm.Window {
		return fmt.Errorf("-warm-trials %d: want %d or more (the warm-up stops on the last %d trials)", c.warmTrials, jvmwarm.Window, jvmwarm.Window)
	}
	if c.rounds < 1 || c.gridRounds < 2 {
		return fmt.Errorf("-rounds %d -grid-rounds %d: want at least 1 and 2 (the grid's spread needs two rounds)", c.rounds, c.gridRounds)
	}
	var err error
	if c.repo, err = os.Getwd(); err != nil {
		return err
	}
	if c.bin, err = filepath.Abs(c.bin); err != nil {
		return err
	}
	c.testbed = filepath.Join(c.repo, "testbed", "testbed.sh")
	var env []string
	for _, k := range []string{"STACK", "SOFTALLOC_TESTBED_PORT_OFFSET", "SOFTALLOC_TESTBED_CGROUP", "SOFTALLOC_TESTBED_DIR"} {
		if v := os.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	c.env = strings.Join(env, " ")
	return nil
}

func run(ctx context.Context, c config) error {
	for _, p := range []string{c.bin, c.deployment} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%s: %w (run from the repository root, after building softalloc)", p, err)
		}
	}
	sla, err := floats(c.slas)
	if err != nil {
		return fmt.Errorf("-sla: %w", err)
	}
	// simulate keys goodput by the threshold as it formats it: 0.10 is "0.1".
	slas := make([]string, len(sla))
	for i, v := range sla {
		slas[i] = strconv.FormatFloat(v, 'f', -1, 64)
	}
	factors, err := floats(c.factors)
	if err != nil {
		return fmt.Errorf("-workloads: %w", err)
	}
	offset := 0
	if s := os.Getenv("SOFTALLOC_TESTBED_PORT_OFFSET"); s != "" {
		if offset, err = strconv.Atoi(s); err != nil {
			return fmt.Errorf("SOFTALLOC_TESTBED_PORT_OFFSET=%q: want a number", s)
		}
	}
	if err := os.MkdirAll(c.work, 0o755); err != nil {
		return fmt.Errorf("-work: %w", err)
	}
	dep, err := shifted(c.repo, c.work, c.deployment, offset)
	if err != nil {
		return fmt.Errorf("the deployment file for offset %d: %w", offset, err)
	}
	initial, err := initialAllocation(dep)
	if err != nil {
		return err
	}
	unlock, err := lockTestbed()
	if err != nil {
		return err
	}
	defer unlock()

	r := &Report{Generated: time.Now().UTC().Format(time.RFC3339), Head: outputOf(c.repo, "git", "rev-parse", "HEAD"),
		Dirty: strings.Join(strings.Fields(outputOf(c.repo, "git", "status", "--porcelain", "--untracked-files=no")), " "), Command: c.command(), Stack: c.stack,
		Deployment: c.deployment, PortOffset: offset, Caps: c.caps, Rounds: c.rounds, Steps: c.steps, Trials: c.trial,
		SLAs: slas, GridTrial: c.gridTrial, GridFactors: factors, Initial: initial, Quick: c.quick, Notes: c.notes,
		UptimeBefore: uptime()}
	fmt.Fprintf(os.Stderr, "rampeval: %s\n", r.UptimeBefore)
	restore, err := c.up(offset)
	if restore != nil {
		defer restore()
	}
	if err != nil {
		return err
	}
	e := &evaluator{c: c, dep: dep, ctx: ctx}
	if c.warmUp > 0 || c.hot > 0 {
		if r.WarmUp, err = e.warmUpUntilFlat(initial); err != nil {
			return err
		}
	}

	// The campaigns, then the grid of their allocations, each resumed from
	// its journal.
	campaignsFile := filepath.Join(c.work, "campaigns.jsonl")
	if r.Campaigns, err = runCampaigns(campaignsFile, c.rounds, e.recommendArgs, e.campaign); err != nil {
		return err
	}
	r.GridUsers = gridUsers(r.Campaigns, factors)
	if len(r.GridUsers) == 0 {
		return fmt.Errorf("no campaign named a saturation workload: no grid (the campaigns' errors are in %s)", campaignsFile)
	}
	r.GridAllocations = gridAllocations(initial, r.Campaigns)
	measure := func(round int, alloc string) GridRun { return e.gridRun(round, alloc, r.GridUsers, slas) }
	if r.Grid, err = runGrid(filepath.Join(c.work, "grid.jsonl"), r.GridAllocations, r.GridUsers, c.gridRounds, c.gridTrial, measure); err != nil {
		return err
	}
	r.UptimeAfter, r.Finished = uptime(), time.Now().UTC().Format(time.RFC3339)
	fmt.Fprintf(os.Stderr, "rampeval: %s\n", r.UptimeAfter)
	return r.write(c.out)
}

// command is the run's command line as a user types it.
func (c config) command() string {
	return strings.TrimSpace(c.env + " go run ./testbed/rampeval " + strings.Join(os.Args[1:], " "))
}

// up brings the stack up under the caps and returns what puts the testbed
// back as it was found: down when nothing ran, the stack that ran, or the
// caps it had.
func (c config) up(offset int) (func(), error) {
	before := runningStack(offset)
	var caps []string
	for _, t := range runfiles.Tiers {
		if v, err := runfiles.Cap(runfiles.Dir(), t); err == nil {
			caps = append(caps, t+"="+v)
		}
	}
	err := c.testbedSh(append([]string{"up"}, strings.Fields(c.caps)...), "STACK="+c.stack)
	restore := func() {
		var err error
		switch {
		case before == "":
			err = c.testbedSh([]string{"down"})
		case before != c.stack:
			err = c.testbedSh([]string{"up"}, "STACK="+before)
		case len(caps) == len(runfiles.Tiers):
			err = c.testbedSh(append([]string{"caps"}, caps...))
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "rampeval: giving the testbed back: %v\n", err)
		}
	}
	return restore, err
}

func (c config) testbedSh(args []string, env ...string) error {
	cmd := exec.Command(c.testbed, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	fmt.Fprintf(os.Stderr, "rampeval: %s testbed.sh %s\n", strings.Join(env, " "), strings.Join(args, " "))
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("testbed.sh %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

type evaluator struct {
	c   config
	dep string
	ctx context.Context
}

// softalloc runs the binary in the testbed's client cgroup (as testbed/e2e
// does: the load generator neither capped nor crowded out) and returns its
// stdout; an interruption ends it by SIGTERM, so that it journals what it
// finished.
func (e *evaluator) softalloc(args ...string) ([]byte, error) {
	cmd := exec.CommandContext(e.ctx, e.c.testbed, append([]string{"exec-client", e.c.bin}, args...)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, io.MultiWriter(&errb, os.Stderr)
	fmt.Fprintf(os.Stderr, "rampeval: softalloc %s\n", strings.Join(args, " "))
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("softalloc %s: %w: %s", args[0], err, lastLine(errb.String()))
	}
	return out.Bytes(), nil
}

// warmUpUntilFlat runs warm-up trials until the app's CPU per page is flat
// (jvmwarm.Flat), at most -warm-trials; WarmUp.Settled says which ended it.
// In round 1 on the Java stack one 2-minute trial left the app at 2.4 ms
// of CPU per page at 20 users against 0.83 ms later in the round, and the
// campaign that ran first measured a JVM still compiling.
func (e *evaluator) warmUpUntilFlat(initial string) (*WarmUp, error) {
	t0 := time.Now()
	w := &WarmUp{Users: e.c.warmUsers, Trial: e.c.warmUp.String()}
	// The app's cap in force, as testbed.sh set it.
	capped, err := runfiles.Cap(runfiles.Dir(), "app")
	if err != nil {
		return w, fmt.Errorf("warm-up: %w", err)
	}
	cores, err := strconv.ParseFloat(capped, 64)
	if err != nil || !(cores > 0) {
		return w, fmt.Errorf("warm-up: the app's cap %q: want cores, not max (the CPU per page is read against it)", capped)
	}
	if e.c.hot > 0 {
		var out []byte
		if w.Caps, err = jvmwarm.WithAppCapLifted(e.c.testbed, runfiles.Dir(), e.c.hotCap, func() (err error) {
			out, err = e.softalloc(e.hotArgs()...)
			return err
		}); err != nil {
			return w, err
		}
		hot, err := oneTrial(out)
		if err != nil {
			return w, fmt.Errorf("warm-up with the app's cap lifted: %w", err)
		}
		w.HotThroughput = hot.Throughput
		w.HotCap, w.HotUsers, w.HotSeconds = e.c.hotCap, e.c.hotUsers, e.c.hot.Seconds()
		fmt.Fprintf(os.Stderr, "rampeval: warm-up with the app's cap at %s: %.1f pages/s\n", e.c.hotCap, w.HotThroughput)
	}
	if e.c.warmUp > 0 {
		err = w.UntilFlat(e.c.warmTrials, func() (float64, error) {
			out, err := e.softalloc(e.warmUpArgs(initial)...)
			if err != nil {
				return 0, err
			}
			return appCPUPerPage(out, cores)
		})
	}
	w.Seconds = time.Since(t0).Seconds()
	return w, err
}

// simulatedTrial is simulate's one trial, from its JSON.
type simulatedTrial struct {
	Throughput float64 `json:"throughput"`
	Servers    []struct {
		Tier string  `json:"tier"`
		CPU  float64 `json:"cpu"`
	} `json:"servers"`
}

func oneTrial(simulateJSON []byte) (simulatedTrial, error) {
	var rows []simulatedTrial
	if err := json.Unmarshal(simulateJSON, &rows); err != nil || len(rows) != 1 {
		return simulatedTrial{}, fmt.Errorf("simulate's output: want one trial: %v: %.200s", err, simulateJSON)
	}
	return rows[0], nil
}

// appCPUPerPage is the app tier's CPU per page, ms, of simulate's one
// trial (its JSON), under the app's cap of cores.
func appCPUPerPage(simulateJSON []byte, cores float64) (float64, error) {
	r, err := oneTrial(simulateJSON)
	if err != nil {
		return 0, err
	}
	for _, s := range r.Servers {
		if s.Tier == "app" && r.Throughput > 0 {
			return 1000 * cores * s.CPU / r.Throughput, nil
		}
	}
	return 0, fmt.Errorf("simulate's trial has no app server or no pages: %.200s", simulateJSON)
}

// hotArgs are the lifted warm-up trial's: generous pools
// (jvmwarm.HotAlloc), so that the JIT sees the load.
func (e *evaluator) hotArgs() []string {
	return []string{"simulate", "--runner", "live", "-f", e.dep, "--alloc", jvmwarm.HotAlloc["platform"], "--users", strconv.Itoa(e.c.hotUsers), "--fixed", "--ramp-up", "3s",
		"--runtime", e.c.hot.String(), "--ramp-down", "1s", "--no-journal", "--quiet", "-o", "json"}
}

// warmUpArgs are the warm-up trial's: the initial allocation on the
// testbed's deployment, measured by no campaign.
func (e *evaluator) warmUpArgs(initial string) []string {
	return []string{"simulate", "--runner", "live", "-f", e.dep, "--alloc", initial, "--users", strconv.Itoa(e.c.warmUsers), "--fixed", "--ramp-up", "3s",
		"--runtime", e.c.warmUp.String(), "--ramp-down", "1s", "--no-journal", "--quiet", "-o", "json"}
}

// recommendArgs are a campaign's arguments: its own journal, the steps and
// the kind's trial flags.
func (e *evaluator) recommendArgs(kind string, round int) []string {
	journal := filepath.Join(e.c.work, fmt.Sprintf("journal-%s-%d.jsonl", kind, round))
	args := []string{"recommend", "--runner", "live", "-f", e.dep, "--journal", journal, "--output", "json", "--quiet"}
	args = append(args, strings.Fields(e.c.steps)...)
	return append(args, strings.Fields(e.c.trial[kind])...)
}

// campaign runs one recommend on a fresh journal, so that its wall time is
// its whole campaign's: a journal left by an interrupted run is removed.
func (e *evaluator) campaign(kind string, round int, args []string) Campaign {
	_ = os.Remove(args[slices.Index(args, "--journal")+1])
	cp := Campaign{Kind: kind, Round: round, Args: strings.Join(args, " "), Started: time.Now().UTC().Format(time.RFC3339)}
	t0 := time.Now()
	out, err := e.softalloc(args...)
	cp.WallSeconds = time.Since(t0).Seconds()
	// recommend's own answer, beside its journal, for what the record leaves out.
	_ = os.WriteFile(strings.TrimSuffix(args[slices.Index(args, "--journal")+1], ".jsonl")+".json", out, 0o644)
	if perr := cp.parse(out); perr != nil && err == nil {
		err = perr
	}
	if err != nil {
		cp.Error = err.Error()
	}
	if e.ctx.Err() != nil {
		cp.Error = errInterrupted + ": " + cp.Error
	}
	fmt.Fprintf(os.Stderr, "rampeval: %s round %d: %.0f s, %d experiments, %s at %d users, %s %s\n", kind, round, cp.WallSeconds,
		cp.Experiments, cp.Critical, cp.SaturationWorkload, cp.Allocation, cp.Error)
	return cp
}

// parse reads recommend's --output json (internal/report.RecommendJSON,
// with steps and ramp after --ramp).
func (cp *Campaign) parse(out []byte) error {
	var doc struct {
		Critical struct {
			Tier, Server, Resource string
			SaturationWorkload     int     `json:"saturationWorkload"`
			MaxThroughput          float64 `json:"maxThroughput"`
		} `json:"critical"`
		MinJobs     float64  `json:"minJobs"`
		Experiments int      `json:"experiments"`
		Allocation  string   `json:"allocation"`
		Warnings    []string `json:"warnings"`
		Ramp        *struct {
			Windows []json.RawMessage `json:"windows"`
			Ramps   int               `json:"ramps"`
			Answer  []int             `json:"answer"`
		} `json:"ramp"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return fmt.Errorf("recommend's JSON: %w", err)
	}
	cp.Critical = strings.TrimSpace(doc.Critical.Tier + " " + doc.Critical.Resource)
	cp.Server, cp.SaturationWorkload, cp.MaxThroughput = doc.Critical.Server, doc.Critical.SaturationWorkload, doc.Critical.MaxThroughput
	cp.MinJobs, cp.Experiments, cp.Allocation, cp.Warnings = doc.MinJobs, doc.Experiments, doc.Allocation, doc.Warnings
	if doc.Ramp != nil {
		cp.Windows, cp.Ramps, cp.Answer = len(doc.Ramp.Windows), doc.Ramp.Ramps, doc.Ramp.Answer
	}
	if cp.Allocation == "" {
		return errors.New("recommend's JSON has no allocation")
	}
	return nil
}

// gridRun measures one allocation at every workload in one simulate,
// journaled by softalloc per cell (a journal per round, so that a round
// never reuses another's trials): a rerun resumes inside the allocation.
func (e *evaluator) gridRun(round int, alloc string, users []int, slas []string) GridRun {
	g := GridRun{Round: round, Allocation: alloc, Users: users, Trial: e.c.gridTrial}
	order := slices.Clone(users)
	if round%2 == 0 {
		slices.Reverse(order)
	}
	args := append([]string{"simulate", "--runner", "live", "-f", e.dep, "--alloc", alloc, "--users", joinInts(order), "--sla", strings.Join(slas, ","),
		"--parallel", "1", "--journal", filepath.Join(e.c.work, fmt.Sprintf("grid-%d.jsonl", round)), "--quiet", "-o", "json"},
		strings.Fields(e.c.gridTrial)...)
	t0 := time.Now()
	out, err := e.softalloc(args...)
	g.Seconds = time.Since(t0).Seconds()
	if err == nil {
		err = json.Unmarshal(out, &g.Cells)
	}
	if err != nil {
		g.Error = err.Error()
	}
	if e.ctx.Err() != nil {
		g.Error = errInterrupted + ": " + g.Error
	}
	return g
}

// ---- plan and resumption

// runCampaigns runs the rounds' campaigns in their order, each appended to
// file as it finishes; one the file holds, finished with the same
// arguments, is kept and not run again.
func runCampaigns(file string, rounds int, argsOf func(kind string, round int) []string,
	run func(kind string, round int, args []string) Campaign) ([]Campaign, error) {
	done, err := readJSONL[Campaign](file)
	if err != nil {
		return nil, err
	}
	var out []Campaign
	for _, p := range campaignOrder(rounds) {
		args := argsOf(p.kind, p.round)
		if prev := recorded(done, p.kind, p.round, strings.Join(args, " ")); prev != nil {
			fmt.Fprintf(os.Stderr, "rampeval: %s round %d: kept from %s\n", p.kind, p.round, file)
			out = append(out, *prev)
			continue
		}
		cp := run(p.kind, p.round, args)
		if interrupted(cp.Error) {
			return out, fmt.Errorf("interrupted during the %s campaign of round %d (a rerun measures it again)", p.kind, p.round)
		}
		if err := appendJSONL(file, cp); err != nil {
			return out, err
		}
		out = append(out, cp)
	}
	return out, nil
}

// runGrid measures every allocation in every round, odd rounds in the
// allocations' order and even ones reversed, each run appended to file as
// it finishes; one the file holds whole is kept.
func runGrid(file string, allocs []GridAllocation, users []int, rounds int, trial string, measure func(round int, alloc string) GridRun) ([]GridRun, error) {
	kept, err := readJSONL[GridRun](file)
	if err != nil {
		return nil, err
	}
	var out []GridRun
	for round := 1; round <= rounds; round++ {
		for _, i := range alternate(len(allocs), round) {
			a := allocs[i].Allocation
			if g := keptRun(kept, round, a, users, trial); g != nil {
				out = append(out, *g)
				continue
			}
			g := measure(round, a)
			if interrupted(g.Error) {
				return out, fmt.Errorf("interrupted in the grid's round %d at %s (a rerun resumes from the journals)", round, a)
			}
			if err := appendJSONL(file, g); err != nil {
				return out, err
			}
			out = append(out, g)
		}
	}
	return out, nil
}

// errInterrupted marks a run ended by SIGINT or SIGTERM to this program:
// nothing to record, the rerun measures it.
const errInterrupted = "interrupted"

func interrupted(msg string) bool { return strings.HasPrefix(msg, errInterrupted) }

type planned struct {
	kind  string
	round int
}

// campaignOrder alternates the kinds' order: round 1 as kinds, round 2
// reversed, and so on, so that no kind always runs first on a testbed that
// drifts (a JVM still warming, a machine's load).
func campaignOrder(rounds int) []planned {
	var out []planned
	for r := 1; r <= rounds; r++ {
		for _, i := range alternate(len(kinds), r) {
			out = append(out, planned{kinds[i], r})
		}
	}
	return out
}

// alternate is the indexes 0..n-1 in odd rounds, n-1..0 in even ones.
func alternate(n, round int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
		if round%2 == 0 {
			out[i] = n - 1 - i
		}
	}
	return out
}

// recorded is the finished campaign of this kind and round run with these
// arguments, or nil: one that failed, or ran otherwise, runs again.
func recorded(done []Campaign, kind string, round int, args string) *Campaign {
	for i := len(done) - 1; i >= 0; i-- {
		if d := done[i]; d.Kind == kind && d.Round == round && d.Args == args && d.Error == "" {
			return &done[i]
		}
	}
	return nil
}

// keptRun is the grid's recorded run of this allocation, round, workloads
// and trial with a trial at every workload, or nil.
func keptRun(kept []GridRun, round int, alloc string, users []int, trial string) *GridRun {
	for i := len(kept) - 1; i >= 0; i-- {
		k := kept[i]
		if k.Round == round && k.Allocation == alloc && slices.Equal(k.Users, users) && k.Trial == trial && k.Error == "" && len(k.Cells) == len(users) {
			return &kept[i]
		}
	}
	return nil
}

func readJSONL[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			// A line cut by a crash is the last one: what it held runs again.
			fmt.Fprintf(os.Stderr, "rampeval: %s line %d: %v (ignored)\n", path, n, err)
			continue
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

// appendJSONL appends v as one line and syncs it, so that a crash right
// after keeps it; a line a crash cut short is ended first, or v would join
// it and be lost with it.
func appendJSONL(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(path); err == nil && len(old) > 0 && old[len(old)-1] != '\n' {
		b = append([]byte{'\n'}, b...)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err = f.Write(append(b, '\n')); err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// ---- the grid's plan

// gridUsers are the workloads around the campaigns' median saturation
// workload.
func gridUsers(cs []Campaign, factors []float64) []int {
	var sat []float64
	for _, c := range cs {
		if c.Error == "" && c.SaturationWorkload > 0 {
			sat = append(sat, float64(c.SaturationWorkload))
		}
	}
	if len(sat) == 0 {
		return nil
	}
	m := median(sat)
	var out []int
	for _, f := range factors {
		u := max(1, int(math.Round(m*f)))
		if !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out
}

// gridAllocations are the deployment's initial allocation and every
// distinct one the campaigns gave, each with who gave it.
func gridAllocations(initial string, cs []Campaign) []GridAllocation {
	out := []GridAllocation{{Allocation: initial, From: []string{"initial"}}}
	for _, c := range cs {
		if c.Error != "" || c.Allocation == "" {
			continue
		}
		from := fmt.Sprintf("%s %d", c.Kind, c.Round)
		i := slices.IndexFunc(out, func(g GridAllocation) bool { return g.Allocation == c.Allocation })
		if i < 0 {
			out = append(out, GridAllocation{Allocation: c.Allocation})
			i = len(out) - 1
		}
		out[i].From = append(out[i].From, from)
	}
	return out
}

// ---- the testbed

// shifted writes the deployment file with its ports moved by the testbed's
// offset, and its workload and hook by absolute path.
func shifted(repo, work, file string, offset int) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	s := regexp.MustCompile(`127\.0\.0\.1:(18[0-9]{3})`).ReplaceAllStringFunc(string(b), func(m string) string {
		n, _ := strconv.Atoi(m[len("127.0.0.1:"):])
		return fmt.Sprintf("127.0.0.1:%d", n+offset)
	})
	s = strings.Replace(s, "workload: workload.yaml", "workload: "+filepath.Join(repo, "testbed", "workload.yaml"), 1)
	s = strings.Replace(s, "./testbed.sh", filepath.Join(repo, "testbed", "testbed.sh"), 1)
	path := filepath.Join(work, filepath.Base(file))
	return path, os.WriteFile(path, []byte(s), 0o644)
}

// initialAllocation is the allocation the deployment file's pools give,
// in the notation recommend answers in (web threads-app threads-app
// connections).
func initialAllocation(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var doc struct {
		Tiers []struct {
			Name  string         `yaml:"name"`
			Pools map[string]int `yaml:"pools"`
		} `yaml:"tiers"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	pools := map[string]int{}
	for _, t := range doc.Tiers {
		for p, n := range t.Pools {
			pools[t.Name+"."+p] = n
		}
	}
	w, t, c := pools["web.threads"], pools["app.threads"], pools["app.connections"]
	if w == 0 || t == 0 || c == 0 {
		return "", fmt.Errorf("%s: want web.threads, app.threads and app.connections among its pools, got %v", path, pools)
	}
	return fmt.Sprintf("%d-%d-%d", w, t, c), nil
}

// lockTestbed takes the lock of the testbed of SOFTALLOC_TESTBED_DIR (the
// default testbed's is testbed/e2e's and liveeval's), waiting for its turn.
func lockTestbed() (func(), error) {
	f, err := os.OpenFile(runfiles.Dir()+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("the testbed's lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		fmt.Fprintf(os.Stderr, "rampeval: waiting for %s (another run uses the testbed)\n", f.Name())
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("the testbed's lock %s: %w", f.Name(), err)
		}
	}
	return func() { f.Close() }, nil
}

// runningStack is the stack of the testbed that answers at the offset's
// ports, or "".
func runningStack(offset int) string {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/", 18080+offset))
	if err != nil {
		return ""
	}
	resp.Body.Close()
	stack, err := runfiles.Read(runfiles.Dir(), "stack")
	if err != nil {
		return ""
	}
	return stack
}

// outputOf is a command's trimmed stdout, run in dir, or what failed.
func outputOf(dir, name string, args ...string) string {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	b, err := cmd.Output()
	if err != nil {
		return fmt.Sprintf("%s: %v", name, err)
	}
	return strings.TrimSpace(string(b))
}

func uptime() string { return outputOf("", "uptime") }

func floats(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0) {
			return nil, fmt.Errorf("%q: want positive numbers separated by commas", s)
		}
		out = append(out, v)
	}
	return out, nil
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func lastLine(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return l[len(l)-1]
}
