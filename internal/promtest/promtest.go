// Package promtest starts Debian's Prometheus for tests: on loopback, on a
// port of freeport's, in the test's temporary directory, scraping the
// targets the test serves, and stopped by the test's cleanup.
package promtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/softalloc/softalloc/internal/freeport"
	"github.com/softalloc/softalloc/internal/testserver"
)

// Binary finds Debian's prometheus: the test is skipped when it is absent,
// and fails under CI=true (.ci/run installs it through scripts/test-deps.sh).
func Binary(t testing.TB, what string) string {
	t.Helper()
	p, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("prometheus is not installed in CI: .ci/run installs Debian's prometheus package (scripts/test-deps.sh)")
		}
		t.Skipf("SKIPPED: prometheus is not installed (apt-get install prometheus, or scripts/test-deps.sh); %s did not run", what)
	}
	return p
}

// Scraping starts a Prometheus that scrapes each target (a base URL whose
// /metrics it reads) every interval, and returns its URL once every target
// has been scraped over the last history (at least twice): a rate() over a
// window longer than the samples reads low, extrapolated to the window's
// start by half a scrape interval at most.
// Each target's job is "t0", "t1", ... in order, and its instance the
// target's host:port.
func Scraping(t testing.TB, what string, interval, history time.Duration, targets ...string) string {
	t.Helper()
	jobs := make([]Job, len(targets))
	for i, target := range targets {
		jobs[i] = Job{Target: target}
	}
	return ScrapingJobs(t, what, interval, history, jobs...)
}

// Job is one scrape job of ScrapingJobs.
type Job struct {
	// Name is the job label; "" names it "t<i>" by its place.
	Name string
	// Target is a base URL or host:port; its host:port is the instance.
	Target string
	// Path is the metrics path; "" is /metrics.
	Path string
	// Params are the scrape's URL parameters (php-fpm's status page speaks
	// Prometheus's format only when asked with ?openmetrics).
	Params url.Values
}

// ScrapingJobs is Scraping with each job's name, path and parameters: the
// presets' queries select by job, and an exporter may serve its metrics
// elsewhere than /metrics.
func ScrapingJobs(t testing.TB, what string, interval, history time.Duration, jobs ...Job) string {
	t.Helper()
	bin := Binary(t, what)
	dir := t.TempDir()
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "global: {scrape_interval: %dms, scrape_timeout: %dms}\nscrape_configs:\n", interval.Milliseconds(), interval.Milliseconds())
	for i, job := range jobs {
		instance := job.Target
		if strings.Contains(job.Target, "://") {
			u, err := url.Parse(job.Target)
			if err != nil {
				t.Fatalf("target %q: %v", job.Target, err)
			}
			instance = u.Host
		}
		name := job.Name
		if name == "" {
			name = fmt.Sprintf("t%d", i)
		}
		// JSON is YAML: the values need no quoting rules of their own.
		fmt.Fprintf(&cfg, "  - job_name: %s\n    static_configs: [{targets: [%s]}]\n", quote(t, name), quote(t, instance))
		if job.Path != "" {
			fmt.Fprintf(&cfg, "    metrics_path: %s\n", quote(t, job.Path))
		}
		if len(job.Params) > 0 {
			fmt.Fprintf(&cfg, "    params: %s\n", quote(t, job.Params))
		}
	}
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeport.Addr(t)
	testserver.Start(t, bin, "--config.file="+config, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+addr)

	base := "http://" + addr
	// Ready once `up` has samples of every target over history.
	n := max(2, int(history/interval)-1)
	q := fmt.Sprintf("count(count_over_time(up[%dms]) >= %d) == %d", (history + interval).Milliseconds(), n, len(jobs))
	testserver.WaitFor(t, fmt.Sprintf("Prometheus scraping its %d targets over %v (its output follows)", len(jobs), history), 30*time.Second, func() error {
		ok, err := answers(base, q)
		if err == nil && !ok {
			err = fmt.Errorf("%s is empty", q)
		}
		return err
	})
	return base
}

func quote(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// answers says whether q gives a non-empty vector now.
func answers(base, q string) (bool, error) {
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return false, err
	}
	return len(body.Data.Result) > 0, nil
}
