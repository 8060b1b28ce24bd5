package live

// PinnedCarriers is the resource a virtual-thread JVM's carriers are when
// pinned virtual threads hold them blocked (the vthreads preset): the share
// of the carriers' time a virtual thread spent blocked while pinned to one.
// At or past the hardware threshold the carriers, not the CPU, are the limit
// (find-critical names it as it names the CPU).
const PinnedCarriers = "pinnedCarriers"

// vthreadPresets read an application on virtual threads (issue 38): the
// JVM's scheduler and pinning, and a concurrency limit's permits where the
// thread pool was.
var vthreadPresets = map[string]Queries{
	"vthreads": {
		About: PresetAbout{
			Reads: "a JVM's virtual threads: the share of its carrier threads' time spent blocked by pinned virtual threads " +
				"(resources." + PinnedCarriers + "), which find-critical names when it is the limit",
			Exporter: "micrometer-java21's VirtualThreadMetrics on Java 21+ ({instance}), checked against Micrometer 1.17 on Temurin 25 (testbed/java)",
			Notes: "jvm_threads_virtual_pinned_seconds comes from JFR's jdk.VirtualThreadPinned event, recorded when a pinned virtual " +
				"thread that blocked for 20 ms or more unmounts, so a pin counts at its end and shorter ones not at all: a lower bound. " +
				"The carriers are jvm_threads_virtual_parallelism (from JDK 24's scheduler MXBean), else the JVM's CPUs " +
				"(system_cpu_count of ProcessorMetrics), the scheduler's default. On JDK 24+ a synchronized block no longer pins " +
				"(JEP 491); native frames and class initialisation still do, and JDBC drivers built on synchronized pin on JDK 21-23.",
		},
		Resources: map[string]string{PinnedCarriers: `clamp_max(sum(rate(jvm_threads_virtual_pinned_seconds_sum{instance="{instance}"}[{window}])) / ` +
			`max(last_over_time(jvm_threads_virtual_parallelism{instance="{instance}"}[{window}]) or last_over_time(system_cpu_count{instance="{instance}"}[{window}])), 1)`},
	},
	"permits": {
		About: PresetAbout{
			Reads: "a concurrency limit's permits where a virtual-thread app's thread pool was: busy (the mean of pages holding one), " +
				"size, and the share of the window with every permit taken or a page waiting",
			Exporter: "the testbed's Java app's Limit filter through Micrometer ({instance}): bboard_limit_*; a limit of your own exports the same " +
				"with its own names (busy: the rate of a timer's sum of permit-held seconds; size: a gauge of the permits; full: in use >= permits or waiters > 0)",
			Notes: "busy is Little's law without sampling: the rate of the held-time timer's sum is the mean number of pages inside. " +
				"A limit of 0 (none) reads size 0: the tier then has no pool the model can size, and its jobs are bounded only by the tier in front.",
		},
		Pools: map[string]PoolQueries{"threads": {
			Busy: `sum(rate(bboard_limit_held_seconds_sum{instance="{instance}"}[{window}]))`,
			Size: `max(last_over_time(bboard_limit_permits{instance="{instance}"}[{window}]))`,
			FullShare: `avg_over_time(clamp_max(` +
				`(sum(bboard_limit_permits_in_use{instance="{instance}"}) >= bool sum(bboard_limit_permits{instance="{instance}"}))` +
				` + (sum(bboard_limit_waiting{instance="{instance}"}) > bool 0), 1)[{window}:1s])`,
		}},
	},
}
