// Command liveeval measures softalloc on the testbed's Java stack (Apache ->
// embedded Tomcat with HikariCP on a capped JVM -> MariaDB) and writes
// docs/live-evaluation.md, its JSON twin and plots.
//
// It drives the built softalloc binary (make build) through the live runner,
// as a user would, and never imports the CLI: find-critical, recommend (both
// minJobs readings), the two ways of applying an allocation (a JVM restart
// or Tomcat's and HikariCP's setters at run time), a grid of allocations at
// workloads around saturation with the allocations people use, and a twin
// calibrated from one low-load trial.
//
//	make build && go run ./testbed/liveeval -out docs
//
// It takes the testbed's lock (as testbed/e2e does), brings the Java stack up
// and stops it again if it started it. Finished experiments are journaled
// under -work, so an interrupted run resumes.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/softalloc/softalloc/testbed/runfiles"
)

func main() {
	var c config
	flag.StringVar(&c.out, "out", "docs", "directory for live-evaluation.md, live-evaluation.json and the plots")
	flag.StringVar(&c.bin, "bin", "bin/softalloc", "the softalloc binary (make build)")
	flag.StringVar(&c.deployment, "f", "testbed/deployment-java.yaml", "the Java stack's deployment file")
	flag.StringVar(&c.work, "work", ".softalloc/liveeval", "directory for the campaign's journals and the twin")
	flag.IntVar(&c.step, "step", 20, "find-critical workload step, users")
	flag.StringVar(&c.slas, "sla", "0.1,0.25,0.5", "SLA thresholds of goodput, seconds: about 5, 12 and 25 times the page response time at low load")
	flag.DurationVar(&c.gridRuntime, "grid-runtime", 8*time.Second, "runtime of each grid trial")
	flag.BoolVar(&c.quick, "quick", false, "a small grid and fewer apply trials (to try the program, not for the report)")
	render := flag.String("render", "", "only draw the Markdown and plots again from this live-evaluation.json (no trial)")
	flag.Parse()
	if *render != "" {
		if err := rerender(*render, c.out); err != nil {
			fmt.Fprintf(os.Stderr, "liveeval: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if err := run(c); err != nil {
		fmt.Fprintf(os.Stderr, "liveeval: %v\n", err)
		os.Exit(1)
	}
}

type config struct {
	out, bin, deployment, work, slas string
	step                             int
	gridRuntime                      time.Duration
	quick                            bool
}

func run(c config) error {
	for _, p := range []string{c.bin, c.deployment} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%s: %w (run from the repository root, after make build)", p, err)
		}
	}
	slas, err := parseSLAs(c.slas)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.work, 0o755); err != nil {
		return err
	}
	unlock, err := lockTestbed()
	if err != nil {
		return err
	}
	defer unlock()

	r := &Report{Generated: time.Now().UTC().Format(time.RFC3339), Deployment: c.deployment, SLAs: slas,
		Step: c.step, GridRuntime: c.gridRuntime.String()}
	start := time.Now()
	before := runningStack()
	up := exec.Command("testbed/testbed.sh", "up")
	up.Env = append(os.Environ(), "STACK=java")
	if _, err := runCmd(up); err != nil {
		return err
	}
	if before != "java" {
		defer func() {
			// Leave the testbed as it was found.
			cmd := exec.Command("testbed/testbed.sh", "down")
			if before != "" {
				cmd = exec.Command("testbed/testbed.sh", "up")
				cmd.Env = append(os.Environ(), "STACK="+before)
			}
			if _, err := runCmd(cmd); err != nil {
				fmt.Fprintf(os.Stderr, "liveeval: restoring the testbed: %v\n", err)
			}
		}()
	}
	r.Caps = readCaps()
	e := &evaluator{c: c, r: r, slas: slas}

	// Under its 0.1-core cap the JVM compiles its hot code for minutes: it is
	// warmed until its CPU per page settles before anything is measured.
	t0 := time.Now()
	if r.WarmUp, err = e.warmUp(); err != nil {
		return err
	}
	r.WarmUpSeconds = time.Since(t0).Seconds()

	// The apply modes come last: their restarts leave a cold JVM.
	for _, step := range []func() error{e.findCritical, e.recommend, e.grid, e.twin, e.applyModes} {
		if err := step(); err != nil {
			return err
		}
	}
	r.Analyse()
	r.TotalSeconds = time.Since(start).Seconds()
	return r.Write(c.out)
}

func rerender(path, out string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	r.Analyse()
	return r.Write(out)
}

type evaluator struct {
	c    config
	r    *Report
	slas []float64
}

func (e *evaluator) journal(name string) string { return filepath.Join(e.c.work, name) }

// softalloc runs the binary in the testbed's client cgroup with the live
// runner and returns its stdout.
func (e *evaluator) softalloc(args ...string) ([]byte, error) {
	argv := append([]string{"exec-client", e.c.bin}, args[0], "--runner", "live", "-f", e.c.deployment)
	argv = append(argv, args[1:]...)
	out, err := runCmd(exec.Command("testbed/testbed.sh", argv...))
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 143 {
		// Something else on the shared machine sent it SIGTERM (seen once):
		// its journal keeps what it finished, so one more run resumes.
		fmt.Fprintf(os.Stderr, "liveeval: softalloc was terminated from outside; running it again (its journal resumes)\n")
		out, err = runCmd(exec.Command("testbed/testbed.sh", argv...))
	}
	return out, err
}

// warmUp runs 30 s trials at 100 users until the app's CPU per page changes
// by less than 5% from one to the next (at most 10), and returns them.
func (e *evaluator) warmUp() ([]Trial, error) {
	var out []Trial
	for i := 0; i < 10; i++ {
		b, err := e.softalloc("simulate", "--alloc", "100-20-10", "--users", "100", "--ramp-up", "3s", "--runtime", "30s", "--no-journal", "--output", "observation")
		if err != nil {
			return out, err
		}
		t, err := trialFromObservation(b, 100, "100-20-10", e.r.Caps["app"])
		if err != nil {
			return out, err
		}
		out = append(out, t)
		if n := len(out); n >= 2 && math.Abs(out[n-1].CPUPerPageMS/out[n-2].CPUPerPageMS-1) < 0.05 {
			break
		}
	}
	return out, nil
}

func (e *evaluator) findCritical() error {
	out, err := e.softalloc("find-critical", "--step", strconv.Itoa(e.c.step), "--journal", e.journal("campaign.jsonl"), "--output", "json", "--quiet")
	if err != nil {
		return err
	}
	var doc struct {
		Critical    Critical `json:"critical"`
		Experiments int      `json:"experiments"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return fmt.Errorf("find-critical's JSON: %w", err)
	}
	e.r.Critical = doc.Critical
	// Times are the journal's, hook and scrape included: a resumed run
	// reuses the trials and keeps the time they took.
	e.r.FindCritical = Approach{Experiments: doc.Experiments}
	for i, t := range readTrials(e.journal("campaign.jsonl"), 0) {
		if i < doc.Experiments {
			e.r.FindCritical.Seconds += t.Seconds
		}
	}
	return nil
}

func (e *evaluator) recommend() error {
	for _, at := range []string{"saturation", "knee"} {
		out, err := e.softalloc("recommend", "--step", strconv.Itoa(e.c.step), "--small-step", "10", "--scan-span", "40",
			"--minjobs-at", at, "--journal", e.journal("campaign.jsonl"), "--output", "json", "--quiet")
		if err != nil {
			return err
		}
		var rec Recommendation
		if err := json.Unmarshal(out, &rec); err != nil {
			return fmt.Errorf("recommend's JSON: %w", err)
		}
		rec.MinJobsAt = at
		e.r.Recommendations = append(e.r.Recommendations, rec)
	}
	e.r.Campaign = readTrials(e.journal("campaign.jsonl"), e.r.Caps["app"])
	return nil
}

// applyModes applies a sequence of allocations in each mode and runs one
// trial right after each: the time an apply takes, and what the trial after
// it measures (a new JVM runs its first seconds interpreted).
func (e *evaluator) applyModes() error {
	users := max(10, int(0.7*float64(e.r.Critical.SaturationWorkload)))
	seq := []string{"100-20-10", "100-40-20", "100-10-5", "100-20-10"}
	reps := 2
	if e.c.quick {
		reps = 1
	}
	// Every run-time apply first, on the warm JVM: a restart's JVM is cold.
	for _, mode := range []string{"runtime", "restart"} {
		for rep := 0; rep < reps; rep++ {
			for i, a := range seq {
				p := strings.Split(a, "-")
				cmd := exec.Command("testbed/testbed.sh", "apply", p[0], p[1], p[2])
				cmd.Env = append(os.Environ(), "SOFTALLOC_TESTBED_APPLY="+mode)
				t0 := time.Now()
				if _, err := runCmd(cmd); err != nil {
					return err
				}
				applied := time.Since(t0).Seconds()
				if i == 0 {
					continue // the sequence's start, from whatever ran before
				}
				out, err := e.softalloc("simulate", "--alloc", a, "--users", strconv.Itoa(users), "--no-journal", "--output", "observation")
				if err != nil {
					return err
				}
				t, err := trialFromObservation(out, users, a, e.r.Caps["app"])
				if err != nil {
					return err
				}
				e.r.Apply = append(e.r.Apply, ApplyTrial{Mode: mode, Allocation: a, Users: users, ApplySeconds: applied, Trial: t})
			}
		}
	}
	// How long the last restart's JVM takes to warm up again.
	var err error
	e.r.RestartWarmUp, err = e.warmUp()
	return err
}

// gridAllocations are the allocations compared at each workload: the two
// recommendations, a neighbourhood of the first, and the ones people use.
func (e *evaluator) gridAllocations() []GridAllocation {
	rec := e.r.Recommendations[0]
	w, t, c := parseAlloc(rec.Allocation)
	var out []GridAllocation
	seen := map[string]bool{}
	add := func(role string, web, threads, conns int) {
		conns = min(conns, threads) // a connection beyond the thread count is never opened
		a := fmt.Sprintf("%d-%d-%d", web, max(1, threads), max(1, conns))
		if seen[a] {
			for i := range out {
				if out[i].Allocation == a && !strings.Contains(out[i].Role, role) {
					out[i].Role += "; " + role
				}
			}
			return
		}
		seen[a] = true
		out = append(out, GridAllocation{Allocation: a, Role: role})
	}
	add("recommended (minJobs at saturation)", w, t, c)
	if len(e.r.Recommendations) > 1 {
		kw, kt, kc := parseAlloc(e.r.Recommendations[1].Allocation)
		add("recommended (minJobs at the knee)", kw, kt, kc)
	}
	add("Tomcat's defaults (maxThreads 200, HikariCP 10)", w, 200, 10)
	add("HikariCP's rule (2 x DB cores + 1 = 3) with Tomcat's 200 threads", w, 200, 3)
	add("practitioners' 400-150-60", 400, 150, 60)
	add("over-allocated", w, 1000, 200)
	add("under-allocated", w, 2, 1)
	if !e.c.quick {
		add("grid: half the threads and connections", w, t/2, c/2)
		add("grid: twice the threads and connections", w, 2*t, 2*c)
		add("grid: twice the threads", w, 2*t, c)
		add("grid: threads past the knee", w, 50, c)
		add("grid: threads past the knee", w, 200, c)
		add("grid: threads past the knee", w, 1000, c)
		add("grid: connections past the knee", w, 1000, 60)
	}
	return out
}

func (e *evaluator) gridUsers() []int {
	s := float64(e.r.Critical.SaturationWorkload)
	// find-critical's reading can come early (the JVM's CPU per page falls
	// as load grows): the last workload is well past it.
	fs := []float64{0.8, 1.1, 1.4, 1.8}
	var out []int
	for _, f := range fs {
		u := int(math.Round(s*f/10) * 10)
		if len(out) == 0 || u > out[len(out)-1] {
			out = append(out, max(10, u))
		}
	}
	return out
}

func (e *evaluator) grid() error {
	allocs := e.gridAllocations()
	users := e.gridUsers()
	args := []string{"simulate", "--users", joinInts(users), "--sla", e.c.slas, "--parallel", "1",
		"--runtime", e.c.gridRuntime.String(), "--journal", e.journal("grid.jsonl"), "--output", "json"}
	for _, a := range allocs {
		args = append(args, "--alloc", a.Allocation)
	}
	n0 := countTrials(e.journal("grid.jsonl"))
	out, err := e.softalloc(args...)
	if err != nil {
		return err
	}
	var rows []struct {
		Allocation   string             `json:"allocation"`
		Users        int                `json:"users"`
		Throughput   float64            `json:"throughput"`
		Goodput      map[string]float64 `json:"goodput"`
		ResponseTime float64            `json:"responseTime"`
	}
	if err := json.Unmarshal(out, &rows); err != nil {
		return fmt.Errorf("simulate's JSON: %w", err)
	}
	trials := readTrials(e.journal("grid.jsonl"), e.r.Caps["app"])
	byKey := map[string]Trial{}
	for _, t := range trials {
		byKey[fmt.Sprintf("%s@%d", t.Allocation, t.Users)] = t
	}
	seconds := 0.0
	for _, row := range rows {
		t := byKey[fmt.Sprintf("%s@%d", row.Allocation, row.Users)]
		seconds += t.Seconds
		g := GridRow{Allocation: row.Allocation, Users: row.Users, Throughput: row.Throughput, ResponseTime: row.ResponseTime,
			Goodput: map[string]float64{}, AppCPU: t.AppCPU, CPUPerPageMS: t.CPUPerPageMS, GCShare: t.GCShare, Errors: t.Errors}
		for _, s := range e.slas {
			g.Goodput[slaKey(s)] = row.Goodput[slaKey(s)]
		}
		e.r.Grid = append(e.r.Grid, g)
	}
	e.r.GridAllocations = allocs
	e.r.GridUsers = users
	e.r.GridApproach = Approach{Experiments: len(rows), Seconds: seconds, Reused: len(rows) - (countTrials(e.journal("grid.jsonl")) - n0)}
	return nil
}

// twin calibrates testbed/twin from one trial at half the saturation
// workload and asks the simulator for the saturation workload.
func (e *evaluator) twin() error {
	users := max(10, e.r.Critical.SaturationWorkload/2)
	out, err := e.softalloc("simulate", "--alloc", "100-20-10", "--users", strconv.Itoa(users), "--runtime", "15s", "--no-journal", "--output", "observation")
	if err != nil {
		return err
	}
	obs := e.journal("low.jsonl")
	if err := os.WriteFile(obs, out, 0o644); err != nil {
		return err
	}
	dir := e.journal("twin")
	if _, err := runCmd(exec.Command("go", "run", "./testbed/twin", "-observation", obs, "-workload", "testbed/workload.yaml", "-out", dir)); err != nil {
		return err
	}
	out, err = runCmd(exec.Command(e.c.bin, "find-critical", "--output", "json", "--quiet", "--no-journal",
		"--model", filepath.Join(dir, "model.yaml"), "--topology", "1/1/1", "--alloc", "100-20-10",
		"--step", strconv.Itoa(e.c.step), "--ramp-up", "5s", "--runtime", "2m"))
	if err != nil {
		return err
	}
	var doc struct {
		Critical Critical `json:"critical"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return fmt.Errorf("the twin's find-critical JSON: %w", err)
	}
	e.r.Twin = TwinResult{CalibrationUsers: users, Predicted: doc.Critical,
		Error: (float64(doc.Critical.SaturationWorkload) - float64(e.r.Critical.SaturationWorkload)) / float64(e.r.Critical.SaturationWorkload)}
	return nil
}

// ---- helpers

func parseSLAs(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("-sla %q: want positive seconds such as 0.1,0.25,0.5", s)
		}
		out = append(out, v)
	}
	return out, nil
}

func slaKey(s float64) string { return strconv.FormatFloat(s, 'f', -1, 64) }

func parseAlloc(a string) (w, t, c int) {
	p := strings.Split(a, "-")
	if len(p) == 3 {
		w, _ = strconv.Atoi(p[0])
		t, _ = strconv.Atoi(p[1])
		c, _ = strconv.Atoi(p[2])
	}
	return w, t, c
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// runCmd runs cmd, its stderr passed through, and returns its stdout.
func runCmd(cmd *exec.Cmd) ([]byte, error) {
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	fmt.Fprintf(os.Stderr, "liveeval: %s\n", strings.Join(cmd.Args, " "))
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), err)
	}
	return out.Bytes(), nil
}

// lockTestbed takes the lock testbed/e2e takes, waiting for its turn.
func lockTestbed() (func(), error) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "softalloc-testbed.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		fmt.Fprintf(os.Stderr, "liveeval: waiting for %s (another run uses the testbed)\n", f.Name())
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, err
		}
	}
	return func() { f.Close() }, nil
}

// runningStack is the stack of a testbed that is up, or "".
func runningStack() string {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://127.0.0.1:18080/rubbos/health")
	if err != nil {
		return ""
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	stack, err := runfiles.Read(runfiles.Dir(), "stack")
	if err != nil {
		return "go"
	}
	return stack
}

// readCaps reads the tiers' CPU caps, in cores, that testbed.sh set.
func readCaps() map[string]float64 {
	caps := map[string]float64{}
	for _, t := range runfiles.Tiers {
		c, err := runfiles.Cap(runfiles.Dir(), t)
		if err != nil {
			continue
		}
		if v, err := strconv.ParseFloat(c, 64); err == nil {
			caps[t] = v
		}
	}
	return caps
}

// journalLine is what the reports need of a journal's line.
type journalLine struct {
	Seconds    float64 `json:"seconds"`
	Experiment struct {
		Allocation map[string]struct {
			Threads     int `json:"threads"`
			Connections int `json:"connections"`
		} `json:"allocation"`
		Workload struct {
			Users int `json:"users"`
		} `json:"workload"`
	} `json:"experiment"`
	Observation *observation `json:"observation"`
}

type observation struct {
	Throughput float64 `json:"throughput"`
	Errors     int     `json:"errors"`
	Servers    []struct {
		Name       string  `json:"name"`
		CPU        float64 `json:"cpu"`
		Throughput float64 `json:"throughput"`
		GCShare    float64 `json:"gcShare"`
		Throttled  float64 `json:"throttled"`
		Pools      []struct {
			Name string  `json:"name"`
			Busy float64 `json:"busy"`
		} `json:"pools"`
		ResponseTime float64 `json:"responseTime"`
	} `json:"servers"`
	ResponseTimes struct {
		Buckets []struct {
			Le    float64 `json:"le"`
			Count int     `json:"count"`
		} `json:"buckets"`
		Sum float64 `json:"sum"`
	} `json:"responseTimes"`
}

func countTrials(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte(`"observation":`))
}

// readTrials reads a journal's trials, in order.
func readTrials(path string, appCap float64) []Trial {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []Trial
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var l journalLine
		if json.Unmarshal(line, &l) != nil || l.Observation == nil {
			continue
		}
		a := l.Experiment.Allocation
		alloc := fmt.Sprintf("%d-%d-%d", a["web"].Threads, a["app"].Threads, a["app"].Connections)
		out = append(out, makeTrial(*l.Observation, l.Experiment.Workload.Users, alloc, appCap, l.Seconds))
	}
	return out
}

func trialFromObservation(b []byte, users int, alloc string, appCap float64) (Trial, error) {
	var o observation
	line := bytes.TrimSpace(bytes.SplitN(bytes.TrimSpace(b), []byte("\n"), 2)[0])
	if err := json.Unmarshal(line, &o); err != nil {
		return Trial{}, fmt.Errorf("observation: %w", err)
	}
	return makeTrial(o, users, alloc, appCap, 0), nil
}

func makeTrial(o observation, users int, alloc string, appCap, seconds float64) Trial {
	t := Trial{Users: users, Allocation: alloc, Throughput: o.Throughput, Errors: o.Errors, Seconds: seconds}
	n := 0
	for _, b := range o.ResponseTimes.Buckets {
		n += b.Count
	}
	if n > 0 {
		t.ResponseTime = o.ResponseTimes.Sum / float64(n)
	}
	for _, s := range o.Servers {
		if s.Name != "app-1" {
			continue
		}
		t.AppCPU, t.GCShare, t.Throttled = s.CPU, s.GCShare, s.Throttled
		if s.Throughput > 0 && appCap > 0 {
			t.CPUPerPageMS = s.CPU * appCap / s.Throughput * 1000
		}
		for _, p := range s.Pools {
			switch p.Name {
			case "threads":
				t.BusyThreads = p.Busy
			case "connections":
				t.BusyConnections = p.Busy
			}
		}
	}
	return t
}

// sortedKeys lists a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
