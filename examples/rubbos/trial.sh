#!/usr/bin/env bash
# trial.sh: one RUBBoS trial for softalloc's exec runner (docs/exec-protocol.md).
#
#   softalloc recommend --topology 1/2/1/2 --runner exec \
#       --runner-cmd "examples/rubbos/trial.sh examples/rubbos/rubbos.env"
#
# Reads the experiment on stdin; over ssh sets Apache MaxRequestWorkers, Tomcat
# maxThreads and the DB connection pool, restarts the servers, runs the RUBBoS
# client with the workload, records `sar -u` on every host over the runtime
# window, collects the access and error logs, and prints the observation (made
# by the observe program from those files) on stdout. Everything else goes to
# stderr, which softalloc shows prefixed with the experiment id.
#
# Needs here: bash, jq, ssh/scp with keys (BatchMode), curl, and the observe
# program (go build -o observe ./examples/rubbos/observe). On the hosts: sudo
# without a password for the restart and config commands, sysstat's sar.
set -euo pipefail

config=${1:?usage: trial.sh CONFIG < experiment.json (see rubbos.env.example)}
# shellcheck source=rubbos.env.example
source "$config"

# Only the observation may reach stdout: everything else goes to stderr, and
# the observation to fd 3.
exec 3>&1 1>&2

log() { printf '%s\n' "$*" >&2; }
die() { log "trial.sh: $*"; exit 1; }
ssh_() { $SSH "$@"; }

# --- the experiment ----------------------------------------------------------
results_root=${RESULTS:-results}
mkdir -p "$results_root"
exp=$(mktemp "$results_root/experiment.XXXXXX")
cat > "$exp"
q() { jq -r "$1" "$exp"; }
[ "$(q .protocolVersion)" = 1 ] || die "protocol version $(q .protocolVersion): this script speaks 1"
id=$(q .experimentId)
attempt=$(q .attempt)
dir="$results_root/$id/attempt-$attempt"
mkdir -p "$dir"
mv "$exp" "$dir/experiment.json"
exp="$dir/experiment.json"

# Every number that reaches a remote command line is checked to be one.
int() {
	local v
	v=$(q "$1")
	case $v in '' | *[!0-9]*) die "$1: want a non-negative integer, got '$v'" ;; esac
	printf '%s' "$v"
}
seconds() { # timing values may be fractional: round to whole seconds
	local v
	v=$(q "$1 | round")
	case $v in '' | *[!0-9]*) die "$1: want a number of seconds, got '$v'" ;; esac
	printf '%s' "$v"
}
users=$(int .workload.users)
web_threads=$(int '.allocation.web.threads // 0')
app_threads=$(int '.allocation.app.threads // 0')
app_conns=$(int '.allocation.app.connections // 0')
ramp_up=$(seconds .timing.rampUpSeconds)
runtime=$(seconds .timing.runtimeSeconds)
ramp_down=$(seconds .timing.rampDownSeconds)

# Servers map to hosts in order: web-1 is the first of WEB_HOSTS, and so on.
read -r -a web_hosts <<< "${WEB_HOSTS:-}"
read -r -a app_hosts <<< "${APP_HOSTS:-}"
read -r -a cluster_hosts <<< "${CLUSTER_HOSTS:-}"
read -r -a db_hosts <<< "${DB_HOSTS:-}"
read -r -a client_hosts <<< "${CLIENT_HOSTS:?CLIENT_HOSTS: the hosts that run the RUBBoS client}"
declare -A host_of
for tier in web app cluster db; do
	n=$(q "[.tiers[] | select(.name == \"$tier\")][0].replicas // 0")
	declare -n hosts="${tier}_hosts"
	[ "$n" -le "${#hosts[@]}" ] || die "the experiment has $n $tier servers, the config ${#hosts[@]} hosts"
	for ((i = 0; i < n; i++)); do host_of["$tier-$((i + 1))"]=${hosts[$i]}; done
	unset -n hosts
done
servers=$(q '.tiers[].servers[]')
log "experiment $id (attempt $attempt): $users users, pools web $web_threads, app $app_threads/$app_conns; $ramp_up+$runtime+$ramp_down s"

# --- stop whatever we started, on any exit -----------------------------------
# Remote processes do not die with their ssh; each writes its pid to a file
# on its host, and this kills exactly those.
remote_pids=() # "host:pidfile"
cleanup() {
	local entry
	for entry in "${remote_pids[@]}"; do
		ssh_ "${entry%%:*}" "test -f ${entry#*:} && kill \$(cat ${entry#*:}) 2>/dev/null; rm -f ${entry#*:}" || true
	done
	jobs -p | xargs -r kill 2>/dev/null || true
}
trap cleanup EXIT
trap 'log "trial.sh: stopped"; exit 143' TERM INT

# run_remote HOST NAME CMD: run the shell text CMD on HOST, killable by
# cleanup through the pid the remote shell records (CMD should exec its
# long-running program, so that the pid stays the program's). The caller
# registers the pid file first: a background job cannot add to our list.
pidfile() { printf '/tmp/softalloc-%s-%s.pid' "$id" "$1"; }
run_remote() {
	local host=$1 name=$2 cmd=$3
	ssh_ "$host" "echo \$\$ > $(pidfile "$name"); $cmd"
}

# --- apply the allocation -----------------------------------------------------
for s in $servers; do
	host=${host_of[$s]}
	case $s in
	web-*)
		# MaxRequestWorkers is bounded by ServerLimit x ThreadsPerChild.
		tpc=$(ssh_ "$host" "awk '/^[[:space:]]*ThreadsPerChild/ {print \$2}' $APACHE_MPM_CONF" | tail -1)
		tpc=${tpc:-25}
		limit=$(((web_threads + tpc - 1) / tpc))
		log "$s ($host): MaxRequestWorkers $web_threads, ServerLimit $limit"
		ssh_ "$host" "sudo sed -i -E 's/^([[:space:]]*MaxRequestWorkers)[[:space:]]+[0-9]+/\\1 $web_threads/; s/^([[:space:]]*ServerLimit)[[:space:]]+[0-9]+/\\1 $limit/' $APACHE_MPM_CONF"
		ssh_ "$host" "grep -Eq '^[[:space:]]*MaxRequestWorkers[[:space:]]+$web_threads\$' $APACHE_MPM_CONF" ||
			die "$s: no MaxRequestWorkers line in $APACHE_MPM_CONF to set"
		ssh_ "$host" "$APACHE_RESTART"
		;;
	app-*)
		log "$s ($host): maxThreads $app_threads, DB pool $TOMCAT_POOL_ATTR $app_conns"
		ssh_ "$host" "sudo sed -i -E 's/maxThreads=\"[0-9]+\"/maxThreads=\"$app_threads\"/' $TOMCAT_SERVER_XML"
		ssh_ "$host" "sudo sed -i -E 's/$TOMCAT_POOL_ATTR=\"[0-9]+\"/$TOMCAT_POOL_ATTR=\"$app_conns\"/' $TOMCAT_CONTEXT_XML"
		ssh_ "$host" "grep -q 'maxThreads=\"$app_threads\"' $TOMCAT_SERVER_XML && grep -q '$TOMCAT_POOL_ATTR=\"$app_conns\"' $TOMCAT_CONTEXT_XML" ||
			die "$s: maxThreads or $TOMCAT_POOL_ATTR not found to set"
		ssh_ "$host" "$TOMCAT_RESTART"
		;;
	cluster-*) [ -z "${CLUSTER_RESTART:-}" ] || ssh_ "$host" "$CLUSTER_RESTART" ;;
	db-*) [ -z "${DB_RESTART:-}" ] || ssh_ "$host" "$DB_RESTART" ;;
	esac
done

# Wait until the application answers through the front tier.
deadline=$((SECONDS + ${READY_TIMEOUT:-180}))
until curl -fsS -o /dev/null --max-time 5 "$FRONT_URL"; do
	[ $SECONDS -lt $deadline ] || die "$FRONT_URL did not answer within ${READY_TIMEOUT:-180} s of the restart"
	sleep 2
done

# Fresh access logs: the window's requests only, plus the ramp-up's.
for s in $servers; do
	case $s in
	web-*) ssh_ "${host_of[$s]}" "sudo truncate -s 0 $APACHE_ACCESS_LOG" ;;
	app-*) ssh_ "${host_of[$s]}" "sudo truncate -s 0 $TOMCAT_ACCESS_LOG" ;;
	esac
done

# --- run the workload -----------------------------------------------------------
nodes=${#client_hosts[@]}
per_node=$(((users + nodes - 1) / nodes))
[ $((per_node * nodes)) -eq "$users" ] || log "note: $users users over $nodes client nodes: running $per_node per node ($((per_node * nodes)) in all)"
main_client=${client_hosts[0]}
remote_clients=$(IFS=,; echo "${client_hosts[*]:1}")
props="$RUBBOS_HOME/Client/rubbos.properties"
ssh_ "$main_client" "sed -i -E \
	-e 's/^(workload_number_of_clients_per_node[[:space:]]*=).*/\\1 $per_node/' \
	-e 's/^(workload_up_ramp_time_in_ms[[:space:]]*=).*/\\1 $((ramp_up * 1000))/' \
	-e 's/^(workload_session_run_time_in_ms[[:space:]]*=).*/\\1 $((runtime * 1000))/' \
	-e 's/^(workload_down_ramp_time_in_ms[[:space:]]*=).*/\\1 $((ramp_down * 1000))/' \
	-e 's/^(workload_remote_client_nodes[[:space:]]*=).*/\\1 $remote_clients/' $props"

# sar on every host over the runtime window only: each sleeps through the
# ramp-up on its host, then samples once a second (C locale: a 24-hour clock).
t0=$(date +%s)
for s in $servers; do
	remote_pids+=("${host_of[$s]}:$(pidfile "sar-$s")")
	run_remote "${host_of[$s]}" "sar-$s" "sleep $ramp_up; LC_ALL=C exec sar -u 1 $runtime" > "$dir/$s.sar" &
done
window_start=$(date -d "@$((t0 + ramp_up))" --iso-8601=seconds)
log "running the RUBBoS client on $main_client (+${remote_clients:-no other nodes}); window starts $window_start"
remote_pids+=("$main_client:$(pidfile client)")
run_remote "$main_client" client "cd $RUBBOS_HOME/Client && exec $RUBBOS_CLIENT_CMD" > "$dir/client.log" 2>&1 ||
	die "the RUBBoS client failed; see $dir/client.log"
wait # for sar

# --- collect and observe --------------------------------------------------------
args=(--experiment "$exp" --start "$window_start" --page-prefix "${PAGE_PREFIX:-/rubbos/servlet/}")
for s in $servers; do
	host=${host_of[$s]}
	[ -s "$dir/$s.sar" ] || die "$s: no sar output (is sysstat installed on $host?)"
	args+=(--sar "$s=$dir/$s.sar")
	case $s in
	web-*)
		ssh_ "$host" "sudo cat $APACHE_ACCESS_LOG" > "$dir/$s.access.log"
		ssh_ "$host" "sudo tail -n 1000 $APACHE_ERROR_LOG" > "$dir/$s.error.log" || true
		args+=(--log "$s=us:$dir/$s.access.log")
		;;
	app-*)
		ssh_ "$host" "sudo cat $TOMCAT_ACCESS_LOG" > "$dir/$s.access.log"
		ssh_ "$host" "sudo tail -n 1000 $TOMCAT_ERROR_LOG" > "$dir/$s.error.log" || true
		args+=(--log "$s=${TOMCAT_LOG_UNIT:-ms}:$dir/$s.access.log")
		;;
	esac
done
log "results in $dir"
"${OBSERVE:-observe}" "${args[@]}" | tee "$dir/observation.json" >&3
