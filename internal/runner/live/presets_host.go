package live

// hostPresets read what a deployment already runs: a server's CPU, beside
// the testbed's own exporter (the cgroup preset), and a database's latency
// from the database itself, for an application that measures none. Each cpu
// query is a share in [0,1] of a capacity the preset declares (the host's
// CPUs, a container's quota, or {cores}, the tier's cores in the deployment
// file), never of one the runner guesses.
var hostPresets = map[string]Queries{
	"node": {
		About: PresetAbout{
			Reads:    "the CPU utilisation of a host, all its CPUs",
			Exporter: "node_exporter on each server ({node}: its instance)",
			Notes: "Busy is user, nice, system, irq and softirq time (guest time is inside user and nice), over the CPU time the host " +
				"could run: every mode but steal. iowait is idle (a CPU waiting on a disk runs any other work that comes), and steal, " +
				"the time a hypervisor gave another guest, is neither work nor capacity. The whole host: every process on it counts.",
		},
		CPU: `sum(rate(node_cpu_seconds_total{mode!~"idle|iowait|steal",instance="{node}"}[{window}]))` +
			` / sum(rate(node_cpu_seconds_total{mode!="steal",instance="{node}"}[{window}]))`,
	},
	"process-exporter": {
		About: PresetAbout{
			Reads:    "the CPU of a group of processes (php-fpm's pool, mariadbd) over the tier's cores",
			Exporter: "prometheus-process-exporter ({processExporter}: its instance; {group}: the group's name in its configuration)",
			Notes: "Every mode (user and system) over {cores}, the tier's cores in the deployment file. Children of a matched process " +
				"count in its group (process-exporter's -children, the default). A process that exits takes the CPU it used since the last scrape with it.",
		},
		CPU: `sum(rate(namedprocess_namegroup_cpu_seconds_total{groupname="{group}",instance="{processExporter}"}[{window}])) / {cores}`,
	},
	// No sum: two series (two jobs scraping one process) is an error naming
	// the query, not twice the CPU.
	"process": {
		About: PresetAbout{
			Reads:    "a process's CPU over the tier's cores, from its own process_cpu_seconds_total",
			Exporter: "a Prometheus client library's process collector (Go, Java simpleclient, Python, Node.js) on the server's own /metrics ({instance})",
			Notes:    "User and system CPU over {cores}, the tier's cores in the deployment file. The process alone: not the children it starts.",
		},
		CPU: `rate(process_cpu_seconds_total{instance="{instance}"}[{window}]) / {cores}`,
	},
	"cadvisor": containerPreset(`name="{container}"`, PresetAbout{
		Reads:    "a container's CPU over its CFS quota, and the share of its quota periods throttled",
		Exporter: "cAdvisor ({container}: the container's name, cAdvisor's name label)",
		Notes:    cadvisorNotes,
	}),
	// A database's own latency: statements per second and the mean time the
	// database spent in one, for a tier whose application times none of its
	// queries (a third-party PHP application). Listed after mysql, whose
	// throughput counts the exporter's own queries, they replace it.
	"mysql-userstat": {
		About: PresetAbout{
			Reads:    "MariaDB's statement throughput and mean residence per statement, from its user statistics",
			Exporter: "mysqld_exporter with --collect.info_schema.userstats ({instance}; {dbUser}: the application's database users, a regular expression such as wordpress or app|reports)",
			Notes: "MariaDB (and Percona Server) only; turn it on without a restart: SET GLOBAL userstat = 1 (userstat = 1 in my.cnf to keep it). " +
				"Throughput is the users' SELECT, UPDATE and other commands per second; responseTime their busy seconds per command. " +
				"Only {dbUser}'s statements count, so the exporter's and an administrator's stay out. " +
				"Measured on MariaDB 10.11 here: about 5 us of the server's CPU per statement (21 against 17 us for SELECT 1). " +
				"FLUSH USER_STATISTICS resets the counters.",
		},
		Throughput:   userstatCommands,
		ResponseTime: userstatRate + `busy_seconds_total{` + userstatSel + `}[{window}])) / ` + userstatCommands,
	},
	"mysql-perfschema": {
		About: PresetAbout{
			Reads:    "MySQL's or MariaDB's statement throughput and mean latency per statement, from performance_schema's statement digests",
			Exporter: "mysqld_exporter with --collect.perf_schema.eventsstatements ({instance})",
			Notes: "Needs performance_schema = ON, a restart on MariaDB, where it is off by default (MySQL 5.6 and later have it on). " +
				"The exporter reads the 250 digests last seen (--collect.perf_schema.eventsstatements.limit: raise it for an application with more " +
				"statement shapes) of statements run with a default database: its own queries, without one, stay out. " +
				"On MariaDB 10.11 the digests leave out statements prepared on the server (COM_STMT_EXECUTE: mysqli's prepare, PDO without " +
				"emulated prepares, Go's driver with arguments): measured here, they count in userstat, not in the digests. " +
				"Measured on MariaDB 10.11 here: about 8 us of the server's CPU per statement and 98 MB of memory." +
				" Its counts lose statements that connections end at once: on MariaDB 10.11.19 here four connections' digests missed 3.8% of their statements against COM_SELECT, and read the mean per statement up to 4% high (the time stays in the sum); one connection's were exact. mysql-userstat counts every statement.",
		},
		Throughput: `sum(rate(mysql_perf_schema_events_statements_total{instance="{instance}"}[{window}]))`,
		ResponseTime: `sum(rate(mysql_perf_schema_events_statements_seconds_total{instance="{instance}"}[{window}]))` +
			` / sum(rate(mysql_perf_schema_events_statements_total{instance="{instance}"}[{window}]))`,
	},
	"kubelet": containerPreset(`namespace="{namespace}",pod="{pod}",container="{container}"`, PresetAbout{
		Reads:    "a Kubernetes container's CPU over its CPU limit (its CFS quota), and the share of its quota periods throttled",
		Exporter: "the kubelet's cAdvisor endpoint, /metrics/cadvisor ({namespace}, {pod}, {container}: the container's)",
		Notes: cadvisorNotes + " The pod's own cgroup (container=\"\") and its pause container (container=\"POD\") are left out. " +
			"A pod restarted under a new name needs its servers entry changed.",
	}),
}

const cadvisorNotes = "CPU is container_cpu_usage_seconds_total over container_spec_cpu_quota / container_spec_cpu_period (cores); " +
	"a container without a quota (cAdvisor then exports no quota series) is read over {cores}, the tier's cores in the deployment file. " +
	"throttled is container_cpu_cfs_throttled_periods_total over container_cpu_cfs_periods_total, 0 without a quota. " +
	"The usage is one series (cpu=\"total\") or one per CPU with -enable_metrics=percpu: the sum is right for both."

// containerPreset reads cAdvisor's series of the container sel selects.
func containerPreset(sel string, about PresetAbout) Queries {
	quota := `(max(container_spec_cpu_quota{` + sel + `}) / max(container_spec_cpu_period{` + sel + `}) or vector({cores}))`
	return Queries{
		About: about,
		CPU:   `sum(rate(container_cpu_usage_seconds_total{` + sel + `}[{window}])) / ` + quota,
		// Without a quota there are no periods: never throttled. A mistyped
		// container reads no CPU series, which fails the cpu query.
		Throttled: `(sum(rate(container_cpu_cfs_throttled_periods_total{` + sel + `}[{window}]))` +
			` / sum(rate(container_cpu_cfs_periods_total{` + sel + `}[{window}]))) or vector(0)`,
	}
}

// userstatCommands is the statements per second of {dbUser}'s connections.
// Three rates, not one over a regular expression on the name: rate() drops
// the name, and the three series of a user would then clash.
const userstatCommands = "(" + userstatRate + `select_commands_total{` + userstatSel + `}[{window}]))` +
	" + " + userstatRate + `update_commands_total{` + userstatSel + `}[{window}]))` +
	" + " + userstatRate + `other_commands_total{` + userstatSel + `}[{window}])))`

const (
	userstatRate = "sum(rate(mysql_info_schema_user_statistics_"
	userstatSel  = `instance="{instance}",user=~"{dbUser}"`
)
