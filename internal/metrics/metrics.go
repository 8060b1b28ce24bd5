// Package metrics turns a campaign's results into Prometheus metrics, named
// by Prometheus conventions (base units, _total for counters, _info for
// labels-only facts), for CI capacity checks: a text file for
// node_exporter's textfile collector, or a push to a Pushgateway.
package metrics

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
	"github.com/prometheus/common/expfmt"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/safefile"
)

// Set is a registry of one command's results; every metric carries the
// topology and runner labels.
type Set struct {
	Registry *prometheus.Registry
	topology string
	runner   string
	gauges   map[string]*prometheus.GaugeVec
}

// New starts an empty set for a topology (or deployment name) and runner.
func New(topology, runner string) *Set {
	return &Set{Registry: prometheus.NewRegistry(), topology: topology, runner: runner, gauges: map[string]*prometheus.GaugeVec{}}
}

// gauge registers (once) and returns a gauge vector with the common labels first.
func (s *Set) gauge(name, help string, labels ...string) *prometheus.GaugeVec {
	if g, ok := s.gauges[name]; ok {
		return g
	}
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, append([]string{"topology", "runner"}, labels...))
	s.Registry.MustRegister(g)
	s.gauges[name] = g
	return g
}

func (s *Set) set(name, help string, v float64, labels ...string) {
	names := make([]string, 0, len(labels)/2)
	values := []string{s.topology, s.runner}
	for i := 0; i+1 < len(labels); i += 2 {
		names = append(names, labels[i])
		values = append(values, labels[i+1])
	}
	s.gauge(name, help, names...).WithLabelValues(values...).Set(v)
}

// Experiments records how many experiments the command needed.
func (s *Set) Experiments(n int) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "softalloc_experiments_total",
		Help: "Experiments the command needed (recorded ones reused from the journal included)."}, []string{"topology", "runner"})
	s.Registry.MustRegister(c)
	c.WithLabelValues(s.topology, s.runner).Add(float64(n))
}

// Duration records the command's wall time.
func (s *Set) Duration(d time.Duration) {
	s.set("softalloc_campaign_duration_seconds", "Wall time of the campaign.", d.Seconds())
}

// The metrics more than one command writes, with their help texts: one name, one meaning.
const (
	criticalInfo      = "softalloc_critical_resource_info"
	criticalInfoHelp  = "The hardware resource that saturates first (value 1)."
	saturationUsers   = "softalloc_saturation_workload_users"
	saturationHelp    = "Workload at which the critical resource first saturated."
	maxThroughput     = "softalloc_max_throughput_requests_per_second"
	maxThroughputHelp = "Highest throughput seen, pages per second."
	goodputRatio      = "softalloc_goodput_vs_best_ratio"
	goodputRatioHelp  = "Maximum goodput of an allocation over the best of the grid."
	checkPassed       = "softalloc_check_passed"
	checkPassedHelp   = "1 when a capacity check held, 0 when it failed."
	trialThroughput   = "softalloc_simulated_throughput_requests_per_second"
	trialThroughputH  = "Throughput of an allocation at a workload, pages per second."
	trialGoodput      = "softalloc_simulated_goodput_requests_per_second"
	trialGoodputHelp  = "Goodput of an allocation at a workload and SLA threshold, pages per second."
	trialCPU          = "softalloc_simulated_cpu_utilization_ratio"
	trialCPUHelp      = "Mean CPU utilisation of a server."
)

// Critical records the critical resource.
func (s *Set) Critical(c algorithms.Critical) {
	s.set("softalloc_critical_resource_utilization_ratio", "Utilisation of the critical resource when it was found saturated.",
		c.Utilization, "tier", c.Tier, "resource", c.Resource)
	s.Capacity(c.MaxThroughput, c.Tier, c.Resource, c.SaturationWorkload)
}

// Capacity records the highest throughput and, when one saturated (tier
// not empty), the first resource to saturate and the workload where it did.
func (s *Set) Capacity(maxThroughputPages float64, tier, resource string, saturationWorkload int) {
	if tier != "" {
		s.set(criticalInfo, criticalInfoHelp, 1, "tier", tier, "resource", resource)
		s.set(saturationUsers, saturationHelp, float64(saturationWorkload))
	}
	s.set(maxThroughput, maxThroughputHelp, maxThroughputPages)
}

// CheckPassed records whether a capacity check held.
func (s *Set) CheckPassed(check string, ok bool) {
	v := 0.0
	if ok {
		v = 1
	}
	s.set(checkPassed, checkPassedHelp, v, "check", check)
}

// GoodputRatio records an allocation's maximum goodput over the grid's best,
// and the role it played ("recommended", "best", "practitioners", ...).
func (s *Set) GoodputRatio(allocation, role string, ratio float64) {
	s.set(goodputRatio, goodputRatioHelp, ratio, "allocation", allocation, "role", role)
}

// Trial records one trial of an allocation at a workload: throughput,
// goodput by SLA threshold (as written) and CPU by server.
func (s *Set) Trial(allocation string, users int, throughput float64, goodput map[string]float64, cpu map[string]float64) {
	u := strconv.Itoa(users)
	s.set(trialThroughput, trialThroughputH, throughput, "allocation", allocation, "users", u)
	for _, sla := range sortedKeys(goodput) {
		s.set(trialGoodput, trialGoodputHelp, goodput[sla], "allocation", allocation, "users", u, "sla_seconds", sla)
	}
	for _, server := range sortedKeys(cpu) {
		s.set(trialCPU, trialCPUHelp, cpu[server], "allocation", allocation, "users", u, "server", server)
	}
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Goodput records a goodput figure of an allocation at an SLA threshold.
func (s *Set) Goodput(allocation string, sla float64, v float64) {
	s.set("softalloc_goodput_requests_per_second", "Highest goodput (pages answered within the SLA threshold per second) of an allocation.",
		v, "allocation", allocation, "sla_seconds", strconv.FormatFloat(sla, 'g', -1, 64))
}

// Recommendation records recommend's answer.
func (s *Set) Recommendation(r algorithms.Recommendation) {
	s.Critical(r.Critical)
	s.set("softalloc_min_jobs", "Concurrent jobs in the critical tier at the minimum saturating workload (Little's law).", r.MinJobs.MinJobs)
	s.set("softalloc_min_saturating_workload_users", "Minimum saturating workload WLmin.", float64(r.MinJobs.WLmin))
	for _, t := range r.Tiers {
		s.set("softalloc_recommended_pool_size", "Recommended pool size per server.", float64(t.ThreadsPerServer), "tier", t.Name, "pool", algorithms.PoolThreads)
		if t.ConnectionsPerServer != nil {
			s.set("softalloc_recommended_pool_size", "Recommended pool size per server.", float64(*t.ConnectionsPerServer), "tier", t.Name, "pool", algorithms.PoolConnections)
		}
	}
}

// TrialsGoodput records, per allocation, the highest goodput at sla over trials.
func (s *Set) TrialsGoodput(trials []algorithms.Trial, sla float64, format func(algorithms.Allocation) string) {
	best := map[string]float64{}
	for _, t := range trials {
		a := format(t.Experiment.Allocation)
		if g := t.Observation.Goodput(sla); g > best[a] {
			best[a] = g
		}
	}
	keys := make([]string, 0, len(best))
	for k := range best {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, a := range keys {
		s.Goodput(a, sla, best[a])
	}
}

// WriteFile writes the text exposition format atomically and durably (a
// synced temporary file renamed over the target), so a textfile collector
// never reads half a file; through a symlink to its target, never over a
// device or pipe.
func (s *Set) WriteFile(path string) error {
	mfs, err := s.Registry.Gather()
	if err != nil {
		return fmt.Errorf("metrics file %q: %w", path, err)
	}
	err = safefile.Write(path, 0o644, func(w io.Writer) error {
		for _, mf := range mfs {
			if _, err := expfmt.MetricFamilyToText(w, mf); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("metrics file %q: %w", path, err)
	}
	return nil
}

// Push sends the set to a Pushgateway, replacing the job's group.
func (s *Set) Push(ctx context.Context, url, job string, grouping map[string]string) error {
	p := push.New(url, job).Gatherer(s.Registry).Client(&http.Client{Timeout: 30 * time.Second})
	keys := make([]string, 0, len(grouping))
	for k := range grouping {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p = p.Grouping(k, grouping[k])
	}
	if err := p.PushContext(ctx); err != nil {
		return fmt.Errorf("push to %s (job %q): %w", url, job, err)
	}
	return nil
}

// ParseGrouping reads k=v pairs.
func ParseGrouping(pairs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("--grouping %q: want LABEL=VALUE", p)
		}
		out[k] = v
	}
	return out, nil
}
