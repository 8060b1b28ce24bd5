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

// The recorded host's modes, per CPU, in window k: busy work, time waiting
// on a disk, and time a hypervisor gave another guest.
func nodeUser(k int) float64   { return 0.1 + 0.03*float64(k) }
func nodeSystem(k int) float64 { return 0.05 + 0.01*float64(k) }
func nodeIowait(k int) float64 { return 0.2 }
func nodeSteal(k int) float64  { return 0.1 }

// The containers' CPU in cores in window k, and the share of CFS periods
// throttled (10 periods a second at cAdvisor's default 100 ms).
func webCores(k int) float64        { return 0.2 + 0.1*float64(k) }
func webThrottled(k int) float64    { return 0.05 * float64(k) }
func appCores(k int) float64        { return 0.1 + 0.03*float64(k) }
func dbCoresPerCPU(k int) float64   { return 0.1 + 0.02*float64(k) }
func kubeletPodCores(k int) float64 { return 5 }

const (
	webQuotaCores  = 1.5 // the web container's quota: 150000 us per 100000 us
	appQuotaCores  = 0.5 // the app container's: 50000 us per 100000 us
	cfsPeriodsPerS = 10
)

// hostCPUFixture records what node_exporter, cAdvisor and the kubelet
// export, with the names and labels of their documentation (cAdvisor's
// docs/storage/prometheus.md and metrics/prometheus.go): no cAdvisor runs here.
func hostCPUFixture() []series {
	var all []series
	node := `instance="host:9100",job="node"`
	for _, cpu := range []string{"0", "1"} {
		for mode, rate := range map[string]func(int) float64{
			"user": nodeUser, "system": nodeSystem, "iowait": nodeIowait, "steal": nodeSteal,
			"nice": func(int) float64 { return 0 }, "irq": func(int) float64 { return 0 }, "softirq": func(int) float64 { return 0 },
			"idle": func(k int) float64 { return 1 - nodeUser(k) - nodeSystem(k) - nodeIowait(k) - nodeSteal(k) },
		} {
			all = append(all, series{family: "node_cpu_seconds", labels: node + `,cpu="` + cpu + `",mode="` + mode + `"`, counter: true, rate: rate, resetIn: -1})
		}
	}
	gauge := func(family, labels string, v float64) series {
		return series{family: family, labels: labels, value: func(int, int) float64 { return v }, resetIn: -1}
	}
	counter := func(family, labels string, rate func(int) float64) series {
		return series{family: family, labels: labels, counter: true, rate: rate, resetIn: -1}
	}
	// Docker through cAdvisor: web capped at 1.5 cores, db uncapped and
	// exported per CPU (-enable_metrics=percpu).
	web := `id="/docker/0a1b",image="shop/web:1",instance="host:8080",job="cadvisor",name="web-1"`
	db := `id="/docker/2c3d",image="mariadb:10.11",instance="host:8080",job="cadvisor",name="db-1"`
	all = append(all,
		counter("container_cpu_usage_seconds", web+`,cpu="total"`, webCores),
		gauge("container_spec_cpu_quota", web, webQuotaCores*100000),
		gauge("container_spec_cpu_period", web, 100000),
		counter("container_cpu_cfs_periods", web, func(int) float64 { return cfsPeriodsPerS }),
		counter("container_cpu_cfs_throttled_periods", web, func(k int) float64 { return cfsPeriodsPerS * webThrottled(k) }),
		counter("container_cpu_usage_seconds", db+`,cpu="cpu00"`, dbCoresPerCPU),
		counter("container_cpu_usage_seconds", db+`,cpu="cpu01"`, dbCoresPerCPU),
	)
	// Kubernetes through the kubelet: the container, its pod's own cgroup
	// (container="") and the pause container, which the preset leaves out.
	pod := `instance="node-1",job="kubelet",metrics_path="/metrics/cadvisor",namespace="shop",pod="app-7d9f-x2k4"`
	app := pod + `,container="app",id="/kubepods/burstable/pod1/c1",image="shop/app:1"`
	all = append(all,
		counter("container_cpu_usage_seconds", app+`,cpu="total"`, appCores),
		gauge("container_spec_cpu_quota", app, appQuotaCores*100000),
		gauge("container_spec_cpu_period", app, 100000),
		counter("container_cpu_cfs_periods", app, func(int) float64 { return cfsPeriodsPerS }),
		counter("container_cpu_cfs_throttled_periods", app, func(int) float64 { return 0 }),
		counter("container_cpu_usage_seconds", pod+`,container="",id="/kubepods/burstable/pod1",cpu="total"`, kubeletPodCores),
		counter("container_cpu_usage_seconds", pod+`,container="POD",id="/kubepods/burstable/pod1/p",cpu="total"`, kubeletPodCores),
	)
	return all
}

const hostCPUSection = `
tiers:
  host:
    presets: [node]
    servers: [{node: "host:9100"}]
  web:
    presets: [cadvisor]
    servers: [{container: web-1}]
  app:
    presets: [kubelet]
    servers: [{namespace: shop, pod: app-7d9f-x2k4, container: app}]
  db:
    presets: [cadvisor]
    servers: [{container: db-1}]
pages:
  throughput: vector(1)
`

// Each CPU preset reads a share of a declared capacity: node the host's CPU
// time less steal, busy without iowait; cAdvisor and the kubelet a
// container's CPU over its CFS quota (over the tier's cores without one) and
// the share of its periods throttled.
func TestHostCPUPresetsOnRecordedSamples(t *testing.T) {
	t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Minute).UTC()
	promURL := startPrometheus(t, openMetrics(t0, hostCPUFixture()))
	var sec map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(hostCPUSection), &sec))
	sec["prometheus"] = promURL
	r, err := NewPassive(sec, "/x/deployment.yaml")
	require.NoError(t, err)
	var log strings.Builder
	r.Log = &log
	const dbCores = 4
	d := algorithms.Deployment{Topology: "1/1/1/1", Tiers: []algorithms.Tier{
		{Name: "host", Role: "web", Replicas: 1, Cores: 2},
		{Name: "web", Role: "web", Replicas: 1, Cores: 8}, // the quota wins over the tier's cores
		{Name: "app", Role: "app", Replicas: 1, Cores: 8},
		{Name: "db", Role: "db", Replicas: 1, Cores: dbCores},
	}}
	ws, err := r.Windows(context.Background(), d, t0, t0.Add(fixtureWindows*fixtureStep), fixtureStep)
	require.NoError(t, err, log.String())
	require.Len(t, ws, fixtureWindows)
	for k, w := range ws {
		assert.Empty(t, w.Problem, w.Label)
		require.Len(t, w.Observation.Servers, 4)
		host, web, app, db := w.Observation.Servers[0], w.Observation.Servers[1], w.Observation.Servers[2], w.Observation.Servers[3]
		busy := nodeUser(k) + nodeSystem(k)
		assert.InDelta(t, busy/(1-nodeSteal(k)), host.CPU, 1e-9, "node, window %d: busy over the CPU time less steal, iowait idle", k)
		assert.InDelta(t, webCores(k)/webQuotaCores, web.CPU, 1e-9, "cadvisor, window %d", k)
		assert.InDelta(t, webThrottled(k), web.Throttled, 1e-9, "cadvisor throttled, window %d", k)
		assert.InDelta(t, appCores(k)/appQuotaCores, app.CPU, 1e-9, "kubelet, window %d: the container alone, not its pod's cgroup", k)
		assert.Zero(t, app.Throttled, "kubelet throttled, window %d", k)
		assert.InDelta(t, 2*dbCoresPerCPU(k)/dbCores, db.CPU, 1e-9, "cadvisor per CPU without a quota, window %d: over the tier's cores", k)
		assert.Zero(t, db.Throttled, "no quota, never throttled: window %d", k)
	}
}
