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
	assert.Contains(t, md, "| mariadb | watch | 1 | 60.0 | 59.7 | 0 | 0 | 0 | 48 | 0.0 |")
	assert.Contains(t, md, "| mariadb | watch | 3 | 60.0 | 57.1 | 3 | 0 | 0 | 52 | 5.0 |")
	assert.Contains(t, md, "load average: 1.00")
	assert.Contains(t, md, "apply: app at 3 replicas (was 1)")
	assert.False(t, strings.Contains(md, "keep: app"), "only apply and hold lines")
	assert.Contains(t, md, "watch's hook for 3 replicas returned 7 s after scale did", "from the scale's second to the apply's")
}
