package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/runner/live"
)

// BenchmarkWorker measures how many RUBBoS users (7 s think time, the
// testbed's page mix: a page and its logo) one Locust worker sustains:
// one worker against an in-process Go server that answers a 2 KB page at
// once, at each user count of LOCUST_BENCH_USERS (default 1000,2000,4000).
// Reported per count:
//
//   - pages/s, and law: what N users at 7 s think time and the measured
//     response time must give (N / (Z + R)); sustained means within 5%;
//   - worker-cpu: the worker's CPU over the window, in cores (one process
//     uses at most one);
//   - mean-ms: the mean page response time, Locust's scheduling lag included.
//
// Run it with:
//
//	go test -run '^$' -bench Worker -benchtime 1x ./examples/locust/
func BenchmarkWorker(b *testing.B) {
	out, err := runInstall()
	if err != nil {
		b.Skip("SKIPPED: cannot install Locust: ", err)
	}
	counts := "1000,2000,4000"
	if s := os.Getenv("LOCUST_BENCH_USERS"); s != "" {
		counts = s
	}
	page := make([]byte, 2000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(page) }))
	defer srv.Close()
	wb, err := os.ReadFile(filepath.Join("..", "..", "testbed", "workload.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	w, err := live.ParseWorkload(wb)
	if err != nil {
		b.Fatal(err)
	}
	const think = 7 * time.Second
	for _, s := range strings.Split(counts, ",") {
		users, err := strconv.Atoi(s)
		if err != nil {
			b.Fatalf("LOCUST_BENCH_USERS: %q: want user counts separated by commas", s)
		}
		b.Run(fmt.Sprintf("%dusers", users), func(b *testing.B) {
			dir := b.TempDir()
			settings := filepath.Join(dir, "s.yaml")
			if err := os.WriteFile(settings, []byte("deployment: none.yaml\nlocust: "+out+"\nworkers: [local]\nconnectTimeout: 60s\nreplyTimeout: 30s\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			c, err := loadConfig(settings)
			if err != nil {
				b.Fatal(err)
			}
			// Users start over the first half of the ramp-up: a long one
			// spreads their first pages as steady state would, and a worker
			// starts a few hundred users a second.
			timing := algorithms.Timing{RampUp: 30 * time.Second, Runtime: 30 * time.Second, RampDown: time.Second}
			for i := 0; i < b.N; i++ {
				p, err := makePlan(w, srv.URL, think, 30*time.Second, users, 1, timing, c.ReplyTimeout.Duration())
				if err != nil {
					b.Fatal(err)
				}
				// RUBBoS's cap, ten times the mean (the testbed's is scaled down with its mean).
				p.Think.Cap = 10 * think.Seconds()
				win, err := runLocust(context.Background(), c, p, filepath.Join(dir, strconv.Itoa(i)), func(string, ...any) {})
				if err != nil {
					b.Fatal(err)
				}
				obs, err := clientSide(win, 1, func(string, ...any) {})
				if err != nil {
					b.Fatal(err)
				}
				r := obs.ResponseTimes.Sum / float64(obs.ResponseTimes.Count())
				b.ReportMetric(obs.Throughput, "pages/s")
				b.ReportMetric(float64(users)/(think.Seconds()+r), "law")
				b.ReportMetric(win.Workers[0].CPU, "worker-cpu")
				b.ReportMetric(1000*r, "mean-ms")
				b.ReportMetric(float64(obs.Errors), "errors")
			}
		})
	}
}
