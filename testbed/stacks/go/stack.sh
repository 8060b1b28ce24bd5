# stacks/go/stack.sh: the Go bulletin board (testbed/app): Apache ->
# the app (a handler pool and a database/sql pool) -> MariaDB.
#
# The app tier runs 1 to 3 replicas (`testbed.sh scale app=N`, also while a
# load runs; SOFTALLOC_TESTBED_APP_REPLICAS=N at up): Apache balances over
# them (mod_proxy_balancer), each replica has the pools of run/pools and a
# CPU cap of its own, the app tier's (replica 1 in the app cgroup, as with
# one replica, replica N in app-N), and Prometheus's app job lists the
# replicas that run, so that count(up{job="app"} == 1) is the replica count.

# shellcheck source=../bboard.sh
. "$REPO/testbed/stacks/bboard.sh"
# shellcheck source=postgres.sh
. "$REPO/testbed/stacks/go/postgres.sh"

# The default caps make the app tier the bottleneck (see README.md); the Go
# app spends 0.9-1.7 ms of CPU per page.
STACK_CAPS="web=0.5 app=0.2 db=0.6"
STACK_NEED=""
STACK_APT=""
MAX_APP_REPLICAS=3
# Replica 1 listens on APP_PORT, replicas 2 and 3 beside the other stacks'
# extra ports, all shifted by the offset like the rest.
APP_REPLICA_PORTS="$APP_PORT $((18085 + PORT_OFFSET)) $((18086 + PORT_OFFSET))"
STACK_PORTS="$((18085 + PORT_OFFSET)) $((18086 + PORT_OFFSET))"
# The replicas' own cgroups, capped as the app tier (core.sh's apply_caps).
STACK_REPLICA_GROUPS="app-2 app-3"
ALL_GROUPS="$ALL_GROUPS $STACK_REPLICA_GROUPS"
# The back end: MariaDB, or PostgreSQL (and PgBouncer): postgres.sh.
[ "${1:-}" = up ] && PG_UP=1
pg_globals

# app_replicas: how many replicas run (or are to run).
app_replicas() { cat "$RUN/replicas" 2>/dev/null || echo 1; }

# replica_name I: the pid file's and cgroup's name of replica I.
replica_name() { if [ "$1" = 1 ]; then echo app; else echo "app-$1"; fi; }
replica_port() { echo "$APP_REPLICA_PORTS" | cut -d' ' -f"$1"; }

app_backend_ports() {
  local i
  for ((i = 1; i <= $(app_replicas); i++)); do replica_port "$i"; done
}

stack_procs() {
  local i procs
  procs="db $(pg_procs | tr '\n' ' ')"
  for ((i = 1; i <= $(app_replicas); i++)); do procs="$procs $(replica_name "$i")"; done
  echo "$procs web"
}
STACK_PROCS=$(stack_procs)

stack_build() {
  local n=${SOFTALLOC_TESTBED_APP_REPLICAS:-1}
  check_replicas "$n" SOFTALLOC_TESTBED_APP_REPLICAS
  echo "$n" >"$RUN/replicas"
  pg_keep
  STACK_PROCS=$(stack_procs)
  (cd "$REPO" && go build -o "$TB/bin/app" ./testbed/app)
}

# stack_start: the database (MariaDB, or PostgreSQL and PgBouncer), the app
# replicas with the default pools, Apache.
stack_start() {
  set -- $DEFAULT_POOLS
  echo "$*" >"$RUN/pools"
  if [ "$DB_ENGINE" = postgres ]; then pg_start; else bboard_db_start; fi
  app_start "$2" "$3"
  web_config "$1"
  bboard_web_start
}

check_replicas() {
  [[ $1 =~ ^[1-9][0-9]*$ ]] && (($1 <= MAX_APP_REPLICAS)) || die "$2=$1: want 1..$MAX_APP_REPLICAS app replicas"
}

app_metrics_port() { echo $APP_PORT; }

# replica_start I THREADS CONNECTIONS: replica I, until healthy.
replica_start() {
  local i=$1 threads=$2 conns=$3 name port
  name=$(replica_name "$i") port=$(replica_port "$i")
  # One P: the app is capped well below a core, and a second P only spins
  # looking for work; fewer GC cycles (the heap is a few MB) leave less idle
  # time to the GC's idle workers. Both make CPU per page depend less on the
  # load, which the utilisation law assumes.
  local db=(-dsn "rubbos:rubbos@tcp(127.0.0.1:$DB_PORT)/rubbos")
  [ "$DB_ENGINE" = postgres ] && db=(-driver pgx -dsn "$(pg_dsn)")
  GOMAXPROCS=1 GOGC=400 start "$name" "$name" "$TB/bin/app" -listen 127.0.0.1:$port "${db[@]}" \
    -threads "$threads" -connections "$conns" -query-delay "$QUERY_DELAY"
  wait_for "app replica $i" 30 replica_up "$i"
}

# replica_up I: replica I answers its health URL; a dead replica fails at
# once, with the end of its log, rather than after the whole wait.
replica_up() {
  local name
  name=$(replica_name "$1")
  if ! pid_alive "$name"; then
    log "app replica $1 exited while starting; the end of $LOGS/$name.log:"
    tail -n 15 "$LOGS/$name.log" | sed 's/^/    /' >&2
    exit 1
  fi
  http_ok /rubbos/health "$(replica_port "$1")"
}

# app_start THREADS CONNECTIONS: every replica, until healthy.
app_start() {
  local i
  for ((i = 1; i <= $(app_replicas); i++)); do replica_start "$i" "$1" "$2"; done
}

# stack_stop: the replicas beyond the first (the core stops app).
stack_stop() {
  local i
  for ((i = 2; i <= MAX_APP_REPLICAS; i++)); do stop_pid "$(replica_name "$i")"; done
  pg_stop
}

stack_scrape_jobs() {
  local i targets=""
  for ((i = 1; i <= $(app_replicas); i++)); do
    targets="$targets${targets:+, }{targets: ['127.0.0.1:$(replica_port "$i")'], labels: {tier: app, replica: '$i'}}"
  done
  echo "  - job_name: app"
  echo "    static_configs: [$targets]"
  pg_scrape_jobs
}

stack_status() {
  echo "  pools (web threads, app threads, app connections): $(cat "$RUN/pools" 2>/dev/null || echo '?')"
  echo "  go stack, app replicas: $(app_replicas) (ports $(app_backend_ports | tr '\n' ' ')), database $DB_ENGINE, pooler $(db_pooler)"
}

# stack_apply WEB_THREADS APP_THREADS APP_CONNECTIONS: each replica in turn
# a new process with the app's pools (the app first, so that Apache's
# restart opens fresh connections to it), then Apache's pools through
# examples/hooks/apache.sh with a full restart. The Go app has no endpoint
# that resizes its pools at run time, and so no example hook: its flags
# set them. With the web threads unchanged Apache's restart is graceful
# (nothing to resize: fresh connections only), so that a hook applying the
# app's pools under load (softalloc watch) drops no request at the web
# tier; the balancer sends a restarting replica's requests to the others.
stack_apply() {
  [ $# -eq 3 ] || [ $# -eq 4 ] || die "apply: want WEB_THREADS APP_THREADS APP_CONNECTIONS [ACCEPT_COUNT]"
  local w=$1 t=$2 c=$3 i old
  bboard_apply_check "$w" "$t" "$c" "${4:-0}"
  require_up apply
  cg_detect
  old=$(cat "$RUN/pools")
  [ "$old" = "$w $t $c" ] && return 0
  for ((i = 1; i <= $(app_replicas); i++)); do
    stop_pid "$(replica_name "$i")"
    replica_start "$i" "$t" "$c"
  done
  if [ "$(web_pools_threads)" = "$w" ]; then
    web_restart graceful
  else
    web_apply "$w" full
  fi
  echo "$w $t $c" >"$RUN/pools"
  log "applied $w-$t-$c"
}

# stack_scale app=N: start or stop replicas while the site serves. Growing:
# the new replicas start with the pools of run/pools and join the balancer
# once healthy. Shrinking: the balancer drops them first (Apache's graceful
# restart lets requests in flight finish), then they stop (SIGTERM: the app
# finishes its requests). Prometheus's app job follows (a reload), and the
# command returns once Prometheus sees N app targets up.
stack_scale() {
  [ $# -eq 1 ] && [[ $1 == app=* ]] || die "scale: want app=N (1..$MAX_APP_REPLICAS)"
  local n=${1#app=} cur i w t c
  check_replicas "$n" "scale app"
  require_up scale
  cg_detect
  cur=$(app_replicas)
  read -r w t c <"$RUN/pools"
  if ((n > cur)); then
    # stop_pid first: a scale-down that failed after writing run/replicas
    # (Apache's restart under load) left its replicas running.
    for ((i = cur + 1; i <= n; i++)); do
      stop_pid "$(replica_name "$i")"
      replica_start "$i" "$t" "$c"
    done
    echo "$n" >"$RUN/replicas"
    web_config "$w"
    web_restart graceful
  elif ((n < cur)); then
    echo "$n" >"$RUN/replicas"
    web_config "$w"
    web_restart graceful
    for ((i = n + 1; i <= cur; i++)); do stop_pid "$(replica_name "$i")"; done
  fi
  prom_reload
  wait_for "Prometheus's $n app targets" 30 prom_app_targets "$n"
  log "app replicas $cur -> $n"
}

# prom_app_targets N: Prometheus scrapes N app targets, each up.
prom_app_targets() {
  http_get '/api/v1/query?query=count(up%7Bjob%3D%22app%22%7D%3D%3D1)%20and%20count(up%7Bjob%3D%22app%22%7D)%3D%3D'"$1" $PROM_PORT |
    grep -q '"value":\[[0-9.]*,"'"$1"'"\]'
}
