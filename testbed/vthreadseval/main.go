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
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
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
	rec := flag.String("rec", "100-19-19", "softalloc's recommendation for the platform stack, web-threads-connections (docs/live-evaluation.md)")
	vrec := flag.String("vrec", "", "web-permits-connections for the virtual stack instead of running recommend (then -saturation is needed)")
	saturation := flag.Int("saturation", 0, "with -vrec: the saturation workload, users")
	webUnbounded := flag.Int("web", 400, "web threads of the no-limit configurations: more than the users, so that Apache bounds nothing")
	runtime := flag.Duration("runtime", 8*time.Second, "runtime of each trial (3 s ramp-up and 1 s ramp-down around it)")
	warm := flag.Duration("warm", 30*time.Second, "warm-up trial before each configuration's trials")
	warmTrials := flag.Int("warm-trials", 5, "at most this many warm-up trials of -warm each before recommend and before each configuration's trials (they stop when the app's CPU per page changes by less than 5%)")
	warmUsers := flag.Int("warm-users", 40, "users of the warm-up trials before recommend (those before each configuration run at 0.8 of the saturation workload)")
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
		runtime: *runtime, warm: *warm, warmTrials: *warmTrials, warmUsers: *warmUsers, reps: *reps, low: *low, note: *note, step: *step}
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
	cmd := exec.Command(filepath.Join("testbed", "testbed.sh"), "up")
	cmd.Env = append(os.Environ(), "STACK=java", "SOFTALLOC_TESTBED_JAVA_THREADS="+threads, "SOFTALLOC_TESTBED_JAVA_CONN_TIMEOUT="+connTimeout,
		"SOFTALLOC_TESTBED_JAVA_HOME="+o.jdk, "SOFTALLOC_TESTBED_JAVA_RESTART=1")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("testbed.sh up (%s threads, JDK %s): %w", threads, o.jdk, err)
	}
	return nil
}

// warmUp runs warm-up trials until the app's CPU per page changes by less
// than 5% from one to the next (at most -warm-trials): a JVM under its
// 0.1-core cap compiles its hot code for minutes. It gives each trial's CPU
// per page, ms.
func (o options) warmUp(c config, users int) ([]float64, error) {
	var perPage []float64
	for i := 0; o.warm > 0 && i < o.warmTrials; i++ {
		r, err := simulate(o.bin, c, users, "1", o.warm)
		if err != nil {
			return perPage, err
		}
		perPage = append(perPage, cpuPerPage(r))
		if n := len(perPage); n >= 2 && perPage[n-1] > 0 && math.Abs(perPage[n-1]/perPage[n-2]-1) < 0.05 {
			break
		}
	}
	return perPage, nil
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
	p, err := split3(o.rec)
	if err != nil {
		return fmt.Errorf("-rec %w", err)
	}
	if o.reps < 1 {
		return fmt.Errorf("-reps %d: want 1 or more", o.reps)
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
	rep := report{UptimeBefore: uptime(), JDK: strings.SplitN(strings.TrimSpace(string(jdk)), "\n", 2)[0], Runtime: o.runtime.String(),
		Warm: fmt.Sprintf("%s each, until the app's CPU per page changed by less than 5%% from one to the next, at most %d", o.warm, o.warmTrials), WarmUsersRecommend: o.warmUsers, Reps: o.reps, PlatformRec: o.rec,
		SLAFactors: o.factors, Fractions: o.fractions, Note: o.note}

	// softalloc's recommendation for the virtual-thread deployment, on a
	// warmed JVM with the limit of the deployment file.
	fmt.Fprintf(os.Stderr, "vthreadseval: softalloc's recommendation for %s\n", virtualFile)
	if err := o.up("virtual", "2s"); err != nil {
		return err
	}
	probe := config{Name: "recommend", Role: roleLimit, Threads: "virtual", Deployment: virtualFile, Alloc: "web.threads=100,app.permits=20,app.connections=10"}
	if rep.WarmRecommend, err = o.warmUp(probe, o.warmUsers); err != nil {
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
		rep.Rec = recommendation{Web: v[0], Permits: v[1], Connections: v[2], SaturationWorkload: o.saturation, Given: true}
	} else {
		journal := filepath.Join(o.work, "recommend.jsonl")
		_ = os.Remove(journal) // a journal of an earlier run would answer from its trials
		t0 := time.Now()
		args, shown := recommendArgs(virtualFile, journal, o.step)
		rep.RecommendArgs = shown
		cmd := exec.Command(o.bin, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), err, lastLine(stderr.String()))
		}
		if rep.Rec, err = parseRecommend(stdout.Bytes()); err != nil {
			return err
		}
		rep.Rec.Seconds = time.Since(t0).Seconds()
	}
	fmt.Fprintf(os.Stderr, "vthreadseval: recommendation %+v\n", rep.Rec)
	limitAlloc := fmt.Sprintf("web.threads=%d,app.permits=%d,app.connections=%d", rep.Rec.Web, rep.Rec.Permits, rep.Rec.Connections)

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

	rep.Configs = []config{
		{"platform threads, softalloc's recommendation", rolePlatform, "platform", "30s", platformFile, fmt.Sprintf("%d-%d-%d", p[0], p[1], p[2])},
		{"virtual threads, no limit, HikariCP 10", roleNoLimit, "virtual", "30s", virtualFile, fmt.Sprintf("web.threads=%d,app.permits=10000,app.connections=10", o.web)},
		{fmt.Sprintf("virtual threads, no limit, HikariCP %d (softalloc's size)", rep.Rec.Connections), roleNoLimit, "virtual", "30s", virtualFile,
			fmt.Sprintf("web.threads=%d,app.permits=10000,app.connections=%d", o.web, rep.Rec.Connections)},
		{"virtual threads, softalloc's limit and pool", roleLimit, "virtual", "2s", virtualFile, limitAlloc},
	}
	for _, c := range rep.Configs {
		fmt.Fprintf(os.Stderr, "vthreadseval: %s (%s)\n", c.Name, c.Alloc)
		// A new JVM for each configuration, so that each starts as cold as the others.
		if err := o.up(c.Threads, c.ConnTO); err != nil {
			return err
		}
		w, err := o.warmUp(c, rep.WarmUsers)
		if err != nil {
			return err
		}
		rep.WarmCPUPerPage = append(rep.WarmCPUPerPage, w)
		for i := 0; i < o.reps; i++ {
			for _, u := range rep.Users {
				r, err := simulate(o.bin, c, u, slas, o.runtime)
				if err != nil {
					// Once more: on a shared machine a scrape can miss.
					fmt.Fprintf(os.Stderr, "vthreadseval: %v; once more\n", err)
					if r, err = simulate(o.bin, c, u, slas, o.runtime); err != nil {
						return err
					}
				}
				r.Config, r.Rep = c.Name, i+1
				rep.Rows = append(rep.Rows, r)
				// What ran so far, should a later trial fail.
				if b, err := json.MarshalIndent(rep, "", "  "); err == nil {
					_ = os.WriteFile(filepath.Join(o.work, "partial.json"), b, 0o644)
				}
			}
		}
	}
	rep.UptimeAfter = uptime()
	rep.Generated = time.Now().UTC().Format(time.RFC3339)
	rep.Minutes = time.Since(start).Minutes()
	return rep.write(o.out)
}

// recommendArgs are recommend's arguments, and those the report shows after
// the deployment file's name.
func recommendArgs(deployment, journal string, step int) (args []string, shown string) {
	args = []string{"recommend", "--runner", "live", "-f", deployment, "--journal", journal, "--output", "json", "--quiet"}
	if step > 0 {
		args = append(args, "--step", strconv.Itoa(step))
	}
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
