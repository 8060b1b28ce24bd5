#!/usr/bin/env bash
# testbed.sh: real three-tier web applications on loopback, for softalloc's
# live runner: Apache httpd (mpm_event) in front, an app tier, MariaDB at the
# back, monitored by Prometheus through the apache and mysqld exporters, the
# app tier's own metrics and testbed/cgexporter (per-tier CPU from cgroup
# accounting). Each tier runs in its own cgroup with a CPU quota, so that it
# behaves as a server of known capacity.
#
# STACK (environment) picks the stack that `up` starts, each in its folder
# under stacks/ around the shared core (core.sh):
#   go         the bulletin board (testbed/app), the default
#   java       its Java twin (testbed/java: embedded Tomcat, HikariCP)
#   wordpress  Debian's WordPress on php-fpm (stacks/wordpress)
# Other commands act on the stack that is up.
#
#   testbed.sh up [web=CORES app=CORES db=CORES]   start everything (idempotent)
#   testbed.sh down                                 stop everything (idempotent)
#   testbed.sh status                               what runs, the caps, the URLs
#   testbed.sh apply WEB_THREADS APP_THREADS APP_CONNECTIONS [ACCEPT_COUNT]
#                                                   the live runner's hook: set the pools
#                                                   (through examples/hooks; their lines on stderr)
#                                                   (ACCEPT_COUNT: Tomcat's, java only, default 100;
#                                                   wordpress: apply WEB_THREADS CHILDREN DB_CONNECTIONS)
#   testbed.sh caps web=CORES app=CORES db=CORES    move the CPU caps (0 or max: uncapped)
#   testbed.sh scale app=N                          go: run N app replicas (1..3) behind Apache's
#                                                   balancer, also under load (graceful restart);
#                                                   SOFTALLOC_TESTBED_APP_REPLICAS=N at up
#   testbed.sh exec-client CMD ARGS...              run CMD (a load generator) in the
#                                                   uncapped client cgroup
#   testbed.sh exec-in GROUP CMD ARGS...            run CMD in GROUP (web, app, db, client,
#                                                   monitor), under its cap
#   testbed.sh clean                                down, then remove the state directory
#   testbed.sh java-deps                            fetch the Java app's Maven dependencies
#                                                   (online, once; builds are offline after)
#
# State, logs and the generated databases live in $SOFTALLOC_TESTBED_DIR
# (default ${TMPDIR:-/tmp}/softalloc-testbed); logs in its logs/. Each stack's
# script (stacks/NAME/stack.sh) lists its own settings.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=core.sh
. "$REPO/testbed/core.sh"

# Every command but up acts on the stack that is up; java-deps on java.
case ${1:-} in
  up) STACK=${STACK:-go} ;;
  java-deps) STACK=java ;;
  *) STACK=$(running_stack) ;;
esac
case $STACK in
  go | java | wordpress) ;;
  *) die "STACK=$STACK: want go, java or wordpress" ;;
esac
# shellcheck source=/dev/null
. "$REPO/testbed/stacks/$STACK/stack.sh"

case ${1:-} in
  up) shift; cmd_up "$@" ;;
  down) shift; cmd_down "$@" ;;
  status) cmd_status ;;
  apply) shift; stack_apply "$@" ;;
  caps) shift; cmd_caps "$@" ;;
  scale) shift; cmd_scale "$@" ;;
  exec-client) shift; cmd_exec_in client "$@" ;;
  exec-in) shift; cmd_exec_in "$@" ;;
  clean) cmd_down quiet; rm -rf "$TB"; log "removed $TB" ;;
  java-deps) java_deps ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
