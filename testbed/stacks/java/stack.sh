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
#   SOFTALLOC_TESTBED_JAVA_THREADS  platform (default: Tomcat's thread pool on the
#                                 java of PATH, OpenJDK 17) or virtual (Tomcat's
#                                 connector on virtual threads, on Temurin 25, with
#                                 the app's concurrency limit in place of the pool:
#                                 apply's second number is then the limit's permits,
#                                 0 for none). Given to apply too (deployment-java-
#                                 vthreads.yaml's hook does), it must be the variant up ran.
#   SOFTALLOC_TESTBED_JAVA_HOME   the JDK that runs the app, either variant
#                                 (default: the java of PATH for platform threads,
#                                 /usr/lib/jvm/temurin-25-jdk-amd64 for virtual;
#                                 set to Temurin 25, both run on one JDK)
#   SOFTALLOC_TESTBED_JAVA_LIMIT_WAIT    how long a page waits for a permit before
#                                 a 503 (default 2s)
#   SOFTALLOC_TESTBED_JAVA_CONN_TIMEOUT  HikariCP's connectionTimeout (default 30s,
#                                 HikariCP's own)
#   SOFTALLOC_TESTBED_JAVA_RESTART  set: up on a running Java stack starts a new JVM
#                                 even when it runs what up asks for (a cold start
#                                 for each configuration of a measurement)

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
# A jar built from the same sources (their digest kept beside it) is kept:
# Maven takes tens of seconds on every clone.
stack_build() {
  echo "-Xmx${SOFTALLOC_TESTBED_JAVA_HEAP:-256m} ${SOFTALLOC_TESTBED_JAVA_OPTS:-}" >"$RUN/java-opts"
  java_variant_setup
  local pom=$REPO/testbed/java digest
  digest=$(cd "$pom" && find pom.xml src -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-32)
  if [ -f "$TB/bin/bboard.jar" ] && [ "$(cat "$TB/bin/bboard.jar.sources" 2>/dev/null)" = "$digest" ]; then
    return 0
  fi
  if ! mvn -B -q -o -f "$pom/pom.xml" package >>"$LOGS/mvn.log" 2>&1; then
    log "the offline Maven build failed (dependencies not cached yet?); fetching them from Maven Central once"
    java_deps
    mvn -B -q -o -f "$pom/pom.xml" package >>"$LOGS/mvn.log" 2>&1 || die "the Java app does not build; see $LOGS/mvn.log"
  fi
  mkdir -p "$TB/bin"
  cp "$pom/target/bboard.jar" "$TB/bin/bboard.jar"
  echo "$digest" >"$TB/bin/bboard.jar.sources"
}

# java_deps: everything the offline build needs, plugins included
# (dependency:go-offline alone misses some of the plugins' own dependencies).
java_deps() {
  mkdir -p "$LOGS"
  mvn -B -q -f "$REPO/testbed/java/pom.xml" dependency:go-offline package >>"$LOGS/mvn.log" 2>&1 ||
    die "fetching the Java app's Maven dependencies failed; see $LOGS/mvn.log"
}

app_metrics_port() { echo $ADMIN_PORT; }

# java_variant_setup: run/java-threads (platform or virtual), run/java-bin (the
# java that runs the app) and run/java-flags (the app's flags of the variant),
# kept for applies and restarts. The JDK is SOFTALLOC_TESTBED_JAVA_HOME's,
# by default the java of PATH for platform threads and, for virtual threads,
# where this kind of machine has Temurin 25; without it up fails with one line.
java_variant_setup() {
  java_variant_want
  echo "$JAVA_WANT_THREADS" >"$RUN/java-threads"
  echo "$JAVA_WANT_BIN" >"$RUN/java-bin"
  echo "$JAVA_WANT_FLAGS" >"$RUN/java-flags"
}

# java_variant_want sets JAVA_WANT_THREADS, JAVA_WANT_BIN and JAVA_WANT_FLAGS
# from the settings.
java_variant_want() {
  local v=${SOFTALLOC_TESTBED_JAVA_THREADS:-platform} home=${SOFTALLOC_TESTBED_JAVA_HOME:-} bin
  case $v in
    platform)
      bin=java
      if [ -n "$home" ]; then
        bin=$home/bin/java
        [ -x "$bin" ] || die "SOFTALLOC_TESTBED_JAVA_HOME=$home: no java at $bin (want a JDK 17 or later there, or unset for the java of PATH)"
      fi
      ;;
    virtual)
      home=${home:-/usr/lib/jvm/temurin-25-jdk-amd64}
      bin=$home/bin/java
      [ -x "$bin" ] || die "SOFTALLOC_TESTBED_JAVA_THREADS=virtual: no JDK at $home (want Temurin 25 there, or SOFTALLOC_TESTBED_JAVA_HOME=a JDK 21 or later)"
      ;;
    *) die "SOFTALLOC_TESTBED_JAVA_THREADS=$v: want platform or virtual" ;;
  esac
  JAVA_WANT_THREADS=$v
  JAVA_WANT_BIN=$bin
  JAVA_WANT_FLAGS="-virtual-threads $([ "$v" = virtual ] && echo true || echo false) -limit-wait ${SOFTALLOC_TESTBED_JAVA_LIMIT_WAIT:-2s} -connection-timeout ${SOFTALLOC_TESTBED_JAVA_CONN_TIMEOUT:-30s}"
}

java_threads() { cat "$RUN/java-threads" 2>/dev/null || echo platform; }

# stack_up_to_date: up leaves a running Java stack as it is when it runs the
# variant asked for with the same JVM and flags; otherwise it restarts the
# app tier alone (a new JVM, with the pools of run/pools: the same number is
# the platform variant's maxThreads and the virtual variant's permits), since
# the jar, the database and the monitoring are the same.
stack_up_to_date() {
  local pools
  java_variant_want
  [ -z "${SOFTALLOC_TESTBED_JAVA_RESTART:-}" ] && [ "$(java_threads)" = "$JAVA_WANT_THREADS" ] &&
    [ "$(cat "$RUN/java-bin" 2>/dev/null)" = "$JAVA_WANT_BIN" ] && [ "$(cat "$RUN/java-flags" 2>/dev/null)" = "$JAVA_WANT_FLAGS" ] && return 0
  log "restarting the app tier: $(java_threads) threads, $(cat "$RUN/java-flags" 2>/dev/null) -> $JAVA_WANT_THREADS threads, $JAVA_WANT_FLAGS (a new JVM)"
  java_variant_setup
  cg_detect
  read -r -a pools <"$RUN/pools"
  stop_pid app
  app_start "${pools[1]}" "${pools[2]}" "$(cat "$RUN/accept" 2>/dev/null || echo $DEFAULT_ACCEPT)"
}

# app_start THREADS CONNECTIONS [ACCEPT_COUNT]: embedded Tomcat in a JVM with
# a small heap (the heap and any extra flags are those of `up`, kept in
# run/java-opts). The JVM starts with the app tier's cap lifted and gets it
# back once it answers, before any load: under the 0.1-core cap it loaded
# its classes for about 45 s of each `up` (48 and 49 s in a make test).
# With virtual threads THREADS is the concurrency limit's permits (0: none).
app_start() {
  local threads=$1 conns=$2 accept=${3:-$DEFAULT_ACCEPT} opts flags bin pool cap started=0
  opts=$(cat "$RUN/java-opts")
  flags=$(cat "$RUN/java-flags" 2>/dev/null || echo "-virtual-threads false")
  bin=$(cat "$RUN/java-bin" 2>/dev/null || echo java)
  if [ "$(java_threads)" = virtual ]; then
    pool="-limit $threads"
  else
    pool="-threads $threads"
  fi
  cap=$(cat "$RUN/cap-app" 2>/dev/null || echo max)
  set_cap app max
  # shellcheck disable=SC2086 # the options are words
  start app app "$bin" $opts -jar "$TB/bin/bboard.jar" -listen 127.0.0.1:$APP_PORT -admin 127.0.0.1:$ADMIN_PORT \
    -jdbc-url "jdbc:mariadb://127.0.0.1:$DB_PORT/rubbos" -user rubbos -password rubbos \
    $pool -connections "$conns" -accept-count "$accept" -query-delay "$QUERY_DELAY" $flags
  echo "$accept" >"$RUN/accept"
  # In a subshell: app_up exits when the JVM died, and the cap comes back then too.
  (wait_for "the app (a JVM)" 120 app_up) || started=$?
  set_cap app "$cap"
  return $started
}

stack_status() {
  echo "  pools (web threads, app threads, app connections): $(cat "$RUN/pools" 2>/dev/null || echo '?')"
  echo "  java stack: $(java_threads) threads on $(cat "$RUN/java-bin" 2>/dev/null || echo java), JVM $(cat "$RUN/java-opts" 2>/dev/null), Tomcat acceptCount $(cat "$RUN/accept" 2>/dev/null || echo '?'), metrics and admin http://127.0.0.1:$ADMIN_PORT"
}

# stack_apply WEB_THREADS APP_THREADS APP_CONNECTIONS [ACCEPT_COUNT]
# (virtual threads: WEB_THREADS APP_PERMITS APP_CONNECTIONS [ACCEPT_COUNT])
# At run time (the default) the app's pools go through
# examples/hooks/tomcat-hikari.sh, the web tier's through
# examples/hooks/apache.sh with a full restart.
stack_apply() {
  [ $# -eq 3 ] || [ $# -eq 4 ] || die "apply: want WEB_THREADS APP_THREADS APP_CONNECTIONS [ACCEPT_COUNT]"
  local w=$1 t=$2 c=$3 a=${4:-$DEFAULT_ACCEPT} mode=${SOFTALLOC_TESTBED_APPLY:-runtime} old
  require_up apply
  if [ -n "${SOFTALLOC_TESTBED_JAVA_THREADS:-}" ] && [ "$SOFTALLOC_TESTBED_JAVA_THREADS" != "$(java_threads)" ]; then
    die "apply: the hook is for $SOFTALLOC_TESTBED_JAVA_THREADS threads, and the Java stack up runs $(java_threads) threads (SOFTALLOC_TESTBED_JAVA_THREADS=$SOFTALLOC_TESTBED_JAVA_THREADS STACK=java testbed.sh up)"
  fi
  if [ "$(java_threads)" = virtual ]; then
    # Permits: 0 is no limit, and the web tier's threads bound them anyway.
    [[ $t =~ ^[0-9]+$ ]] && ((t <= 100000)) || die "apply: app permits $t: want 0 (no limit)..100000"
    bboard_apply_check "$w" 1 "$c" "$a"
  else
    bboard_apply_check "$w" "$t" "$c" "$a"
  fi
  cg_detect
  old=$(cat "$RUN/pools")
  if [ "$old" = "$w $t $c" ] && [ "$(cat "$RUN/accept")" = "$a" ]; then
    return 0
  fi
  if [ "$mode" = runtime ] && [ "$(cat "$RUN/accept")" = "$a" ]; then
    # Tomcat's and HikariCP's setters on the running JVM, through the app's
    # admin endpoint, which answers once HikariCP holds exactly that many
    # connections (acceptCount is the listen backlog, fixed when the socket
    # is bound: a change restarts). With virtual threads the first number is
    # the concurrency limit's permits.
    TOMCAT_ADMIN=http://127.0.0.1:$ADMIN_PORT TOMCAT_LIMIT=$([ "$(java_threads)" = virtual ] && echo 1) HOOK_WAIT=60 \
      "$HOOKS/tomcat-hikari.sh" "$t" "$c" >&2 || die "apply: the Java app's pools ($t, $c connections): examples/hooks/tomcat-hikari.sh failed (above)"
    if [ "$(web_pools_threads)" = "$w" ]; then
      echo "$w $t $c" >"$RUN/pools"
      log "applied $w-$t-$c (at run time)"
      return 0
    fi
    web_apply "$w" full
  else
    # The app first, so that Apache's restart opens fresh connections to it.
    stop_pid app
    app_start "$t" "$c" "$a"
    if [ "$(web_pools_threads)" = "$w" ]; then web_restart restart; else web_apply "$w" full; fi
  fi
  echo "$w $t $c" >"$RUN/pools"
  log "applied $w-$t-$c"
}
