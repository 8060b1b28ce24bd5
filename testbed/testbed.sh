#!/usr/bin/env bash
# testbed.sh: a real three-tier web application on loopback, for softalloc's
# live runner. Apache httpd (mpm_event, mod_proxy_http) -> the bulletin-board
# app -> MariaDB, monitored by Prometheus through the apache and mysqld
# exporters, the app's own /metrics and testbed/cgexporter (per-tier CPU from
# cgroup accounting). Each tier runs in its own cgroup with a CPU quota, so
# that it behaves as a server of known capacity.
#
# STACK (environment) picks the app tier that `up` starts: go (testbed/app,
# the default) or java (testbed/java: embedded Tomcat, HikariCP and the
# MariaDB JDBC driver on a JVM with a small heap). Other commands act on the
# stack that is up.
#
#   testbed.sh up [web=CORES app=CORES db=CORES]   start everything (idempotent)
#   testbed.sh down                                 stop everything (idempotent)
#   testbed.sh status                               what runs, the caps, the URLs
#   testbed.sh apply WEB_THREADS APP_THREADS APP_CONNECTIONS [ACCEPT_COUNT]
#                                                   the live runner's hook: set the pools
#                                                   (ACCEPT_COUNT: Tomcat's, java only, default 100)
#   testbed.sh caps web=CORES app=CORES db=CORES    move the CPU caps (0 or max: uncapped)
#   testbed.sh exec-client CMD ARGS...              run CMD (a load generator) in the
#                                                   uncapped client cgroup
#   testbed.sh exec-in GROUP CMD ARGS...            run CMD in GROUP (web, app, db, client,
#                                                   monitor), under its cap
#   testbed.sh clean                                down, then remove the state directory
#   testbed.sh java-deps                            fetch the Java app's Maven dependencies
#                                                   (online, once; builds are offline after)
#
# State, logs and the generated database live in $SOFTALLOC_TESTBED_DIR
# (default ${TMPDIR:-/tmp}/softalloc-testbed); logs in its logs/.
#
# Java stack settings (read by `up`, kept for later applies):
#   SOFTALLOC_TESTBED_JAVA_HEAP   the JVM's -Xmx (default 256m)
#   SOFTALLOC_TESTBED_JAVA_OPTS   more JVM flags (default none)
#   SOFTALLOC_TESTBED_APPLY       how apply resizes Tomcat's and HikariCP's pools:
#                                 runtime (default: the admin endpoint calls their
#                                 setters, the JVM stays warm) or restart (a new JVM)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TB=${SOFTALLOC_TESTBED_DIR:-${TMPDIR:-/tmp}/softalloc-testbed}
RUN=$TB/run
LOGS=$TB/logs

# Loopback ports away from the standard ones (80, 3306, 9090, 91xx).
WEB_PORT=18080
APP_PORT=18081
# The Java app's management port: /metrics and /admin/pools.
ADMIN_PORT=18082
DB_PORT=18306
PROM_PORT=18090
CG_PORT=18101
MYSQLD_EXP_PORT=18104
APACHE_EXP_PORT=18117

# The default caps make the app tier the bottleneck (see README.md). The
# warm JVM spends 0.3-0.5 ms of CPU per page, the Go app 0.9-1.7 ms: under
# 0.2 cores the JVM outran the database and the machine (throughput stopped
# at 410 pages/s with no tier at 0.95).
DEFAULT_CAPS="web=0.5 app=0.2 db=0.6"
DEFAULT_CAPS_JAVA="web=0.5 app=0.1 db=0.6"
# The allocation the servers start with (web threads, app threads, app connections).
DEFAULT_POOLS="100 20 10"
# Emulated network round trip per SQL query (see testbed/app -query-delay).
QUERY_DELAY=${SOFTALLOC_TESTBED_QUERY_DELAY:-5ms}
# Tomcat's default acceptCount.
DEFAULT_ACCEPT=100
CG_NAME=softalloc-testbed
CAPPED_TIERS="web app db"
# Uncapped groups: client for the load generator, monitor for Prometheus and
# the exporters, so that their CPU is not charged to a tier.
ALL_GROUPS="web app db client monitor"

log() { printf 'testbed: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# ---------------------------------------------------------------- helpers

# http_get URL-PATH PORT: print the response of GET http://127.0.0.1:PORT/PATH
# with bash's /dev/tcp, so that no curl or wget is needed.
http_get() {
  local path=$1 port=$2
  timeout 5 bash -c '
    exec 3<>/dev/tcp/127.0.0.1/'"$port"' || exit 1
    printf "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" "'"$path"'" >&3
    cat <&3' 2>/dev/null
}

# http_ok PATH PORT: true when the answer is 200.
http_ok() { http_get "$1" "$2" | head -1 | grep -q ' 200 '; }

# wait_for WHAT SECONDS CMD...: poll CMD until it succeeds.
wait_for() {
  local what=$1 secs=$2; shift 2
  local deadline=$((SECONDS + secs))
  until "$@"; do
    if ((SECONDS >= deadline)); then
      log "$what did not come up within ${secs}s; its log is in $LOGS"
      return 1
    fi
    sleep 0.2
  done
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pid_alive() {
  local p
  p=$(cat "$RUN/$1.pid" 2>/dev/null) && [ -n "$p" ] && kill -0 "$p" 2>/dev/null
}

# stop_pid NAME: TERM the process in run/NAME.pid, KILL it after 10 s.
stop_pid() {
  local name=$1 pid
  [ -s "$RUN/$name.pid" ] || return 0
  pid=$(cat "$RUN/$name.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + 10))
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$RUN/$name.pid"
}

# ---------------------------------------------------------------- cgroups

# cg_detect sets CG to v2, v1 or none, and the directories holding the groups.
cg_detect() {
  CG=none CG_V2="" CG_CPU="" CG_ACCT=""
  if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
    CG=v2 CG_V2=/sys/fs/cgroup/$CG_NAME
  else
    local cpu acct
    cpu=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpu(,|$)/ {print $2; exit}' /proc/mounts)
    acct=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpuacct(,|$)/ {print $2; exit}' /proc/mounts)
    if [ -n "$cpu" ] && [ -n "$acct" ] && [ -f "$cpu/cpu.cfs_quota_us" ]; then
      CG=v1 CG_CPU=$cpu/$CG_NAME CG_ACCT=$acct/$CG_NAME
    fi
  fi
}

# cg_dirs GROUP: the cgroup directories a process of GROUP joins.
cg_dirs() {
  case $CG in
    v2) echo "$CG_V2/$1" ;;
    v1) if [ "$CG_CPU" = "$CG_ACCT" ]; then echo "$CG_CPU/$1"; else echo "$CG_CPU/$1 $CG_ACCT/$1"; fi ;;
  esac
}

# cg_setup creates the groups; on failure (a read-only or delegated-away
# hierarchy) it falls back to none, and says so.
cg_setup() {
  cg_detect
  [ "$CG" = none ] && return 0
  local ok=1 g d
  if [ "$CG" = v2 ]; then
    mkdir -p "$CG_V2" 2>/dev/null &&
      { grep -qw cpu "$CG_V2/cgroup.controllers" || echo +cpu >/sys/fs/cgroup/cgroup.subtree_control; } 2>/dev/null &&
      echo +cpu >"$CG_V2/cgroup.subtree_control" 2>/dev/null || ok=0
  fi
  for g in $ALL_GROUPS; do
    for d in $(cg_dirs "$g"); do mkdir -p "$d" 2>/dev/null || ok=0; done
  done
  if [ $ok = 0 ]; then
    log "WARNING: cannot create cgroups under $CG_CPU$CG_V2; running UNCAPPED (tiers share the machine's CPUs)"
    CG=none
    return 0
  fi
  # The testbed's groups outweigh other work on the machine (a parallel build
  # or test run), so that a capped tier gets its whole quota when it needs it.
  # A weight counts among siblings only: the parent group's own weight is what
  # other work competes with (at the default it had one CPU-bound process's
  # share, and a capped database read 0.91 of its quota beside one).
  if [ "$CG" = v2 ]; then echo 10000 >"$CG_V2/cpu.weight"; else echo 262144 >"$CG_CPU/cpu.shares"; fi
  for g in $ALL_GROUPS; do
    if [ "$CG" = v2 ]; then echo 1000 >"$CG_V2/$g/cpu.weight"; else echo 10240 >"$CG_CPU/$g/cpu.shares"; fi
  done
}

# set_cap GROUP CORES: CORES of 0 or max removes the cap.
set_cap() {
  local g=$1 cores=$2 quota
  [ "$CG" = none ] && return 0
  case $cores in
    0 | max | none) quota=-1 ;;
    *) quota=$(awk -v c="$cores" 'BEGIN { if (c + 0 <= 0) exit 1; printf "%d", c * 100000 }') ||
      die "cap $g=$cores: want a number of cores such as 0.5, or max" ;;
  esac
  if [ "$CG" = v2 ]; then
    if [ "$quota" = -1 ]; then echo "max 100000" >"$CG_V2/$g/cpu.max"; else echo "$quota 100000" >"$CG_V2/$g/cpu.max"; fi
  else
    echo 100000 >"$CG_CPU/$g/cpu.cfs_period_us"
    echo "$quota" >"$CG_CPU/$g/cpu.cfs_quota_us"
  fi
}

apply_caps() {
  local kv g c
  for kv in "$@"; do
    g=${kv%%=*} c=${kv#*=}
    case " $CAPPED_TIERS " in *" $g "*) ;; *) die "caps: unknown tier '$g' in '$kv'; want web=, app= or db=" ;; esac
    set_cap "$g" "$c"
    echo "$c" >"$RUN/cap-$g"
  done
}

cg_remove() {
  cg_detect
  [ "$CG" = none ] && return 0
  local g d
  for g in $ALL_GROUPS; do
    for d in $(cg_dirs "$g"); do
      [ -d "$d" ] || continue
      # Anything still inside (there should be nothing) goes back to the parent.
      if [ -f "$d/cgroup.procs" ]; then
        while read -r p; do echo "$p" >"$(dirname "$(dirname "$d")")/cgroup.procs" 2>/dev/null || true; done <"$d/cgroup.procs"
      fi
      rmdir "$d" 2>/dev/null || true
    done
  done
  for d in $CG_V2 $CG_CPU $CG_ACCT; do [ -d "$d" ] && rmdir "$d" 2>/dev/null || true; done
}

# in_group GROUP CMD...: exec CMD inside GROUP (the calling shell moves itself
# first, so CMD and all it forks are accounted there from their first instruction).
in_group() {
  local g=$1 d; shift
  for d in $(cg_dirs "$g"); do echo "$BASHPID" >"$d/cgroup.procs"; done
  exec "$@"
}

# start NAME GROUP CMD...: start CMD in the background in GROUP, pid in run/NAME.pid.
start() {
  local name=$1 g=$2; shift 2
  (in_group "$g" "$@") </dev/null >>"$LOGS/$name.log" 2>&1 &
  echo $! >"$RUN/$name.pid"
}

# ---------------------------------------------------------------- tiers

build() {
  log "building the $STACK app and the cgroup exporter"
  (cd "$REPO" && go build -o "$TB/bin/cgexporter" ./testbed/cgexporter)
  if [ "$STACK" = java ]; then java_build; else (cd "$REPO" && go build -o "$TB/bin/app" ./testbed/app); fi
}

# java_build: the runnable jar, offline from Maven's local repository; the
# first build on a machine fetches the dependencies (java-deps) and says so.
java_build() {
  local pom=$REPO/testbed/java
  if ! mvn -B -q -o -f "$pom/pom.xml" package >>"$LOGS/mvn.log" 2>&1; then
    log "the offline Maven build failed (dependencies not cached yet?); fetching them from Maven Central once"
    java_deps
    mvn -B -q -o -f "$pom/pom.xml" package >>"$LOGS/mvn.log" 2>&1 || die "the Java app does not build; see $LOGS/mvn.log"
  fi
  cp "$pom/target/bboard.jar" "$TB/bin/bboard.jar"
}

# java_deps: everything the offline build needs, plugins included
# (dependency:go-offline alone misses some of the plugins' own dependencies).
java_deps() {
  mkdir -p "$LOGS"
  mvn -B -q -f "$REPO/testbed/java/pom.xml" dependency:go-offline package >>"$LOGS/mvn.log" 2>&1 ||
    die "fetching the Java app's Maven dependencies failed; see $LOGS/mvn.log"
}

db_client() { mariadb --no-defaults --socket="$RUN/mysqld.sock" -uroot "$@"; }

db_ping() { db_client -e 'SELECT 1' >/dev/null 2>&1; }

db_start() {
  local data=$TB/mariadb-data stamp
  stamp=$(cat "$REPO/testbed/sql/schema.sql" "$REPO/testbed/sql/data.sql" | sha256sum | cut -c1-16)
  if [ "$(cat "$data/.softalloc-stamp" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$data"
    mkdir -p "$data"
    log "initialising MariaDB in $data"
    mariadb-install-db --no-defaults --datadir="$data" --user=root --auth-root-authentication-method=normal \
      --skip-test-db >>"$LOGS/mariadb-install.log" 2>&1 || die "mariadb-install-db failed; see $LOGS/mariadb-install.log"
  fi
  start db db mariadbd --no-defaults --datadir="$data" --user=root \
    --bind-address=127.0.0.1 --port=$DB_PORT --socket="$RUN/mysqld.sock" --pid-file="$RUN/mariadbd.pid" \
    --log-error="$LOGS/mariadb.err" --skip-name-resolve --skip-log-bin --performance-schema=OFF \
    --innodb-buffer-pool-size=256M --max-connections=2000 --thread-cache-size=200 \
    --innodb-flush-log-at-trx-commit=2
  wait_for MariaDB 60 db_ping
  if [ "$(cat "$data/.softalloc-stamp" 2>/dev/null)" != "$stamp" ]; then
    local t0=$SECONDS
    log "generating the RUBBoS-like data (20,000 users, 30,000 stories, 100,000 comments)"
    db_client <"$REPO/testbed/sql/schema.sql"
    db_client <"$REPO/testbed/sql/data.sql" >/dev/null
    db_client <<'EOF'
CREATE USER IF NOT EXISTS 'rubbos'@'127.0.0.1' IDENTIFIED BY 'rubbos';
GRANT SELECT ON rubbos.* TO 'rubbos'@'127.0.0.1';
CREATE USER IF NOT EXISTS 'exporter'@'127.0.0.1' IDENTIFIED BY 'exporter' WITH MAX_USER_CONNECTIONS 3;
GRANT PROCESS, REPLICATION CLIENT, SELECT ON *.* TO 'exporter'@'127.0.0.1';
EOF
    echo "$stamp" >"$data/.softalloc-stamp"
    log "data generated in $((SECONDS - t0)) s"
  fi
}

# app_start THREADS CONNECTIONS [ACCEPT_COUNT]: the stack's app, until healthy.
app_start() {
  if [ "$STACK" = java ]; then java_start "$@"; else go_start "$@"; fi
}

go_start() {
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

# java_start: embedded Tomcat in a JVM with a small heap (the heap and any
# extra flags are those of `up`, kept in run/java-opts). A JVM under a 0.2-core
# cap takes seconds to load its classes: it gets 120 s.
java_start() {
  local threads=$1 conns=$2 accept=${3:-$DEFAULT_ACCEPT} opts
  opts=$(cat "$RUN/java-opts")
  # shellcheck disable=SC2086 # the options are words
  start app app java $opts -jar "$TB/bin/bboard.jar" -listen 127.0.0.1:$APP_PORT -admin 127.0.0.1:$ADMIN_PORT \
    -jdbc-url "jdbc:mariadb://127.0.0.1:$DB_PORT/rubbos" -user rubbos -password rubbos \
    -threads "$threads" -connections "$conns" -accept-count "$accept" -query-delay "$QUERY_DELAY"
  echo "$accept" >"$RUN/accept"
  wait_for "the app (a JVM)" 120 app_up
}

# app_up: the app answers its health URL; a dead app fails at once, with the
# end of its log, rather than after the whole wait.
app_up() {
  if ! pid_alive app; then
    log "the $STACK app exited while starting; the end of $LOGS/app.log:"
    tail -n 15 "$LOGS/app.log" | sed 's/^/    /' >&2
    exit 1
  fi
  http_ok /rubbos/health $APP_PORT
}

# web_config THREADS: Apache's pools. One child process holds every thread
# (ThreadsPerChild = MaxRequestWorkers), so that mod_proxy's per-process
# connection pool (max=) is the whole web tier's; ServerLimit leaves room
# for a restart.
web_config() {
  local threads=$1
  ((threads >= 1 && threads <= 2048)) || die "web threads $threads: want 1..2048 (ThreadLimit)"
  mkdir -p "$TB/apache"
  cat >"$TB/apache/pools.conf" <<EOF
# Written by testbed.sh apply: web threads $threads.
StartServers 1
ServerLimit 4
ThreadLimit 2048
ThreadsPerChild $threads
MaxRequestWorkers $threads
MinSpareThreads 1
MaxSpareThreads $((threads + 1))
MaxConnectionsPerChild 0
ProxyPass /rubbos/static/ !
ProxyPass /rubbos/ http://127.0.0.1:$APP_PORT/rubbos/ max=$threads timeout=60 keepalive=On
EOF
}

web_start() {
  local mods=/usr/lib/apache2/modules
  mkdir -p "$TB/apache" "$TB/www/rubbos/static" "$RUN/apache"
  cp "$REPO/testbed/static/"* "$TB/www/rubbos/static/"
  chmod -R a+rX "$TB/www"
  cat >"$TB/apache/httpd.conf" <<EOF
# Written by testbed.sh up.
ServerRoot "$TB/apache"
ServerName 127.0.0.1
Listen 127.0.0.1:$WEB_PORT
ListenBacklog 511
PidFile "$RUN/web.pid"
DefaultRuntimeDir "$RUN/apache"
ErrorLog "$LOGS/apache-error.log"
LogLevel warn
User www-data
Group www-data
LoadModule mpm_event_module $mods/mod_mpm_event.so
LoadModule authz_core_module $mods/mod_authz_core.so
LoadModule authz_host_module $mods/mod_authz_host.so
LoadModule mime_module $mods/mod_mime.so
LoadModule proxy_module $mods/mod_proxy.so
LoadModule proxy_http_module $mods/mod_proxy_http.so
LoadModule status_module $mods/mod_status.so
TypesConfig /etc/mime.types
DocumentRoot "$TB/www"
<Directory />
  Require all granted
</Directory>
Timeout 60
KeepAlive On
MaxKeepAliveRequests 0
KeepAliveTimeout 5
ExtendedStatus On
<Location /server-status>
  SetHandler server-status
  Require ip 127.0.0.1
</Location>
Include "$TB/apache/pools.conf"
EOF
  [ -f "$TB/apache/pools.conf" ] || web_config "${1:-100}"
  apache2 -t -f "$TB/apache/httpd.conf" >>"$LOGS/web.log" 2>&1 || die "Apache's configuration does not parse; see $LOGS/web.log"
  (in_group web apache2 -f "$TB/apache/httpd.conf" -k start) >>"$LOGS/web.log" 2>&1 || die "Apache did not start; see $LOGS/web.log"
  wait_for Apache 30 http_ok /rubbos/health $WEB_PORT
}

# web_generation: Apache's configuration generation, which a restart raises.
web_generation() { http_get '/server-status?auto' $WEB_PORT | awk -F': ' '/^ParentServerConfigGeneration/ {print $2+0}'; }

monitor_start() {
  local mode=proc cpu="" acct=""
  case $CG in
    v1) mode=v1 cpu=$CG_CPU acct=$CG_ACCT ;;
    v2) mode=v2 cpu=$CG_V2 ;;
  esac
  start cgexporter monitor "$TB/bin/cgexporter" -listen 127.0.0.1:$CG_PORT -mode $mode \
    -cpu "$cpu" -cpuacct "$acct" -pids "$RUN" -tiers web,app,db
  start apache-exporter monitor prometheus-apache-exporter --telemetry.address=127.0.0.1:$APACHE_EXP_PORT \
    --scrape_uri="http://127.0.0.1:$WEB_PORT/server-status?auto"
  # The exporter's scrapes cost the DB a few queries a second; the costly
  # collectors that the live runner does not read are off.
  DATA_SOURCE_NAME="exporter:exporter@(127.0.0.1:$DB_PORT)/" start mysqld-exporter monitor prometheus-mysqld-exporter \
    --web.listen-address=127.0.0.1:$MYSQLD_EXP_PORT --no-collect.slave_status \
    --no-collect.info_schema.innodb_cmp --no-collect.info_schema.innodb_cmpmem \
    --no-collect.info_schema.query_response_time
  cat >"$TB/prometheus.yml" <<EOF
# Written by testbed.sh up. A 1 s scrape interval lets trials of a few
# seconds be measured; a production Prometheus would scrape every 15-60 s.
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: cgroups
    static_configs: [{targets: ['127.0.0.1:$CG_PORT']}]
  - job_name: apache
    static_configs: [{targets: ['127.0.0.1:$APACHE_EXP_PORT'], labels: {tier: web}}]
  - job_name: app
    static_configs: [{targets: ['127.0.0.1:$(app_metrics_port)'], labels: {tier: app}}]
  - job_name: mysqld
    static_configs: [{targets: ['127.0.0.1:$MYSQLD_EXP_PORT'], labels: {tier: db}}]
EOF
  # A fresh TSDB at each up: series of a target the last up had (the other
  # stack's app) would linger for Prometheus's 5 min lookback, and the live
  # runner waits for every target's scrape.
  rm -rf "$TB/prometheus-data"
  start prometheus monitor prometheus --config.file="$TB/prometheus.yml" --storage.tsdb.path="$TB/prometheus-data" \
    --storage.tsdb.retention.time=6h --web.listen-address=127.0.0.1:$PROM_PORT --log.level=warn
  wait_for Prometheus 60 http_ok /-/ready $PROM_PORT
  wait_for "Prometheus's first scrape of every target" 30 prom_all_up
}

# app_metrics_port: where the app's /metrics is (the Java app's management port).
app_metrics_port() { if [ "$STACK" = java ]; then echo $ADMIN_PORT; else echo $APP_PORT; fi; }

# prom_all_up: every target answered its last scrape.
prom_all_up() {
  http_get '/api/v1/query?query=count(up%3D%3D1)' $PROM_PORT | grep -q '"value":\[[0-9.]*,"4"\]'
}

# ---------------------------------------------------------------- commands

status_ok() {
  local n
  for n in db app web cgexporter apache-exporter mysqld-exporter prometheus; do pid_alive "$n" || return 1; done
  http_ok /rubbos/health $WEB_PORT
}

# running_stack: the stack that is up (go when the file predates stacks).
running_stack() { cat "$RUN/stack" 2>/dev/null || echo go; }

cmd_up() {
  STACK=${STACK:-go}
  case $STACK in go | java) ;; *) die "STACK=$STACK: want go or java" ;; esac
  local caps="$DEFAULT_CAPS"
  [ "$STACK" = java ] && caps="$DEFAULT_CAPS_JAVA"
  [ $# -gt 0 ] && caps="$*"
  mkdir -p "$RUN" "$LOGS"
  if status_ok && [ "$(running_stack)" = "$STACK" ]; then
    cg_detect
    apply_caps $caps
    log "already up ($STACK stack); caps $caps"
    return 0
  fi
  cmd_down quiet
  mkdir -p "$RUN" "$LOGS"
  # A failed start leaves nothing running.
  trap 'up_failed' EXIT
  local missing="" b apt="apache2 mariadb-server prometheus prometheus-apache-exporter prometheus-mysqld-exporter"
  local need="apache2 mariadbd mariadb mariadb-install-db prometheus prometheus-apache-exporter prometheus-mysqld-exporter go"
  [ "$STACK" = java ] && need="$need java mvn" apt="$apt openjdk-17-jdk-headless maven"
  for b in $need; do
    command -v "$b" >/dev/null || missing="$missing $b"
  done
  [ -z "$missing" ] || die "missing:$missing (Debian: apt-get install $apt)"
  local ports="$WEB_PORT $APP_PORT $DB_PORT $PROM_PORT $CG_PORT $MYSQLD_EXP_PORT $APACHE_EXP_PORT"
  [ "$STACK" = java ] && ports="$ports $ADMIN_PORT"
  for p in $ports; do
    port_free "$p" || die "port $p on 127.0.0.1 is taken by another program"
  done
  echo "$STACK" >"$RUN/stack"
  echo "-Xmx${SOFTALLOC_TESTBED_JAVA_HEAP:-256m} ${SOFTALLOC_TESTBED_JAVA_OPTS:-}" >"$RUN/java-opts"
  build
  cg_setup
  apply_caps $caps
  echo "$CG" >"$RUN/cgroup-mode"
  set -- $DEFAULT_POOLS
  echo "$*" >"$RUN/pools"
  db_start
  app_start "$2" "$3"
  web_config "$1"
  web_start "$1"
  monitor_start
  trap - EXIT
  cmd_status
}

up_failed() {
  local rc=$?
  [ $rc -eq 0 ] && return 0
  log "up failed: stopping what started"
  cmd_down quiet || true
  exit $rc
}

cmd_down() {
  local n
  for n in prometheus mysqld-exporter apache-exporter cgexporter; do stop_pid "$n"; done
  if pid_alive web; then
    apache2 -f "$TB/apache/httpd.conf" -k stop >>"$LOGS/web.log" 2>&1 || true
    local deadline=$((SECONDS + 15))
    while pid_alive web && ((SECONDS < deadline)); do sleep 0.1; done
  fi
  stop_pid web
  stop_pid app
  if pid_alive db; then
    kill -TERM "$(cat "$RUN/db.pid")" 2>/dev/null || true
    local deadline=$((SECONDS + 30))
    while pid_alive db && ((SECONDS < deadline)); do sleep 0.1; done
  fi
  stop_pid db
  # Apache's children, should its parent have died first.
  cg_detect
  if [ "$CG" != none ]; then
    local d p
    for d in $(cg_dirs web) $(cg_dirs app) $(cg_dirs db) $(cg_dirs monitor); do
      [ -f "$d/cgroup.procs" ] || continue
      while read -r p; do kill -KILL "$p" 2>/dev/null || true; done <"$d/cgroup.procs"
    done
  fi
  cg_remove
  rm -f "$RUN/mysqld.sock"
  [ "${1:-}" = quiet ] || log "down"
}

cmd_status() {
  local n cg
  cg=$(cat "$RUN/cgroup-mode" 2>/dev/null || echo "?")
  for n in db app web cgexporter apache-exporter mysqld-exporter prometheus; do
    if pid_alive "$n"; then printf '  %-16s pid %s\n' "$n" "$(cat "$RUN/$n.pid")"; else printf '  %-16s not running\n' "$n"; fi
  done
  if [ "$cg" = none ]; then
    echo "  cgroups: none available: tiers run UNCAPPED"
  else
    printf '  cgroups %s, CPU caps (cores):' "$cg"
    for n in $CAPPED_TIERS; do printf ' %s=%s' "$n" "$(cat "$RUN/cap-$n" 2>/dev/null || echo '?')"; done
    echo
  fi
  echo "  pools (web threads, app threads, app connections): $(cat "$RUN/pools" 2>/dev/null || echo '?')"
  if [ "$STACK" = java ]; then
    echo "  java stack: JVM $(cat "$RUN/java-opts" 2>/dev/null), Tomcat acceptCount $(cat "$RUN/accept" 2>/dev/null || echo '?'), metrics and admin http://127.0.0.1:$ADMIN_PORT"
  else
    echo "  go stack"
  fi
  echo "  web http://127.0.0.1:$WEB_PORT/rubbos/StoriesOfTheDay  prometheus http://127.0.0.1:$PROM_PORT  logs $LOGS"
}

cmd_apply() {
  [ $# -eq 3 ] || [ $# -eq 4 ] || die "apply: want WEB_THREADS APP_THREADS APP_CONNECTIONS [ACCEPT_COUNT]"
  local w=$1 t=$2 c=$3 a=${4:-$DEFAULT_ACCEPT} gen mode=${SOFTALLOC_TESTBED_APPLY:-runtime} old
  [[ $w =~ ^[1-9][0-9]*$ && $t =~ ^[1-9][0-9]*$ && $c =~ ^[1-9][0-9]*$ && $a =~ ^[0-9]+$ ]] ||
    die "apply $*: want three positive integers (and an acceptCount >= 0)"
  case $mode in runtime | restart) ;; *) die "SOFTALLOC_TESTBED_APPLY=$mode: want runtime or restart" ;; esac
  status_ok || die "apply: the testbed is not up (run testbed.sh up)"
  cg_detect
  old=$(cat "$RUN/pools")
  if [ "$old" = "$w $t $c" ] && { [ "$STACK" != java ] || [ "$(cat "$RUN/accept")" = "$a" ]; }; then
    return 0
  fi
  if [ "$STACK" = java ] && [ "$mode" = runtime ] && [ "$(cat "$RUN/accept")" = "$a" ]; then
    # Tomcat's and HikariCP's setters on the running JVM (acceptCount is the
    # listen backlog, fixed when the socket is bound: a change restarts).
    java_resize "$t" "$c"
    if [ "${old%% *}" = "$w" ]; then
      echo "$w $t $c" >"$RUN/pools"
      log "applied $w-$t-$c (at run time)"
      return 0
    fi
  else
    # The app first, so that Apache's restart opens fresh connections to it.
    stop_pid app
    app_start "$t" "$c" "$a"
  fi
  gen=$(web_generation)
  web_config "$w"
  apache2 -f "$TB/apache/httpd.conf" -k restart >>"$LOGS/web.log" 2>&1 || die "Apache restart failed; see $LOGS/web.log"
  wait_for "Apache's restart" 30 web_restarted "$gen"
  echo "$w $t $c" >"$RUN/pools"
  log "applied $w-$t-$c"
}

# java_resize THREADS CONNECTIONS: POST to the app's admin endpoint, which sets
# Tomcat's maxThreads and HikariCP's maximumPoolSize and answers once HikariCP
# holds exactly that many connections.
java_resize() {
  local out
  out=$(timeout 60 bash -c '
    exec 3<>/dev/tcp/127.0.0.1/'"$ADMIN_PORT"' || exit 1
    printf "POST /admin/pools?threads=%s&connections=%s HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n" "'"$1"'" "'"$2"'" >&3
    cat <&3' 2>&1) || die "apply: the Java app's admin endpoint (127.0.0.1:$ADMIN_PORT) did not answer within 60 s"
  if ! printf '%s\n' "$out" | head -1 | grep -q ' 200 '; then
    die "apply: resizing the Java app's pools to $1 threads, $2 connections failed: $(printf '%s\n' "$out" | tail -1)"
  fi
}

web_restarted() {
  local g
  g=$(web_generation) || return 1
  [ -n "$g" ] && [ "$g" -gt "$1" ] && http_ok /rubbos/health $WEB_PORT
}

cmd_caps() {
  [ $# -ge 1 ] || die "caps: want web=CORES app=CORES db=CORES"
  [ -d "$RUN" ] || die "caps: the testbed is not up"
  cg_detect
  [ "$CG" = none ] && { log "no cgroups: tiers run uncapped; caps ignored"; return 0; }
  apply_caps "$@"
  log "caps $*"
}

# cmd_exec_in GROUP CMD...: exec CMD in one of the testbed's groups (or
# uncapped when there are none).
cmd_exec_in() {
  local g=${1:-}; shift || true
  case " $ALL_GROUPS " in *" $g "*) ;; *) die "exec-in: unknown group '$g'; want one of: $ALL_GROUPS" ;; esac
  [ $# -gt 0 ] || die "exec-in $g: no command"
  cg_detect
  if [ "$CG" != none ] && [ -d "$(cg_dirs "$g" | cut -d' ' -f1)" ]; then
    in_group "$g" "$@"
  fi
  exec "$@"
}

# Every command but up acts on the stack that is up.
[ "${1:-}" = up ] || STACK=$(running_stack)

case ${1:-} in
  up) shift; cmd_up "$@" ;;
  down) cmd_down ;;
  status) cmd_status ;;
  apply) shift; cmd_apply "$@" ;;
  caps) shift; cmd_caps "$@" ;;
  exec-client) shift; cmd_exec_in client "$@" ;;
  exec-in) shift; cmd_exec_in "$@" ;;
  clean) cmd_down quiet; rm -rf "$TB"; log "removed $TB" ;;
  java-deps) java_deps ;;
  *) sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
