#!/usr/bin/env bash
# trial.sh: one trial of an HTTP application under k6, for softalloc's exec
# runner (docs/exec-protocol.md).
#
#   softalloc recommend -f app.yaml --runner exec \
#       --runner-cmd "examples/k6/trial.sh examples/k6/k6.env"
#
# Reads the experiment on stdin, applies its pool sizes through your APPLY
# hook, starts your MONITOR hook (per-server measurements over the window),
# runs script.js with the experiment's users and timing, asks your SERVERS
# hook for the servers' observations, and prints the observation k6obs makes
# of all that on stdout. Everything else goes to stderr.
#
# Needs: bash, jq, k6 (v0.45+), and k6obs (go build -o k6obs ./examples/k6/k6obs).
set -euo pipefail

config=${1:?usage: trial.sh CONFIG < experiment.json (see k6.env.example)}
# shellcheck source=k6.env.example
source "$config"
here=$(cd "$(dirname "$0")" && pwd)

exec 3>&1 1>&2 # only the observation goes to stdout (fd 3)
die() { printf 'trial.sh: %s\n' "$*" >&2; exit 1; }

results_root=${RESULTS:-results}
mkdir -p "$results_root"
exp=$(mktemp "$results_root/experiment.XXXXXX")
cat > "$exp"
q() { jq -r "$1" "$exp"; }
[ "$(q .protocolVersion)" = 1 ] || die "protocol version $(q .protocolVersion): this script speaks 1"
dir="$results_root/$(q .experimentId)/attempt-$(q .attempt)"
mkdir -p "$dir"
mv "$exp" "$dir/experiment.json"
exp="$dir/experiment.json"

# The hooks get the experiment file and the results directory, and these:
export RESULTS_DIR=$dir EXPERIMENT=$exp
export USERS RAMP_UP RUNTIME RAMP_DOWN
USERS=$(q .workload.users)
RAMP_UP=$(q .timing.rampUpSeconds)
RUNTIME=$(q .timing.runtimeSeconds)
RAMP_DOWN=$(q .timing.rampDownSeconds)

# 1. Apply the pool sizes (your hook: set them, restart, wait until ready).
if [ -n "${APPLY:-}" ]; then
	$APPLY < "$exp" || die "APPLY hook failed"
fi

# 2. Measure the servers over the window (your hook, in the background).
monitor=
if [ -n "${MONITOR:-}" ]; then
	WINDOW_START=$(date -d "@$(($(date +%s) + ${RAMP_UP%.*}))" --iso-8601=seconds)
	export WINDOW_START
	$MONITOR &
	monitor=$!
fi
trap '[ -z "$monitor" ] || kill "$monitor" 2>/dev/null || true' EXIT

# 3. The load.
echo "k6: $USERS users against $BASE_URL, ${RAMP_UP}+${RUNTIME}+${RAMP_DOWN} s" >&2
k6 run --quiet --summary-export "$dir/summary.json" \
	-e USERS="$USERS" -e RAMP_UP="$RAMP_UP" -e RUNTIME="$RUNTIME" -e RAMP_DOWN="$RAMP_DOWN" \
	-e BASE_URL="$BASE_URL" -e PATHS="${PATHS:-/}" -e THINK_SECONDS="${THINK_SECONDS:-7}" \
	"${K6_SCRIPT:-$here/script.js}" > "$dir/k6.log" 2>&1 || die "k6 failed; see $dir/k6.log"
if [ -n "$monitor" ]; then
	wait "$monitor" || die "MONITOR hook failed"
	monitor=
fi

# 4. The servers' observations (your hook prints them as JSON).
$SERVERS > "$dir/servers.json" || die "SERVERS hook failed"

"${K6OBS:-k6obs}" --summary "$dir/summary.json" --experiment "$exp" --servers "$dir/servers.json" --tag phase:run |
	tee "$dir/observation.json" >&3
