package live

// pgPresets read PostgreSQL (issue 37's back end, issue 40's latency from
// the database itself) through postgres_exporter.
var pgPresets = map[string]Queries{
	"postgres": {
		About: PresetAbout{
			Reads:    "PostgreSQL's transaction throughput and the application's busy backends (one per connection) against max_connections",
			Exporter: "postgres_exporter ({instance}; {dbName}: the application's databases, a regular expression such as app or app|reports)",
			Notes: "Throughput is commits and rollbacks per second in every database, the exporter's own transactions included " +
				"(a few a scrape); list postgres-statements after it for an application's statements and their latency. " +
				"Busy backends are those in state active in the {dbName} databases; the exporter's stay out when it connects to " +
				"another database (Debian's connects to postgres). postgres_exporter 0.11 holds two connections, and the second " +
				"(its pg_database collector's) was active at 36-56% of the first's reads of pg_stat_activity here: subtracting one " +
				"backend for the exporter's own read over-read by up to 0.8. An administrator's sessions count only in those databases. " +
				"A pooler's server connections (PgBouncer) are backends like any other.",
		},
		Throughput: `sum(rate(pg_stat_database_xact_commit{instance="{instance}"}[{window}])) + sum(rate(pg_stat_database_xact_rollback{instance="{instance}"}[{window}]))`,
		Pools: map[string]PoolQueries{"threads": {
			Busy: `sum(avg_over_time(pg_stat_activity_count{state="active",datname=~"{dbName}",instance="{instance}"}[{window}]))`,
			Size: `max(pg_settings_max_connections{instance="{instance}"})`,
		}},
	},
	// As mysql-perfschema does for MySQL: the database's own count and time
	// of an application's statements.
	"postgres-statements": {
		About: PresetAbout{
			Reads:    "PostgreSQL's statement throughput and mean execution time per statement, from pg_stat_statements",
			Exporter: "postgres_exporter with pg_stat_statements' calls_total and seconds_total by user ({instance}; {dbUser}: the application's database users, a regular expression such as app or app|reports)",
			Notes: "Needs shared_preload_libraries = pg_stat_statements (a restart) and CREATE EXTENSION pg_stat_statements in the database " +
				"the exporter connects to. postgres_exporter 0.11 (Debian 12) reads it through --extend.query-path with " +
				"testbed/stacks/go/pg-queries.yaml; from 0.12 on --collector.stat_statements exports the same names. " +
				"Only {dbUser}'s statements count, so the exporter's and an administrator's stay out. The time is the execution's " +
				"(total_exec_time), planning apart, counted when a statement ends. pg_stat_statements keeps pg_stat_statements.max " +
				"statement shapes (5,000 by default): an evicted shape's counts leave the sums, which reads as a counter reset.",
		},
		Throughput: `sum(rate(pg_stat_statements_calls_total{instance="{instance}",user=~"{dbUser}"}[{window}]))`,
		ResponseTime: `sum(rate(pg_stat_statements_seconds_total{instance="{instance}",user=~"{dbUser}"}[{window}]))` +
			` / sum(rate(pg_stat_statements_calls_total{instance="{instance}",user=~"{dbUser}"}[{window}]))`,
	},
}
