package live

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/internal/duration"
	"github.com/softalloc/softalloc/internal/oneline"
)

// Config is the live runner's part of a deployment file's runner section.
// The keys name, command, retries, timeout and protocol belong to the CLI and are
// ignored here; every other key is checked, so a misspelt one is an error.
type Config struct {
	// Target is the base URL the workload's paths are joined to.
	Target string `yaml:"target"`
	// Workload is the workload file (relative paths are relative to the
	// deployment file).
	Workload string `yaml:"workload"`
	// Prometheus is the base URL of the Prometheus server to query.
	Prometheus string `yaml:"prometheus"`
	// Health is polled until it answers 2xx before each trial's ramp-up.
	Health string `yaml:"health"`
	// Hook is the argv run to apply an allocation, with {tier.pool}
	// placeholders ({web.threads}, {app.threads}, {app.connections}); run
	// from the deployment file's directory, without a shell. Empty: the
	// allocation is not applied (the runner warns once).
	Hook []string `yaml:"hook"`
	// HookTimeout bounds one run of the hook (default 5m).
	HookTimeout duration.Seconds `yaml:"hookTimeout"`
	// HealthTimeout bounds the wait for Health (default 2m).
	HealthTimeout duration.Seconds `yaml:"healthTimeout"`
	// ScrapeTimeout bounds the wait, after a trial, for Prometheus to have
	// scraped every target past the runtime window (default 1m).
	ScrapeTimeout duration.Seconds `yaml:"scrapeTimeout"`
	// QueryTimeout bounds each query to Prometheus (default: 30s for a
	// trial's instant queries, 2m for a range query over recorded traffic,
	// 1m for a look-up of the series a query names).
	QueryTimeout duration.Seconds `yaml:"queryTimeout"`
	// AllowedHosts lists hosts other than loopback that the runner may send
	// requests to (host names, IP addresses or CIDR prefixes). Empty: loopback only.
	AllowedHosts []string `yaml:"allowedHosts"`
	// RequestTimeout bounds each HTTP request of the load (default 30s).
	RequestTimeout duration.Seconds `yaml:"requestTimeout"`
	// KeepAlive reuses each user's connection between requests (default
	// true); false opens one connection per request, as the RUBBoS client.
	KeepAlive *bool `yaml:"keepAlive"`
	// MaxUsers and MaxRequests bound one trial (defaults 20,000 users and
	// 10,000,000 requests): a typo in a workload must not become a flood.
	MaxUsers    int   `yaml:"maxUsers"`
	MaxRequests int64 `yaml:"maxRequests"`
	// MaxErrorShare is the share of the window's pages that may fail
	// (refused, timed out, 5xx) for the trial to count as a measurement
	// (default 0.5): past it the trial measured an outage, not the
	// deployment, and is retried and never journaled.
	MaxErrorShare *float64 `yaml:"maxErrorShare"`
	// ThinkTime overrides the workload file's mean think time.
	ThinkTime duration.Seconds `yaml:"thinkTime"`
	// RampUp, Runtime and RampDown are the trial schedule used when the
	// command line names none (default 1m, 5m, 10s).
	RampUp   duration.Seconds `yaml:"rampUp"`
	Runtime  duration.Seconds `yaml:"runtime"`
	RampDown duration.Seconds `yaml:"rampDown"`
	// Precision is the default trials' precision (default: softalloc's, 2%;
	// 0: fixed trials of rampUp and runtime); --precision and --fixed win.
	Precision *float64 `yaml:"precision"`
	// Interval is the length of the intervals an adaptive trial is
	// measured in (default 1s): Prometheus's scrape interval, at which its
	// range queries read every server's series (adaptive.go).
	Interval duration.Seconds `yaml:"interval"`
	// Seed makes the users' random choices repeatable (default 1).
	Seed uint64 `yaml:"seed"`
	// Label is free text naming the deployment's state (a CPU cap, a
	// version) so that a journal never mixes experiments of different states.
	Label string `yaml:"label"`
	// Fingerprint identifies the application's own state by a command's
	// output or files' contents, hashed into the journal's keys once per
	// campaign: after a change to the application, no earlier record is
	// reused (fingerprint.go).
	Fingerprint *Fingerprint `yaml:"fingerprint"`
	// WarmUp is a load run after each apply (the hook and the health
	// check), before the trial's ramp-up: a duration, or settle (until the
	// CPU per page of consecutive intervals agrees within the precision,
	// for at most a bound), so that caches a reload emptied (OPcache, APCu)
	// are full again when the trial starts (warmup.go). Absent: none.
	WarmUp *WarmUp `yaml:"warmUp"`
	// Tiers say how each tier's servers are observed, by tier name.
	Tiers map[string]TierConfig `yaml:"tiers"`
	// Pages are the deployment's page-level figures, read only from recorded
	// metrics (Windows): an experiment's come from its load generator.
	Pages PageQueries `yaml:"pages"`

	// dir is the deployment file's directory.
	dir string
}

// TierConfig is how one tier is observed.
type TierConfig struct {
	// Presets name query sets to start from, applied in order (later ones
	// win): node, cgroup, apache, tomcat, hikari, jvm, mysql, bboard. See Presets.
	Presets []string `yaml:"presets"`
	// Servers holds per-replica placeholder values, in replica order:
	// {instance: "10.0.0.5:9117", node: "10.0.0.5:9100"} makes {instance}
	// and {node} in this tier's queries. Absent: one server, no values.
	Servers []map[string]string `yaml:"servers"`
	// Queries override the presets' queries.
	Queries Queries `yaml:"queries"`
}

// Queries are the PromQL expressions of one server's observation. Each
// must evaluate to a scalar or a one-element vector at the end of the
// runtime window. Placeholders: {window} (the runtime, e.g. 300000ms),
// {windowSeconds} (the same in seconds, 300, to turn a count over the window
// into a rate), {tier}, {server} (web-1), {cores} (the tier's cores), and
// each key of the tier's servers entry.
type Queries struct {
	// CPU is the utilisation in [0,1] of all the server's cores: a query in
	// cores divides by {cores}. Each utilisation here (cpu, throttled,
	// gcShare, resources, a pool's fullShare) that reads outside [0,1] by more
	// than ShareTolerance fails the trial, or is its window's problem.
	CPU string `yaml:"cpu"`
	// Throttled is, under a CPU quota, the share in [0,1] of the quota's
	// periods in which the server was throttled (cgroup cpu.stat's
	// nr_throttled / nr_periods).
	Throttled string `yaml:"throttled"`
	// Throughput is requests per second the server completed.
	Throughput string `yaml:"throughput"`
	// ResponseTime is the mean residence per request, seconds.
	ResponseTime string `yaml:"responseTime"`
	// GCShare is the share in [0,1] of the window a JVM spent in
	// stop-the-world garbage collection (pause seconds per second).
	GCShare string `yaml:"gcShare"`
	// Pools hold busy, size and fullShare queries by pool name (threads,
	// connections).
	Pools map[string]PoolQueries `yaml:"pools"`
	// Resources are other hardware utilisations in [0,1] (disk, network,
	// memory).
	Resources map[string]string `yaml:"resources"`
	// OOMKills counts the server's processes the OOM killer has killed (a
	// counter, read as an instant value before the trial's ramp-up and at its
	// window's end): a rise fails the trial, naming the server, the kills and
	// MemoryLimit, and the trial is neither retried nor journaled.
	OOMKills string `yaml:"oomKills"`
	// MemoryLimit is the server's memory limit in bytes, named when an OOM
	// kill fails a trial.
	MemoryLimit string `yaml:"memoryLimit"`

	// About describes a preset to its users (softalloc presets,
	// docs/deployment.md); a deployment file cannot set it.
	About PresetAbout `yaml:"-"`
}

// PageQueries are PromQL expressions of the whole deployment's pages, for
// windows of its own traffic (Windows): the live runner's experiments
// measure pages at the load generator instead. Each must give one number per
// window; the only placeholders are {window} and {windowSeconds}.
type PageQueries struct {
	// Throughput is pages completed per second. Absent: the sum of the first
	// tier's servers' throughput, which counts requests, not pages, when a
	// page makes several requests to it (embedded images).
	Throughput string `yaml:"throughput"`
	// ResponseTime is the mean page response time in seconds. Absent: unknown (0).
	ResponseTime string `yaml:"responseTime"`
	// Users is the mean number of concurrent users (sessions). Absent: unknown (0).
	Users string `yaml:"users"`
}

// PoolQueries observe one pool.
type PoolQueries struct {
	// Busy is the mean busy units over the window.
	Busy string `yaml:"busy"`
	// Size is the pool's size; absent, the allocation's size is used.
	Size string `yaml:"size"`
	// FullShare is the share of the window with every unit busy; absent,
	// unknown (the algorithm then uses busy/size).
	FullShare string `yaml:"fullShare"`
}

// Defaults of the zero fields.
const (
	DefaultHookTimeout    = 5 * time.Minute
	DefaultHealthTimeout  = 2 * time.Minute
	DefaultScrapeTimeout  = time.Minute
	DefaultRequestTimeout = 30 * time.Second
	DefaultMaxUsers       = 20000
	DefaultMaxRequests    = 10_000_000
	DefaultMaxErrorShare  = 0.5
	DefaultRampUp         = time.Minute
	DefaultRuntime        = 5 * time.Minute
	DefaultRampDown       = 10 * time.Second
	DefaultInterval       = time.Second
)

// cliKeys are read by the CLI, not by this runner.
var cliKeys = map[string]bool{"name": true, "command": true, "retries": true, "timeout": true, "protocol": true}

var sectionLine = regexp.MustCompile(`line [0-9]+: `)

// ParseConfig reads the runner section of the deployment file at path.
func ParseConfig(section map[string]any, path string) (Config, error) {
	return parseConfig(section, path, false)
}

// parseConfig reads the section; passive (reading recorded metrics only)
// needs no target and no workload, since no load is generated.
func parseConfig(section map[string]any, path string, passive bool) (Config, error) {
	var c Config
	rest := map[string]any{}
	for k, v := range section {
		if !cliKeys[k] {
			rest[k] = v
		}
	}
	// Through YAML again, so that the struct's KnownFields check names a
	// misspelt key and the Duration type reads durations.
	b, err := yaml.Marshal(rest)
	if err != nil {
		return c, fmt.Errorf("runner section: %w", err)
	}
	if err := oneline.DecodeYAML(b, &c); err != nil && len(rest) > 0 {
		// The lines are those of the section written out again, not of the
		// file: drop them; the paths DecodeYAML gives are the section's.
		msg := sectionLine.ReplaceAllString(err.Error(), "")
		return c, fmt.Errorf("runner section: %s", strings.ReplaceAll(msg, "yaml: ", ""))
	}
	c.dir = filepath.Dir(path)
	if path == "" {
		c.dir = "."
	}
	return c, c.check(passive)
}

func (c *Config) check(passive bool) error {
	fail := func(format string, a ...any) error { return fmt.Errorf("runner section: "+format, a...) }
	if err := c.checkDurations(); err != nil {
		return fail("%w", err)
	}
	for _, u := range []struct{ key, val string }{{"target", c.Target}, {"prometheus", c.Prometheus}} {
		if u.val == "" && (!passive || u.key == "prometheus") {
			return fail("%s: missing; want a URL such as http://127.0.0.1:8080", u.key)
		}
	}
	for _, u := range []struct{ key, val string }{{"target", c.Target}, {"prometheus", c.Prometheus}, {"health", c.Health}} {
		if u.val == "" {
			continue
		}
		p, err := url.Parse(u.val)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return fail("%s: want an http:// or https:// URL, got %q", u.key, u.val)
		}
	}
	if c.Workload == "" && !passive {
		return fail("workload: missing; want a workload file (see testbed/workload.yaml)")
	}
	if c.Precision != nil && !(*c.Precision >= 0 && *c.Precision <= 0.5) {
		return fail("precision: want a share in [0, 0.5] such as 0.02 (0: fixed trials), got %v", *c.Precision)
	}
	if c.MaxErrorShare != nil && !(*c.MaxErrorShare >= 0 && *c.MaxErrorShare <= 1) {
		return fail("maxErrorShare: want a share in [0,1] of the pages that may fail, got %v", *c.MaxErrorShare)
	}
	if err := c.Fingerprint.check(); err != nil {
		return fail("%w", err)
	}
	if err := c.WarmUp.check(); err != nil {
		return fail("%w", err)
	}
	if c.MaxUsers < 0 || c.MaxRequests < 0 {
		return fail("maxUsers and maxRequests: want positive numbers")
	}
	for _, q := range []struct{ key, val string }{
		{"throughput", c.Pages.Throughput}, {"responseTime", c.Pages.ResponseTime}, {"users", c.Pages.Users},
	} {
		// Refused here rather than at the first query: a page figure has no
		// tier or server, so {window} and {windowSeconds} are its only placeholders.
		for _, m := range placeholder.FindAllStringSubmatch(q.val, -1) {
			if m[1] != "window" && m[1] != "windowSeconds" {
				return fail("pages.%s: placeholder %s has no value; a page query has only {window} and {windowSeconds}", q.key, m[0])
			}
		}
	}
	for name, t := range c.Tiers {
		for _, p := range t.Presets {
			if _, ok := Presets[p]; !ok {
				return fail("tiers.%s.presets: unknown preset %q; want one of %s", name, p, strings.Join(PresetNames(), ", "))
			}
		}
	}
	return nil
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	def := func(d *duration.Seconds, v time.Duration) {
		if *d == 0 {
			*d = duration.Of(v)
		}
	}
	def(&c.HookTimeout, DefaultHookTimeout)
	def(&c.HealthTimeout, DefaultHealthTimeout)
	def(&c.ScrapeTimeout, DefaultScrapeTimeout)
	def(&c.RequestTimeout, DefaultRequestTimeout)
	def(&c.RampUp, DefaultRampUp)
	def(&c.Runtime, DefaultRuntime)
	def(&c.RampDown, DefaultRampDown)
	def(&c.Interval, DefaultInterval)
	if c.MaxUsers == 0 {
		c.MaxUsers = DefaultMaxUsers
	}
	if c.MaxErrorShare == nil {
		share := DefaultMaxErrorShare
		c.MaxErrorShare = &share
	}
	if c.MaxRequests == 0 {
		c.MaxRequests = DefaultMaxRequests
	}
	if c.KeepAlive == nil {
		t := true
		c.KeepAlive = &t
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	return c
}

// path resolves a file name of the section against the deployment file's directory.
func (c Config) path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.dir, p)
}

// Presets are documented default queries for common exporters. Each is a
// starting point: a deployment file overrides any query it needs to. Each
// says in About what it reads and the exporter it needs (softalloc presets
// prints them, docs/deployment.md lists them).
//
// The presets of presets_*.go join these: presets_host.go's read CPU from
// what deployments run (node_exporter, process-exporter, a client library's
// process counter, cAdvisor, the kubelet).
var Presets = joinPresets(builtinPresets, hostPresets, phpPresets, vthreadPresets, pgPresets, pgbouncerPresets)

var builtinPresets = map[string]Queries{
	"cgroup": {
		About: PresetAbout{
			Reads: "a tier's CPU over its cgroup's CPU quota, the share of quota periods in which it was throttled, " +
				"its memory over its cgroup's memory limit, and its OOM kills",
			Exporter: "testbed/cgexporter, the testbed's cgroup exporter ({tier}: the tier's cgroup label)",
			Notes: "resources.memory is the larger of the tier's peak working set over its memory limit (the page cache the kernel " +
				"reclaims first left out) and the share of the window in which every task stalled on memory (PSI full, cgroup v2 only). " +
				"A tier without a memory limit reads against the machine's memory, so it saturates only when the machine does. " +
				"An OOM kill during a trial fails it, naming the tier, the kills and the limit; it is neither retried nor journaled.",
		},
		CPU:         `sum(rate(softalloc_testbed_cpu_usage_seconds_total{tier="{tier}"}[{window}])) / sum(softalloc_testbed_cpu_limit_cores{tier="{tier}"})`,
		Throttled:   `sum(rate(softalloc_testbed_cpu_throttled_periods_total{tier="{tier}"}[{window}])) / sum(rate(softalloc_testbed_cpu_periods_total{tier="{tier}"}[{window}]))`,
		Resources:   map[string]string{"memory": cgroupMemory},
		OOMKills:    `sum(softalloc_testbed_memory_oom_kills_total{tier="{tier}"})`,
		MemoryLimit: `max(softalloc_testbed_memory_limit_bytes{tier="{tier}"})`,
	},
	"apache": {
		About: PresetAbout{
			Reads:    "Apache's page throughput and response time, and its worker threads",
			Exporter: "apache_exporter, with mod_status and ExtendedStatus On ({instance})",
			Notes: "The exporter fetches /server-status at each scrape, and Apache counts that request among its accesses: " +
				"the scrapes, one sample of apache_up each, are taken out of the throughput (1 request/s at idle at a 1 s scrape interval), " +
				"and a request or less left in the window is none. Another client of /server-status (a second Prometheus, a health probe) still counts.",
		},
		Throughput: apachePages + " * " + apacheServed,
		// The scrapes' durations stay in the sum (mod_status counts none
		// apart): a status page takes well under a millisecond, beside pages
		// of tens. Their count is out of the divisor, where it weighed: at 2
		// pages/s and a 1 s scrape interval it cut the mean by a third. With
		// no page served the mean is 0/0, as any idle server's, not the
		// scrapes' durations over nothing.
		ResponseTime: `sum(rate(apache_duration_ms_total{instance="{instance}"}[{window}])) / 1000 * ` + apacheServed + " / " + apachePages,
		Pools: map[string]PoolQueries{"threads": {
			Busy: `avg_over_time(apache_workers{state="busy",instance="{instance}"}[{window}])`,
			Size: `sum(last_over_time(apache_workers{instance="{instance}"}[{window}]))`,
		}},
	},
	// Subqueries name their resolution: without one Prometheus evaluates
	// them at its evaluation interval (1m by default), a single point in a
	// window of seconds.
	"tomcat": {
		About: PresetAbout{
			Reads:    "Tomcat's request throughput and response time, and its request threads",
			Exporter: "Micrometer's TomcatMetrics and Prometheus registry ({instance}), checked against embedded Tomcat 11 (testbed/java)",
			Notes:    "The thread gauges are sampled at each scrape: busy is their mean over the window and fullShare the share of samples with every thread busy.",
		},
		Throughput:   `sum(rate(tomcat_global_request_seconds_count{instance="{instance}"}[{window}]))`,
		ResponseTime: `sum(rate(tomcat_global_request_seconds_sum{instance="{instance}"}[{window}])) / sum(rate(tomcat_global_request_seconds_count{instance="{instance}"}[{window}]))`,
		Pools: map[string]PoolQueries{"threads": {
			Busy:      `sum(avg_over_time(tomcat_threads_busy_threads{instance="{instance}"}[{window}]))`,
			Size:      `sum(last_over_time(tomcat_threads_config_max_threads{instance="{instance}"}[{window}]))`,
			FullShare: `avg_over_time((sum(tomcat_threads_busy_threads{instance="{instance}"}) >= bool sum(tomcat_threads_config_max_threads{instance="{instance}"}))[{window}:1s])`,
		}},
	},
	"hikari": {
		About: PresetAbout{
			Reads:    "HikariCP's connection pool",
			Exporter: "HikariCP's MicrometerMetricsTrackerFactory ({instance}), checked against HikariCP 7.1",
			Notes:    "Sampled as tomcat's: busy is the mean of the active-connections gauge over the window, fullShare the share of samples with every connection active.",
		},
		Pools: map[string]PoolQueries{"connections": {
			Busy:      `sum(avg_over_time(hikaricp_connections_active{instance="{instance}"}[{window}]))`,
			Size:      `sum(last_over_time(hikaricp_connections_max{instance="{instance}"}[{window}]))`,
			FullShare: `avg_over_time((sum(hikaricp_connections_active{instance="{instance}"}) >= bool sum(hikaricp_connections_max{instance="{instance}"}))[{window}:1s])`,
		}},
	},
	"jvm": {
		About: PresetAbout{
			Reads:    "a JVM's CPU and its stop-the-world garbage-collection pauses",
			Exporter: "Micrometer's JvmGcMetrics and ProcessorMetrics ({instance})",
			Notes: "gcShare is stop-the-world pause seconds per second (G1's or Serial's pauses; a collector's concurrent phases are not in it), " +
				"cpu the JVM process's CPU over {cores} cores. The pause series appears at the JVM's first collection.",
		},
		CPU:     `rate(process_cpu_time_ns_total{instance="{instance}"}[{window}]) / 1e9 / {cores}`,
		GCShare: `sum(rate(jvm_gc_pause_seconds_sum{instance="{instance}"}[{window}]))`,
	},
	"mysql": {
		About: PresetAbout{
			Reads:    "MySQL's or MariaDB's statement throughput and running threads (no latency)",
			Exporter: "mysqld_exporter ({instance})",
			Notes: "It has no per-query latency without performance_schema; with --collect.perf_schema.eventsstatements, set responseTime to " +
				"sum(rate(mysql_perf_schema_events_statements_seconds_total{instance=\"{instance}\"}[{window}])) / " +
				"sum(rate(mysql_perf_schema_events_statements_total{instance=\"{instance}\"}[{window}])). " +
				"The exporter's own query is running at every scrape: busy threads leave it out.",
		},
		Throughput: `rate(mysql_global_status_questions{instance="{instance}"}[{window}])`,
		Pools: map[string]PoolQueries{"threads": {
			// The exporter's own query is running at every scrape.
			Busy: `clamp_min(avg_over_time(mysql_global_status_threads_running{instance="{instance}"}[{window}]) - 1, 0)`,
			Size: `mysql_global_variables_max_connections{instance="{instance}"}`,
		}},
	},
	"bboard": {
		About: PresetAbout{
			Reads:    "the testbed's app: its throughput, response time, threads and connections",
			Exporter: "the testbed's app (testbed/app), a client_golang service ({instance})",
		},
		Throughput:   `sum(rate(bboard_requests_total{instance="{instance}"}[{window}]))`,
		ResponseTime: `sum(rate(bboard_request_duration_seconds_sum{instance="{instance}"}[{window}])) / sum(rate(bboard_request_duration_seconds_count{instance="{instance}"}[{window}]))`,
		Pools: map[string]PoolQueries{
			"threads": {
				Busy:      `rate(bboard_pool_busy_seconds_total{pool="threads",instance="{instance}"}[{window}])`,
				Size:      `bboard_pool_size{pool="threads",instance="{instance}"}`,
				FullShare: `rate(bboard_pool_full_seconds_total{pool="threads",instance="{instance}"}[{window}])`,
			},
			"connections": {
				Busy:      `rate(bboard_pool_busy_seconds_total{pool="connections",instance="{instance}"}[{window}])`,
				Size:      `bboard_pool_size{pool="connections",instance="{instance}"}`,
				FullShare: `rate(bboard_pool_full_seconds_total{pool="connections",instance="{instance}"}[{window}])`,
			},
		},
	},
}

// cgroupMemory is a tier's memory utilisation: the larger of its peak
// working set in the window over its limit, and the share of the window in
// which all its tasks stalled on memory (PSI full), which only v2 exports.
// Labels apart, so that max takes both: "or" alone keeps the first.
const cgroupMemory = `max(label_replace(sum(max_over_time(softalloc_testbed_memory_working_set_bytes{tier="{tier}"}[{window}]))` +
	` / max(last_over_time(softalloc_testbed_memory_limit_bytes{tier="{tier}"}[{window}])), "reading", "workingSet", "", "")` +
	` or label_replace(sum(rate(softalloc_testbed_memory_pressure_seconds_total{tier="{tier}",stall="full"}[{window}])), "reading", "fullStall", "", ""))`

// apachePages is the requests per second Apache served less the exporter's
// scrapes of /server-status (Prometheus's samples of apache_up over the
// window, per second), never below 0: at idle the two differ by the
// extrapolation of rate() at the window's edges, up to a request a window.
const apachePages = `clamp_min(sum(rate(apache_accesses_total{instance="{instance}"}[{window}])) - sum(count_over_time(apache_up{instance="{instance}"}[{window}])) / {windowSeconds}, 0)`

// apacheServed is 1 when more than a request was served in the window, else
// 0: less is that noise, read as no page.
const apacheServed = "(" + apachePages + " > bool (1 / {windowSeconds}))"

// joinPresets is the union of preset sets; a name in two sets is a
// programming error, caught when the package loads.
func joinPresets(sets ...map[string]Queries) map[string]Queries {
	out := map[string]Queries{}
	for _, set := range sets {
		for name, q := range set {
			if _, dup := out[name]; dup {
				panic("live: preset " + name + " is defined twice")
			}
			out[name] = q
		}
	}
	return out
}

// PresetNames lists the presets.
func PresetNames() []string {
	names := make([]string, 0, len(Presets))
	for n := range Presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// merge lays b over a: b's non-empty queries win.
func merge(a, b Queries) Queries {
	out := Queries{Pools: map[string]PoolQueries{}, Resources: map[string]string{}}
	pick := func(x, y string) string {
		if y != "" {
			return y
		}
		return x
	}
	out.CPU, out.Throughput, out.ResponseTime = pick(a.CPU, b.CPU), pick(a.Throughput, b.Throughput), pick(a.ResponseTime, b.ResponseTime)
	out.Throttled = pick(a.Throttled, b.Throttled)
	out.GCShare = pick(a.GCShare, b.GCShare)
	out.OOMKills, out.MemoryLimit = pick(a.OOMKills, b.OOMKills), pick(a.MemoryLimit, b.MemoryLimit)
	for _, q := range []Queries{a, b} {
		for name, p := range q.Pools {
			o := out.Pools[name]
			out.Pools[name] = PoolQueries{Busy: pick(o.Busy, p.Busy), Size: pick(o.Size, p.Size), FullShare: pick(o.FullShare, p.FullShare)}
		}
		for name, r := range q.Resources {
			out.Resources[name] = pick(out.Resources[name], r)
		}
	}
	return out
}

// tierQueries resolves a tier's presets and overrides.
func (t TierConfig) queries() Queries {
	var q Queries
	for _, p := range t.Presets {
		q = merge(q, Presets[p])
	}
	return merge(q, t.Queries)
}

var placeholder = regexp.MustCompile(`\{([A-Za-z][A-Za-z0-9_]*)\}`)

// expand substitutes {name} placeholders; an unknown one is an error, since
// PromQL never uses braces around a bare identifier.
func expand(q string, vars map[string]string) (string, error) {
	var missing []string
	out := placeholder.ReplaceAllStringFunc(q, func(m string) string {
		name := m[1 : len(m)-1]
		if v, ok := vars[name]; ok {
			return v
		}
		missing = append(missing, m)
		return m
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("placeholder %s has no value (set it in the tier's servers entries)", missing[0])
	}
	return out, nil
}
