// Command vthreadseval measures the testbed's Java stack on platform and on
// virtual threads (issue 38) and writes docs/live-evaluation-vthreads.md:
// softalloc's own recommendation for the virtual-thread deployment, SLA
// thresholds from the response time at low load, then, below and around the
// knee, each configuration's throughput, goodput at the thresholds, errors,
// mean response time, the app's CPU and GC share and the jobs inside its
// pools, repeated, with the target judged from the means.
//
//	make build && SOFTALLOC_TESTBED_PORT_OFFSET=200 SOFTALLOC_TESTBED_CGROUP=softalloc-me \
//	  SOFTALLOC_TESTBED_DIR=/tmp/tb-me flock -o /tmp/measure.lock go run ./testbed/vthreadseval -out docs
//
// It drives testbed.sh (up with each variant and HikariCP timeout, on the
// ports of SOFTALLOC_TESTBED_PORT_OFFSET, every JVM on the JDK of -jdk) and
// the built softalloc's recommend and simulate --runner live, as a user
// would. The configurations:
//   - platform: Tomcat's thread pool at softalloc's recommendation for the
//     platform stack (-rec, docs/live-evaluation.md);
//   - virtual, no limit: a virtual thread per request, no limit (10,000
//     permits, more than any workload), HikariCP at its default 10 and at
//     the recommendation's size, connectionTimeout HikariCP's 30 s;
//   - virtual, limit: the recommendation's web threads, permits and pool,
//     with the fail-fast connectionTimeout of softalloc's snippet (2 s).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/softalloc/softalloc/testbed/jvmwarm"
	"github.com/softalloc/softalloc/testbed/runfiles"
)

func main() {
	out := flag.String("out", "docs", "directory for live-evaluation-vthreads.md and .json")
	bin := flag.String("bin", "bin/softalloc", "the softalloc binary (make build)")
	work := flag.String("work", ".softalloc/vthreadseval", "directory for the shifted deployment files and recommend's journal")
	jdk := flag.String("jdk", "/usr/lib/jvm/temurin-25-jdk-amd64", "the JDK every configuration runs on (SOFTALLOC_TESTBED_JAVA_HOME), platform threads too")
	fractions := flag.String("fractions", "0.5,0.8,1,1.5", "workloads, as fractions of the saturation workload recommend's find-critical reads")
	factors := flag.String("sla-factors", "2,5,10", "SLA thresholds, as multiples of the mean response time at low load")
	low := flag.Float64("low", 0.2, "the low load, as a fraction of the saturation workload")
	reps := flag.Int("reps", 2, "repetitions of each cell")
	rec := flag.String("rec", "", "web-threads-connections for the platform stack instead of running recommend on deployment-java.yaml (such as 100-19-19)")
	vrec := flag.String("vrec", "", "web-permits-connections for the virtual stack instead of running recommend (then -saturation is needed)")
	saturation := flag.Int("saturation", 0, "with -vrec: the saturation workload, users")
	webUnbounded := flag.Int("web", 400, "web threads of the no-limit configurations: more than the users, so that Apache bounds nothing")
	runtime := flag.Duration("runtime", 8*time.Second, "runtime of each trial (3 s ramp-up and 1 s ramp-down around it)")
	hot := flag.Duration("hot", 75*time.Second, "each JVM's first warm-up trial, with the app tier's CPU cap lifted (0: none)")
	hotUsers := flag.Int("hot-users", 150, "users of the warm-up trial with the cap lifted")
	hotCap := flag.String("hot-cap", "max", "the app tier's cap during that trial, cores (max: none)")
	warm := flag.Duration("warm", 20*time.Second, "the warm-up trials under the cap that follow")
	warmTrials := flag.Int("warm-trials", 10, "at most this many warm-up trials under the cap (they stop when the last three's app CPU per page are flat)")
	warmUsers := flag.Int("warm-users", 40, "users of the warm-up trials under the cap before recommend (those before the grid's configurations run at 0.8 of the saturation workload)")
	recommendFlags := flag.String("recommend-flags", "", "more flags for both recommends, such as \"--small-step 10\" (the peak scan's steps, which recommend warns of when finer than the trials' noise)")
	step := flag.Int("step", 10, "recommend's find-critical step, users (0: recommend derives it; on this stack under load it derived 1 user a trial)")
	note := flag.String("note", "", "a note for the report's end (what the figures cannot show)")
	render := flag.String("render", "", "only draw the Markdown again from this live-evaluation-vthreads.json, with -note (no trial)")
	flag.Parse()
	if *render != "" {
		if err := rerender(*render, *out, *note); err != nil {
			fmt.Fprintf(os.Stderr, "vthreadseval: %v\n", err)
			os.Exit(1)
		}
		return
	}
	o := options{out: *out, bin: *bin, work: *work, jdk: *jdk, rec: *rec, vrec: *vrec, saturation: *saturation, web: *webUnbounded,
		runtime: *runtime, warm: *warm, warmTrials: *warmTrials, warmUsers: *warmUsers, reps: *reps, low: *low, note: *note, step: *step,
		testbed: filepath.Join("testbed", "testbed.sh"), tbDir: runfiles.Dir(), hot: *hot, hotUsers: *hotUsers, hotCap: *hotCap,
		recommendFlags: strings.Fields(*recommendFlags)}
	var err error
	if o.fractions, err = floats("-fractions", *fractions); err == nil {
		o.factors, err = floats("-sla-factors", *factors)
	}
	if err == nil {
		err = o.run()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "vthreadseval: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	out, bin, work, jdk, rec, vrec, note               string
	saturation, web, warmTrials, warmUsers, reps, step int
	runtime, warm                                      time.Duration
	low                                                float64
	fractions, factors                                 []float64
	// testbed is testbed.sh, tbDir the testbed's directory
	// (SOFTALLOC_TESTBED_DIR), where up and caps keep the caps.
	testbed, tbDir string
	// The warm-up's trial with the app's cap lifted: its length, users and
	// the app's cap meanwhile.
	hot      time.Duration
	hotUsers int
	hotCap   string
	// recommendFlags are -recommend-flags, word by word.
	recommendFlags []string
}

// floats reads a comma-separated list of positive numbers.
func floats(name, s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0) {
			return nil, fmt.Errorf("%s %q: want positive numbers separated by commas", name, s)
		}
		out = append(out, v)
	}
	return out, nil
}

func split3(s string) ([3]int, error) {
	var v [3]int
	parts := strings.Split(s, "-")
	if len(parts) != 3 {
		return v, fmt.Errorf("%q: want WEB-APP-CONNECTIONS such as 100-19-19", s)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return v, fmt.Errorf("%q: want three positive integers", s)
		}
		v[i] = n
	}
	return v, nil
}

// rerender draws the Markdown again from the JSON, with a note.
func rerender(path, out, note string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if note != "" {
		rep.Note = note
	}
	return rep.write(out)
}

func (r report) write(out string) error {
	r.Verdicts = r.target()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "live-evaluation-vthreads.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "live-evaluation-vthreads.md"), []byte(r.markdown()), 0o644)
}

// up starts the Java stack's variant on a new JVM on the JDK of -jdk.
func (o options) up(threads, connTimeout string) error {
	cmd := exec.Command(o.testbed, "up")
	cmd.Env = append(os.Environ(), "STACK=java", "SOFTALLOC_TESTBED_JAVA_THREADS="+threads, "SOFTALLOC_TESTBED_JAVA_CONN_TIMEOUT="+connTimeout,
		"SOFTALLOC_TESTBED_JAVA_HOME="+o.jdk, "SOFTALLOC_TESTBED_JAVA_RESTART=1")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("testbed.sh up (%s threads, JDK %s): %w", threads, o.jdk, err)
	}
	return nil
}

// warmup is one JVM's warm-up, which nothing measured includes: a trial at
// a high load with the app tier's CPU cap lifted, so that the JIT compiles
// the hot code with a full core rather than over minutes at 0.1 cores, then
// trials under the cap until the app's CPU per page is flat.
type warmup struct {
	JVM string `json:"jvm"`
	jvmwarm.Record
}

// warmUp warms the JVM that is up: -hot at -hot-users with the app tier's
// cap at -hot-cap, the testbed's caps put back whatever that trial did,
// then trials of -warm at users under the cap until flat, at most
// -warm-trials (Settled says which ended it).
func (o options) warmUp(label string, c config, users int) (w warmup, err error) {
	start := time.Now()
	w = warmup{JVM: label, Record: jvmwarm.Record{Users: users, Trial: o.warm.String()}}
	defer func() { w.Seconds = time.Since(start).Seconds() }()
	if o.hot > 0 {
		hot := c
		if a, ok := jvmwarm.HotAlloc[c.Threads]; ok {
			hot.Alloc = a
		}
		var r row
		w.Caps, err = jvmwarm.WithAppCapLifted(o.testbed, o.tbDir, o.hotCap, func() (err error) {
			r, err = simulate(o.bin, hot, o.hotUsers, "1", o.hot)
			return err
		})
		if err != nil {
			return w, err
		}
		w.HotCap, w.HotUsers, w.HotSeconds, w.HotThroughput = o.hotCap, o.hotUsers, o.hot.Seconds(), r.Throughput
	} else {
		caps, err := jvmwarm.CapsInForce(o.tbDir)
		if err != nil {
			return w, err
		}
		w.Caps = strings.Join(caps, " ")
	}
	if o.warm > 0 {
		err = w.UntilFlat(o.warmTrials, func() (float64, error) {
			r, err := simulate(o.bin, c, users, "1", o.warm)
			return cpuPerPage(r), err
		})
	}
	return w, err
}

// step is one configuration's repetition: its workloads in the order run.
type step struct {
	Config, Rep int
	Users       []int
}

// jvm names what a configuration's JVM is started with: the threads
// variant and HikariCP's connectionTimeout (a flag of the JVM, not set at
// run time like the pools).
func (c config) jvm() string { return c.Threads + " threads, connectionTimeout " + c.ConnTO }

// runOrder gives the grid's order: each repetition the configurations and
// workloads one way, the next the other way, the first starting from the
// end whose JVM is up (running, config.jvm), so that a JVM is started and
// warmed only where the next configuration needs another.
func runOrder(configs []config, users []int, reps int, running string) []step {
	forward := len(configs) == 0 || configs[0].jvm() == running || configs[len(configs)-1].jvm() != running
	up, down := slices.Clone(users), slices.Clone(users)
	slices.Reverse(down)
	var out []step
	for r := 1; r <= reps; r++ {
		if forward {
			for i := range configs {
				out = append(out, step{i, r, up})
			}
		} else {
			for i := len(configs) - 1; i >= 0; i-- {
				out = append(out, step{i, r, down})
			}
		}
		forward = !forward
	}
	return out
}

func (o options) run() error {
	repo, err := os.Getwd()
	if err != nil {
		return err
	}
	if o.bin, err = filepath.Abs(o.bin); err != nil {
		return err
	}
	if _, err := os.Stat(o.bin); err != nil {
		return fmt.Errorf("%s: %w (make build first)", o.bin, err)
	}
	jdk, err := exec.Command(filepath.Join(o.jdk, "bin", "java"), "-version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("-jdk %s: %w: %s", o.jdk, err, jdk)
	}
	if o.reps < 1 {
		return fmt.Errorf("-reps %d: want 1 or more", o.reps)
	}
	if o.warmTrials < jvmwarm.Window {
		return fmt.Errorf("-warm-trials %d: want %d or more (the warm-up stops on the last %d trials)", o.warmTrials, jvmwarm.Window, jvmwarm.Window)
	}
	offset := 0
	if s := os.Getenv("SOFTALLOC_TESTBED_PORT_OFFSET"); s != "" {
		if offset, err = strconv.Atoi(s); err != nil {
			return fmt.Errorf("SOFTALLOC_TESTBED_PORT_OFFSET=%q: want a number", s)
		}
	}
	if err := os.MkdirAll(o.work, 0o755); err != nil {
		return err
	}
	platformFile, err := shifted(repo, o.work, "deployment-java.yaml", offset)
	if err != nil {
		return err
	}
	virtualFile, err := shifted(repo, o.work, "deployment-java-vthreads.yaml", offset)
	if err != nil {
		return err
	}
	start := time.Now()
	rep := report{Args: os.Args[1:], UptimeBefore: uptime(), JDK: strings.SplitN(strings.TrimSpace(string(jdk)), "\n", 2)[0], Runtime: o.runtime.String(),
		Warm: fmt.Sprintf("a trial of %s at %d users on generous pools (%s, or its platform twin) with the app's cap at %s (then the testbed's caps again), then trials of %s under the cap until the last %d were flat (each within %.0f%% of their mean, no fall beyond that from the first to the last), at most %d",
			o.hot, o.hotUsers, jvmwarm.HotAlloc["virtual"], o.hotCap, o.warm, jvmwarm.Window, 100*jvmwarm.Tolerance, o.warmTrials),
		WarmUsersRecommend: o.warmUsers, Reps: o.reps, SLAFactors: o.factors, Fractions: o.fractions, Note: o.note}
	running := ""
	// upAndWarm starts a new JVM for c and warms it.
	upAndWarm := func(label string, c config, users int) error {
		fmt.Fprintf(os.Stderr, "vthreadseval: %s: a new JVM (%s), warm-up\n", label, c.jvm())
		if err := o.up(c.Threads, c.ConnTO); err != nil {
			return err
		}
		running = c.jvm()
		w, err := o.warmUp(label, c, users)
		rep.Warmups = append(rep.Warmups, w)
		return err
	}

	// softalloc's recommendation for the platform deployment, on a warm JVM,
	// unless -rec gives it.
	if o.rec != "" {
		p, err := split3(o.rec)
		if err != nil {
			return fmt.Errorf("-rec %w", err)
		}
		rep.PlatformRec = recommendation{Web: p[0], App: p[1], Unit: "threads", Connections: p[2], Given: true}
	} else {
		probe := config{Name: "recommend", Role: rolePlatform, Threads: "platform", ConnTO: "30s", Deployment: platformFile, Alloc: "web.threads=100,app.threads=20,app.connections=10"}
		if err := upAndWarm("platform threads, before recommend", probe, o.warmUsers); err != nil {
			return err
		}
		if rep.PlatformRec, rep.PlatformRecommendArgs, err = o.recommend(platformFile, "platform", "threads"); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "vthreadseval: platform recommendation %+v\n", rep.PlatformRec)

	// And for the virtual-thread deployment, with the limit of the
	// deployment file.
	probe := config{Name: "recommend", Role: roleLimit, Threads: "virtual", ConnTO: "2s", Deployment: virtualFile, Alloc: "web.threads=100,app.permits=20,app.connections=10"}
	if err := upAndWarm("virtual threads, before recommend", probe, o.warmUsers); err != nil {
		return err
	}
	if o.vrec != "" {
		v, err := split3(o.vrec)
		if err != nil {
			return fmt.Errorf("-vrec %w", err)
		}
		if o.saturation < 1 {
			return fmt.Errorf("-vrec needs -saturation, the saturation workload in users (got %d)", o.saturation)
		}
		rep.Rec = recommendation{Web: v[0], App: v[1], Unit: "permits", Connections: v[2], SaturationWorkload: o.saturation, Given: true}
	} else if rep.Rec, rep.RecommendArgs, err = o.recommend(virtualFile, "virtual", "permits"); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "vthreadseval: virtual recommendation %+v\n", rep.Rec)
	limitAlloc := fmt.Sprintf("web.threads=%d,app.permits=%d,app.connections=%d", rep.Rec.Web, rep.Rec.App, rep.Rec.Connections)

	// The SLA thresholds from the response time at low load, on the
	// recommendation's allocation.
	rep.LowUsers = max(1, int(o.low*float64(rep.Rec.SaturationWorkload)+0.5))
	probe.Alloc = limitAlloc
	for i := 0; i < o.reps; i++ {
		r, err := simulate(o.bin, probe, rep.LowUsers, "1", o.runtime)
		if err != nil {
			return err
		}
		rep.LowRT = append(rep.LowRT, r.ResponseTime)
	}
	if rep.SLAs, err = slasFromLowLoad(mean(rep.LowRT), o.factors); err != nil {
		return err
	}
	rep.Users = workloads(rep.Rec.SaturationWorkload, o.fractions)
	rep.WarmUsers = max(1, int(0.8*float64(rep.Rec.SaturationWorkload)+0.5))
	fmt.Fprintf(os.Stderr, "vthreadseval: SLAs %v s, workloads %v users\n", rep.SLAs, rep.Users)
	slas := strings.Join(rep.SLAs, ",")

	p := rep.PlatformRec
	rep.Configs = []config{
		{"platform threads, softalloc's recommendation", rolePlatform, "platform", "30s", platformFile, fmt.Sprintf("web.threads=%d,app.threads=%d,app.connections=%d", p.Web, p.App, p.Connections)},
		{"virtual threads, no limit, HikariCP 10", roleNoLimit, "virtual", "30s", virtualFile, fmt.Sprintf("web.threads=%d,app.permits=10000,app.connections=10", o.web)},
		{fmt.Sprintf("virtual threads, no limit, HikariCP %d (softalloc's size)", rep.Rec.Connections), roleNoLimit, "virtual", "30s", virtualFile,
			fmt.Sprintf("web.threads=%d,app.permits=10000,app.connections=%d", o.web, rep.Rec.Connections)},
		{"virtual threads, softalloc's limit and pool", roleLimit, "virtual", "2s", virtualFile, limitAlloc},
	}
	for _, st := range runOrder(rep.Configs, rep.Users, o.reps, running) {
		c := rep.Configs[st.Config]
		fmt.Fprintf(os.Stderr, "vthreadseval: %s (%s), repetition %d\n", c.Name, c.Alloc, st.Rep)
		if c.jvm() != running {
			if err := upAndWarm(fmt.Sprintf("%s, repetition %d", c.Name, st.Rep), c, rep.WarmUsers); err != nil {
				return err
			}
		}
		for _, u := range st.Users {
			r, err := simulate(o.bin, c, u, slas, o.runtime)
			if err != nil {
				// Once more: on a shared machine a scrape can miss.
				fmt.Fprintf(os.Stderr, "vthreadseval: %v; once more\n", err)
				if r, err = simulate(o.bin, c, u, slas, o.runtime); err != nil {
					return err
				}
			}
			r.Config, r.Rep = c.Name, st.Rep
			rep.Rows = append(rep.Rows, r)
			// What ran so far, should a later trial fail.
			if b, err := json.MarshalIndent(rep, "", "  "); err == nil {
				_ = os.WriteFile(filepath.Join(o.work, "partial.json"), b, 0o644)
			}
		}
	}
	rep.UptimeAfter = uptime()
	rep.Generated = time.Now().UTC().Format(time.RFC3339)
	rep.Minutes = time.Since(start).Minutes()
	return rep.write(o.out)
}

// recommend runs softalloc recommend on the deployment (a new journal, so
// that an earlier run's trials do not answer) and reads its answer.
func (o options) recommend(deployment, name, unit string) (recommendation, string, error) {
	journal := filepath.Join(o.work, "recommend-"+name+".jsonl")
	_ = os.Remove(journal)
	t0 := time.Now()
	args, shown := recommendArgs(deployment, journal, o.step, o.recommendFlags...)
	fmt.Fprintf(os.Stderr, "vthreadseval: softalloc %s\n", strings.Join(args, " "))
	cmd := exec.Command(o.bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return recommendation{}, shown, fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), err, lastLine(stderr.String()))
	}
	r, err := parseRecommend(stdout.Bytes(), unit)
	if err != nil {
		return r, shown, err
	}
	r.Seconds = time.Since(t0).Seconds()
	return r, shown, nil
}

// recommendArgs are recommend's arguments, and those the report shows after
// the deployment file's name.
func recommendArgs(deployment, journal string, step int, extra ...string) (args []string, shown string) {
	args = []string{"recommend", "--runner", "live", "-f", deployment, "--journal", journal, "--output", "json", "--quiet"}
	if step > 0 {
		args = append(args, "--step", strconv.Itoa(step))
	}
	args = append(args, extra...)
	return args, strings.Join(args[5:], " ")
}

// shifted writes the deployment file with its ports moved by the testbed's
// offset, its workload and hook by absolute path.
func shifted(repo, work, name string, offset int) (string, error) {
	b, err := os.ReadFile(filepath.Join(repo, "testbed", name))
	if err != nil {
		return "", err
	}
	s := regexp.MustCompile(`127\.0\.0\.1:(18[0-9]{3})`).ReplaceAllStringFunc(string(b), func(m string) string {
		n, _ := strconv.Atoi(m[len("127.0.0.1:"):])
		return fmt.Sprintf("127.0.0.1:%d", n+offset)
	})
	s = strings.Replace(s, "workload: workload.yaml", "workload: "+filepath.Join(repo, "testbed", "workload.yaml"), 1)
	s = strings.Replace(s, "./testbed.sh", filepath.Join(repo, "testbed", "testbed.sh"), 1)
	path := filepath.Join(work, name)
	return path, os.WriteFile(path, []byte(s), 0o644)
}

func simulate(bin string, c config, users int, slas string, runtime time.Duration) (row, error) {
	cmd := exec.Command(bin, "simulate", "--runner", "live", "-f", c.Deployment, "--no-journal", "--alloc", c.Alloc,
		"--users", strconv.Itoa(users), "--sla", slas, "--ramp-up", "3s", "--runtime", runtime.String(), "--ramp-down", "1s", "-o", "json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return row{}, fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), err, lastLine(stderr.String()))
	}
	var rows []row
	if err := json.Unmarshal(stdout.Bytes(), &rows); err != nil || len(rows) != 1 {
		return row{}, fmt.Errorf("simulate's output: %v: %.200s", err, stdout.String())
	}
	fmt.Fprintf(os.Stderr, "vthreadseval:   %d users: %.1f pages/s, %d errors\n", users, rows[0].Throughput, rows[0].Errors)
	return rows[0], nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func uptime() string {
	b, err := exec.Command("uptime").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}
