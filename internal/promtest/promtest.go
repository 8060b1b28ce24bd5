// Package promtest starts Debian's Prometheus for tests: on loopback, on a
// port the kernel chose, in the test's temporary directory, scraping the
// targets the test serves, and stopped by the test's cleanup.
package promtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	bin := Binary(t, what)
	dir := t.TempDir()
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "global: {scrape_interval: %dms, scrape_timeout: %dms}\nscrape_configs:\n", interval.Milliseconds(), interval.Milliseconds())
	for i, target := range targets {
		u, err := url.Parse(target)
		if err != nil {
			t.Fatalf("target %q: %v", target, err)
		}
		fmt.Fprintf(&cfg, "  - job_name: t%d\n    static_configs: [{targets: [%q]}]\n", i, u.Host)
	}
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+config, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+addr)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })

	base := "http://" + addr
	// Ready once `up` has samples of every target over history.
	n := max(2, int(history/interval)-1)
	q := fmt.Sprintf("count(count_over_time(up[%dms]) >= %d) == %d", (history + interval).Milliseconds(), n, len(targets))
	deadline := time.Now().Add(30 * time.Second)
	for {
		if ok, _ := answers(base, q); ok {
			return base
		}
		if time.Now().After(deadline) {
			cancel()
			_ = cmd.Wait()
			t.Fatalf("Prometheus did not scrape its %d targets over %v within 30 s:\n%s", len(targets), history, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
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
