#!/bin/sh
# mariadb.sh MAX_CONNECTIONS: sets MariaDB's or MySQL's max_connections at
# run time (SET GLOBAL) and, with --persist, in a configuration file of the
# hook's own, so that a restart keeps it.
#
#   mariadb.sh [--socket PATH | --host HOST --port PORT] [--user USER] [--persist FILE] MAX_CONNECTIONS
#
# Flags, or their environment variables:
#   --socket  MYSQL_SOCKET    the server's Unix socket (the client's default)
#   --host    MYSQL_HOST      its host (the client's default)
#   --port    MYSQL_PORT      its port (3306)
#   --user    MYSQL_USER      a user with SUPER or SYSTEM_VARIABLES_ADMIN (root)
#             MYSQL_PWD       its password, read by the client itself
#   --persist MYSQL_PERSIST   a file of the hook's own, written whole, such as
#                             /etc/mysql/mariadb.conf.d/99-softalloc.cnf (none)
#             MYSQL_CLIENT    mariadb, or mysql when absent
#
# A server clamps a value out of its range (MariaDB: 10..100000) with a
# warning rather than an error: the hook reads the value back, and puts the
# old one back when the server did not take the one asked for. Connections
# open past a lowered max_connections stay open; new ones are refused.
# The hook's own connection is one of them: keep a margin, and remember
# that a tier of php-fpm children opens one or more each, plus the exporter's.
set -eu

me=mariadb
die() { echo "$me: $*" >&2; exit 1; }
usage() { echo "$me: $*" >&2; echo "usage: $me.sh [--socket PATH | --host HOST --port PORT] [--user USER] [--persist FILE] MAX_CONNECTIONS" >&2; exit 2; }
positive() {
  case $2 in '' | *[!0-9]* | 0*) usage "$1 '$2': want a positive integer" ;; esac
}

socket=${MYSQL_SOCKET:-}
host=${MYSQL_HOST:-}
port=${MYSQL_PORT:-}
user=${MYSQL_USER:-root}
persist=${MYSQL_PERSIST:-}
client=${MYSQL_CLIENT:-}
if [ -z "$client" ]; then
  if command -v mariadb >/dev/null 2>&1; then client=mariadb; else client=mysql; fi
fi
want=
args=0
while [ $# -gt 0 ]; do
  case $1 in
    --socket) [ $# -ge 2 ] || usage "--socket: want a path"; socket=$2; shift ;;
    --host) [ $# -ge 2 ] || usage "--host: want a host"; host=$2; shift ;;
    --port) [ $# -ge 2 ] || usage "--port: want a port"; port=$2; shift ;;
    --user) [ $# -ge 2 ] || usage "--user: want a user"; user=$2; shift ;;
    --persist) [ $# -ge 2 ] || usage "--persist: want a file"; persist=$2; shift ;;
    --*) usage "unknown flag $1" ;;
    *) [ $args = 0 ] || usage "too many arguments: $*"; want=$1; args=1 ;;
  esac
  shift
done
[ $args = 1 ] || usage "want MAX_CONNECTIONS"
positive max_connections "$want"
[ -z "$port" ] || positive port "$port"

# sql STATEMENT: runs it, the answer's rows tab-separated without names.
sql() {
  set -- --no-defaults -N -B -u "$user" -e "$1"
  [ -z "$socket" ] || set -- "$@" --socket="$socket"
  [ -z "$host" ] || set -- "$@" --host="$host"
  [ -z "$port" ] || set -- "$@" --port="$port"
  "$client" "$@"
}
current() { sql "SHOW GLOBAL VARIABLES LIKE 'max_connections'" | cut -f 2; }

old=$(current 2>&1) || die "reading max_connections: $old"
case $old in '' | *[!0-9]*) die "reading max_connections: got '$old'" ;; esac

if [ "$old" = "$want" ]; then
  echo "$me: max_connections $old (unchanged)"
else
  out=$(sql "SET GLOBAL max_connections = $want" 2>&1) || die "the server refuses max_connections = $want (kept at $old): $out"
  now=$(current 2>&1) || die "reading max_connections back: $now"
  if [ "$now" != "$want" ]; then
    sql "SET GLOBAL max_connections = $old" >/dev/null 2>&1 || die "the server set max_connections = $now, not $want, and refused the old $old back"
    die "the server set max_connections = $now, not $want (out of its range?): put back at $old"
  fi
  echo "$me: max_connections $old -> $want (SET GLOBAL, read back)"
fi

if [ -n "$persist" ]; then
  # Written whole to a temporary file beside it, then moved: a reader never
  # sees half a file, and a failure leaves the old one.
  tmp=$(mktemp "$(dirname "$persist")/.mariadb-hook.XXXXXX") || die "--persist $persist: cannot write in its directory"
  trap 'rm -f "$tmp"' EXIT
  printf '# Written by examples/hooks/mariadb.sh: the allocation softalloc applied last.\n[mysqld]\nmax_connections = %s\n' "$want" >"$tmp"
  chmod 644 "$tmp"
  was=$(sed -n 's/^max_connections = \([0-9]*\)$/\1/p' "$persist" 2>/dev/null || true)
  mv "$tmp" "$persist"
  if [ "$was" = "$want" ]; then
    echo "$me: $persist max_connections $want (unchanged)"
  else
    echo "$me: $persist max_connections ${was:-none} -> $want (read at the next start)"
  fi
fi
