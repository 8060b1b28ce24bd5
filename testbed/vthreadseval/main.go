// Command vthreadseval measures the testbed's Java stack on platform and on
// virtual threads (issue 38) and writes docs/live-evaluation-vthreads.md:
// at workloads around saturation, each configuration's throughput, goodput
// at three SLA thresholds, errors, mean response time, the app's CPU and GC
// share, and the jobs inside its pools.
//
//	make build && SOFTALLOC_TESTBED_PORT_OFFSET=200 SOFTALLOC_TESTBED_CGROUP=softalloc-me \
//	  SOFTALLOC_TESTBED_DIR=/tmp/tb-me flock -o /tmp/measure.lock go run ./testbed/vthreadseval -out docs
//
// It drives testbed.sh (up with each variant and HikariCP timeout, on the
// ports of SOFTALLOC_TESTBED_PORT_OFFSET) and the built softalloc's
// simulate --runner live with each allocation, as a user would. The
// configurations:
//   - platform: Tomcat's thread pool on OpenJDK 17 at softalloc's
//     recommendation for it (docs/live-evaluation.md);
//   - virtual, no limit: Temurin 25, a virtual thread per request, no
//     limit (10,000 permits, more than any workload), HikariCP at its default 10 and at the recommendation's size,
//     connectionTimeout HikariCP's 30 s;
//   - virtual, limit: the recommendation's permits and pool, with the
//     fail-fast connectionTimeout of softalloc's snippet (2 s).
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
	"sort"
	"strconv"
	"strings"
	"time"
)

type config struct {
	Name       string `json:"name"`
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

// row is one trial: simulate's JSON.
type row struct {
	Config       string             `json:"config"`
	Users        int                `json:"users"`
	Throughput   float64            `json:"throughput"`
	Goodput      map[string]float64 `json:"goodput"`
	ResponseTime float64            `json:"responseTime"`
	Errors       int64              `json:"errors"`
	ErrorShare   float64            `json:"errorShare"`
	Servers      []server           `json:"servers"`
}

func main() {
	out := flag.String("out", "docs", "directory for live-evaluation-vthreads.md and .json")
	bin := flag.String("bin", "bin/softalloc", "the softalloc binary (make build)")
	work := flag.String("work", ".softalloc/vthreadseval", "directory for the shifted deployment files")
	usersFlag := flag.String("users", "120,160,200", "workloads, users")
	slas := flag.String("sla", "0.1,0.25,0.5", "SLA thresholds of goodput, seconds (as docs/live-evaluation.md's)")
	rec := flag.String("rec", "100-19-19", "softalloc's recommendation for the platform stack, web-threads-connections (docs/live-evaluation.md)")
	vrec := flag.String("vrec", "", "softalloc's recommendation for the virtual stack, web-permits-connections (default: -rec)")
	webUnbounded := flag.Int("web", 400, "web threads of the no-limit configurations: more than the users, so that Apache bounds nothing")
	runtime := flag.Duration("runtime", 6*time.Second, "runtime of each trial (3 s ramp-up and 1 s ramp-down around it)")
	warm := flag.Duration("warm", 30*time.Second, "warm-up trial at the first workload before each configuration's trials")
	warmTrials := flag.Int("warm-trials", 1, "warm-up trials of -warm each before each configuration's trials")
	note := flag.String("note", "", "a note for the report's end (what the figures cannot show)")
	render := flag.String("render", "", "only draw the Markdown again from this live-evaluation-vthreads.json, with -note (no trial)")
	flag.Parse()
	if *vrec == "" {
		*vrec = *rec
	}
	if *render != "" {
		if err := rerender(*render, *out, *note); err != nil {
			fmt.Fprintf(os.Stderr, "vthreadseval: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*out, *bin, *work, *usersFlag, *slas, *rec, *vrec, *webUnbounded, *runtime, *warm, *warmTrials, *note); err != nil {
		fmt.Fprintf(os.Stderr, "vthreadseval: %v\n", err)
		os.Exit(1)
	}
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
	b, _ = json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "live-evaluation-vthreads.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "live-evaluation-vthreads.md"), []byte(rep.markdown()), 0o644)
}

func run(out, bin, work, usersFlag, slas, rec, vrec string, web int, runtime, warm time.Duration, warmTrials int, note string) error {
	repo, err := os.Getwd()
	if err != nil {
		return err
	}
	bin, _ = filepath.Abs(bin)
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%s: %w (make build first)", bin, err)
	}
	var users []int
	for _, u := range strings.Split(usersFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(u))
		if err != nil || n < 1 {
			return fmt.Errorf("-users %q: want positive integers separated by commas", usersFlag)
		}
		users = append(users, n)
	}
	p, err := split3(rec)
	if err != nil {
		return fmt.Errorf("-rec %w", err)
	}
	v, err := split3(vrec)
	if err != nil {
		return fmt.Errorf("-vrec %w", err)
	}
	offset := 0
	if s := os.Getenv("SOFTALLOC_TESTBED_PORT_OFFSET"); s != "" {
		if offset, err = strconv.Atoi(s); err != nil {
			return fmt.Errorf("SOFTALLOC_TESTBED_PORT_OFFSET=%q: want a number", s)
		}
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	platformFile, err := shifted(repo, work, "deployment-java.yaml", offset)
	if err != nil {
		return err
	}
	virtualFile, err := shifted(repo, work, "deployment-java-vthreads.yaml", offset)
	if err != nil {
		return err
	}
	configs := []config{
		{"platform threads, softalloc's recommendation", "platform", "30s", platformFile, fmt.Sprintf("%d-%d-%d", p[0], p[1], p[2])},
		{"virtual threads, no limit, HikariCP 10", "virtual", "30s", virtualFile, fmt.Sprintf("web.threads=%d,app.permits=10000,app.connections=10", web)},
		{fmt.Sprintf("virtual threads, no limit, HikariCP %d (softalloc's size)", v[2]), "virtual", "30s", virtualFile,
			fmt.Sprintf("web.threads=%d,app.permits=10000,app.connections=%d", web, v[2])},
		{"virtual threads, softalloc's limit and pool", "virtual", "2s", virtualFile,
			fmt.Sprintf("web.threads=%d,app.permits=%d,app.connections=%d", v[0], v[1], v[2])},
	}
	start := time.Now()
	before := uptime()
	var rows []row
	for _, c := range configs {
		fmt.Fprintf(os.Stderr, "vthreadseval: %s (%s)\n", c.Name, c.Alloc)
		up := exec.Command(filepath.Join(repo, "testbed", "testbed.sh"), "up")
		// A new JVM for each configuration, so that each starts as cold as the others.
		up.Env = append(os.Environ(), "STACK=java", "SOFTALLOC_TESTBED_JAVA_THREADS="+c.Threads, "SOFTALLOC_TESTBED_JAVA_CONN_TIMEOUT="+c.ConnTO,
			"SOFTALLOC_TESTBED_JAVA_RESTART=1")
		up.Stdout, up.Stderr = os.Stderr, os.Stderr
		if err := up.Run(); err != nil {
			return fmt.Errorf("testbed.sh up (%s threads): %w", c.Threads, err)
		}
		// A warm-up trial: a JVM under its 0.1-core cap compiles its hot code for minutes.
		for i := 0; warm > 0 && i < warmTrials; i++ {
			if _, err := simulate(bin, c, users[0], slas, warm); err != nil {
				return err
			}
		}
		for _, u := range users {
			r, err := simulate(bin, c, u, slas, runtime)
			if err != nil {
				return err
			}
			r.Config = c.Name
			rows = append(rows, r)
		}
	}
	after := uptime()
	rep := report{Generated: time.Now().UTC().Format(time.RFC3339), Minutes: time.Since(start).Minutes(), UptimeBefore: before,
		UptimeAfter: after, Runtime: runtime.String(), Warm: fmt.Sprintf("%d x %s", warmTrials, warm), Configs: configs, Users: users, Rows: rows,
		SLAs: strings.Split(slas, ","), Note: note}
	b, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "live-evaluation-vthreads.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "live-evaluation-vthreads.md"), []byte(rep.markdown()), 0o644)
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

// report is docs/live-evaluation-vthreads.json; the Markdown is drawn from it.
type report struct {
	Generated    string   `json:"generated"`
	Minutes      float64  `json:"minutes"`
	UptimeBefore string   `json:"uptimeBefore"`
	UptimeAfter  string   `json:"uptimeAfter"`
	Runtime      string   `json:"trialRuntime"`
	Warm         string   `json:"warmUp"`
	SLAs         []string `json:"slas"`
	Configs      []config `json:"configs"`
	Users        []int    `json:"users"`
	Rows         []row    `json:"rows"`
	Note         string   `json:"note,omitempty"`
}

func (r report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Virtual threads: where the concurrency limit goes (issue 38)\n\n")
	fmt.Fprintf(&b, "Generated by `go run ./testbed/vthreadseval -out docs` (under `flock -o /tmp/measure.lock`: without -o the JVMs it starts inherit the lock) on %s, in %.0f minutes, on the\n", r.Generated, r.Minutes)
	fmt.Fprintf(&b, "testbed's Java stack (Apache -> embedded Tomcat 11 with HikariCP 7 -> MariaDB, caps web 0.5, app 0.1, db 0.6 cores) on one 2-core\n")
	fmt.Fprintf(&b, "machine shared with other work. Trials: 3 s ramp-up, %s runtime, 1 s ramp-down, the RUBBoS browse-only mix with 0.5 s think\n", r.Runtime)
	fmt.Fprintf(&b, "time, one trial per cell (no repetition: read differences under ~10%% as noise); warm-up trials (%s) at %d users\n", r.Warm, r.Users[0])
	fmt.Fprintf(&b, "before each configuration. Load before: `%s`; after: `%s`.\n\n", r.UptimeBefore, r.UptimeAfter)
	fmt.Fprintf(&b, "| configuration | allocation | JVM | HikariCP connectionTimeout |\n|---|---|---|---|\n")
	for _, c := range r.Configs {
		jvm := "OpenJDK 17, Tomcat's thread pool"
		if c.Threads == "virtual" {
			jvm = "Temurin 25, a virtual thread per request"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", c.Name, c.Alloc, jvm, c.ConnTO)
	}
	fmt.Fprintf(&b, "\n## Each trial\n\n| configuration | users | pages/s |")
	for _, s := range r.SLAs {
		fmt.Fprintf(&b, " goodput %s s |", s)
	}
	fmt.Fprintf(&b, " errors (share) | mean response time | app CPU | app GC share | jobs in the app (threads or permits) | busy connections |\n|---|---|---|")
	for range r.SLAs {
		b.WriteString("---|")
	}
	b.WriteString("---|---|---|---|---|---|\n")
	for _, x := range r.Rows {
		fmt.Fprintf(&b, "| %s | %d | %.1f |", x.Config, x.Users, x.Throughput)
		for _, s := range r.SLAs {
			fmt.Fprintf(&b, " %.1f |", x.Goodput[s])
		}
		app := x.app()
		fmt.Fprintf(&b, " %d (%.1f%%) | %.0f ms | %.2f | %.2f%% | %s | %s |\n", x.Errors, 100*x.ErrorShare, 1000*x.ResponseTime, app.CPU, 100*app.GC,
			busy(app, "threads"), busy(app, "connections"))
	}
	fmt.Fprintf(&b, "\n## Best goodput over the workloads, and its share of the grid's best\n\n| configuration |")
	for _, s := range r.SLAs {
		fmt.Fprintf(&b, " %s s |", s)
	}
	b.WriteString("\n|---|")
	for range r.SLAs {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	best := map[string]float64{}
	byConfig := map[string]map[string]float64{}
	for _, x := range r.Rows {
		if byConfig[x.Config] == nil {
			byConfig[x.Config] = map[string]float64{}
		}
		for _, s := range r.SLAs {
			byConfig[x.Config][s] = max(byConfig[x.Config][s], x.Goodput[s])
			best[s] = max(best[s], x.Goodput[s])
		}
	}
	for _, c := range r.Configs {
		fmt.Fprintf(&b, "| %s |", c.Name)
		for _, s := range r.SLAs {
			g := byConfig[c.Name][s]
			share := 0.0
			if best[s] > 0 {
				share = g / best[s]
			}
			fmt.Fprintf(&b, " %.1f (%.2f) |", g, share)
		}
		b.WriteString("\n")
	}
	b.WriteString(r.summary(byConfig))
	if r.Note != "" {
		fmt.Fprintf(&b, "\n## Note\n\n%s\n", r.Note)
	}
	return b.String()
}

// summary says, from the rows, what the limit changed: each configuration's
// errors and response time at the highest workload, and the limit's goodput
// against the unlimited configurations'.
func (r report) summary(byConfig map[string]map[string]float64) string {
	var b strings.Builder
	top := r.Users[len(r.Users)-1]
	fmt.Fprintf(&b, "\n## At the highest workload (%d users)\n\n", top)
	for _, c := range r.Configs {
		var errs int64
		for _, x := range r.Rows {
			if x.Config == c.Name {
				errs += x.Errors
			}
		}
		for _, x := range r.Rows {
			if x.Config == c.Name && x.Users == top {
				app := x.app()
				fmt.Fprintf(&b, "- %s: %.1f pages/s, mean response time %.0f ms, %d errors (%d over the grid), app CPU %.2f, GC %.2f%%, "+
					"jobs in the app %s, connections %s.\n", c.Name, x.Throughput, 1000*x.ResponseTime, x.Errors, errs, app.CPU, 100*app.GC,
					busy(app, "threads"), busy(app, "connections"))
			}
		}
	}
	if len(r.Configs) == 4 {
		limit := r.Configs[3].Name
		fmt.Fprintf(&b, "\nsoftalloc's limit and pool against virtual threads with no limit, best goodput per SLA threshold:")
		for _, s := range r.SLAs {
			fmt.Fprintf(&b, " %s s: %.1f against %.1f (HikariCP 10) and %.1f (softalloc's pool);", s, byConfig[limit][s],
				byConfig[r.Configs[1].Name][s], byConfig[r.Configs[2].Name][s])
		}
		b.WriteString("\n")
	}
	return b.String()
}

func (x row) app() server {
	for _, s := range x.Servers {
		if s.Name == "app-1" {
			return s
		}
	}
	return server{}
}

func busy(s server, name string) string {
	ps := append([]pool(nil), s.Pools...)
	sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
	for _, p := range ps {
		if p.Name == name {
			return fmt.Sprintf("%.1f of %d", p.Busy, p.Size)
		}
	}
	return "-"
}
