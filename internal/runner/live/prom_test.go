package live

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// Issue 35: a Prometheus (or a proxy before it) answering 6 GB was read
// whole, and the runner ran out of memory. An answer past maxPromBody is an
// error naming the bound and the URL, and no retry asks for it again.
func TestPrometheusAnswerIsBounded(t *testing.T) {
	defer func(n int64) { maxPromBody = n }(maxPromBody)
	maxPromBody = 1 << 16
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[`)
		pad := strings.Repeat(" ", 1<<12)
		for i := 0; i < 1<<10; i++ { // 4 MiB, unless the reader stops
			if _, err := fmt.Fprint(w, pad); err != nil {
				return
			}
		}
		fmt.Fprint(w, `]}}`)
	}))
	defer srv.Close()
	p, err := newProm(srv.URL, http.DefaultTransport, 0)
	require.NoError(t, err)
	_, err = p.value(context.Background(), "up", time.Now())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "query up: ")
	assert.Contains(t, err.Error(), srv.URL+"/api/v1/query answered more than 65536 bytes (the bound on one answer of Prometheus)")
	assert.True(t, errors.As(err, new(errQuery)), "not retried: the same query gets the same answer")
}

// Issue 35: a slow Prometheus failed advise after two minutes with a bare
// "context deadline exceeded". The error names the query, the bound and the
// runner section's queryTimeout, which sets it.
func TestASlowPrometheusNamesTheQueryAndTheTimeout(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm() // the body read, the server sees the client hang up
		select {          // never answers
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer srv.Close()
	defer close(stop)
	r, err := NewPassive(map[string]any{"prometheus": srv.URL, "queryTimeout": "200ms",
		"tiers": map[string]any{"web": map[string]any{"queries": map[string]any{"cpu": "slow_cpu"}}}}, "d.yaml")
	require.NoError(t, err)
	d := algorithms.Deployment{Tiers: []algorithms.Tier{{Name: "web", Role: "web", Replicas: 1, Cores: 1}}}
	end := time.Now().Add(-time.Minute).Truncate(time.Minute)
	_, err = r.Windows(context.Background(), d, end.Add(-3*time.Minute), end, time.Minute)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cpu: query slow_cpu over ")
	assert.Contains(t, err.Error(), "prometheus did not answer within 200ms (the runner section's queryTimeout)")

	_, err = r.prom.value(context.Background(), "slow_instant", time.Now())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "query slow_instant: prometheus did not answer within 200ms (the runner section's queryTimeout)")

	_, err = NewPassive(map[string]any{"prometheus": srv.URL, "queryTimeout": -1}, "d.yaml")
	assert.ErrorContains(t, err, "queryTimeout: want a duration >= 0")
}
