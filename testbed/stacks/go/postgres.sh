# stacks/go/postgres.sh: the Go stack's PostgreSQL back end, beside
# MariaDB's (SOFTALLOC_TESTBED_DB=postgres at up), optionally behind
# PgBouncer (SOFTALLOC_TESTBED_POOLER=pgbouncer): Debian's postgresql,
# pgbouncer and prometheus-postgres-exporter. PgBouncer is scraped by
# prometheus-pgbouncer-exporter 2.1.2 from PyPI, in a virtual environment
# (examples/pgbouncer-exporter/install-pgbouncer-exporter.sh, the pgbouncer
# preset's exporter): Debian's package (1.7, for PgBouncer before 1.8) fails
# every scrape of PgBouncer 1.18 (KeyError: 'total_requests', a column 1.8
# renamed).
# PostgreSQL and PgBouncer run as the postgres user (neither runs as root),
# both in the db group, under its cap; the data is sql/schema-pg.sql and
# sql/data-pg.sql, the same rows as MariaDB's. The app reaches PostgreSQL
# through pgx (testbed/app -driver pgx), through PgBouncer when it runs
# (transaction pooling: each statement may take another server connection).
#
# Settings (read by up, kept in run/ for later commands):
#   SOFTALLOC_TESTBED_DB            mariadb (default) or postgres
#   SOFTALLOC_TESTBED_POOLER        none (default) or pgbouncer (postgres only)
#   SOFTALLOC_TESTBED_PG_MAX_CONNECTIONS   PostgreSQL's max_connections (default 300)
#   SOFTALLOC_TESTBED_PGBOUNCER_POOL       PgBouncer's default_pool_size (default 20)

PG_PORT=$((18432 + PORT_OFFSET))
PGBOUNCER_PORT=$((18632 + PORT_OFFSET))
PG_EXP_PORT=$((18187 + PORT_OFFSET))
PGBOUNCER_EXP_PORT=$((18127 + PORT_OFFSET))

# PG_UP=1 (up) reads the engine and pooler from the environment, any other
# command from what up kept in run/.
PG_UP=0
db_engine() {
  if [ "$PG_UP" = 1 ]; then echo "${SOFTALLOC_TESTBED_DB:-mariadb}"; else cat "$RUN/db-engine" 2>/dev/null || echo mariadb; fi
}
db_pooler() {
  if [ "$PG_UP" = 1 ]; then echo "${SOFTALLOC_TESTBED_POOLER:-none}"; else cat "$RUN/pooler" 2>/dev/null || echo none; fi
}

# pg_check: the engine and pooler asked for make sense.
pg_check() {
  local engine pooler
  engine=$(db_engine) pooler=$(db_pooler)
  case $engine in mariadb | postgres) ;; *) die "SOFTALLOC_TESTBED_DB=$engine: want mariadb or postgres" ;; esac
  case $pooler in none | pgbouncer) ;; *) die "SOFTALLOC_TESTBED_POOLER=$pooler: want none or pgbouncer" ;; esac
  [ "$pooler" = none ] || [ "$engine" = postgres ] || die "SOFTALLOC_TESTBED_POOLER=$pooler: PgBouncer pools PostgreSQL's connections; set SOFTALLOC_TESTBED_DB=postgres too"
}

# pg_keep: up keeps the engine and pooler for later commands.
pg_keep() {
  db_engine >"$RUN/db-engine"
  db_pooler >"$RUN/pooler"
}

# pg_globals sets what the engine changes in the core and the stack.
pg_globals() {
  pg_check
  DB_ENGINE=$(db_engine)
  if [ "$DB_ENGINE" = postgres ]; then
    PG_BIN=$(find /usr/lib/postgresql -maxdepth 2 -name bin -type d 2>/dev/null | sort -V | tail -1)
    STACK_NEED="setpriv psql prometheus-postgres-exporter"
    STACK_APT="postgresql prometheus-postgres-exporter"
    if [ "$(db_pooler)" = pgbouncer ]; then
      STACK_NEED="$STACK_NEED pgbouncer"
      STACK_APT="$STACK_APT pgbouncer"
    fi
  fi
}

# pg_procs: the back end's processes beside db.
pg_procs() {
  [ "$(db_engine)" = postgres ] || return 0
  echo pg-exporter
  if [ "$(db_pooler)" = pgbouncer ]; then echo pooler pooler-exporter; fi
}

as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }

pg_client() { psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres "$@"; }

pg_ping() { pg_client -d postgres -c 'SELECT 1' >/dev/null 2>&1; }

# pgbouncer_ping: PgBouncer's admin console answers. Quiet: psql's
# "Connection refused" while PgBouncer starts read as PostgreSQL's.
pgbouncer_ping() { pg_client -p "$PGBOUNCER_PORT" -d pgbouncer -c 'SHOW VERSION' >/dev/null 2>&1; }

# pg_start: PostgreSQL on PG_PORT in the db group; a data directory whose
# stamp is not the SQL's is made afresh and loaded, as db_start does for
# MariaDB.
pg_start() {
  [ -n "$PG_BIN" ] && [ -x "$PG_BIN/postgres" ] || die "no PostgreSQL server under /usr/lib/postgresql (Debian: apt-get install postgresql)"
  local data=$TB/pg-data stamp
  stamp=$(cat "$REPO/testbed/sql/schema-pg.sql" "$REPO/testbed/sql/data-pg.sql" | sha256sum | cut -c1-16)
  mkdir -p "$TB/pg-run"
  chown postgres "$TB/pg-run"
  if [ "$(cat "$TB/pg-stamp" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$data" "$TB/pg-stamp"
    mkdir -p "$data"
    chown postgres "$data"
    log "initialising PostgreSQL in $data"
    as_postgres "$PG_BIN/initdb" -D "$data" --auth=trust -U postgres --no-sync >>"$LOGS/pg-initdb.log" 2>&1 ||
      die "initdb failed; see $LOGS/pg-initdb.log"
  fi
  # Durability off: the data is generated; what is measured is the reads.
  start db db setpriv --reuid=postgres --regid=postgres --init-groups "$PG_BIN/postgres" -D "$data" \
    -c listen_addresses=127.0.0.1 -c port="$PG_PORT" -c unix_socket_directories="$TB/pg-run" \
    -c max_connections="${SOFTALLOC_TESTBED_PG_MAX_CONNECTIONS:-300}" -c shared_buffers=128MB \
    -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
    -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all
  wait_for PostgreSQL 60 pg_ping
  if [ "$(cat "$TB/pg-stamp" 2>/dev/null)" != "$stamp" ]; then
    local t0=$SECONDS
    log "generating the RUBBoS-like data in PostgreSQL"
    pg_client -d postgres <<'SQL'
CREATE ROLE rubbos LOGIN PASSWORD 'rubbos';
CREATE DATABASE rubbos;
SQL
    PGOPTIONS="-c client_min_messages=warning" pg_client -d rubbos -f "$REPO/testbed/sql/schema-pg.sql" >/dev/null
    pg_client -d rubbos -f "$REPO/testbed/sql/data-pg.sql" >/dev/null
    pg_client -d rubbos <<'SQL'
GRANT SELECT ON ALL TABLES IN SCHEMA public TO rubbos;
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
SQL
    echo "$stamp" >"$TB/pg-stamp"
    log "data generated in $((SECONDS - t0)) s"
  fi
  # The exporter reads pg_stat_database, pg_stat_activity, the settings and
  # pg_stat_statements (pg-queries.yaml: the postgres and postgres-statements presets).
  DATA_SOURCE_NAME="postgresql://postgres@127.0.0.1:$PG_PORT/rubbos?sslmode=disable" start pg-exporter monitor \
    prometheus-postgres-exporter --web.listen-address=127.0.0.1:$PG_EXP_PORT --extend.query-path="$REPO/testbed/stacks/go/pg-queries.yaml"
  if [ "$(db_pooler)" = pgbouncer ]; then pgbouncer_start; fi
}

# pgbouncer_start: PgBouncer on PGBOUNCER_PORT in front of PostgreSQL, in
# transaction pooling.
pgbouncer_start() {
  local dir=$TB/pgbouncer
  mkdir -p "$dir"
  cat >"$dir/pgbouncer.ini" <<INI
; Written by testbed.sh up.
[databases]
rubbos = host=127.0.0.1 port=$PG_PORT dbname=rubbos

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PGBOUNCER_PORT
unix_socket_dir = $TB/pg-run
auth_type = trust
auth_file = $dir/userlist.txt
admin_users = postgres
stats_users = postgres
pool_mode = transaction
default_pool_size = ${SOFTALLOC_TESTBED_PGBOUNCER_POOL:-20}
max_client_conn = 2000
server_reset_query =
ignore_startup_parameters = extra_float_digits
INI
  printf '"rubbos" "rubbos"\n"postgres" ""\n' >"$dir/userlist.txt"
  chown -R postgres "$dir"
  start pooler db setpriv --reuid=postgres --regid=postgres --init-groups pgbouncer "$dir/pgbouncer.ini"
  wait_for PgBouncer 30 pgbouncer_ping
  pgbouncer_exporter_start
}

# pgbouncer_exporter_start: prometheus-pgbouncer-exporter (installed once
# into a virtual environment from PyPI) on PGBOUNCER_EXP_PORT, reading
# PgBouncer's admin console as postgres (the pgbouncer preset).
pgbouncer_exporter_start() {
  local exporter conf=$TB/pgbouncer/exporter.yaml
  exporter=$("$REPO/examples/pgbouncer-exporter/install-pgbouncer-exporter.sh" 2>>"$LOGS/pgbouncer-exporter-install.log") ||
    die "cannot install prometheus-pgbouncer-exporter (examples/pgbouncer-exporter/install-pgbouncer-exporter.sh: python3 with venv and PyPI); see $LOGS/pgbouncer-exporter-install.log"
  cat >"$conf" <<YAML
# Written by testbed.sh up.
exporter_host: 127.0.0.1
exporter_port: $PGBOUNCER_EXP_PORT
pgbouncers:
  - dsn: postgresql://postgres@127.0.0.1:$PGBOUNCER_PORT/pgbouncer
    exclude_databases: [pgbouncer]
YAML
  # Its log goes to stderr (no --log-file stdout: 2.1.2 would write a file
  # named stdout).
  start pooler-exporter monitor "$exporter" --config "$conf"
  wait_for prometheus-pgbouncer-exporter 30 http_ok /metrics "$PGBOUNCER_EXP_PORT"
}

# pg_dsn: the app's data source name: PgBouncer's port when it runs.
pg_dsn() {
  local port=$PG_PORT
  [ "$(db_pooler)" = pgbouncer ] && port=$PGBOUNCER_PORT
  echo "postgres://rubbos:rubbos@127.0.0.1:$port/rubbos?sslmode=disable&default_query_exec_mode=exec"
}

pg_scrape_jobs() {
  [ "$(db_engine)" = postgres ] || return 0
  echo "  - job_name: postgres"
  echo "    static_configs: [{targets: ['127.0.0.1:$PG_EXP_PORT'], labels: {tier: db}}]"
  [ "$(db_pooler)" = pgbouncer ] || return 0
  echo "  - job_name: pgbouncer"
  echo "    static_configs: [{targets: ['127.0.0.1:$PGBOUNCER_EXP_PORT'], labels: {tier: pooler}}]"
}

# pg_stop: the exporters and PgBouncer; the core stops PostgreSQL (db)
# after the app.
pg_stop() {
  stop_pid pg-exporter
  stop_pid pooler-exporter
  stop_pid pooler
}
