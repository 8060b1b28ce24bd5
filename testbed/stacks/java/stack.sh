# stacks/java/stack.sh: the Java twin of the bulletin board (testbed/java):
# Apache -> embedded Tomcat with HikariCP and the MariaDB JDBC driver on a JVM
# with a small heap -> MariaDB.
#
# Settings (read by `up`, kept for later applies):
#   SOFTALLOC_TESTBED_JAVA_HEAP   the JVM's -Xmx (default 256m)
#   SOFTALLOC_TESTBED_JAVA_OPTS   more JVM flags (default none)
#   SOFTALLOC_TESTBED_APPLY       how apply resizes Tomcat's and HikariCP's pools:
#                                 runtime (default: the admin endpoint calls their
#                                 setters, the JVM stays warm) or restart (a new JVM)

# shellcheck source=../bboard.sh
. "$REPO/testbed/stacks/bboard.sh"

# The Java app's management port: /metrics and /admin/pools.
ADMIN_PORT=$((18082 + PORT_OFFSET))
# The warm JVM spends 0.3-0.5 ms of CPU per page: under 0.2 cores it outran
# the database and the machine (throughput stopped at 410 pages/s with no
# tier at 0.95), so its cap is half the Go app's.
STACK_CAPS="web=0.5 app=0.1 db=0.6"
STACK_NEED="java mvn"
STACK_APT="openjdk-17-jdk-headless maven"
STACK_PORTS="$ADMIN_PORT"
# Tomcat's default acceptCount.
DEFAULT_ACCEPT=100

# stack_build: the runnable jar, offline from Maven's local repository; the
# first build on a machine fetches the dependencies (java-deps) and says so.
stack_build() {
  echo "-Xmx${SOFTALLOC_TESTBED_JAVA_HEAP:-256m} ${SOFTALLOC_TESTBED_JAVA_OPTS:-}" >"$RUN/java-opts"
  local pom=$REPO/testbed/java
  if ! mvn -B -q -o -f "$pom/pom.xml" package >>"$LOGS/mvn.log" 2>&1; then
    log "the offline Maven build failed (dependencies not cached yet?); fetching them from Maven Central once"
    java_deps
    mvn -B -q -o -f "$pom/pom.xml" package >>"$LOGS/mvn.log" 2>&1 || die "the Java app does not build; see $LOGS/mvn.log"
  fi
  mkdir -p "$TB/bin"
  cp "$pom/target/bboard.jar" "$TB/bin/bboard.jar"
}

# java_deps: everything the offline build needs, plugins included
# (dependency:go-offline alone misses some of the plugins' own dependencies).
java_deps() {
  mkdir -p "$LOGS"
  mvn -B -q -f "$REPO/testbed/java/pom.xml" dependency:go-offline package >>"$LOGS/mvn.log" 2>&1 ||
    die "fetching the Java app's Maven dependencies failed; see $LOGS/mvn.log"
}

app_metrics_port() { echo $ADMIN_PORT; }

# app_start THREADS CONNECTIONS [ACCEPT_COUNT]: embedded Tomcat in a JVM with
# a small heap (the heap and any extra flags are those of `up`, kept in
# run/java-opts). A JVM under a 0.2-core cap takes seconds to load its
# classes: it gets 120 s.
app_start() {
  local threads=$1 conns=$2 accept=${3:-$DEFAULT_ACCEPT} opts
  opts=$(cat "$RUN/java-opts")
  # shellcheck disable=SC2086 # the options are words
  start app app java $opts -jar "$TB/bin/bboard.jar" -listen 127.0.0.1:$APP_PORT -admin 127.0.0.1:$ADMIN_PORT \
    -jdbc-url "jdbc:mariadb://127.0.0.1:$DB_PORT/rubbos" -user rubbos -password rubbos \
    -threads "$threads" -connections "$conns" -accept-count "$accept" -query-delay "$QUERY_DELAY"
  echo "$accept" >"$RUN/accept"
  wait_for "the app (a JVM)" 120 app_up
}

stack_status() {
  echo "  pools (web threads, app threads, app connections): $(cat "$RUN/pools" 2>/dev/null || echo '?')"
  echo "  java stack: JVM $(cat "$RUN/java-opts" 2>/dev/null), Tomcat acceptCount $(cat "$RUN/accept" 2>/dev/null || echo '?'), metrics and admin http://127.0.0.1:$ADMIN_PORT"
}

# stack_apply WEB_THREADS APP_THREADS APP_CONNECTIONS [ACCEPT_COUNT]
stack_apply() {
  [ $# -eq 3 ] || [ $# -eq 4 ] || die "apply: want WEB_THREADS APP_THREADS APP_CONNECTIONS [ACCEPT_COUNT]"
  local w=$1 t=$2 c=$3 a=${4:-$DEFAULT_ACCEPT} mode=${SOFTALLOC_TESTBED_APPLY:-runtime} old
  bboard_apply_check "$w" "$t" "$c" "$a"
  status_ok || die "apply: the testbed is not up (run testbed.sh up)"
  cg_detect
  old=$(cat "$RUN/pools")
  if [ "$old" = "$w $t $c" ] && [ "$(cat "$RUN/accept")" = "$a" ]; then
    return 0
  fi
  if [ "$mode" = runtime ] && [ "$(cat "$RUN/accept")" = "$a" ]; then
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
  bboard_web_apply "$w"
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
