#!/bin/sh
# pgbouncer.sh DEFAULT_POOL_SIZE [MAX_CLIENT_CONN]: PgBouncer's server
# connections per database and user pair (default_pool_size) and the client
# connections it accepts (max_client_conn), at run time through its admin
# console (SET, which checks each value), read back with SHOW CONFIG.
# A RELOAD rereads pgbouncer.ini and undoes a SET: with --ini the hook also
# writes the values there and RELOADs, so that they last.
#
#   pgbouncer.sh [--host H] [--port P] [--user U] [--ini FILE] DEFAULT_POOL_SIZE [MAX_CLIENT_CONN]
#
# Flags, or their environment variables:
#   --host PGBOUNCER_HOST   PgBouncer's address (127.0.0.1; a directory is its Unix socket's)
#   --port PGBOUNCER_PORT   its port (6432)
#   --user PGBOUNCER_USER   one of its admin_users (pgbouncer); a password comes from PGPASSWORD or ~/.pgpass
#   --ini  PGBOUNCER_INI    pgbouncer.ini, rewritten (temp file, then move) and RELOADed (none)
# A pool that shrinks closes its extra server connections as they come free.
set -eu

me=pgbouncer
die() { echo "$me: $*" >&2; exit 1; }
usage() { echo "$me: $*" >&2; echo "usage: $me.sh [--host H] [--port P] [--user U] [--ini FILE] DEFAULT_POOL_SIZE [MAX_CLIENT_CONN]" >&2; exit 2; }
positive() {
  case $2 in '' | *[!0-9]* | 0*) usage "$1 '$2': want a positive integer" ;; esac
}

host=${PGBOUNCER_HOST:-127.0.0.1}
port=${PGBOUNCER_PORT:-6432}
user=${PGBOUNCER_USER:-pgbouncer}
ini=${PGBOUNCER_INI:-}
pool=
clients=
args=0
while [ $# -gt 0 ]; do
  case $1 in
    --host) [ $# -ge 2 ] || usage "--host: want a host"; host=$2; shift ;;
    --port) [ $# -ge 2 ] || usage "--port: want a port"; port=$2; shift ;;
    --user) [ $# -ge 2 ] || usage "--user: want a user"; user=$2; shift ;;
    --ini) [ $# -ge 2 ] || usage "--ini: want a file"; ini=$2; shift ;;
    --*) usage "unknown flag $1" ;;
    *)
      case $args in 0) pool=$1 ;; 1) clients=$1 ;; *) usage "too many arguments: $*" ;; esac
      args=$((args + 1))
      ;;
  esac
  shift
done
[ $args -ge 1 ] || usage "want DEFAULT_POOL_SIZE [MAX_CLIENT_CONN]"
positive default_pool_size "$pool"
[ $args = 1 ] || positive max_client_conn "$clients"
positive port "$port"
[ -z "$ini" ] || [ -f "$ini" ] || die "--ini $ini: not found"

console() { psql -X -q -A -t -F ' ' -h "$host" -p "$port" -U "$user" -d pgbouncer -c "$1"; }
config() {
  v=$(console 'SHOW CONFIG' 2>&1) || die "SHOW CONFIG: $v"
  printf '%s\n' "$v" | awk -v k="$1" '$1 == k {print $2}'
}

set -- default_pool_size "$pool"
[ -z "$clients" ] || set -- "$@" max_client_conn "$clients"
olds=
done=
# What changed, printed once every value is in: a later refusal undoes the earlier ones.
lines=
# Each value is SET (PgBouncer checks it); a refusal puts back those SET before it.
while [ $# -gt 0 ]; do
  key=$1 want=$2
  shift 2
  old=$(config "$key")
  [ -n "$old" ] || die "SHOW CONFIG has no $key"
  olds="$olds $key=$old"
  if [ "$old" = "$want" ]; then
    lines="$lines$me: $key $old (unchanged)
"
    continue
  fi
  if ! out=$(console "SET $key = $want" 2>&1); then
    for kv in $done; do console "SET ${kv%%=*} = ${kv#*=}" >/dev/null 2>&1 || true; done
    die "PgBouncer refuses $key = $want (kept at $old): $out"
  fi
  now=$(config "$key")
  if [ "$now" != "$want" ]; then
    console "SET $key = $old" >/dev/null 2>&1 || true
    for kv in $done; do console "SET ${kv%%=*} = ${kv#*=}" >/dev/null 2>&1 || true; done
    die "PgBouncer shows $key = $now after SET $want: put back at $old"
  fi
  done="$done $key=$old"
  lines="$lines$me: $key $old -> $want (SET, read back)
"
done
printf '%s' "$lines"

[ -n "$ini" ] || exit 0
# The same values in pgbouncer.ini, each key's line replaced or added to
# [pgbouncer], then a RELOAD: PgBouncer rereads the file, which now agrees.
tmp=$(mktemp "$(dirname "$ini")/.pgbouncer-hook.XXXXXX")
trap 'rm -f "$tmp"' EXIT
cp -p "$ini" "$tmp"
awk -v pool="$pool" -v clients="$clients" '
  function put(k, v) { if (v != "" && !(k in seen)) { print k " = " v; seen[k] = 1 } }
  /^[ \t]*\[/ { if (sect == "pgbouncer") { put("default_pool_size", pool); put("max_client_conn", clients) } sect = $0; gsub(/[ \t\[\]]/, "", sect) }
  sect == "pgbouncer" && /^[ \t]*default_pool_size[ \t]*=/ { put("default_pool_size", pool); next }
  sect == "pgbouncer" && clients != "" && /^[ \t]*max_client_conn[ \t]*=/ { put("max_client_conn", clients); next }
  { print }
  END { if (sect == "pgbouncer") { put("default_pool_size", pool); put("max_client_conn", clients) } }
' "$ini" >"$tmp"
grep -q "^default_pool_size = $pool\$" "$tmp" || die "$ini: no [pgbouncer] section to write default_pool_size in; nothing written"
prev=$(mktemp "$(dirname "$ini")/.pgbouncer-hook-prev.XXXXXX")
trap 'rm -f "$tmp" "$prev"' EXIT
cp -p "$ini" "$prev"
mv "$tmp" "$ini"
if ! out=$(console RELOAD 2>&1) || [ "$(config default_pool_size)" != "$pool" ] || { [ -n "$clients" ] && [ "$(config max_client_conn)" != "$clients" ]; }; then
  mv "$prev" "$ini"
  console RELOAD >/dev/null 2>&1 || true
  die "PgBouncer's RELOAD of $ini did not keep default_pool_size = $pool${clients:+, max_client_conn = $clients} ($out): the old file is back ($olds)"
fi
echo "$me: $ini written and RELOADed (default_pool_size = $pool${clients:+, max_client_conn = $clients})"
