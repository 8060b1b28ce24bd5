# core.sh: what every stack of the testbed shares, sourced by testbed.sh:
# the ports, the state directory, process handling, the cgroups that cap each
# tier, the servers two stacks run alike (Apache httpd with mod_status,
# MariaDB), Prometheus with the exporters, and the commands (up, down, status,
# caps, exec-in) that call the stack's hooks.
#
# A stack (stacks/NAME/stack.sh) sets STACK_CAPS, STACK_NEED, STACK_APT,
# STACK_PORTS, STACK_PROCS, STACK_HEALTH and defines:
#   stack_build              build what the stack runs (before any server starts)
#   stack_start              start its db, app and web tiers (the core's
#                            db_start, web_start ... help), pools as in run/pools
#   stack_scrape_jobs        Prometheus scrape_configs entries beside the core's
#   stack_stop               stop what the core's down does not know (optional)
#   stack_status             its status lines
#   stack_apply ARGS...      the live runner's hook, through the example
#                            hooks (examples/hooks, HOOKS here: what users
#                            start from is what the testbed runs)
#   stack_scale app=N        start or stop app replicas (optional; testbed.sh scale)
# and may set STACK_MEM_GROUPS (groups that also join a memory cgroup),
# STACK_REPLICA_GROUPS (the cgroups of app replicas beyond the first, capped
# as the app tier, added to ALL_GROUPS by the stack) and
# STACK_MYSQLD_EXPORTER_FLAGS, and DB_ENGINE (mariadb, the default: the
# core's mysqld exporter scrapes it; another engine's exporters are the
# stack's, in STACK_PROCS and stack_scrape_jobs).

TB=${SOFTALLOC_TESTBED_DIR:-${TMPDIR:-/tmp}/softalloc-testbed}
RUN=$TB/run
LOGS=$TB/logs
# The example hooks apply applies the pools with (examples/hooks/README.md).
HOOKS=$REPO/examples/hooks

# Loopback ports away from the standard ones (80, 3306, 9090, 91xx).
# SOFTALLOC_TESTBED_PORT_OFFSET and SOFTALLOC_TESTBED_CGROUP (with
# SOFTALLOC_TESTBED_DIR) run a second testbed beside the first, for work on
# the scripts while a test run holds the first; the deployment files name the
# default ports.
PORT_OFFSET=${SOFTALLOC_TESTBED_PORT_OFFSET:-0}
[[ $PORT_OFFSET =~ ^[0-9]+$ ]] || { echo "testbed: SOFTALLOC_TESTBED_PORT_OFFSET=$PORT_OFFSET: want a number" >&2; exit 1; }
WEB_PORT=$((18080 + PORT_OFFSET))
APP_PORT=$((18081 + PORT_OFFSET))
DB_PORT=$((18306 + PORT_OFFSET))
PROM_PORT=$((18090 + PORT_OFFSET))
CG_PORT=$((18101 + PORT_OFFSET))
MYSQLD_EXP_PORT=$((18104 + PORT_OFFSET))
APACHE_EXP_PORT=$((18117 + PORT_OFFSET))

CG_NAME=${SOFTALLOC_TESTBED_CGROUP:-softalloc-testbed}
CAPPED_TIERS="web app db"
# Uncapped groups: client for the load generator, monitor for Prometheus and
# the exporters, so that their CPU is not charged to a tier.
ALL_GROUPS="web app db client monitor"
STACK_MEM_GROUPS=""
STACK_REPLICA_GROUPS=""
DB_ENGINE=mariadb
# More mysqld_exporter flags a stack's presets need.
STACK_MYSQLD_EXPORTER_FLAGS=""

log() { printf 'testbed: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# ---------------------------------------------------------------- helpers

# http_get URL-PATH PORT: print the response of GET http://127.0.0.1:PORT/PATH
# with bash's /dev/tcp, so that no curl or wget is needed.
http_get() {
  local path=$1 port=$2
  timeout 5 bash -c '
    exec 3<>/dev/tcp/127.0.0.1/'"$port"' || exit 1
    printf "GET %s HTTP/1.0\r\nHost: 127.0.0.1:%s\r\n\r\n" "'"$path"'" "'"$port"'" >&3
    cat <&3' 2>/dev/null
}

# http_ok PATH PORT: true when the answer is 200. (head closes the pipe after
# the status line: a long page's writer then dies of SIGPIPE, which pipefail
# would count as a failure.)
http_ok() {
  local status
  status=$(http_get "$1" "$2" | head -1) || true
  [[ $status == *" 200 "* ]]
}

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
# CG_MEM (v1) is the memory hierarchy's group, under the caller's own memory
# group, so that the testbed's memory stays charged where the caller's is.
cg_detect() {
  CG=none CG_V2="" CG_CPU="" CG_ACCT="" CG_MEM=""
  if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
    CG=v2 CG_V2=/sys/fs/cgroup/$CG_NAME
  else
    local cpu acct mem own
    cpu=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpu(,|$)/ {print $2; exit}' /proc/mounts)
    acct=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpuacct(,|$)/ {print $2; exit}' /proc/mounts)
    if [ -n "$cpu" ] && [ -n "$acct" ] && [ -f "$cpu/cpu.cfs_quota_us" ]; then
      CG=v1 CG_CPU=$cpu/$CG_NAME CG_ACCT=$acct/$CG_NAME
      mem=$(awk '$3 == "cgroup" && $4 ~ /(^|,)memory(,|$)/ {print $2; exit}' /proc/mounts)
      if [ -n "$mem" ]; then
        # The group holding this shell, less any testbed group it runs in
        # (exec-in, a hook started from a capped group).
        own=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3; exit}' /proc/self/cgroup)
        own=${own%%/$CG_NAME*}
        CG_MEM=$mem${own%/}/$CG_NAME
        if [ -f "$RUN/cg-mem" ]; then CG_MEM=$(cat "$RUN/cg-mem"); fi
      fi
    fi
  fi
}

# mem_group GROUP: true when GROUP has a memory limit in this stack.
mem_group() { case " $STACK_MEM_GROUPS " in *" $1 "*) return 0 ;; esac; return 1; }

# cg_dirs GROUP: the cgroup directories a process of GROUP joins.
cg_dirs() {
  case $CG in
    v2) echo "$CG_V2/$1" ;;
    v1)
      if [ "$CG_CPU" = "$CG_ACCT" ]; then echo "$CG_CPU/$1"; else echo "$CG_CPU/$1 $CG_ACCT/$1"; fi
      if [ -n "$CG_MEM" ] && mem_group "$1" && [ -d "$CG_MEM/$1" ]; then echo "$CG_MEM/$1"; fi
      ;;
  esac
}

# cg_setup creates the groups; on failure (a read-only or delegated-away
# hierarchy) it falls back to none, and says so.
cg_setup() {
  cg_detect
  [ "$CG" = none ] && return 0
  local ok=1 g d ctl="+cpu"
  [ -n "$STACK_MEM_GROUPS" ] && ctl="+cpu +memory"
  if [ "$CG" = v2 ]; then
    mkdir -p "$CG_V2" 2>/dev/null &&
      { grep -qw cpu "$CG_V2/cgroup.controllers" || echo +cpu >/sys/fs/cgroup/cgroup.subtree_control; } 2>/dev/null &&
      echo +cpu >"$CG_V2/cgroup.subtree_control" 2>/dev/null || ok=0
    if [ -n "$STACK_MEM_GROUPS" ]; then
      { grep -qw memory "$CG_V2/cgroup.controllers" || echo +memory >/sys/fs/cgroup/cgroup.subtree_control; } 2>/dev/null &&
        echo +memory >"$CG_V2/cgroup.subtree_control" 2>/dev/null ||
        log "WARNING: no memory controller under $CG_V2 ($ctl): the memory limit is not applied"
    fi
  fi
  for g in $ALL_GROUPS; do
    for d in $(cg_dirs "$g"); do mkdir -p "$d" 2>/dev/null || ok=0; done
  done
  if [ $ok = 0 ]; then
    log "WARNING: cannot create cgroups under $CG_CPU$CG_V2; running UNCAPPED (tiers share the machine's CPUs)"
    CG=none
    return 0
  fi
  if [ "$CG" = v1 ] && [ -n "$STACK_MEM_GROUPS" ]; then
    if [ -n "$CG_MEM" ] && mkdir -p "$CG_MEM" 2>/dev/null; then
      for g in $STACK_MEM_GROUPS; do mkdir -p "$CG_MEM/$g" 2>/dev/null || log "WARNING: cannot create $CG_MEM/$g: no memory limit"; done
      echo "$CG_MEM" >"$RUN/cg-mem"
    else
      log "WARNING: no memory cgroup hierarchy ($CG_MEM): the memory limit is not applied"
    fi
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

# set_mem_limit GROUP SIZE: SIZE in MiB (or max) as the group's memory limit
# (v1 memory.limit_in_bytes, v2 memory.max); kept in run/mem-GROUP.
set_mem_limit() {
  local g=$1 mib=$2 bytes
  case $mib in
    max | 0) bytes=max ;;
    *) [[ $mib =~ ^[1-9][0-9]*$ ]] || die "memory limit $g=$mib: want MiB as a positive integer, or max"
      bytes=$((mib * 1024 * 1024)) ;;
  esac
  echo "$mib" >"$RUN/mem-$g"
  case $CG in
    v2) if [ -f "$CG_V2/$g/memory.max" ]; then echo "$bytes" >"$CG_V2/$g/memory.max"; fi ;;
    v1)
      [ -n "$CG_MEM" ] && [ -f "$CG_MEM/$g/memory.limit_in_bytes" ] || return 0
      [ "$bytes" = max ] && bytes=-1
      echo "$bytes" >"$CG_MEM/$g/memory.limit_in_bytes"
      ;;
  esac
}

apply_caps() {
  local kv g c r
  for kv in "$@"; do
    g=${kv%%=*} c=${kv#*=}
    case " $CAPPED_TIERS " in *" $g "*) ;; *) die "caps: unknown tier '$g' in '$kv'; want web=, app= or db=" ;; esac
    set_cap "$g" "$c"
    # Each app replica runs under a cap of its own, the app tier's.
    if [ "$g" = app ]; then for r in $STACK_REPLICA_GROUPS; do set_cap "$r" "$c"; done; fi
    echo "$c" >"$RUN/cap-$g"
  done
}

cg_remove() {
  cg_detect
  [ "$CG" = none ] && return 0
  local g d
  local mem=""
  if [ -n "$CG_MEM" ] && [ -d "$CG_MEM" ]; then
    for g in $ALL_GROUPS; do if [ -d "$CG_MEM/$g" ]; then mem="$mem $CG_MEM/$g"; fi; done
  fi
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
  for d in $mem; do rmdir "$d" 2>/dev/null || true; done
  for d in $CG_V2 $CG_CPU $CG_ACCT $CG_MEM; do [ -d "$d" ] && rmdir "$d" 2>/dev/null || true; done
  rm -f "$RUN/cg-mem"
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

# ---------------------------------------------------------------- MariaDB

db_client() { mariadb --no-defaults --socket="$RUN/mysqld.sock" -uroot "$@"; }

db_ping() { db_client -e 'SELECT 1' >/dev/null 2>&1; }

# db_start DATADIR STAMP LOAD [MARIADBD FLAGS...]: MariaDB on DB_PORT in the
# db group. A data directory whose .softalloc-stamp is not STAMP is made
# afresh, and LOAD (a function) fills it once the server answers; the stamp
# is written after it, so an interrupted load starts again.
db_start() {
  local data=$1 stamp=$2 load=$3
  shift 3
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
    --innodb-buffer-pool-size=256M "$@"
  wait_for MariaDB 60 db_ping
  if [ "$(cat "$data/.softalloc-stamp" 2>/dev/null)" != "$stamp" ]; then
    "$load"
    db_client <<'EOF'
CREATE USER IF NOT EXISTS 'exporter'@'127.0.0.1' IDENTIFIED BY 'exporter' WITH MAX_USER_CONNECTIONS 3;
GRANT PROCESS, REPLICATION CLIENT, SELECT ON *.* TO 'exporter'@'127.0.0.1';
EOF
    echo "$stamp" >"$data/.softalloc-stamp"
  fi
}

# ---------------------------------------------------------------- Apache

# web_conf MODULES BODY: Apache's httpd.conf, mpm_event with mod_status (read
# by the apache exporter), MODULES (names, as in mod_NAME.so) loaded beside,
# BODY appended, then the pools (web_pools writes apache/pools.conf).
web_conf() {
  local mods=/usr/lib/apache2/modules m extra=""
  for m in $1; do extra="${extra}LoadModule ${m}_module $mods/mod_$m.so"$'\n'; done
  mkdir -p "$TB/apache" "$RUN/apache"
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
# What softalloc workload --from-log reads: combined, the arrival to the
# millisecond and the duration (accesslog.ApacheLogFormat).
LogFormat "%h %l %u [%{%d/%b/%Y:%H:%M:%S}t.%{msec_frac}t %{%z}t] \"%r\" %>s %b \"%{Referer}i\" \"%{User-Agent}i\" %D" softalloc
CustomLog "$LOGS/apache-access.log" softalloc
User www-data
Group www-data
LoadModule mpm_event_module $mods/mod_mpm_event.so
LoadModule authz_core_module $mods/mod_authz_core.so
LoadModule authz_host_module $mods/mod_authz_host.so
LoadModule mime_module $mods/mod_mime.so
LoadModule proxy_module $mods/mod_proxy.so
${extra}LoadModule status_module $mods/mod_status.so
TypesConfig /etc/mime.types
$2
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
}

# web_mpm THREADS: mpm_event's pools for every stack's pools.conf. One
# child process holds every thread (ThreadsPerChild = MaxRequestWorkers), so
# that mod_proxy's per-process connection pool (max=) is the whole web
# tier's; ServerLimit leaves room for a graceful restart's second child.
# apply changes them in place through examples/hooks/apache.sh (web_apply).
# The caller checks THREADS (1..2048): a die here, inside the caller's
# $(...), would not stop it.
web_mpm() {
  local threads=$1
  cat <<MPM
StartServers 1
ServerLimit 4
ThreadLimit 2048
ThreadsPerChild $threads
MaxRequestWorkers $threads
MinSpareThreads 1
MaxSpareThreads $((threads + 1))
MaxConnectionsPerChild 0
MPM
}

# web_start HEALTH-PATH: Apache in the web group, until HEALTH-PATH answers.
web_start() {
  apache2 -t -f "$TB/apache/httpd.conf" >>"$LOGS/web.log" 2>&1 || die "Apache's configuration does not parse; see $LOGS/web.log"
  # A stack's access log holds its own pages only: softalloc workload
  # --from-log infers the workload from it, and another stack's pages (the
  # last up's) are not this one's. The last one is kept as .1.
  if [ -f "$LOGS/apache-access.log" ]; then mv -f "$LOGS/apache-access.log" "$LOGS/apache-access.log.1"; fi
  (in_group web apache2 -f "$TB/apache/httpd.conf" -k start) >>"$LOGS/web.log" 2>&1 || die "Apache did not start; see $LOGS/web.log"
  wait_for Apache 30 http_ok "$1" $WEB_PORT
}

# web_generation: Apache's configuration generation, which a restart raises.
web_generation() { http_get '/server-status?auto' $WEB_PORT | awk -F': ' '/^ParentServerConfigGeneration/ {print $2+0}'; }

# web_restart HOW: Apache's restart (restart or graceful), until the new
# generation answers the stack's health URL.
web_restart() {
  local gen deadline=$((SECONDS + 30))
  # Under load the status page may wait for a worker past one 5 s GET (a
  # failed $(...) would end the script with timeout's 124): 30 s, as below.
  until gen=$(web_generation) && [ -n "$gen" ]; do
    ((SECONDS < deadline)) || die "Apache $1: its status page gave no configuration generation within 30 s"
    sleep 0.2
  done
  apache2 -f "$TB/apache/httpd.conf" -k "$1" >>"$LOGS/web.log" 2>&1 || die "Apache $1 failed; see $LOGS/web.log"
  wait_for "Apache's restart" 30 web_restarted "$gen"
}

web_restarted() {
  local g
  g=$(web_generation) || return 1
  [ -n "$g" ] && [ "$g" -gt "$1" ] && http_ok "$STACK_HEALTH" $WEB_PORT
}

# web_pools_threads: the MaxRequestWorkers pools.conf holds.
web_pools_threads() { awk '$1 == "MaxRequestWorkers" {print $2; exit}' "$TB/apache/pools.conf"; }

# web_apply THREADS [full]: Apache's pools through examples/hooks/apache.sh
# (MaxRequestWorkers, ThreadsPerChild, MaxSpareThreads and the proxy's max=
# in pools.conf, apache2 -t, a graceful restart or with full -k restart,
# until the status page shows the new generation's THREADS threads), then
# until the stack's health URL answers. The hook's lines go to stderr, with
# the testbed's own.
web_apply() {
  APACHE_POOLS=$TB/apache/pools.conf APACHE_CONFIG=$TB/apache/httpd.conf APACHE_STATUS=http://127.0.0.1:$WEB_PORT/server-status \
    APACHE_RESTART=${2:-graceful} HOOK_WAIT=30 "$HOOKS/apache.sh" "$1" >&2 ||
    die "apply: Apache's pools of $1 threads: examples/hooks/apache.sh failed (above)"
  wait_for "Apache's restart" 30 http_ok "$STACK_HEALTH" $WEB_PORT
}

web_stop() {
  if pid_alive web; then
    apache2 -f "$TB/apache/httpd.conf" -k stop >>"$LOGS/web.log" 2>&1 || true
    local deadline=$((SECONDS + 15))
    while pid_alive web && ((SECONDS < deadline)); do sleep 0.1; done
  fi
  stop_pid web
}

# ---------------------------------------------------------------- monitoring

# monitor_start: cgexporter, the apache and mysqld exporters and Prometheus,
# scraping them and the stack's own targets (stack_scrape_jobs).
monitor_start() {
  local mode=proc cpu="" acct=""
  case $CG in
    v1) mode=v1 cpu=$CG_CPU acct=$CG_ACCT ;;
    v2) mode=v2 cpu=$CG_V2 ;;
  esac
  local mem=()
  # The memory groups are under the caller's own (cg_detect), not beside the
  # cpu hierarchy's, where cgexporter looks by default.
  if [ "$CG" = v1 ] && [ -n "$STACK_MEM_GROUPS" ] && "$TB/bin/cgexporter" -h 2>&1 | grep -q -- '-memory'; then
    mem=(-memory "$CG_MEM")
  fi
  local tiers=web,app,db r
  if [ "$CG" != none ]; then for r in $STACK_REPLICA_GROUPS; do tiers=$tiers,$r; done; fi
  start cgexporter monitor "$TB/bin/cgexporter" -listen 127.0.0.1:$CG_PORT -mode $mode \
    -cpu "$cpu" -cpuacct "$acct" "${mem[@]}" -pids "$RUN" -tiers $tiers
  start apache-exporter monitor prometheus-apache-exporter --telemetry.address=127.0.0.1:$APACHE_EXP_PORT \
    --scrape_uri="http://127.0.0.1:$WEB_PORT/server-status?auto"
  # The exporter's scrapes cost the DB a few queries a second; the costly
  # collectors that the live runner does not read are off.
  [ "$DB_ENGINE" = mariadb ] && DATA_SOURCE_NAME="exporter:exporter@(127.0.0.1:$DB_PORT)/" start mysqld-exporter monitor prometheus-mysqld-exporter \
    --web.listen-address=127.0.0.1:$MYSQLD_EXP_PORT --no-collect.slave_status \
    --no-collect.info_schema.innodb_cmp --no-collect.info_schema.innodb_cmpmem \
    --no-collect.info_schema.query_response_time $STACK_MYSQLD_EXPORTER_FLAGS
  prom_config
  # A fresh TSDB at each up: series of a target the last up had (the other
  # stack's app) would linger for Prometheus's 5 min lookback, and the live
  # runner waits for every target's scrape.
  rm -rf "$TB/prometheus-data"
  start prometheus monitor prometheus --config.file="$TB/prometheus.yml" --storage.tsdb.path="$TB/prometheus-data" \
    --storage.tsdb.retention.time=6h --web.listen-address=127.0.0.1:$PROM_PORT --log.level=warn
  wait_for Prometheus 60 http_ok /-/ready $PROM_PORT
  wait_for "Prometheus's first scrape of every target" 30 prom_all_up
}

# prom_config: Prometheus's configuration, the core's targets and the stack's.
prom_config() {
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
$(stack_scrape_jobs)
EOF
  if [ "$DB_ENGINE" = mariadb ]; then
    cat >>"$TB/prometheus.yml" <<EOF
  - job_name: mysqld
    static_configs: [{targets: ['127.0.0.1:$MYSQLD_EXP_PORT'], labels: {tier: db}}]
EOF
  fi
}

# prom_reload: Prometheus reads its configuration again (the stack's targets
# changed: app replicas came or went).
prom_reload() {
  prom_config
  pid_alive prometheus || die "Prometheus is not running"
  kill -HUP "$(cat "$RUN/prometheus.pid")"
}

# prom_all_up: every target answered its last scrape.
prom_all_up() {
  local n
  n=$(grep -o "targets: \[" "$TB/prometheus.yml" | wc -l)
  http_get '/api/v1/query?query=count(up%3D%3D1)' $PROM_PORT | grep -q '"value":\[[0-9.]*,"'"$n"'"\]'
}

# ---------------------------------------------------------------- commands

# core_procs: the core's processes (the mysqld exporter with MariaDB only).
core_procs() {
  if [ "$DB_ENGINE" = mariadb ]; then echo "cgexporter apache-exporter mysqld-exporter prometheus"; else echo "cgexporter apache-exporter prometheus"; fi
}

status_ok() {
  local n
  for n in $STACK_PROCS $(core_procs); do pid_alive "$n" || return 1; done
  http_ok "$STACK_HEALTH" $WEB_PORT
}

# require_up CMD: CMD (apply, scale) runs on a testbed that is up: every
# server running and the health page answering. Under a load that saturates
# the stack the page waits behind the load's requests, past http_get's 5 s
# (a scale at 200 pages/s with the database saturated was refused as "not
# up"), so it is given 30 s.
require_up() {
  local n
  for n in $STACK_PROCS $(core_procs); do
    pid_alive "$n" || die "$1: the testbed is not up ($n is not running; run testbed.sh up)"
  done
  wait_for "$1: the health page $STACK_HEALTH" 30 http_ok "$STACK_HEALTH" $WEB_PORT ||
    die "$1: the testbed's health page $STACK_HEALTH did not answer 200 within 30 s"
}

# running_stack: the stack that is up (go when the file predates stacks).
running_stack() { cat "$RUN/stack" 2>/dev/null || echo go; }

cmd_up() {
  local caps="$STACK_CAPS"
  [ $# -gt 0 ] && caps="$*"
  mkdir -p "$RUN" "$LOGS"
  # A stack may say its running servers are not what up asks for (stack_up_to_date).
  if status_ok && [ "$(running_stack)" = "$STACK" ] && { ! declare -F stack_up_to_date >/dev/null || stack_up_to_date; }; then
    cg_detect
    apply_caps $caps
    log "already up ($STACK stack); caps $caps"
    return 0
  fi
  if [ -f "$RUN/stack" ] && [ "$(running_stack)" != "$STACK" ]; then
    # The other stack's own down, which knows its processes and files.
    "$REPO/testbed/testbed.sh" down quiet || true
  fi
  cmd_down quiet
  mkdir -p "$RUN" "$LOGS"
  # A failed start leaves nothing running.
  trap 'up_failed' EXIT
  local missing="" b
  local apt="apache2 mariadb-server prometheus prometheus-apache-exporter prometheus-mysqld-exporter curl $STACK_APT"
  local need="apache2 mariadbd mariadb mariadb-install-db prometheus prometheus-apache-exporter prometheus-mysqld-exporter go curl $STACK_NEED"
  for b in $need; do
    command -v "$b" >/dev/null || missing="$missing $b"
  done
  [ -z "$missing" ] || die "missing:$missing (Debian: apt-get install ${apt% })"
  local ports="$WEB_PORT $APP_PORT $DB_PORT $PROM_PORT $CG_PORT $MYSQLD_EXP_PORT $APACHE_EXP_PORT $STACK_PORTS"
  for p in $ports; do
    port_free "$p" || die "port $p on 127.0.0.1 is taken by another program"
  done
  echo "$STACK" >"$RUN/stack"
  log "building the $STACK stack and the cgroup exporter"
  (cd "$REPO" && go build -o "$TB/bin/cgexporter" ./testbed/cgexporter)
  stack_build
  cg_setup
  apply_caps $caps
  echo "$CG" >"$RUN/cgroup-mode"
  stack_start
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
  web_stop
  if declare -F stack_stop >/dev/null; then stack_stop; fi
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
    local d p g
    for d in $(cg_dirs web) $(cg_dirs app) $(cg_dirs db) $(cg_dirs monitor) $(for g in $STACK_REPLICA_GROUPS; do cg_dirs "$g"; done); do
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
  for n in $STACK_PROCS $(core_procs); do
    if pid_alive "$n"; then printf '  %-16s pid %s\n' "$n" "$(cat "$RUN/$n.pid")"; else printf '  %-16s not running\n' "$n"; fi
  done
  if [ "$cg" = none ]; then
    echo "  cgroups: none available: tiers run UNCAPPED"
  else
    printf '  cgroups %s, CPU caps (cores):' "$cg"
    for n in $CAPPED_TIERS; do printf ' %s=%s' "$n" "$(cat "$RUN/cap-$n" 2>/dev/null || echo '?')"; done
    for n in $STACK_MEM_GROUPS; do printf ', %s memory %s MiB' "$n" "$(cat "$RUN/mem-$n" 2>/dev/null || echo '?')"; done
    echo
  fi
  stack_status
  echo "  web http://127.0.0.1:$WEB_PORT$STACK_FRONT  prometheus http://127.0.0.1:$PROM_PORT  logs $LOGS"
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

cmd_scale() {
  declare -F stack_scale >/dev/null || die "scale: the $STACK stack has one app server (the go stack has replicas)"
  stack_scale "$@"
}
