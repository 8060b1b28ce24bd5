package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The app answers a refused connection with its driver's error as the
// page's body: MariaDB's error 1040 and PostgreSQL's 53300 (and its
// reserved-slots FATAL) are connection errors, another failure is not.
func TestConnRefused(t *testing.T) {
	for body, want := range map[string]bool{
		"Error 1040 (08004): Too many connections\n":                                                                  true,
		"failed to connect to `user=rubbos database=rubbos`: FATAL: sorry, too many clients already (SQLSTATE 53300)": true,
		"FATAL: remaining connection slots are reserved for non-replication superuser connections (SQLSTATE 53300)":   true,
		"Error 1146 (42S02): Table 'rubbos.stories' doesn't exist":                                                    false,
		"context deadline exceeded": false,
	} {
		assert.Equal(t, want, connRefused(body), body)
	}
}

// The report has a row per back end, variant and phase, and the load
// average before and after.
func TestMarkdownHasEveryPhase(t *testing.T) {
	rep := Report{Rate: 60, PhaseSecs: 30, SLA: 2, Limit: 56, PlanPools: map[int]string{1: "400-80-47", 3: "400-80-16"},
		Uptime: map[string]string{"mariadb before": "load average: 1.00", "mariadb after": "load average: 2.00"},
		Runs: []Run{{Backend: "mariadb", Variant: "watch", Phases: []Phase{
			{Replicas: 1, Seconds: 30, Sent: 1800, Good: 1790, Goodput: 59.7, PeakDBConns: 48},
			{Replicas: 3, Seconds: 35, Sent: 2100, Good: 2000, Goodput: 57.1, ConnErrors: 3, PeakDBConns: 52, ScaleSeconds: 5,
				ScaleDone: time.Date(2026, 11, 27, 13, 0, 5, 300e6, time.UTC)},
		}, Watch: "2026-11-27T13:00:02Z watch: apply: app at 1 replicas (nothing applied yet)\n" +
			"2026-11-27T13:00:06Z watch: hold: app at 3 replicas (was 1)\n2026-11-27T13:00:12Z watch: apply: app at 3 replicas (was 1)\n" +
			"2026-11-27T13:00:13Z watch: keep: app at 3 replicas\n"}}}
	md := markdown(rep)
	assert.Contains(t, md, "| mariadb | 60 | watch | 1 | 60.0 | 59.7 | 0 | 0 | 0 | 48 | 0.0 |")
	assert.Contains(t, md, "| mariadb | 60 | watch | 3 | 60.0 | 57.1 | 3 | 0 | 0 | 52 | 5.0 |")
	assert.Contains(t, md, "under a constant 60 pages/s")
	assert.Contains(t, md, "load average: 1.00")
	assert.Contains(t, md, "apply: app at 3 replicas (was 1)")
	assert.False(t, strings.Contains(md, "keep: app"), "only apply and hold lines")
	assert.Contains(t, md, "mariadb at 60 pages/s: watch's hook for 3 replicas returned 7 s after scale did", "from the scale's second to the apply's")
}

// The report judges issue 37's two testbed targets per back end from its
// rows: watch never over the database's limit (no page refused a
// connection, the peak below max_connections + 1), and at least 0.95 of
// the best static variant's goodput at each count.
func TestTargetsAreJudgedFromTheRows(t *testing.T) {
	phases := func(good1, good3, good2 float64, refused3 int64, peak3 float64) []Phase {
		return []Phase{{Replicas: 1, Goodput: good1, PeakDBConns: 40}, {Replicas: 3, Goodput: good3, ConnErrors: refused3, PeakDBConns: peak3},
			{Replicas: 2, Goodput: good2, PeakDBConns: 60}}
	}
	rep := Report{Limit: 84, PlanSurge: "2", Rate: 200, Runs: []Run{
		{Backend: "mariadb", Rate: 200, Variant: "one", Phases: phases(190, 150, 180, 144, 85)},
		{Backend: "mariadb", Rate: 200, Variant: "three", Phases: phases(196, 197.7, 194.6, 0, 79)},
		{Backend: "mariadb", Rate: 200, Variant: "watch", Phases: phases(195, 180, 194, 0, 78)},
		// Another rate's rows are judged apart.
		{Backend: "mariadb", Rate: 60, Variant: "three", Phases: phases(60, 60, 60, 0, 50)},
		{Backend: "mariadb", Rate: 60, Variant: "watch", Phases: phases(60, 59.9, 60, 0, 50)},
	}}
	got := targets(rep, "mariadb", 200)
	assert.Equal(t, []string{
		"connection limit 84: met: watch peaked at 40, 78 and 60 connections with none refused; one refused 144 pages at 3 replicas (peak 85); three none",
		"goodput at least 0.95 of the best static variant's at each count: not met: at 1 replica 0.99 (195.0 against three's 196.0), at 3 0.91 (180.0 against three's 197.7), at 2 1.00 (194.0 against three's 194.6)",
	}, got)
	// Without a watch row there is nothing to judge.
	assert.Empty(t, targets(Report{Limit: 84, Runs: rep.Runs[:2]}, "mariadb", 200))
	assert.Equal(t, "goodput at least 0.95 of the best static variant's at each count: met: at 1 replica 1.00 (60.0 against three's 60.0), at 3 1.00 (59.9 against three's 60.0), at 2 1.00 (60.0 against three's 60.0)",
		targets(rep, "mariadb", 60)[1])
	rep.Runs[2].Phases[1].ScaleDone = time.Date(2026, 11, 27, 13, 0, 5, 300e6, time.UTC)
	rep.Runs[2].Watch = "2026-11-27T13:00:06Z watch: hold: app at 3 replicas (was 1), read 1 of 2 times before applying\n" +
		"2026-11-27T13:00:07Z watch: keep: app at 3 replicas (was 1), read 2 times: app.connections=26, the pools of 3 replicas (3 + surge 2, at most the plan's 3): in place, nothing to apply\n"
	md := markdown(rep)
	assert.Contains(t, md, "under a constant 200 and 60 pages/s")
	assert.Contains(t, md, "mariadb at 200 pages/s: watch found the pools for 3 replicas in place (no hook) 2 s after scale did")
	// Read before scale returned (scale waits for the same Prometheus).
	rep.Runs[2].Phases[1].ScaleSeconds = 6
	rep.Runs[2].Phases[1].ScaleDone = time.Date(2026, 11, 27, 13, 0, 9, 300e6, time.UTC)
	assert.Contains(t, markdown(rep), "mariadb at 200 pages/s: watch found the pools for 3 replicas in place (no hook) 2 s before scale returned")
	assert.Contains(t, md, "in place, nothing to apply", "the decision listed")
	assert.Contains(t, md, "mariadb at 200 pages/s, issue 37's targets:\n\n- connection limit 84: met")
	assert.Contains(t, md, "mariadb at 60 pages/s, issue 37's targets:\n\n- connection limit 84: met")
	assert.Contains(t, md, "watch applied at N replicas the pools of N + surge (surge 2, at most 3)")
	assert.Contains(t, md, "With surge 2 on the range 1..3, N + surge reaches the top from every count")
	assert.NotContains(t, md, "was not measured at")
	rep.Runs = append(rep.Runs, Run{Backend: "postgres+pgbouncer", Rate: 60, Variant: "watch", Phases: phases(60, 60, 60, 0, 22)})
	assert.Contains(t, markdown(rep), "postgres+pgbouncer was not measured at 200 pages/s (measure.sh's PGBOUNCER_RATES")

}
