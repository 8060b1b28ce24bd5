# stacks/go/stack.sh: the Go bulletin board (testbed/app): Apache ->
# the app (a handler pool and a database/sql pool) -> MariaDB.

# shellcheck source=../bboard.sh
. "$REPO/testbed/stacks/bboard.sh"

# The default caps make the app tier the bottleneck (see README.md); the Go
# app spends 0.9-1.7 ms of CPU per page.
STACK_CAPS="web=0.5 app=0.2 db=0.6"
STACK_NEED=""
STACK_APT=""
STACK_PORTS=""

stack_build() { (cd "$REPO" && go build -o "$TB/bin/app" ./testbed/app); }

app_metrics_port() { echo $APP_PORT; }

# app_start THREADS CONNECTIONS: the app, until healthy.
app_start() {
  local threads=$1 conns=$2
  # One P: the app is capped well below a core, and a second P only spins
  # looking for work; fewer GC cycles (the heap is a few MB) leave less idle
  # time to the GC's idle workers. Both make CPU per page depend less on the
  # load, which the utilisation law assumes.
  GOMAXPROCS=1 GOGC=400 start app app "$TB/bin/app" -listen 127.0.0.1:$APP_PORT \
    -dsn "rubbos:rubbos@tcp(127.0.0.1:$DB_PORT)/rubbos" \
    -threads "$threads" -connections "$conns" -query-delay "$QUERY_DELAY"
  wait_for "the app" 30 app_up
}

stack_status() {
  echo "  pools (web threads, app threads, app connections): $(cat "$RUN/pools" 2>/dev/null || echo '?')"
  echo "  go stack"
}

# stack_apply WEB_THREADS APP_THREADS APP_CONNECTIONS: a new app process with
# the app's pools (the app first, so that Apache's restart opens fresh
# connections to it), then Apache's.
stack_apply() {
  [ $# -eq 3 ] || [ $# -eq 4 ] || die "apply: want WEB_THREADS APP_THREADS APP_CONNECTIONS [ACCEPT_COUNT]"
  local w=$1 t=$2 c=$3
  bboard_apply_check "$w" "$t" "$c" "${4:-0}"
  status_ok || die "apply: the testbed is not up (run testbed.sh up)"
  cg_detect
  [ "$(cat "$RUN/pools")" = "$w $t $c" ] && return 0
  stop_pid app
  app_start "$t" "$c"
  bboard_web_apply "$w"
  echo "$w $t $c" >"$RUN/pools"
  log "applied $w-$t-$c"
}
