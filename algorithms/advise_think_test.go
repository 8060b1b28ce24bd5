package algorithms_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// Windows that count no users, with the workload's think time: a closed
// model, as with windows that count them, not an open one. On the WordPress
// testbed the open model's php-fpm tier held 17 jobs at 95% CPU (a single
// server's rho/(1-rho) = 19 queue) against recommend's 4, and the workload
// file's 1 s think time gave 5.7.
func TestAdviseTakesTheWorkloadsThinkTimeForAClosedModel(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	x := rubbosFake()
	rec, err := algorithms.Recommend(context.Background(), x, d, allocation(t, "400-150-60"), shortOptions())
	require.NoError(t, err)
	sat := rec.Critical.SaturationWorkload
	var wl []int
	for pct := 10; pct <= 60; pct += 10 {
		wl = append(wl, sat*pct/100)
	}
	ws := fakeWindows(t, x, d, "400-150-60", false, wl...)
	open, err := algorithms.Advise(d, ws, algorithms.AdviseOptions{})
	require.NoError(t, err)
	require.Equal(t, "open", open.Model)

	adv, err := algorithms.Advise(d, ws, algorithms.AdviseOptions{WorkloadThinkTime: x.think, WorkloadThinkTimeSource: "workload.yaml's thinkTime"})
	require.NoError(t, err)
	assert.Equal(t, "closed", adv.Model)
	assert.Equal(t, "workload.yaml's thinkTime", adv.ThinkTimeSource)
	assert.InDelta(t, x.think, adv.ThinkTime, 1e-9)
	assert.InEpsilon(t, float64(sat), float64(adv.Critical.SaturationWorkload), 0.1, "the closed model's users at saturation")
	assert.InEpsilon(t, rec.MinJobs.MinJobs, adv.MinJobs.MinJobs, 0.25, "minJobs: recommend %.1f, advise %.1f", rec.MinJobs.MinJobs, adv.MinJobs.MinJobs)

	// Windows that count their users win over the workload file.
	counted := fakeWindows(t, x, d, "400-150-60", true, wl...)
	adv, err = algorithms.Advise(d, counted, algorithms.AdviseOptions{WorkloadThinkTime: 2 * x.think, WorkloadThinkTimeSource: "workload.yaml"})
	require.NoError(t, err)
	assert.Contains(t, adv.ThinkTimeSource, "windows")
	assert.InDelta(t, x.think, adv.ThinkTime, 0.05)
}

// An open model's minJobs at the threshold is mostly the queue it puts at
// the critical resource; where windows near saturation held far fewer jobs
// in that tier (its pool capped them, as php-fpm's children are), advise
// says why its answer differs from what recommend would measure.
func TestAdviseSaysWhyItsMinJobsExceedsTheJobsTheWindowsSaw(t *testing.T) {
	d := deployment(t, "1/2/1/2")
	x := rubbosFake()
	rec, err := algorithms.Recommend(context.Background(), x, d, allocation(t, "400-150-60"), shortOptions())
	require.NoError(t, err)
	sat := rec.Critical.SaturationWorkload
	var wl []int
	for pct := 20; pct <= 100; pct += 10 {
		wl = append(wl, sat*pct/100)
	}
	ws := fakeWindows(t, x, d, "400-150-60", false, wl...)
	// Each app server's pool holds at most 2 jobs: its response time (time
	// in a thread, by Little's law) stops growing with the queue.
	const cap = 2.0
	for i := range ws {
		for j := range ws[i].Observation.Servers {
			if s := &ws[i].Observation.Servers[j]; s.Tier == "app" && s.Throughput > 0 {
				s.ResponseTime = min(s.ResponseTime, cap/s.Throughput)
			}
		}
	}
	adv, err := algorithms.Advise(d, ws, algorithms.AdviseOptions{})
	require.NoError(t, err)
	require.Equal(t, "open", adv.Model)
	require.Greater(t, adv.MinJobs.MinJobs, 1.5*2*cap, "the open model's jobs in the tier at 95%")
	var caveat string
	for _, w := range adv.Critical.Warnings {
		if strings.HasPrefix(w, "minJobs") {
			caveat = w
		}
	}
	require.NotEmpty(t, caveat, "%q", adv.Critical.Warnings)
	assert.Contains(t, caveat, "rho/(1-rho) jobs: 19 at 95%")
	assert.Contains(t, caveat, "held at most 4.0 jobs there")
	assert.Contains(t, caveat, "recommend, which measures the jobs at the least saturating workload, answers nearer 4")

	// Windows far from saturation say nothing of it: no caveat.
	var quiet []int
	for pct := 10; pct <= 50; pct += 10 {
		quiet = append(quiet, sat*pct/100)
	}
	low, err := algorithms.Advise(d, fakeWindows(t, x, d, "400-150-60", false, quiet...), algorithms.AdviseOptions{})
	require.NoError(t, err)
	for _, w := range low.Critical.Warnings {
		assert.NotContains(t, w, "minJobs")
	}
}
