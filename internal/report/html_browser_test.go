package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chromiumBinary finds Debian's chromium; absent, the test skips, or fails
// in CI, where scripts/test-deps.sh installs it.
func chromiumBinary(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed in CI: scripts/test-deps.sh must install Debian's chromium")
	}
	t.Skip("chromium is not installed: skipping the HTML report's check in a real browser (apt-get install chromium)")
	return ""
}

// browserView is what headless Chromium made of a page: the DOM after
// loading, the console's messages, and the network requests the page made.
type browserView struct {
	DOM      string
	Console  []string
	Requests []string
}

// consoleLine is a console message as --enable-logging=stderr prints it:
// [pid:tid:time:INFO:CONSOLE:1] "message", source: file:///... (1)
var consoleLine = regexp.MustCompile(`:CONSOLE[:(]\d*\)?\] (.*)`)

// viewInChromium loads the file in headless Chromium behind a proxy that
// refuses every request (nothing reaches a network), with a fresh profile
// and a net log, and returns what it saw. The net log holds the browser's
// own background requests too; the page's are those whose network
// isolation key is the file's origin.
func viewInChromium(bin, page, dir string) (browserView, error) {
	proxy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return browserView{}, err
	}
	defer proxy.Close()
	go func() {
		for {
			c, err := proxy.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	netlog := filepath.Join(dir, "net.json")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--disable-gpu", "--no-sandbox", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--no-first-run", "--disable-background-networking", "--disable-extensions", "--disable-sync",
		"--enable-logging=stderr", "--v=0", "--proxy-server=http://"+proxy.Addr().String(), "--log-net-log="+netlog,
		"--dump-dom", "file://"+page)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "HOME="+dir) // chromium writes its caches under $HOME
	if err := cmd.Run(); err != nil {
		return browserView{}, fmt.Errorf("chromium: %w: %s", err, stderr.String())
	}
	v := browserView{DOM: stdout.String()}
	for _, m := range consoleLine.FindAllStringSubmatch(stderr.String(), -1) {
		v.Console = append(v.Console, m[1])
	}
	v.Requests, err = pageRequests(netlog)
	return v, err
}

// pageRequests reads the URLs the page itself requested from Chromium's net
// log (a log cut short by the exit lacks its closing brackets).
func pageRequests(path string) ([]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var log struct {
		Constants struct {
			LogEventTypes map[string]int `json:"logEventTypes"`
		} `json:"constants"`
		Events []struct {
			Type   int `json:"type"`
			Params struct {
				URL       string `json:"url"`
				Isolation string `json:"network_isolation_key"`
			} `json:"params"`
		} `json:"events"`
	}
	raw = bytes.TrimRight(bytes.TrimSpace(raw), ",")
	if err := json.Unmarshal(raw, &log); err != nil {
		if err := json.Unmarshal(append(raw, "]}"...), &log); err != nil {
			return nil, fmt.Errorf("chromium's net log: %w", err)
		}
	}
	start, ok := log.Constants.LogEventTypes["URL_REQUEST_START_JOB"]
	if !ok {
		return nil, errors.New("chromium's net log names no URL_REQUEST_START_JOB event")
	}
	var urls []string
	for _, e := range log.Events {
		if e.Type == start && strings.HasPrefix(e.Params.Isolation, "file://") && !strings.HasPrefix(e.Params.URL, "file:") &&
			!strings.HasPrefix(e.Params.URL, "data:") {
			urls = append(urls, e.Params.URL)
		}
	}
	return urls, nil
}

// The report renders in a real browser: its figures are in the DOM with
// their series, the console is silent and the page requests nothing. A
// page that does request something and logs errors is caught by the same
// check, so that the check is not silent by construction.
func TestHTMLReportInChromium(t *testing.T) {
	bin := chromiumBinary(t)
	dir := t.TempDir()
	// A tier name that would load an image and log to the console if it
	// reached the page as markup.
	const evil = `<img src=x onerror="console.error('injected')">`
	good := filepath.Join(dir, "report.html")
	require.NoError(t, SaveHTML(good, campaignReport(t, evil)))
	bad := filepath.Join(dir, "bad.html")
	require.NoError(t, os.WriteFile(bad, []byte(`<!DOCTYPE html><html><body><p>x</p><img src="http://example.invalid/a.png">`+
		`<script>console.error("boom"); undefinedFunction();</script></body></html>`), 0o644))

	// Both at once: each takes a few seconds, mostly the browser starting.
	var views [2]browserView
	var errs [2]error
	var wg sync.WaitGroup
	for i, page := range []string{good, bad} {
		wg.Go(func() { views[i], errs[i] = viewInChromium(bin, page, t.TempDir()) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs[:]...))
	v, control := views[0], views[1]

	assert.Empty(t, v.Console, "console messages")
	assert.Empty(t, v.Requests, "network requests")
	require.Contains(t, v.DOM, "<h1>softalloc recommend: 1/1/1</h1>")
	figures := svgTexts(v.DOM)
	for id, series := range map[string][]string{
		"fig-throughput":  {"saturation: 30 users", "WLmin (knee): 28 users"},
		"fig-slo":         {"within 0.5 s"},
		"fig-utilisation": {evil + " cpu", "app cpu", "db cpu"},
		"fig-pools":       {evil + " threads", "app connections"},
		"fig-full":        {"app threads"},
		"fig-range":       {"recommended: 3"},
	} {
		require.Contains(t, figures, id, "figure in the DOM")
		for _, s := range series {
			assert.Contains(t, figures[id], s, id)
		}
	}
	assert.NotContains(t, v.DOM, "<img", "the tier's name stayed text")

	assert.NotEmpty(t, control.Console, "the check sees console errors")
	assert.Contains(t, strings.Join(control.Console, "\n"), "boom")
	assert.Contains(t, control.Requests, "http://example.invalid/a.png", "the check sees the page's requests")
}
