package live

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
	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/promtest"
)

// docStack is a deployment Doctor reads through a real Prometheus: one
// HTTP server is both the target (pages /p/a and /p/b, each embedding two
// images) and the exporter whose exposition the test controls.
type docStack struct {
	mu                 sync.Mutex
	url                string
	down               bool // its exposition answers 500
	start              time.Time
	pages, requests    int
	scrapes            int
	cpuShare, appCores float64 // web's CPU share; app's CPU in cores
	busy, allBusy      float64 // app's busy threads; busy threads of all servers
	size               float64
}

// docScrape is the stack's scrape interval, and docWindow a campaign's
// window (the section's runtime), which Doctor reads before any load.
// docRequestTime is how long the stack takes to serve a request.
const (
	docScrape      = 100 * time.Millisecond
	docWindow      = time.Second
	docRequestTime = 5 * time.Millisecond
)

func (s *docStack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/metrics" {
		// As long as the exposition says a request takes, at least.
		time.Sleep(docRequestTime)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.URL.Path != "/metrics" {
		s.requests++
		if strings.HasPrefix(r.URL.Path, "/p/") {
			s.pages++
		}
		fmt.Fprintln(w, "ok")
		return
	}
	if s.down {
		http.Error(w, "down", http.StatusInternalServerError)
		return
	}
	s.scrapes++
	el := time.Since(s.start).Seconds()
	fmt.Fprintf(w, "# TYPE doc_cpu_seconds_total counter\ndoc_cpu_seconds_total{server=\"web\"} %g\ndoc_cpu_seconds_total{server=\"app\"} %g\n",
		s.cpuShare*el, s.appCores*el)
	fmt.Fprintf(w, "# TYPE doc_requests_total counter\ndoc_requests_total %d\n", s.requests)
	fmt.Fprintf(w, "# TYPE doc_pages_total counter\ndoc_pages_total %d\n", s.pages)
	// Apache's way: its status page, which the exporter scrapes, is an access.
	fmt.Fprintf(w, "# TYPE doc_accesses_total counter\ndoc_accesses_total %d\n", s.requests+s.scrapes)
	fmt.Fprintf(w, "# TYPE doc_request_seconds_total counter\ndoc_request_seconds_total %g\n", docRequestTime.Seconds()*float64(s.requests))
	fmt.Fprintf(w, "# TYPE doc_page_seconds_total counter\ndoc_page_seconds_total %g\n", 3*docRequestTime.Seconds()*float64(s.pages))
	// A counter of a process that restarts every five scrapes.
	fmt.Fprintf(w, "# TYPE doc_flaky_total counter\ndoc_flaky_total %d\n", s.scrapes%5)
	fmt.Fprintf(w, "# TYPE doc_busy_threads gauge\ndoc_busy_threads{server=\"app\"} %g\ndoc_busy_threads{server=\"all\"} %g\n", s.busy, s.allBusy)
	fmt.Fprintf(w, "# TYPE doc_max_threads gauge\ndoc_max_threads{server=\"app\"} %g\n", s.size)
}

// startDocStacks serves n stacks and one Prometheus scraping them all: a
// Prometheus applies its targets 5 s after it starts, once for the tests.
func startDocStacks(t *testing.T, n int) (string, []*docStack) {
	t.Helper()
	promtest.Binary(t, "the doctor tests against a real Prometheus")
	var stacks []*docStack
	var urls []string
	for range n {
		stack := &docStack{start: time.Now(), cpuShare: 0.3, appCores: 1.6, busy: 3, allBusy: 12, size: 8}
		srv := httptest.NewServer(stack)
		t.Cleanup(srv.Close)
		stack.url = srv.URL
		stacks = append(stacks, stack)
		urls = append(urls, srv.URL)
	}
	return promtest.Scraping(t, "the doctor tests against a real Prometheus", docScrape, docWindow, urls...), stacks
}

// docRunner is the live runner of a clean deployment file of stack (edit
// changes its runner section), with its deployment and allocation.
func docRunner(t *testing.T, promURL string, stack *docStack, edit func(sec map[string]any)) (*Runner, algorithms.Deployment, algorithms.Allocation) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "workload.yaml"), []byte(`name: doc
thinkTime: {mean: 100ms}
start: A
interactions:
  - {name: A, path: /p/a, embedded: [/i/1.gif, /i/2.gif], next: {B: 1}}
  - {name: B, path: /p/b, embedded: [/i/1.gif, /i/2.gif], next: {A: 1}}
`), 0o644))
	var sec map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(`
name: live
target: `+stack.url+`
workload: workload.yaml
prometheus: `+promURL+`
runtime: 1s
interval: 100ms
scrapeTimeout: 10s
tiers:
  web:
    servers: [{instance: "`+stack.instance()+`"}]
    queries:
      cpu: rate(doc_cpu_seconds_total{server="web",instance="{instance}"}[{window}])
      throughput: rate(doc_requests_total{instance="{instance}"}[{window}])
      responseTime: rate(doc_request_seconds_total{instance="{instance}"}[{window}]) / rate(doc_requests_total{instance="{instance}"}[{window}])
  app:
    servers: [{instance: "`+stack.instance()+`"}]
    queries:
      cpu: rate(doc_cpu_seconds_total{server="app",instance="{instance}"}[{window}]) / {cores}
      throughput: rate(doc_pages_total{instance="{instance}"}[{window}])
      responseTime: rate(doc_page_seconds_total{instance="{instance}"}[{window}]) / rate(doc_pages_total{instance="{instance}"}[{window}])
      pools:
        threads:
          busy: avg_over_time(doc_busy_threads{server="app",instance="{instance}"}[{window}])
          size: last_over_time(doc_max_threads{server="app",instance="{instance}"}[{window}])
pages:
  throughput: rate(doc_pages_total{instance="`+stack.instance()+`"}[{window}])
`), &sec))
	if edit != nil {
		edit(sec)
	}
	r, err := New(sec, filepath.Join(dir, "deployment.yaml"))
	require.NoError(t, err)
	d := algorithms.Deployment{Topology: "doc", Tiers: []algorithms.Tier{
		{Name: "web", Role: algorithms.RoleWeb, Replicas: 1, Cores: 1},
		{Name: "app", Role: algorithms.RoleApp, Replicas: 1, Cores: 4, Pools: []string{"threads"}},
	}}
	return r, d, algorithms.Allocation{"app": {Threads: 8}}
}

// instance is the stack's instance label in Prometheus.
func (s *docStack) instance() string { return strings.TrimPrefix(s.url, "http://") }

// sent is a query as Doctor sends it to stack's Prometheus with a 1 s window.
func (s *docStack) sent(q string) string {
	return strings.NewReplacer("{instance}", s.instance(), "{window}", "1000ms").Replace(q)
}

// docQuery sets one query of a tier.
func docQuery(sec map[string]any, tier, field string, q string) {
	qs := sec["tiers"].(map[string]any)[tier].(map[string]any)["queries"].(map[string]any)
	if pool, key, ok := strings.Cut(field, "."); ok {
		qs["pools"].(map[string]any)[pool].(map[string]any)[key] = q
		return
	}
	qs[field] = q
}

func reading(t *testing.T, rep DoctorReport, server, field string) DoctorReading {
	t.Helper()
	for _, s := range rep.Servers {
		for _, rd := range s.Readings {
			if s.Server == server && rd.Field == field {
				return rd
			}
		}
	}
	t.Fatalf("no reading of %s %s in %+v", server, field, rep.Servers)
	return DoctorReading{}
}

// problemOf is the one problem line naming field, failing when there is none.
func problemOf(t *testing.T, rep DoctorReport, prefix string) string {
	t.Helper()
	for _, p := range rep.Problems {
		if strings.HasPrefix(p, prefix) {
			return p
		}
	}
	t.Fatalf("no problem %q in %q", prefix, rep.Problems)
	return ""
}

// TestDoctor runs Doctor on a clean deployment, and on one with each fault
// it must catch, each on a stack of its own behind one Prometheus.
func TestDoctor(t *testing.T) {
	promURL, stacks := startDocStacks(t, 12)
	ctx := context.Background()

	// First, and alone: the others would see its target down.
	t.Run("NamesATargetThatIsDown", func(t *testing.T) {
		stack := stacks[10]
		r, d, a := docRunner(t, promURL, stack, nil)
		health := func(want string) func() bool {
			return func() bool {
				v, err := r.prom.value(ctx, stack.sent(`up{instance="{instance}"}`), time.Time{})
				return err == nil && (v == 1) == (want == "up")
			}
		}
		stack.mu.Lock()
		stack.down = true
		stack.mu.Unlock()
		require.Eventually(t, health("down"), 10*time.Second, 20*time.Millisecond)
		rep, err := r.Doctor(ctx, d, a, DoctorOptions{})
		stack.mu.Lock()
		stack.down = false
		stack.mu.Unlock()
		require.NoError(t, err)
		assert.Contains(t, rep.Problems, fmt.Sprintf("prometheus: target %s (job t10) is down: server returned HTTP status 500 Internal Server Error; every query of it reads nothing", stack.instance()))
		require.Eventually(t, health("up"), 10*time.Second, 20*time.Millisecond)
	})

	t.Run("PassesACleanDeployment", func(t *testing.T) {
		t.Parallel()
		stack := stacks[0]
		r, d, a := docRunner(t, promURL, stack, nil)
		rep, err := r.Doctor(ctx, d, a, DoctorOptions{Probe: 6, ProbeRate: 6})
		require.NoError(t, err)
		assert.Empty(t, rep.Problems)
		assert.True(t, rep.OK())
		assert.Empty(t, rep.Warnings)

		assert.EqualValues(t, 6, rep.Probe.Pages)
		assert.EqualValues(t, 18, rep.Probe.Requests, "each page and its two images")
		stack.mu.Lock()
		assert.Equal(t, 6, stack.pages, "the probe's pages reached the target")
		stack.mu.Unlock()

		cpu := reading(t, rep, "app-1", "cpu")
		require.NotNil(t, cpu.Value)
		assert.InDelta(t, stack.appCores/4, *cpu.Value, 0.05, "cores over {cores}")
		assert.Equal(t, "share of the server's cores busy, 0-1 ({cores} = 4)", cpu.Unit)
		assert.Equal(t, StatusOK, cpu.Status)
		web := reading(t, rep, "web-1", "throughput")
		require.NotNil(t, web.PerPage)
		assert.InDelta(t, 3, *web.PerPage, 1, "the web tier counts each page's three requests")
		require.NotNil(t, web.Idle)
		assert.Zero(t, *web.Idle)
		busy := reading(t, rep, "app-1", "pools.threads.busy")
		require.NotNil(t, busy.Value)
		assert.InDelta(t, stack.busy, *busy.Value, 1e-9)
		require.Len(t, rep.Pages, 1)
		require.NotNil(t, rep.Pages[0].PerPage)
		assert.InDelta(t, 1, *rep.Pages[0].PerPage, 0.5)
	})

	t.Run("CatchesACPUInCores", func(t *testing.T) {
		t.Parallel()
		stack := stacks[1]
		q := `rate(doc_cpu_seconds_total{server="app",instance="{instance}"}[{window}])`
		r, d, a := docRunner(t, promURL, stack, func(sec map[string]any) { docQuery(sec, "app", "cpu", q) })
		rep, err := r.Doctor(ctx, d, a, DoctorOptions{})
		require.NoError(t, err)
		p := problemOf(t, rep, "app-1: cpu: ")
		assert.Contains(t, p, "query "+stack.sent(q)+" read 1.")
		assert.Contains(t, p, "divide it by {cores} (4 here)")
		assert.Len(t, rep.Problems, 1, "%q", rep.Problems)
		assert.True(t, rep.Probe.Skipped)
		assert.Contains(t, strings.Join(rep.Warnings, "\n"), "probe: skipped (--probe 0)")
	})

	t.Run("CatchesRequestsCountedAsPages", func(t *testing.T) {
		t.Parallel()
		stack := stacks[2]
		// The exporter's scrapes of the status page counted as accesses, and
		// a page throughput counting every request.
		web := `rate(doc_accesses_total{instance="{instance}"}[{window}])`
		pages := `rate(doc_requests_total{instance="{instance}"}[{window}])`
		r, d, a := docRunner(t, promURL, stack, func(sec map[string]any) {
			docQuery(sec, "web", "throughput", web)
			sec["pages"].(map[string]any)["throughput"] = strings.ReplaceAll(pages, "{instance}", stack.instance())
		})
		rep, err := r.Doctor(ctx, d, a, DoctorOptions{Probe: 6, ProbeRate: 6})
		require.NoError(t, err)
		p := problemOf(t, rep, "web-1: throughput: ")
		// Read over doctor's own quiet span, not a trial's window.
		assert.Contains(t, p, "query "+strings.Split(stack.sent(web), "[")[0]+"[")
		assert.Regexp(t, `\[[0-9]+ms\]\) read [0-9.]+ requests/s before any load`, p)
		assert.Contains(t, p, "the exporter's own scrapes")
		p = problemOf(t, rep, "pages: throughput: ")
		assert.Regexp(t, `query rate\(doc_requests_total\{instance="[0-9.:]+"\}\[[0-9]+ms\]\) counted [0-9.]+ per page over the probe's 6 pages \(3 requests each\): it counts requests rather than pages`, p)
		assert.Len(t, rep.Problems, 2, "%q", rep.Problems)
	})

	t.Run("NamesOtherClientsBeforeTheProbe", func(t *testing.T) {
		t.Parallel()
		stack := stacks[7]
		r, d, a := docRunner(t, promURL, stack, nil)
		// Another client's pages while doctor runs: the front tier's count
		// over the probe says nothing of its units then (it read less than
		// the probe sent, less the other client's rate).
		other, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for other.Err() == nil {
				if resp, err := http.Get(stack.url + "/p/other"); err == nil {
					resp.Body.Close()
				}
				select {
				case <-other.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
		rep, err := r.Doctor(ctx, d, a, DoctorOptions{Probe: 6, ProbeRate: 6})
		stop()
		<-done
		require.NoError(t, err)
		p := problemOf(t, rep, "web-1: throughput: ")
		assert.Contains(t, p, "requests/s before any load")
		assert.Contains(t, p, "other clients")
		for _, p := range rep.Problems {
			assert.NotContains(t, p, "per page over the probe", "no verdict on the probe's count beside another client")
		}
	})

	// A campaign that ended a moment before doctor started is no other
	// client: doctor reads the quiet span of its own (the walk of
	// docs/your-stack.md ran doctor seconds after a campaign, and a window
	// of the runtime reaching back read 1.8 requests/s of it).
	t.Run("LeavesOutACampaignThatEndedBeforeIt", func(t *testing.T) {
		t.Parallel()
		stack := stacks[11]
		r, d, a := docRunner(t, promURL, stack, func(sec map[string]any) { sec["runtime"] = "30s" })
		for range 30 {
			resp, err := http.Get(stack.url + "/p/other")
			require.NoError(t, err)
			resp.Body.Close()
		}
		require.Eventually(t, func() bool {
			v, err := r.prom.value(ctx, stack.sent(`doc_requests_total{instance="{instance}"}`), time.Time{})
			return err == nil && v >= 30
		}, 10*time.Second, 20*time.Millisecond)
		rep, err := r.Doctor(ctx, d, a, DoctorOptions{Probe: 6, ProbeRate: 6})
		require.NoError(t, err)
		for _, p := range rep.Problems {
			assert.NotContains(t, p, "before any load")
		}
	})

	t.Run("WarnsOfPagesTakenFromTheFrontTier", func(t *testing.T) {
		t.Parallel()
		// advise's page rate, with no pages.throughput, is the first tier's:
		// here each page and its two images. Nothing a campaign reads.
		r, d, a := docRunner(t, promURL, stacks[8], func(sec map[string]any) { delete(sec, "pages") })
		rep, err := r.Doctor(ctx, d, a, DoctorOptions{Probe: 6, ProbeRate: 6})
		require.NoError(t, err)
		assert.True(t, rep.OK(), "%q", rep.Problems)
		require.Len(t, rep.Warnings, 1)
		assert.Regexp(t, `^web-1: throughput: with no pages.throughput, advise takes this tier's throughput as pages/s, and it counts [0-9.]+ per page: set pages.throughput`, rep.Warnings[0])
		assert.Equal(t, StatusWarning, reading(t, rep, "web-1", "throughput").Status)
	})

	t.Run("CatchesAResponseTimeInMilliseconds", func(t *testing.T) {
		t.Parallel()
		stack := stacks[9]
		rt := `1000 * rate(doc_page_seconds_total{instance="{instance}"}[{window}]) / rate(doc_pages_total{instance="{instance}"}[{window}])`
		r, d, a := docRunner(t, promURL, stack, func(sec map[string]any) { docQuery(sec, "app", "responseTime", rt) })
		rep, err := r.Doctor(ctx, d, a, DoctorOptions{Probe: 6, ProbeRate: 6})
		require.NoError(t, err)
		p := problemOf(t, rep, "app-1: responseTime: ")
		assert.Regexp(t, `^app-1: responseTime: query 1000 \* rate\(doc_page_seconds_total\{instance="[0-9.:]+"\}\[[0-9]+ms\]\) / rate\(doc_pages_total\{instance="[0-9.:]+"\}\[[0-9]+ms\]\) read `+fmtNum(1000*3*docRequestTime.Seconds())+` s per request, while the probe's slowest page took [0-9.e-]+ s at the client: more than 10x longer, it is in other units \(milliseconds\? divide by 1000\)`, p)
		assert.Len(t, rep.Problems, 1, "%q", rep.Problems)
	})

	t.Run("CatchesAMissingSeries", func(t *testing.T) {
		t.Parallel()
		stack := stacks[3]
		rt := `rate(doc_app_seconds_total{instance="{instance}"}[{window}]) / rate(doc_pages_total{instance="{instance}"}[{window}])`
		cpu := `rate(doc_cpu_seconds_total{server="web-1",instance="{instance}"}[{window}])`
		r, d, a := docRunner(t, promURL, stack, func(sec map[string]any) {
			docQuery(sec, "app", "responseTime", rt)
			docQuery(sec, "web", "cpu", cpu)
			// The JVM's pause series appears at its first collection.
			docQuery(sec, "app", "gcShare", `rate(doc_gc_pause_seconds_sum{instance="{instance}"}[{window}])`)
			// A counter of OOM kills may have no series before the first kill.
			docQuery(sec, "app", "oomKills", `sum(doc_oom_kills_total{instance="{instance}"})`)
		})
		rep, err := r.Doctor(ctx, d, a, DoctorOptions{})
		require.NoError(t, err)
		p := problemOf(t, rep, "app-1: responseTime: ")
		assert.Contains(t, p, "query "+stack.sent(rt)+" returned nothing: Prometheus has no series of doc_app_seconds_total;")
		assert.NotContains(t, p, "doc_pages_total;", "only the absent metric is named")
		p = problemOf(t, rep, "web-1: cpu: ")
		assert.Contains(t, p, "query "+stack.sent(cpu)+" returned nothing while its metrics have series: its labels match none")
		assert.Len(t, rep.Problems, 2, "%q", rep.Problems)
		assert.Contains(t, rep.Warnings, "app-1: gcShare: query "+stack.sent(`rate(doc_gc_pause_seconds_sum{instance="{instance}"}[{window}])`)+
			" returned nothing: Prometheus has no series of doc_gc_pause_seconds_sum; does the exporter expose it (under that name, in its version), and does Prometheus scrape it? (a campaign reads it as 0: a JVM's pause series appears at its first collection)")
		assert.Contains(t, rep.Warnings, "app-1: oomKills: query "+stack.sent(`sum(doc_oom_kills_total{instance="{instance}"})`)+
			" returned nothing: Prometheus has no series of doc_oom_kills_total; does the exporter expose it (under that name, in its version), and does Prometheus scrape it? (a campaign reads no kill: an OOM kill counter may appear at the first kill)")
	})

	t.Run("CatchesAPoolBusierThanItsSize", func(t *testing.T) {
		t.Parallel()
		stack := stacks[4]
		busy := `sum(avg_over_time(doc_busy_threads{instance="{instance}"}[{window}]))`
		r, d, a := docRunner(t, promURL, stack, func(sec map[string]any) { docQuery(sec, "app", "threads.busy", busy) })
		rep, err := r.Doctor(ctx, d, a, DoctorOptions{})
		require.NoError(t, err)
		p := problemOf(t, rep, "app-1: pools.threads.busy: ")
		assert.Contains(t, p, fmt.Sprintf(`query %s read %g busy for a pool of %g (query %s)`, stack.sent(busy), stack.busy+stack.allBusy, stack.size,
			stack.sent(`last_over_time(doc_max_threads{server="app",instance="{instance}"}[{window}])`)))
		assert.Contains(t, p, "narrow its selector to this server")
		assert.Len(t, rep.Problems, 1, "%q", rep.Problems)
	})

	t.Run("CatchesAWindowOfFewerThanTwoScrapes", func(t *testing.T) {
		t.Parallel()
		r, d, a := docRunner(t, promURL, stacks[6], func(sec map[string]any) { sec["runtime"] = "150ms" })
		rep, err := r.Doctor(ctx, d, a, DoctorOptions{})
		require.NoError(t, err)
		p := problemOf(t, rep, "runner section: runtime: ")
		assert.Equal(t, fmt.Sprintf("runner section: runtime: 150ms, a trial's window ({window}), is shorter than two of Prometheus's scrape intervals (%v): rate() over it has fewer than two samples; set runtime to at least %v",
			docScrape, 2*docScrape), p)
	})

	t.Run("CatchesACounterReset", func(t *testing.T) {
		t.Parallel()
		stack := stacks[5]
		r, d, a := docRunner(t, promURL, stack, func(sec map[string]any) {
			docQuery(sec, "app", "throughput", `rate(doc_flaky_total{instance="{instance}"}[{window}])`)
		})
		// A counter of five scrapes resets in every window of a second.
		rep, err := r.Doctor(ctx, d, a, DoctorOptions{})
		require.NoError(t, err)
		p := problemOf(t, rep, "app-1: throughput: ")
		assert.Contains(t, p, fmt.Sprintf(`counter doc_flaky_total{instance="%s"} reset in the window (query %s): a restarted process`,
			stack.instance(), stack.sent(`rate(doc_flaky_total{instance="{instance}"}[{window}])`)))
	})
}
