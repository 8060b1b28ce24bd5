// Command cgexporter exports each testbed tier's CPU accounting to
// Prometheus: the CPU seconds its processes used and the CPU cap it runs
// under, read from its cgroup (v1 cpu + cpuacct, or v2), so that a tier's
// utilisation is usage over its cap, as if it were a server of that many
// cores. Where the machine offers no cgroup CPU controller, -mode proc sums
// the tier's processes from /proc and reports the machine's cores as the cap
// (uncapped).
//
// It exports each tier's memory too (memory.go): the working set against
// the cgroup's limit (v2 memory.current and memory.max; v1 the memory
// hierarchy's usage_in_bytes and limit_in_bytes), the OOM kills and limit
// hits, and PSI memory stalls where the kernel has them (v2). A tier without
// a memory cgroup reads its processes' memory against the machine's.
//
// node_exporter would give a whole machine's CPU; the testbed's tiers share
// one machine, so each needs its own accounting.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18101", "address to serve /metrics on")
	mode := flag.String("mode", "v1", "v1 (cpu and cpuacct hierarchies), v2 (unified) or proc (no cgroups: /proc, uncapped)")
	cpuRoot := flag.String("cpu", "", "v1: the cpu hierarchy's directory holding one cgroup per tier; v2: the directory holding one cgroup per tier")
	acctRoot := flag.String("cpuacct", "", "v1: the cpuacct hierarchy's directory holding one cgroup per tier (default: -cpu)")
	memRoot := flag.String("memory", "", "v1: the memory hierarchy's directory holding one cgroup per tier (default: -cpu's path under the memory hierarchy, /sys/fs/cgroup/memory/...); a tier without one there reads its processes' memory")
	pidDir := flag.String("pids", "", "proc: directory of TIER.pid files")
	tiers := flag.String("tiers", "web,app,db", "tiers, comma-separated: cgroup names, or pid file names in proc mode")
	flag.Parse()
	if *acctRoot == "" {
		*acctRoot = *cpuRoot
	}
	var src source
	switch *mode {
	case "v1":
		if *memRoot == "" {
			*memRoot = siblingHierarchy(*cpuRoot, "memory")
		}
		src = v1{cpu: *cpuRoot, acct: *acctRoot, mem: *memRoot}
	case "v2":
		src = v2{root: *cpuRoot}
	case "proc":
		src = procSource{dir: *pidDir}
	default:
		log.Fatalf("cgexporter: -mode %q: want v1, v2 or proc", *mode)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(&collector{src: src, tiers: strings.Split(*tiers, ",")})
	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Addr: *listen, ReadHeaderTimeout: 10 * time.Second}
	log.Printf("cgexporter: %s mode, tiers %s, on %s", *mode, *tiers, *listen)
	log.Fatal(srv.ListenAndServe())
}

// stats is one tier's CPU accounting; a negative value is unknown.
type stats struct {
	usage          float64 // CPU seconds
	limit          float64 // cores
	throttled      float64 // seconds
	throttledCount float64 // periods
	periods        float64 // quota periods in which the tier had work
	mem            memStats
}

type source interface {
	read(tier string) (stats, error)
}

type collector struct {
	src   source
	tiers []string
}

var (
	descUsage = prometheus.NewDesc("softalloc_testbed_cpu_usage_seconds_total",
		"CPU time used by the tier's processes.", []string{"tier"}, nil)
	descLimit = prometheus.NewDesc("softalloc_testbed_cpu_limit_cores",
		"The tier's CPU cap in cores (quota / period), or the machine's cores when uncapped.", []string{"tier"}, nil)
	descThrottled = prometheus.NewDesc("softalloc_testbed_cpu_throttled_seconds_total",
		"Time the tier's processes were held back by the CPU quota.", []string{"tier"}, nil)
	descThrottledPeriods = prometheus.NewDesc("softalloc_testbed_cpu_throttled_periods_total",
		"Quota periods in which the tier was throttled.", []string{"tier"}, nil)
	descPeriods = prometheus.NewDesc("softalloc_testbed_cpu_periods_total",
		"Quota periods in which the tier had work to run (cpu.stat's nr_periods).", []string{"tier"}, nil)

	descMemUsage = prometheus.NewDesc("softalloc_testbed_memory_usage_bytes",
		"Memory charged to the tier's cgroup, page cache included (v2 memory.current, v1 memory.usage_in_bytes); without a memory cgroup, its processes' PSS.", []string{"tier"}, nil)
	descMemWorkingSet = prometheus.NewDesc("softalloc_testbed_memory_working_set_bytes",
		"The tier's memory less the inactive page cache the kernel reclaims first: what its limit must hold.", []string{"tier"}, nil)
	descMemLimit = prometheus.NewDesc("softalloc_testbed_memory_limit_bytes",
		"The tier's memory limit (v2 memory.max, v1 memory.limit_in_bytes), or the machine's memory when it has none below it.", []string{"tier", "limited"}, nil)
	descOOMKills = prometheus.NewDesc("softalloc_testbed_memory_oom_kills_total",
		"Processes of the tier the OOM killer killed (v2 memory.events oom_kill, v1 memory.oom_control oom_kill).", []string{"tier"}, nil)
	descLimitHits = prometheus.NewDesc("softalloc_testbed_memory_limit_hits_total",
		"Times the tier's memory reached its limit (v2 memory.events max, v1 memory.failcnt).", []string{"tier"}, nil)
	descMemStall = prometheus.NewDesc("softalloc_testbed_memory_pressure_seconds_total",
		"PSI: time in which some (at least one) or full (every non-idle) task of the tier stalled on memory (memory.pressure's total).", []string{"tier", "stall"}, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descUsage
	ch <- descLimit
	ch <- descThrottled
	ch <- descThrottledPeriods
	ch <- descPeriods
	ch <- descMemUsage
	ch <- descMemWorkingSet
	ch <- descMemLimit
	ch <- descOOMKills
	ch <- descLimitHits
	ch <- descMemStall
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for _, t := range c.tiers {
		s, err := c.src.read(t)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(descUsage, fmt.Errorf("tier %s: %w", t, err))
			continue
		}
		ch <- prometheus.MustNewConstMetric(descUsage, prometheus.CounterValue, s.usage, t)
		ch <- prometheus.MustNewConstMetric(descLimit, prometheus.GaugeValue, s.limit, t)
		if s.throttled >= 0 {
			ch <- prometheus.MustNewConstMetric(descThrottled, prometheus.CounterValue, s.throttled, t)
			ch <- prometheus.MustNewConstMetric(descThrottledPeriods, prometheus.CounterValue, s.throttledCount, t)
			ch <- prometheus.MustNewConstMetric(descPeriods, prometheus.CounterValue, s.periods, t)
		}
		collectMemory(ch, t, s.mem)
	}
}

func collectMemory(ch chan<- prometheus.Metric, tier string, m memStats) {
	if m.usage < 0 {
		return
	}
	ch <- prometheus.MustNewConstMetric(descMemUsage, prometheus.GaugeValue, m.usage, tier)
	ch <- prometheus.MustNewConstMetric(descMemWorkingSet, prometheus.GaugeValue, m.workingSet, tier)
	ch <- prometheus.MustNewConstMetric(descMemLimit, prometheus.GaugeValue, m.limit, tier, strconv.FormatBool(m.limited))
	if m.oomKills >= 0 {
		ch <- prometheus.MustNewConstMetric(descOOMKills, prometheus.CounterValue, m.oomKills, tier)
	}
	if m.limitHits >= 0 {
		ch <- prometheus.MustNewConstMetric(descLimitHits, prometheus.CounterValue, m.limitHits, tier)
	}
	for _, p := range []struct {
		kind string
		v    float64
	}{{"some", m.someStall}, {"full", m.fullStall}} {
		if p.v >= 0 {
			ch <- prometheus.MustNewConstMetric(descMemStall, prometheus.CounterValue, p.v, tier, p.kind)
		}
	}
}

// siblingHierarchy is dir's path under another v1 hierarchy:
// /sys/fs/cgroup/cpu/softalloc-testbed under memory is
// /sys/fs/cgroup/memory/softalloc-testbed. "" when dir is not under
// /sys/fs/cgroup.
func siblingHierarchy(dir, controller string) string {
	rest, ok := strings.CutPrefix(filepath.Clean(dir), "/sys/fs/cgroup/")
	if !ok {
		return ""
	}
	_, sub, _ := strings.Cut(rest, "/")
	return filepath.Join("/sys/fs/cgroup", controller, sub)
}

func readNumber(path string) (float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
}

// readKV reads a "key value" file such as cpu.stat.
func readKV(path string) (map[string]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			out[k] = n
		}
	}
	return out, sc.Err()
}

type v1 struct{ cpu, acct, mem string }

func (s v1) read(tier string) (stats, error) {
	ns, err := readNumber(filepath.Join(s.acct, tier, "cpuacct.usage"))
	if err != nil {
		return stats{}, err
	}
	quota, err := readNumber(filepath.Join(s.cpu, tier, "cpu.cfs_quota_us"))
	if err != nil {
		return stats{}, err
	}
	period, err := readNumber(filepath.Join(s.cpu, tier, "cpu.cfs_period_us"))
	if err != nil {
		return stats{}, err
	}
	st := stats{usage: ns / 1e9, limit: float64(runtime.NumCPU()), throttled: -1}
	if quota > 0 && period > 0 {
		st.limit = quota / period
	}
	if kv, err := readKV(filepath.Join(s.cpu, tier, "cpu.stat")); err == nil {
		st.throttled, st.throttledCount, st.periods = kv["throttled_time"]/1e9, kv["nr_throttled"], kv["nr_periods"]
	}
	st.mem, err = s.memory(tier)
	return st, err
}

// memory reads the tier's memory cgroup, or, when the memory hierarchy has
// none for it, the memory of the processes in its cpu cgroup.
func (s v1) memory(tier string) (memStats, error) {
	dir := filepath.Join(s.mem, tier)
	if s.mem != "" {
		if _, err := os.Stat(filepath.Join(dir, "memory.usage_in_bytes")); err == nil {
			return memoryV1(dir)
		}
	}
	pids, err := cgroupProcs(filepath.Join(s.cpu, tier))
	if err != nil {
		return unknownMem(), err
	}
	return memoryOfProcesses(pids)
}

type v2 struct{ root string }

func (s v2) read(tier string) (stats, error) {
	kv, err := readKV(filepath.Join(s.root, tier, "cpu.stat"))
	if err != nil {
		return stats{}, err
	}
	st := stats{usage: kv["usage_usec"] / 1e6, limit: float64(runtime.NumCPU()),
		throttled: kv["throttled_usec"] / 1e6, throttledCount: kv["nr_throttled"], periods: kv["nr_periods"]}
	b, err := os.ReadFile(filepath.Join(s.root, tier, "cpu.max"))
	if err != nil {
		return stats{}, err
	}
	if f := strings.Fields(string(b)); len(f) == 2 && f[0] != "max" {
		q, err1 := strconv.ParseFloat(f[0], 64)
		p, err2 := strconv.ParseFloat(f[1], 64)
		if err1 == nil && err2 == nil && p > 0 {
			st.limit = q / p
		}
	}
	st.mem, err = memoryV2(filepath.Join(s.root, tier))
	return st, err
}

// procSource sums utime and stime of a tier's process tree (the pid in
// DIR/TIER.pid and its descendants). CPU of processes that have exited is
// lost, so the counter may step back when a worker exits: a fallback only.
type procSource struct{ dir string }

const clockTicks = 100 // USER_HZ on Linux

func (s procSource) read(tier string) (stats, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, tier+".pid"))
	if err != nil {
		return stats{}, err
	}
	root, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return stats{}, fmt.Errorf("pid file of %s: %w", tier, err)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return stats{}, err
	}
	parent := map[int]int{}
	ticks := map[int]float64{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		// The command name may hold spaces; the fields after its ")" are fixed.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		ut, _ := strconv.ParseFloat(f[11], 64)
		stt, _ := strconv.ParseFloat(f[12], 64)
		parent[pid], ticks[pid] = pp, ut+stt
	}
	if _, ok := parent[root]; !ok {
		return stats{}, errors.New("process not running")
	}
	var sum float64
	var tree []int
	for pid, t := range ticks {
		for p, n := pid, 0; p > 0 && n < 64; p, n = parent[p], n+1 {
			if p == root {
				sum += t
				tree = append(tree, pid)
				break
			}
		}
	}
	mem, err := memoryOfProcesses(tree)
	return stats{usage: sum / clockTicks, limit: float64(runtime.NumCPU()), throttled: -1, mem: mem}, err
}
