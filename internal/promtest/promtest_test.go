package promtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A job with a name, a path and parameters, as php-fpm's status page is
// scraped (/status?openmetrics), beside an unnamed one at /metrics: the
// presets' queries select by job, and the status page answers in
// Prometheus's format only when asked.
func TestScrapingJobsNamesJobsAndPassesParams(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	status := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.RequestURI())
		mu.Unlock()
		if r.URL.Path != "/status" || !r.URL.Query().Has("openmetrics") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte("phpfpm_up 1\n"))
	}))
	t.Cleanup(status.Close)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("x 1\n"))
	}))
	t.Cleanup(plain.Close)
	host := strings.TrimPrefix(status.URL, "http://")

	base := ScrapingJobs(t, "TestScrapingJobsNamesJobsAndPassesParams", 100*time.Millisecond, 300*time.Millisecond,
		Job{Name: "phpfpm", Target: host, Path: "/status", Params: url.Values{"openmetrics": {""}}},
		Job{Target: plain.URL})

	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(`up == 1`))
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	jobs := map[string]string{}
	for _, r := range body.Data.Result {
		jobs[r.Metric["job"]] = r.Metric["instance"]
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[string]string{"phpfpm": host, "t1": strings.TrimPrefix(plain.URL, "http://")}, jobs,
		"both jobs scraped successfully, by name (the status page asked %q)", asked)
	assert.Contains(t, asked, "/status?openmetrics=")
}
