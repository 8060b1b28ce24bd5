package cli_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/cli"
	"github.com/softalloc/softalloc/internal/promtest"
)

func TestWatchUsageErrors(t *testing.T) {
	dir := t.TempDir()
	fixed := filepath.Join(dir, "fixed.json")
	require.NoError(t, os.WriteFile(fixed, []byte(`{"topology": "1/2/1"}`), 0o600))
	base := []string{"watch", "--prometheus", "http://127.0.0.1:1", "--replicas-query", "count(up == 1)"}
	runUsageCases(t, []usageCase{
		{"nojournal no plan", []string{"watch", "--dry-run"}, "watch: want --plan FILE"},
		{"nojournal no query", []string{"watch", "--plan", fixed, "--prometheus", "http://x", "--dry-run"}, "watch: want --replicas-query"},
		{"nojournal no hook", append(base, "--plan", fixed), "watch: want the hook after --"},
		{"nojournal hook without dash", append(base, "--plan", fixed, "./hook.sh"), `watch: unexpected argument "./hook.sh"; the hook goes after --`},
		{"nojournal no range", append(base, "--plan", fixed, "--dry-run"), "the answer has no replicas key"},
		{"nojournal hold", append(base, "--plan", fixed, "--dry-run", "--hold", "0"), "--hold 0: want 1 or more readings"},
	})
}

// lineWriter is stderr shared with the running command: it cancels the
// command once a line contains want.
type lineWriter struct {
	mu     sync.Mutex
	b      strings.Builder
	want   string
	cancel context.CancelFunc
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if strings.Contains(w.b.String(), w.want) {
		w.cancel()
	}
	return len(p), nil
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// recommend's answer for app replicas 2..12, then watch --dry-run against
// a real Prometheus whose three targets are up: it says it would apply the
// pools of 3 replicas, and exits 0 when stopped.
func TestWatchDryRunAgainstPrometheus(t *testing.T) {
	out, stderr, code := run(t, "", "recommend", "-f", autoscaledDeployment, "--ramp-up", "10s", "--runtime", "20s", "--no-journal", "--progress", "none", "-o", "json")
	require.Equal(t, 0, code, stderr)
	plan := filepath.Join(t.TempDir(), "answer.json")
	require.NoError(t, os.WriteFile(plan, []byte(out), 0o600))

	var urls []string
	for range 3 {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "x 1") }))
		t.Cleanup(s.Close)
		urls = append(urls, s.URL)
	}
	prom := promtest.Scraping(t, "TestWatchDryRunAgainstPrometheus", 200*time.Millisecond, 600*time.Millisecond, urls...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	errw := &lineWriter{want: "dry-run: app at 3 replicas", cancel: cancel}
	var stdout strings.Builder
	code = cli.Run(ctx, []string{"watch", "--plan", plan, "--prometheus", prom, "--replicas-query", `count(up{job=~"t[0-9]+"} == 1)`,
		"--interval", "100ms", "--dry-run", "--listen", "127.0.0.1:0"}, cli.Streams{In: strings.NewReader(""), Out: &stdout, Err: errw})
	log := errw.String()
	require.Contains(t, log, "dry-run: app at 3 replicas (nothing applied yet), read 2 times: app.connections=", log)
	assert.Contains(t, log, "(dry run: not applied)")
	assert.Contains(t, log, "watch: metrics on http://127.0.0.1:")
	assert.Equal(t, 0, code, "stopped by its context, watch exits as it was asked: %s", log)
}
