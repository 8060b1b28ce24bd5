#!/bin/sh
# postgresql.sh MAX_CONNECTIONS: PostgreSQL's max_connections. PostgreSQL
# sizes its shared memory for it at start, so a new value needs a restart,
# which ends every session: the hook does it only when told (--restart),
# with ALTER SYSTEM and pg_ctl restart; otherwise it refuses a change.
# A pool in front of PostgreSQL (PgBouncer, pgbouncer.sh) is the size to
# tune at run time: give max_connections room for it once.
#
#   postgresql.sh [--restart --pgdata DIR] [--os-user USER] MAX_CONNECTIONS
#
# The connection is psql's own environment: PGHOST, PGPORT, PGUSER (a
# superuser, for ALTER SYSTEM), PGDATABASE, PGPASSWORD or ~/.pgpass.
# Flags, or their environment variables:
#   --restart          PG_RESTART=1   ALTER SYSTEM, then pg_ctl restart -m fast
#   --pgdata DIR       PGDATA         the data directory (postgresql.auto.conf, postmaster.opts)
#   --os-user USER     PG_OS_USER     run pg_ctl as USER when the hook runs as root (postgres)
#                      PG_CTL         pg_ctl (from PATH, else the newest /usr/lib/postgresql/*/bin)
#                      HOOK_WAIT      seconds pg_ctl waits for the restart (60)
set -eu

me=postgresql
die() { echo "$me: $*" >&2; exit 1; }
usage() { echo "$me: $*" >&2; echo "usage: $me.sh [--restart --pgdata DIR] [--os-user USER] MAX_CONNECTIONS" >&2; exit 2; }
positive() {
  case $2 in '' | *[!0-9]* | 0*) usage "$1 '$2': want a positive integer" ;; esac
}

restart=${PG_RESTART:-}
pgdata=${PGDATA:-}
osuser=${PG_OS_USER:-postgres}
wait=${HOOK_WAIT:-60}
pgctl=${PG_CTL:-}
want=
args=0
while [ $# -gt 0 ]; do
  case $1 in
    --restart) restart=1 ;;
    --pgdata) [ $# -ge 2 ] || usage "--pgdata: want a directory"; pgdata=$2; shift ;;
    --os-user) [ $# -ge 2 ] || usage "--os-user: want a user"; osuser=$2; shift ;;
    --*) usage "unknown flag $1" ;;
    *) [ $args = 0 ] || usage "too many arguments: $*"; want=$1; args=1 ;;
  esac
  shift
done
[ $args = 1 ] || usage "want MAX_CONNECTIONS"
positive max_connections "$want"
positive HOOK_WAIT "$wait"
case $restart in '' | 0) restart= ;; 1) ;; *) usage "PG_RESTART '$restart': want 1 or nothing" ;; esac

sql() { psql -X -q -A -t -v ON_ERROR_STOP=1 -c "$1"; }
old=$(sql 'SHOW max_connections' 2>&1) || die "reading max_connections: $old"
case $old in '' | *[!0-9]*) die "reading max_connections: got '$old'" ;; esac

if [ "$old" = "$want" ]; then
  echo "$me: max_connections $old (unchanged)"
  exit 0
fi
if [ -z "$restart" ]; then
  die "max_connections $old -> $want needs a restart of PostgreSQL (it sizes shared memory at start), which ends every session; nothing changed. Rerun with --restart --pgdata DIR to ALTER SYSTEM and restart it, or resize the pool in front of it (pgbouncer.sh)"
fi
[ -n "$pgdata" ] || usage "--restart: want --pgdata DIR (or PGDATA), where pg_ctl restarts the server"
auto=$pgdata/postgresql.auto.conf
[ -f "$auto" ] || die "$auto: not found; is $pgdata the server's data directory?"
if [ -z "$pgctl" ]; then
  if command -v pg_ctl >/dev/null 2>&1; then pgctl=pg_ctl; else
    pgctl=$(ls -d /usr/lib/postgresql/*/bin/pg_ctl 2>/dev/null | sort -V | tail -n 1)
    [ -n "$pgctl" ] || die "pg_ctl not found: set PG_CTL"
  fi
fi
# pg_ctl refuses to run as root.
ctl() {
  if [ "$(id -u)" = 0 ]; then runuser -u "$osuser" -- "$pgctl" "$@"; else "$pgctl" "$@"; fi
}

# ALTER SYSTEM checks the value (a number out of range is an error) and
# writes postgresql.auto.conf; a copy of it puts the old state back when the
# server does not come back with the new value.
prev=$(mktemp)
trap 'rm -f "$prev"' EXIT
cp "$auto" "$prev"
out=$(sql "ALTER SYSTEM SET max_connections = $want" 2>&1) || die "PostgreSQL refuses max_connections = $want (kept at $old): $out"
log=$pgdata/softalloc-hook-restart.log
rollback() {
  cat "$prev" >"$auto"
  ctl -D "$pgdata" -l "$log" -m fast -w -t "$wait" restart >/dev/null 2>&1 || ctl -D "$pgdata" -l "$log" -w -t "$wait" start >/dev/null 2>&1 || true
}
if ! out=$(ctl -D "$pgdata" -l "$log" -m fast -w -t "$wait" restart 2>&1); then
  rollback
  die "PostgreSQL did not restart with max_connections = $want ($(tail -n 2 "$log" | tr '\n' ' ')): put back at $old"
fi
now=$(sql 'SHOW max_connections' 2>&1) || now="unreadable: $now"
if [ "$now" != "$want" ]; then
  rollback
  die "PostgreSQL restarted with max_connections = $now, not $want (set elsewhere, such as on its command line?): put back at $old"
fi
echo "$me: max_connections $old -> $want (ALTER SYSTEM, restarted, read back)"
