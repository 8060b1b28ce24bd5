package main

// The helpers of the tests that run the real Locust: its install, the
// testbed's workload, the local site the workers load, a run of a master
// and two local workers against it (localRun), and softalloc and
// softalloc-locust built beside a deployment and settings of their own
// (adapterRun), as softalloc's exec runner runs the adapter.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/runner/live"
	"github.com/softalloc/softalloc/internal/workload"
)

func writeFile(t *testing.T, path, text string) string {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

// locustPath installs the pinned Locust (install-locust.sh) and returns its
// executable. Outside CI a machine without Python or PyPI skips; in CI the
// tests must run.
func locustPath(t *testing.T) string {
	t.Helper()
	path, err := runInstall()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err.Error() + "; in CI the Locust tests must run")
		}
		t.Skip("SKIPPED: " + err.Error())
	}
	return path
}

func runInstall() (string, error) {
	out, err := osexec.Command("./install-locust.sh").Output()
	if err != nil {
		msg := fmt.Sprintf("cannot install Locust (examples/locust/install-locust.sh): %v", err)
		if ee, ok := err.(*osexec.ExitError); ok {
			msg += ": " + strings.TrimSpace(string(ee.Stderr))
		}
		return "", errors.New(msg)
	}
	return strings.TrimSpace(string(out)), nil
}

// site is a local HTTP server that answers every path after a short delay
// and counts the pages of the testbed's workload by interaction.
type site struct {
	*httptest.Server
	mu    sync.Mutex
	pages map[string]int
	// agents counts the requests by User-Agent.
	agents map[string]int
	// byAgent counts each User-Agent's (each user's) pages by interaction.
	byAgent map[string]map[string]int
}

func newSite(t *testing.T, w *workload.Workload, delay time.Duration) *site {
	t.Helper()
	// A page's path as a pattern: {rand:..} digits, {pick:a|b} a word.
	type pat struct {
		name string
		re   *regexp.Regexp
	}
	var pats []pat
	for _, it := range w.Interactions {
		q := regexp.QuoteMeta(it.Path)
		q = regexp.MustCompile(`\\\{rand:[^}]*\\\}`).ReplaceAllString(q, `[0-9]+`)
		q = regexp.MustCompile(`\\\{pick:[^}]*\\\}`).ReplaceAllString(q, `[a-z]+`)
		pats = append(pats, pat{it.Name, regexp.MustCompile("^" + q + "$")})
	}
	s := &site{pages: map[string]int{}, agents: map[string]int{}, byAgent: map[string]map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.agents[r.UserAgent()]++
		s.mu.Unlock()
		time.Sleep(delay)
		for _, p := range pats {
			if p.re.MatchString(r.URL.RequestURI()) {
				s.mu.Lock()
				s.pages[p.name]++
				if s.byAgent[r.UserAgent()] == nil {
					s.byAgent[r.UserAgent()] = map[string]int{}
				}
				s.byAgent[r.UserAgent()][p.name]++
				s.mu.Unlock()
				break
			}
		}
		fmt.Fprint(rw, "ok")
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *site) shares() map[string]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.pages {
		n += c
	}
	out := map[string]float64{}
	for k, c := range s.pages {
		out[k] = float64(c) / float64(n)
	}
	return out
}

// shareVariance is the variance of shares()'s estimate of name's share with
// the users as independent clusters: a user's pages follow each other in
// one walk from the start page, so they are not independent draws
// (a ratio estimator's linearisation, the sum over users of (c - p n)^2
// over N^2, with U/(U-1) for the share estimated from the same users).
func (s *site) shareVariance(name string, share float64) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ss, n float64
	for _, pages := range s.byAgent {
		var all float64
		for _, c := range pages {
			all += float64(c)
		}
		d := float64(pages[name]) - share*all
		ss, n = ss+d*d, n+all
	}
	u := float64(len(s.byAgent))
	if n == 0 || u < 2 {
		return math.Inf(1)
	}
	return ss / (n * n) * u / (u - 1)
}

// binaries are softalloc and softalloc-locust, built once per test
// process (a build links for about 5 s, and five tests use them) into a
// directory TestMain removes.
var binaries struct {
	once                    sync.Once
	dir, softalloc, adapter string
	err                     error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binaries.dir != "" {
		os.RemoveAll(binaries.dir)
	}
	os.Exit(code)
}

// testBinaries builds softalloc and softalloc-locust, the first time.
func testBinaries(t *testing.T) (softalloc, adapter string) {
	t.Helper()
	binaries.once.Do(func() {
		if binaries.dir, binaries.err = os.MkdirTemp("", "softalloc-locust-test-"); binaries.err != nil {
			return
		}
		binaries.softalloc, binaries.adapter = filepath.Join(binaries.dir, "softalloc"), filepath.Join(binaries.dir, "softalloc-locust")
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, b := range [][2]string{{binaries.softalloc, "../../cmd/softalloc"}, {binaries.adapter, "."}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if out, err := osexec.Command("go", "build", "-o", b[0], b[1]).CombinedOutput(); err != nil {
					errs[i] = fmt.Errorf("go build %s: %w: %s", b[1], err, out)
				}
			}()
		}
		wg.Wait()
		binaries.err = errors.Join(errs...)
	})
	require.NoError(t, binaries.err)
	return binaries.softalloc, binaries.adapter
}

func killWorker(t *testing.T, list, name string) int {
	t.Helper()
	pid, err := workerPID(list, name)
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	return pid
}

// workerPID reads a worker's pid from the master's list of the workers
// that said hello (window.json.workers).
func workerPID(list, name string) (int, error) {
	b, err := os.ReadFile(list)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var h struct {
			Worker string `json:"worker"`
			PID    int    `json:"pid"`
		}
		if err := json.Unmarshal([]byte(line), &h); err != nil {
			return 0, fmt.Errorf("%s: %w", list, err)
		}
		if h.Worker == name {
			return h.PID, nil
		}
	}
	return 0, fmt.Errorf("no %s in %s: %s", name, list, b)
}

// testbedWorkload is the testbed's workload file, as written and as parsed.
func testbedWorkload(t *testing.T) ([]byte, *workload.Workload) {
	t.Helper()
	wb, err := os.ReadFile(filepath.Join("..", "..", "testbed", "workload.yaml"))
	require.NoError(t, err)
	w, err := live.ParseWorkload(wb)
	require.NoError(t, err)
	return wb, w
}

// localRun is a Locust run's setting in a test: the pinned Locust, the
// testbed's workload, a site answering every path after delay, and the
// settings of a master and two local workers (connectTimeout 30 s), the
// run's files in dir/run.
type localRun struct {
	w    *workload.Workload
	site *site
	dir  string
	c    config
}

func newLocalRun(t *testing.T, delay time.Duration) localRun {
	t.Helper()
	locust := locustPath(t)
	_, w := testbedWorkload(t)
	r := localRun{w: w, site: newSite(t, w, delay), dir: t.TempDir()}
	var err error
	r.c, err = loadConfig(writeFile(t, filepath.Join(r.dir, "s.yaml"),
		fmt.Sprintf("deployment: none.yaml\nlocust: %s\nworkers: [local, local]\nconnectTimeout: 30s\n", locust)))
	require.NoError(t, err)
	return r
}

// plan is a trial of users against the site (a ramp's plan from it).
func (r localRun) plan(t *testing.T, users int, timing algorithms.Timing) plan {
	t.Helper()
	p, err := makePlan(r.w, r.site.URL, 0, 10*time.Second, users, 2, timing, r.c.ReplyTimeout.Duration())
	require.NoError(t, err)
	return p
}

func (r localRun) run() string { return filepath.Join(r.dir, "run") }

// logs logs Locust's own account of a run that failed: the master's and
// the workers' logs (spawns, reports, heartbeats).
func (r localRun) logs(t *testing.T) {
	t.Helper()
	for _, f := range []string{"master.log", "worker-1.log", "worker-2.log"} {
		b, _ := os.ReadFile(filepath.Join(r.run(), f))
		t.Logf("%s:\n%s", f, b)
	}
}

// adapterRun is softalloc and softalloc-locust built, the pinned Locust
// installed, and in dir the testbed's workload, deployment.yaml (the
// deployment given, whose runner section names workload.yaml) and
// locust.yaml (the adapter's settings: that deployment, that Locust,
// results in dir/results, and the settings given).
type adapterRun struct {
	softalloc, adapter, dir, deployment, settings string
}

func newAdapterRun(t *testing.T, deployment, settings string) adapterRun {
	t.Helper()
	locust := locustPath(t)
	var a adapterRun
	a.softalloc, a.adapter = testBinaries(t)
	a.dir = t.TempDir()
	wb, _ := testbedWorkload(t)
	writeFile(t, filepath.Join(a.dir, "workload.yaml"), string(wb))
	a.deployment = writeFile(t, filepath.Join(a.dir, "deployment.yaml"), deployment)
	a.settings = writeFile(t, filepath.Join(a.dir, "locust.yaml"),
		fmt.Sprintf("deployment: deployment.yaml\nlocust: %s\nresults: results\n%s", locust, settings))
	return a
}
