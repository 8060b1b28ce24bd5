#!/bin/sh
# phpfpm.sh CHILDREN: sets a php-fpm pool's pm.max_children and reloads
# php-fpm (USR2), once php-fpm itself has accepted the new pool file.
#
#   phpfpm.sh [--pool FILE] [--conf FILE] [--pid FILE] [--status URL] CHILDREN
#
# Flags, or their environment variables (defaults for Debian's php8.2-fpm):
#   --pool   PHPFPM_POOL    the pool file holding pm.max_children (/etc/php/8.2/fpm/pool.d/www.conf)
#   --conf   PHPFPM_CONF    php-fpm's main file, for php-fpm -t (/etc/php/8.2/fpm/php-fpm.conf)
#   --pid    PHPFPM_PID     the master's pid file (/run/php/php8.2-fpm.pid)
#   --status PHPFPM_STATUS  the pool's status page over HTTP, ?json appended (pm.status_path
#                           behind an HTTP-to-FastCGI proxy); empty: the master's children are counted
#            PHPFPM_BIN     php-fpm8.2, or php-fpm when absent
#            PHPFPM_INI     a php.ini for php-fpm -t (-c); empty: php-fpm's own choice
#            HOOK_WAIT      seconds to wait for the reload to show (60)
#
# A reload ends every child (OPcache and APCu start empty): the first
# requests after it run cold. With pm = static the new size shows as the
# status page's total processes; with dynamic or ondemand php-fpm starts
# children as needed, so only the end of the old children is waited for.
set -eu

me=phpfpm
die() { echo "$me: $*" >&2; exit 1; }
usage() { echo "$me: $*" >&2; echo "usage: $me.sh [--pool FILE] [--conf FILE] [--pid FILE] [--status URL] CHILDREN" >&2; exit 2; }
positive() {
  case $2 in '' | *[!0-9]* | 0*) usage "$1 '$2': want a positive integer" ;; esac
}

pool=${PHPFPM_POOL:-/etc/php/8.2/fpm/pool.d/www.conf}
conf=${PHPFPM_CONF:-/etc/php/8.2/fpm/php-fpm.conf}
pidfile=${PHPFPM_PID:-/run/php/php8.2-fpm.pid}
status=${PHPFPM_STATUS:-}
wait=${HOOK_WAIT:-60}
bin=${PHPFPM_BIN:-}
if [ -z "$bin" ]; then
  if command -v php-fpm8.2 >/dev/null 2>&1; then bin=php-fpm8.2; else bin=php-fpm; fi
fi
children=
args=0
while [ $# -gt 0 ]; do
  case $1 in
    --pool) [ $# -ge 2 ] || usage "--pool: want a file"; pool=$2; shift ;;
    --conf) [ $# -ge 2 ] || usage "--conf: want a file"; conf=$2; shift ;;
    --pid) [ $# -ge 2 ] || usage "--pid: want a file"; pidfile=$2; shift ;;
    --status) [ $# -ge 2 ] || usage "--status: want a URL"; status=$2; shift ;;
    --*) usage "unknown flag $1" ;;
    *) [ $args = 0 ] || usage "too many arguments: $*"; children=$1; args=1 ;;
  esac
  shift
done
[ $args = 1 ] || usage "want CHILDREN (pm.max_children)"
positive children "$children"
positive HOOK_WAIT "$wait"

[ -f "$pool" ] || die "pool file $pool: not found (--pool or PHPFPM_POOL)"
[ -f "$pidfile" ] || die "pid file $pidfile: not found; is php-fpm running? (--pid or PHPFPM_PID)"
pid=$(cat "$pidfile")
kill -0 "$pid" 2>/dev/null || die "php-fpm's master (pid $pid from $pidfile) is not running"

n=$(grep -c '^[[:space:]]*pm\.max_children[[:space:]]*=' "$pool" || true)
[ "$n" = 1 ] || die "$pool: want exactly one pm.max_children line, found $n"
old=$(sed -n 's/^[[:space:]]*pm\.max_children[[:space:]]*=[[:space:]]*\([0-9]*\).*/\1/p' "$pool")
pm=$(sed -n 's/^[[:space:]]*pm[[:space:]]*=[[:space:]]*\([a-z]*\).*/\1/p' "$pool" | tail -n 1)

# status_field NAME: a number from the status page's JSON.
status_field() {
  curl -fsS --max-time 5 "$status?json" 2>/dev/null | tr ',{}' '\n\n\n' |
    sed -n "s/^\"$1\":[[:space:]]*\([0-9]*\)\$/\1/p"
}

# kids: the master's children, one pid a line.
kids() { ps -o pid= --ppid "$pid" | tr -d ' '; }

# processes: the pool's processes, from the status page, else the master's children.
processes() {
  if [ -n "$status" ]; then status_field 'total processes'; else kids | wc -l | tr -d ' '; fi
}

if [ "$old" = "$children" ]; then
  echo "$me: pm.max_children $old (unchanged, $pool)"
  exit 0
fi

# The new file goes in place beside a copy of the old one, php-fpm checks
# the whole configuration, and a refusal puts the old file back: the running
# master reads nothing until the signal.
dir=$(dirname "$pool")
tmp=$(mktemp "$dir/.phpfpm-hook.XXXXXX")
prev=$(mktemp "$dir/.phpfpm-hook-prev.XXXXXX")
trap 'rm -f "$tmp" "$prev"' EXIT
cp -p "$pool" "$prev"
cp -p "$pool" "$tmp"
sed "s/^\([[:space:]]*pm\.max_children[[:space:]]*=[[:space:]]*\)[0-9]*/\1$children/" "$pool" >"$tmp"
mv "$tmp" "$pool"
set -- -t -y "$conf"
[ -z "${PHPFPM_INI:-}" ] || set -- "$@" -c "$PHPFPM_INI"
if ! out=$("$bin" "$@" 2>&1); then
  mv "$prev" "$pool"
  die "php-fpm refuses pm.max_children = $children, $pool left at $old: $(printf '%s\n' "$out" | grep -v 'test is successful' | tail -n 3 | tr '\n' ' ')"
fi

oldkids=$(kids)
kill -USR2 "$pid" || { mv "$prev" "$pool"; die "signalling php-fpm (pid $pid): failed; $pool left at $old"; }

# reloaded: none of the old children is left (the master ends them all on
# a reload; its start time, in whole seconds, may not change) and, under
# pm = static, the new number runs.
reloaded() {
  for k in $(kids); do
    case "
$oldkids
" in *"
$k
"*) return 1 ;; esac
  done
  [ "$pm" != static ] || [ "$(processes)" = "$children" ]
}
deadline=$(($(date +%s) + wait))
until reloaded; do
  # A master that died on reload cannot be waited for.
  kill -0 "$pid" 2>/dev/null || die "php-fpm's master (pid $pid) exited on reload; $pool says $children"
  [ "$(date +%s)" -lt "$deadline" ] || die "php-fpm did not show $children children within ${wait}s (it shows $(processes)); $pool says $children"
  sleep 0.1
done
echo "$me: pm.max_children $old -> $children ($pool, reloaded, $(processes) processes)"
