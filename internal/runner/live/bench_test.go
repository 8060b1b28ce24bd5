package live

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/softalloc/softalloc/algorithms"
)

// cpuSeconds is the process's user+system CPU time.
func cpuSeconds(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// BenchmarkLoadGenerator measures what one core of the load generator
// sustains: GOMAXPROCS=1, against an in-process httptest server that
// answers a small page. The server's CPU is in the figures too, so they
// understate the generator alone. Reported per trial:
//
//   - req/s: requests completed per second of the window;
//   - req/cpu-s: requests per CPU-second of the process (the capacity of a core);
//   - rubbos-users/core: req/cpu-s over the requests one RUBBoS user sends
//     per second (1.96 per page, a page per 7 s think time plus response).
//
// go test -run '^$' -bench LoadGenerator -benchtime 1x ./internal/runner/live/
func BenchmarkLoadGenerator(b *testing.B) {
	page := make([]byte, 2000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(page) }))
	defer srv.Close()
	for _, bc := range []struct {
		name  string
		users int
		think string
	}{
		{"saturated-200users", 200, "1ms"},
		{"rubbos-5000users-7s", 5000, "7s"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			w := testWorkload(b, bc.think, "/a")
			timing := algorithms.Timing{RampUp: 2 * time.Second, Runtime: 5 * time.Second}
			if bc.think == "7s" {
				// Users start over the first half of the ramp-up; a long one
				// spreads their first requests as steady state would.
				timing.RampUp = 14 * time.Second
			}
			for i := 0; i < b.N; i++ {
				l := newLoad(b, srv.URL, w, bc.users, timing)
				l.RequestTimeout = 10 * time.Second
				c0 := cpuSeconds(b)
				res, err := l.Run(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				cpu := cpuSeconds(b) - c0
				rps := float64(res.Pages) / timing.Runtime.Seconds()
				perCPU := float64(res.Requests) / cpu
				b.ReportMetric(rps, "req/s")
				b.ReportMetric(perCPU, "req/cpu-s")
				b.ReportMetric(perCPU/(1.96/7.02), "rubbos-users/core")
				b.ReportMetric(float64(res.Errors.Total()), "errors")
			}
		})
	}
}
