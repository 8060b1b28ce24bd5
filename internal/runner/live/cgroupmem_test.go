package live

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/algorithms"
)

// The cgroup fixture: app runs under a 256 MiB limit on cgroup v2 (PSI),
// db without a limit on v1 (its limit is the machine's 24 GiB, no PSI).
const (
	mib          = 1 << 20
	appLimit     = 256 * mib
	machineBytes = 24 << 30
	dbWorkingSet = 1 << 30
)

// appWorkingSet is the app's working set in window k, peaking 10 MiB above
// it at one sample of each window.
func appWorkingSet(k, j int) float64 {
	v := float64(100+15*k) * mib
	if j == 3 {
		v += 10 * mib
	}
	return v
}

// appFullStall is the share of window k in which every app task stalled on
// memory: in the last window, more than the working set's share.
func appFullStall(k int) float64 {
	if k == fixtureWindows-1 {
		return 0.97
	}
	return 0.02 * float64(k)
}

func cgroupFixture() []series {
	var out []series
	for _, tier := range []string{"app", "db"} {
		l := `tier="` + tier + `"`
		out = append(out,
			series{family: "softalloc_testbed_cpu_usage_seconds", labels: l, counter: true, rate: func(int) float64 { return 0.3 }, resetIn: -1},
			series{family: "softalloc_testbed_cpu_limit_cores", labels: l, value: func(int, int) float64 { return 1 }, resetIn: -1},
			series{family: "softalloc_testbed_cpu_throttled_periods", labels: l, counter: true, rate: func(int) float64 { return 1 }, resetIn: -1},
			series{family: "softalloc_testbed_cpu_periods", labels: l, counter: true, rate: func(int) float64 { return 10 }, resetIn: -1})
	}
	return append(out,
		series{family: "pages", labels: `job="lb"`, counter: true, rate: func(k int) float64 { return 10 + float64(k) }, resetIn: -1},
		series{family: "softalloc_testbed_memory_working_set_bytes", labels: `tier="app"`, value: appWorkingSet, resetIn: -1},
		series{family: "softalloc_testbed_memory_limit_bytes", labels: `tier="app",limited="true"`, value: func(int, int) float64 { return appLimit }, resetIn: -1},
		series{family: "softalloc_testbed_memory_pressure_seconds", labels: `tier="app",stall="full"`, counter: true, rate: appFullStall, resetIn: -1},
		series{family: "softalloc_testbed_memory_pressure_seconds", labels: `tier="app",stall="some"`, counter: true, rate: func(int) float64 { return 0.99 }, resetIn: -1},
		series{family: "softalloc_testbed_memory_working_set_bytes", labels: `tier="db"`, value: func(int, int) float64 { return dbWorkingSet }, resetIn: -1},
		series{family: "softalloc_testbed_memory_limit_bytes", labels: `tier="db",limited="false"`, value: func(int, int) float64 { return machineBytes }, resetIn: -1},
	)
}

// The cgroup preset's memory, read by a real Prometheus: the peak working
// set over the limit, or the share of the window stalled on memory (PSI
// full) when that is larger; a tier without a limit against the machine's
// memory, and without PSI (cgroup v1) from its working set alone.
func TestCgroupPresetReadsMemory(t *testing.T) {
	t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Minute).UTC()
	promURL := startPrometheus(t, openMetrics(t0, cgroupFixture()))
	var sec map[string]any
	require.NoError(t, yaml.Unmarshal([]byte("tiers: {app: {presets: [cgroup]}, db: {presets: [cgroup]}}\npages: {throughput: 'sum(rate(pages_total[{window}]))'}"), &sec))
	sec["prometheus"] = promURL
	r, err := NewPassive(sec, "/x/deployment.yaml")
	require.NoError(t, err)
	var log strings.Builder
	r.Log = &log
	d := algorithms.Deployment{Topology: "1/1", Tiers: []algorithms.Tier{
		{Name: "app", Role: "app", Replicas: 1, Cores: 1}, {Name: "db", Role: "db", Replicas: 1, Cores: 1}}}
	ws, err := r.Windows(context.Background(), d, t0, t0.Add(fixtureWindows*fixtureStep), fixtureStep)
	require.NoError(t, err, log.String())
	require.Len(t, ws, fixtureWindows)
	for k, w := range ws {
		require.Len(t, w.Observation.Servers, 2)
		app, db := w.Observation.Servers[0], w.Observation.Servers[1]
		want := max((appWorkingSet(k, 0)+10*mib)/appLimit, appFullStall(k))
		assert.InDelta(t, want, app.Resources["memory"], 1e-9, "app's memory in window %d", k)
		assert.InDelta(t, float64(dbWorkingSet)/machineBytes, db.Resources["memory"], 1e-9, "db's memory in window %d", k)
	}
	assert.InDelta(t, 0.97, ws[fixtureWindows-1].Observation.Servers[0].Resources["memory"], 1e-9, "PSI's full stall, above the working set's 0.92")
	// Nine windows under 0.95, the last at it: advise and find-critical see memory saturate.
	hw, _ := algorithms.Saturations(d, ws[fixtureWindows-1].Observation, algorithms.Options{})
	require.NotEmpty(t, hw)
	assert.Equal(t, "app-1/memory", hw[0].String())
}
