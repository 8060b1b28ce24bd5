# stacks/bboard.sh: what the two bulletin-board stacks (go and java) share:
# the RUBBoS-like database, Apache's reverse proxy to the app and the check
# of the hook's web threads, app threads and app connections. Sourced by
# stacks/go/stack.sh and stacks/java/stack.sh.

# The allocation the servers start with (web threads, app threads, app connections).
DEFAULT_POOLS="100 20 10"
# Emulated network round trip per SQL query (see testbed/app -query-delay).
QUERY_DELAY=${SOFTALLOC_TESTBED_QUERY_DELAY:-5ms}
STACK_PROCS="db app web"
STACK_HEALTH=/rubbos/health
STACK_FRONT=/rubbos/StoriesOfTheDay

# bboard_load: the RUBBoS-like data, once per data directory.
bboard_load() {
  local t0=$SECONDS
  log "generating the RUBBoS-like data (20,000 users, 30,000 stories, 100,000 comments)"
  db_client <"$REPO/testbed/sql/schema.sql"
  db_client <"$REPO/testbed/sql/data.sql" >/dev/null
  db_client <<'SQL'
CREATE USER IF NOT EXISTS 'rubbos'@'127.0.0.1' IDENTIFIED BY 'rubbos';
GRANT SELECT ON rubbos.* TO 'rubbos'@'127.0.0.1';
SQL
  log "data generated in $((SECONDS - t0)) s"
}

bboard_db_start() {
  local stamp
  stamp=$(cat "$REPO/testbed/sql/schema.sql" "$REPO/testbed/sql/data.sql" | sha256sum | cut -c1-16)
  db_start "$TB/mariadb-data" "$stamp" bboard_load \
    --max-connections=2000 --thread-cache-size=200 --innodb-flush-log-at-trx-commit=2
}

# stack_start: the database, the app with the default pools, Apache.
stack_start() {
  set -- $DEFAULT_POOLS
  echo "$*" >"$RUN/pools"
  bboard_db_start
  app_start "$2" "$3"
  web_config "$1"
  bboard_web_start
}

# app_backend_ports: the app's ports Apache proxies to, one per replica (the
# Go stack runs several; see stacks/go/stack.sh).
app_backend_ports() { echo "$APP_PORT"; }

# web_proxy THREADS: Apache's proxy to the app. One replica: a ProxyPass to
# it. Several: mod_proxy_balancer's members, each with max=THREADS (every
# web thread may wait on one replica), retry=0 so that a member just started
# is tried at once after a refused connection, and maxattempts so that a
# request a stopping replica refuses goes to another.
web_proxy() {
  local threads=$1 ports p n=0
  ports=$(app_backend_ports)
  for p in $ports; do n=$((n + 1)); done
  if [ "$n" -le 1 ]; then
    echo "ProxyPass /rubbos/ http://127.0.0.1:$APP_PORT/rubbos/ max=$threads timeout=60 keepalive=On"
    return
  fi
  echo "<Proxy balancer://app>"
  for p in $ports; do
    echo "  BalancerMember http://127.0.0.1:$p max=$threads timeout=60 keepalive=On retry=0"
  done
  echo "  ProxySet lbmethod=byrequests maxattempts=$((n - 1))"
  echo "</Proxy>"
  echo "ProxyPass /rubbos/ balancer://app/rubbos/"
}

# web_config THREADS: Apache's pools at up (and at scale, which changes the
# balancer's members); apply edits them with examples/hooks/apache.sh. One
# child process holds every thread (ThreadsPerChild = MaxRequestWorkers), so
# that mod_proxy's per-process connection pool (max=) is the whole web
# tier's; ServerLimit leaves room for a restart.
web_config() {
  local threads=$1
  ((threads >= 1 && threads <= 2048)) || die "web threads $threads: want 1..2048 (ThreadLimit)"
  mkdir -p "$TB/apache"
  cat >"$TB/apache/pools.conf" <<CONF
# Written by testbed.sh up or scale; apply edits the pools in place
# through examples/hooks/apache.sh.
$(web_mpm "$threads")
ProxyPass /rubbos/static/ !
$(web_proxy "$threads")
CONF
}

bboard_web_start() {
  mkdir -p "$TB/www/rubbos/static"
  cp "$REPO/testbed/static/"* "$TB/www/rubbos/static/"
  chmod -R a+rX "$TB/www"
  web_conf "proxy_http proxy_balancer lbmethod_byrequests slotmem_shm" "DocumentRoot \"$TB/www\"
<Directory />
  Require all granted
</Directory>"
  web_start "$STACK_HEALTH"
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

stack_scrape_jobs() {
  cat <<YAML
  - job_name: app
    static_configs: [{targets: ['127.0.0.1:$(app_metrics_port)'], labels: {tier: app}}]
YAML
}

# bboard_apply_check WEB THREADS CONNECTIONS ACCEPT: the hook's arguments.
bboard_apply_check() {
  [[ $1 =~ ^[1-9][0-9]*$ && $2 =~ ^[1-9][0-9]*$ && $3 =~ ^[1-9][0-9]*$ && $4 =~ ^[0-9]+$ ]] ||
    die "apply $*: want three positive integers (and an acceptCount >= 0)"
  case ${SOFTALLOC_TESTBED_APPLY:-runtime} in runtime | restart) ;; *) die "SOFTALLOC_TESTBED_APPLY=$SOFTALLOC_TESTBED_APPLY: want runtime or restart" ;; esac
}
