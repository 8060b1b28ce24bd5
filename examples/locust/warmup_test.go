package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 40: the runner section's warmUp ran before a live trial but not
// when Locust drove it, so the first window after a php-fpm reload measured
// emptied caches. The adapter warms up after applying, before Locust
// starts: here a Locust that never listens fails the trial after the
// warm-up's pages reached the target.
func TestTheAdapterWarmsUpAfterApplyingBeforeLocustStarts(t *testing.T) {
	var pages atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			pages.Add(1)
		}
	}))
	defer site.Close()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "w.yaml"), "thinkTime: {mean: 20ms}\nstart: A\ninteractions:\n  - {name: A, path: /a, next: {A: 1}}\n")
	writeExec(t, filepath.Join(dir, "hook.sh"), "#!/bin/sh\nexit 0\n")
	writeFile(t, filepath.Join(dir, "d.yaml"), fmt.Sprintf(`name: local
tiers:
  - {name: web, role: web, replicas: 1, cores: 1, pools: {threads: 10}}
  - {name: db, role: db, replicas: 1, cores: 1}
runner:
  target: %[1]s
  health: %[1]s/health
  workload: w.yaml
  hook: [./hook.sh, "{web.threads}"]
  warmUp: 300ms
  prometheus: http://127.0.0.1:1
  tiers:
    web: {queries: {cpu: "x"}}
    db: {queries: {cpu: "x"}}
`, site.URL))
	settings := writeFile(t, filepath.Join(dir, "s.yaml"),
		fmt.Sprintf("deployment: d.yaml\nlocust: %s\nworkers: [local]\nconnectTimeout: 1s\n", fakeLocust(t, dir)))
	req := strings.NewReader(`{"protocolVersion":1,"experimentId":"x","attempt":1,"topology":"local",` +
		`"tiers":[{"name":"web","role":"web","replicas":1,"cores":1,"pools":{"threads":10},"servers":["web-1"]},` +
		`{"name":"db","role":"db","replicas":1,"cores":1,"servers":["db-1"]}],` +
		`"workload":{"users":3},"timing":{"rampUpSeconds":2,"runtimeSeconds":4,"rampDownSeconds":1}}` + "\n")
	var out, errb strings.Builder
	err := run(context.Background(), []string{settings}, req, &out, &errb)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "connectTimeout", "the fake Locust never listens")
	assert.Greater(t, pages.Load(), int64(0), "the warm-up loaded the target before Locust")
	assert.Regexp(t, `warm-up after applying .*: 300ms at 3 users, [1-9][0-9]* pages`, errb.String())
}
