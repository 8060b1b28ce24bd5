#!/usr/bin/env bash
# measure.sh: docs/replica-evaluation.md from scratch: the plan (recommend on
# plan.yaml, the simulator), then replicaeval on the Go testbed with MariaDB,
# then with PostgreSQL behind PgBouncer, each back end brought up afresh with
# the same caps. Run it under the measurement lock, beside the default
# testbed with an offset of your own:
#
#   SOFTALLOC_TESTBED_PORT_OFFSET=400 SOFTALLOC_TESTBED_CGROUP=softalloc-mine SOFTALLOC_TESTBED_DIR=/tmp/tb-mine \
#     flock -o /tmp/measure.lock testbed/replicaeval/measure.sh [RATES] [PHASE]
#
# RATES: pages per second, one or several ("200 60": each back end is
# brought up once and measured at each rate); PGBOUNCER_RATES, when set,
# PostgreSQL's behind PgBouncer (at 200 pages/s, above what it serves
# under its 0.3-core cap, Apache's threads all wait and scale finds the
# health page unanswered). KEEP=1 adds to the report rather than starting
# it afresh (another rate measured later).
#
# (-o: the servers it starts must not inherit the lock, or it outlives the run.)
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
RATES=${1:-60}
PHASE=${2:-30s}
CAPS="web=0.5 app=0.5 db=0.3"
WORK=$(mktemp -d)
tb=testbed/testbed.sh
# A failed run leaves no servers behind (they would hold the ports and CPU).
trap '"$tb" down >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
go build -o "$WORK/softalloc" ./cmd/softalloc
go build -o "$WORK/replicaeval" ./testbed/replicaeval
"$WORK/softalloc" recommend -f testbed/replicaeval/plan.yaml --output json --quiet >"$WORK/plan.json"
limit=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["replicas"]["connectionLimit"]["max"])' "$WORK/plan.json")
[ "${KEEP:-0}" = 1 ] || rm -f docs/replica-evaluation.json
for backend in mariadb pgbouncer; do
  "$tb" down
  case $backend in
    mariadb) "$tb" up $CAPS ;;
    pgbouncer) SOFTALLOC_TESTBED_DB=postgres SOFTALLOC_TESTBED_POOLER=pgbouncer SOFTALLOC_TESTBED_PG_MAX_CONNECTIONS=$limit "$tb" up $CAPS ;;
  esac
  # The load generator in the testbed's client group: neither capped nor
  # crowded out by other work on the machine.
  rates=$RATES
  [ "$backend" = pgbouncer ] && rates=${PGBOUNCER_RATES:-$RATES}
  for rate in $rates; do
    "$tb" exec-client "$WORK/replicaeval" -plan "$WORK/plan.json" -softalloc "$WORK/softalloc" -out docs -rate "$rate" -phase "$PHASE"
  done
done
"$tb" down
