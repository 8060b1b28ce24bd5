#!/bin/sh
# nginx.sh WORKER_CONNECTIONS [MAX_CONNS [KEEPALIVE]]: nginx's connections
# per worker process (worker_connections: clients and upstream connections
# together), and in its upstream blocks the connections to each server
# (max_conns= on the server lines) and the idle connections each worker
# keeps to them (keepalive), then nginx -t and nginx -s reload.
#
#   nginx.sh [--conf FILE] [--upstream-file FILE] [--upstream NAME] [--prefix DIR] WORKER_CONNECTIONS [MAX_CONNS [KEEPALIVE]]
#
# Flags, or their environment variables (defaults for Debian's nginx):
#   --conf          NGINX_CONF           the main file, holding worker_connections (/etc/nginx/nginx.conf)
#   --upstream-file NGINX_UPSTREAM_FILE  the file holding the upstream blocks (the main file)
#   --upstream      NGINX_UPSTREAM       the one upstream block to set (every one in the file)
#   --prefix        NGINX_PREFIX         nginx's -p (its compiled-in prefix)
#                   NGINX_BIN            nginx
#                   HOOK_WAIT            seconds to wait for the new workers (60)
#
# A reload starts new workers with the new configuration and lets the old
# ones finish their requests: the hook waits for a worker that was not
# there before (nginx starts none when it cannot apply the file). Without a
# zone in the upstream block, max_conns is counted per worker.
set -eu

me=nginx
die() { echo "$me: $*" >&2; exit 1; }
usage() { echo "$me: $*" >&2; echo "usage: $me.sh [--conf FILE] [--upstream-file FILE] [--upstream NAME] [--prefix DIR] WORKER_CONNECTIONS [MAX_CONNS [KEEPALIVE]]" >&2; exit 2; }
positive() {
  case $2 in '' | *[!0-9]* | 0*) usage "$1 '$2': want a positive integer" ;; esac
}

conf=${NGINX_CONF:-/etc/nginx/nginx.conf}
upfile=${NGINX_UPSTREAM_FILE:-}
upstream=${NGINX_UPSTREAM:-}
prefix=${NGINX_PREFIX:-}
bin=${NGINX_BIN:-nginx}
wait=${HOOK_WAIT:-60}
wc=
mc=
ka=
args=0
while [ $# -gt 0 ]; do
  case $1 in
    --conf) [ $# -ge 2 ] || usage "--conf: want a file"; conf=$2; shift ;;
    --upstream-file) [ $# -ge 2 ] || usage "--upstream-file: want a file"; upfile=$2; shift ;;
    --upstream) [ $# -ge 2 ] || usage "--upstream: want a name"; upstream=$2; shift ;;
    --prefix) [ $# -ge 2 ] || usage "--prefix: want a directory"; prefix=$2; shift ;;
    --*) usage "unknown flag $1" ;;
    *)
      case $args in 0) wc=$1 ;; 1) mc=$1 ;; 2) ka=$1 ;; *) usage "too many arguments: $*" ;; esac
      args=$((args + 1))
      ;;
  esac
  shift
done
[ $args -ge 1 ] || usage "want WORKER_CONNECTIONS [MAX_CONNS [KEEPALIVE]]"
positive worker_connections "$wc"
[ $args -lt 2 ] || positive max_conns "$mc"
[ $args -lt 3 ] || positive keepalive "$ka"
positive HOOK_WAIT "$wait"
[ -f "$conf" ] || die "$conf: not found (--conf or NGINX_CONF)"
[ -n "$upfile" ] || upfile=$conf
[ -f "$upfile" ] || die "$upfile: not found (--upstream-file or NGINX_UPSTREAM_FILE)"

# nginx's own arguments for the files: -c, and -p when given.
set -- -c "$conf"
[ -z "$prefix" ] || set -- "$@" -p "$prefix"

# The awk program both reads (mode=get) and writes (mode=put) the values,
# tracking upstream blocks by their braces.
prog='
  function inup() { return inblock && (name == "" || upname == name) }
  {
    line = $0; sub(/#.*/, "", line)
    if (match(line, /^[ \t]*upstream[ \t]+[^ \t{]+/)) {
      upname = substr(line, RSTART, RLENGTH); sub(/^[ \t]*upstream[ \t]+/, "", upname); upstart = depth; inblock = 1
    }
    if (file == "conf" && line ~ /^[ \t]*worker_connections[ \t]+[0-9]+[ \t]*;/) {
      if (mode == "get" && wc == "") { wc = line; gsub(/[^0-9]/, "", wc) }
      if (mode == "put") sub(/worker_connections[ \t]+[0-9]+/, "worker_connections " newwc)
    }
    if (file == "up" && inup() && line ~ /^[ \t]*server[ \t]/ && match(line, /max_conns=[0-9]+/)) {
      if (mode == "get" && mc == "") mc = substr(line, RSTART + 10, RLENGTH - 10)
      if (mode == "put" && newmc != "") gsub(/max_conns=[0-9]+/, "max_conns=" newmc)
    }
    if (file == "up" && inup() && line ~ /^[ \t]*keepalive[ \t]+[0-9]+[ \t]*;/) {
      if (mode == "get" && ka == "") { ka = line; gsub(/[^0-9]/, "", ka) }
      if (mode == "put" && newka != "") sub(/keepalive[ \t]+[0-9]+/, "keepalive " newka)
    }
    depth += gsub(/{/, "{", line)
    closed = gsub(/}/, "}", line); depth -= closed
    if (inblock && closed > 0 && depth <= upstart) inblock = 0
    if (mode == "put") print
  }
  END { if (mode == "get") print wc " " mc " " ka }'
get() { awk -v mode=get -v file="$2" -v name="$upstream" "$prog" "$1"; }
put() { awk -v mode=put -v file="$2" -v name="$upstream" -v newwc="$wc" -v newmc="$mc" -v newka="$ka" "$prog" "$1"; }

oldwc=$(get "$conf" conf | cut -d' ' -f1)
[ -n "$oldwc" ] || die "$conf has no worker_connections: add it to its events block"
olds=$(get "$upfile" up)
oldmc=$(echo "$olds" | cut -d' ' -f2)
oldka=$(echo "$olds" | cut -d' ' -f3)
where="${upstream:+upstream $upstream in }$upfile"
[ -z "$mc" ] || [ -n "$oldmc" ] || die "no server line with max_conns= in $where: nothing to set MAX_CONNS in"
[ -z "$ka" ] || [ -n "$oldka" ] || die "no keepalive in $where: nothing to set KEEPALIVE in"

if [ "$oldwc" = "$wc" ] && [ "${oldmc}" = "${mc:-$oldmc}" ] && [ "${oldka}" = "${ka:-$oldka}" ]; then
  echo "$me: worker_connections $oldwc (unchanged)"
  [ -z "$mc" ] || echo "$me: max_conns $oldmc (unchanged)"
  [ -z "$ka" ] || echo "$me: keepalive $oldka (unchanged)"
  exit 0
fi

# The pid file: the main file's pid directive, else what nginx -T shows.
pidof() { sed -n 's/^[[:space:]]*pid[[:space:]]\{1,\}\([^;]*\);.*/\1/p' | head -n 1; }
pidfile=$(pidof <"$conf")
[ -n "$pidfile" ] || pidfile=$("$bin" "$@" -T 2>/dev/null | pidof)
[ -n "$pidfile" ] || pidfile=/run/nginx.pid
case $pidfile in /*) ;; *) pidfile=${prefix:-/usr/share/nginx}/${pidfile} ;; esac
[ -f "$pidfile" ] || die "nginx's pid file $pidfile: not found; is nginx running with $conf?"
master=$(cat "$pidfile")
kill -0 "$master" 2>/dev/null || die "nginx's master (pid $master from $pidfile) is not running"

# Each file is written beside itself and moved in place, the old one kept
# aside; nginx -t checks them together and a refusal puts the old ones back.
tmpdir=$(mktemp -d)
trap 'rm -rf "$tmpdir"' EXIT
cp -p "$conf" "$tmpdir/conf"
cp -p "$upfile" "$tmpdir/up"
restore() { cp -p "$tmpdir/conf" "$conf"; [ "$upfile" = "$conf" ] || cp -p "$tmpdir/up" "$upfile"; }
write() { # write FILE WHICH
  new=$(mktemp "$(dirname "$1")/.nginx-hook.XXXXXX")
  cp -p "$1" "$new"
  put "$1" "$2" >"$new"
  mv "$new" "$1"
}
write "$conf" conf
if [ "$upfile" = "$conf" ]; then write "$conf" up; else write "$upfile" up; fi
if ! out=$("$bin" "$@" -t 2>&1); then
  restore
  die "nginx -t refuses the new configuration, the old files are back: $(printf '%s\n' "$out" | grep -v 'test is successful' | tail -n 2 | tr '\n' ' ')"
fi

workers() { ps -o pid= --ppid "$master" | tr -d ' '; }
before=$(workers)
if ! out=$("$bin" "$@" -s reload 2>&1); then
  restore
  die "nginx -s reload failed, the old files are back: $out"
fi
# reloaded: a worker that was not there before, and every old one gone or
# shutting down (until its title says so, it still accepts clients).
reloaded() {
  fresh=
  ps -o pid=,args= --ppid "$master" >"$tmpdir/ps" || return 1
  while read -r w title; do
    case "
$before
" in
      *"
$w
"*) case $title in *"shutting down"*) ;; *) return 1 ;; esac ;;
      *) fresh=1 ;;
    esac
  done <"$tmpdir/ps"
  [ -n "$fresh" ]
}
deadline=$(($(date +%s) + wait))
until reloaded; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    restore
    "$bin" "$@" -s reload >/dev/null 2>&1 || true
    die "nginx started no new worker within ${wait}s (see its error log): the old files are back"
  fi
  sleep 0.1
done
if [ "$oldwc" = "$wc" ]; then echo "$me: worker_connections $wc (unchanged, reloaded)"; else
  echo "$me: worker_connections $oldwc -> $wc (reloaded, new workers running, old ones shutting down)"
fi
[ -z "$mc" ] || [ "$oldmc" = "$mc" ] || echo "$me: max_conns $oldmc -> $mc ($where)"
[ -z "$ka" ] || [ "$oldka" = "$ka" ] || echo "$me: keepalive $oldka -> $ka ($where)"
