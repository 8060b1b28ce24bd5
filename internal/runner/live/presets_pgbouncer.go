package live

// pgbouncerPresets read a pooler tier (issue 37: PgBouncer between the app
// and PostgreSQL) through spreaker's prometheus-pgbouncer-exporter 2.1.2,
// whose names are those of a real scrape: prometheus_client 0.8 adds _total
// to every counter, so the microsecond counters end in
// _microseconds_total, which its README leaves out. Every query leaves out
// the admin console's pseudo-database, pgbouncer, whose pool is the
// exporter's own connection.
var pgbouncerPresets = map[string]Queries{
	"pgbouncer": {
		About: PresetAbout{
			Reads: "PgBouncer's transaction throughput and mean time per transaction, and its server connections " +
				"busy against default_pool_size (the connections pool), full while clients wait for one",
			Exporter: "prometheus-pgbouncer-exporter 2.1.2 from PyPI, one per PgBouncer ({instance}; " +
				"examples/pgbouncer-exporter/install-pgbouncer-exporter.sh installs it)",
			Notes: "Throughput is transactions per second in every database but the admin console (a statement outside " +
				"BEGIN ... COMMIT is a transaction of its own). The time per transaction is PgBouncer's " +
				"total_xact_time over total_xact_count: it holds the wait for a server connection, so a full pool shows " +
				"as a time beyond the database's. Busy is the mean of the sv_active samples (server connections linked " +
				"to a client: in transaction pooling from BEGIN to COMMIT's answer); the size is each pool's pool_size " +
				"(SHOW DATABASES: default_pool_size unless the database sets its own) summed over the pools (one per " +
				"database and user) that SHOW POOLS lists; fullShare is the share of 1 s steps with a client waiting " +
				"(cl_waiting), which in PgBouncer means no server connection of its pool was free (or one was still " +
				"logging in). The reserve pool (reserve_pool_size) is not in the size. No CPU: PgBouncer exports none; " +
				"take it from the cgroup, process-exporter or node preset. Debian 12's prometheus-pgbouncer-exporter " +
				"(1.7) fails every scrape of PgBouncer 1.8 or later (KeyError 'total_requests'); the Go " +
				"pgbouncer_exporter (prometheus-community) exports other names.",
		},
		Throughput: `sum(rate(pgbouncer_stats_transactions_total{database!="pgbouncer",instance="{instance}"}[{window}]))`,
		ResponseTime: `sum(rate(pgbouncer_stats_transactions_duration_microseconds_total{database!="pgbouncer",instance="{instance}"}[{window}]))` +
			` / sum(rate(pgbouncer_stats_transactions_total{database!="pgbouncer",instance="{instance}"}[{window}])) / 1e6`,
		Pools: map[string]PoolQueries{"connections": {
			Busy: `sum(avg_over_time(pgbouncer_pools_server_active_connections{database!="pgbouncer",instance="{instance}"}[{window}]))`,
			// Each (database, user) pool has its database's pool_size.
			Size: `sum(max by (database) (last_over_time(pgbouncer_databases_database_pool_size{database!="pgbouncer",instance="{instance}"}[{window}]))` +
				` * count by (database) (last_over_time(pgbouncer_pools_server_active_connections{database!="pgbouncer",instance="{instance}"}[{window}])))`,
			FullShare: `avg_over_time((sum(pgbouncer_pools_client_waiting_connections{database!="pgbouncer",instance="{instance}"}) > bool 0)[{window}:1s])`,
		}},
	},
}
