#!/bin/sh
# apache.sh THREADS [PROXY_MAX]: Apache httpd's worker threads (mpm_event or
# mpm_worker: MaxRequestWorkers, and ThreadsPerChild when one child holds
# them all) and its mod_proxy connections to the next tier (max= on
# ProxyPass, ProxySet and BalancerMember lines; default THREADS), then a
# graceful restart once apache2 -t accepts the files (a full one with
# --full-restart).
#
#   apache.sh [--pools FILE] [--proxy-file FILE] [--config FILE] [--status URL] [--full-restart] THREADS [PROXY_MAX]
#
# Flags, or their environment variables (defaults for Debian's apache2):
#   --pools      APACHE_POOLS       the file holding MaxRequestWorkers (/etc/apache2/mods-available/mpm_event.conf)
#   --proxy-file APACHE_PROXY_FILE  the file holding the max= to set (the pools file)
#   --config     APACHE_CONFIG      the main file, for apache2 -t -f and -k graceful -f;
#                                   empty: apachectl, which reads Debian's envvars
#   --status     APACHE_STATUS      mod_status's page (http://127.0.0.1/server-status), ?auto appended
#   --full-restart APACHE_RESTART=full  -k restart (the children end at once, with the
#                                   requests in flight) rather than graceful (the default,
#                                   APACHE_RESTART=graceful): no old child serves beside the new
#                APACHE_BIN         apache2, or httpd when absent
#                HOOK_WAIT          seconds to wait for the restart to show (60)
#
# The files are edited where they stand: each directive the file has keeps
# its place and gets the new value. ServerLimit and ThreadLimit are read
# only at a full start (a graceful restart ignores them): the hook refuses
# sizes they do not allow rather than have Apache shrink them in silence.
# With ThreadsPerChild = MaxRequestWorkers (one child, as the testbed has
# it), mod_proxy's max= is per child and so the whole tier's.
set -eu

me=apache
die() { echo "$me: $*" >&2; exit 1; }
usage() { echo "$me: $*" >&2; echo "usage: $me.sh [--pools FILE] [--proxy-file FILE] [--config FILE] [--status URL] [--full-restart] THREADS [PROXY_MAX]" >&2; exit 2; }
positive() {
  case $2 in '' | *[!0-9]* | 0*) usage "$1 '$2': want a positive integer" ;; esac
}

pools=${APACHE_POOLS:-/etc/apache2/mods-available/mpm_event.conf}
proxyfile=${APACHE_PROXY_FILE:-}
config=${APACHE_CONFIG:-}
status=${APACHE_STATUS:-http://127.0.0.1/server-status}
wait=${HOOK_WAIT:-60}
restart=${APACHE_RESTART:-graceful}
bin=${APACHE_BIN:-}
if [ -z "$bin" ]; then
  if command -v apache2 >/dev/null 2>&1; then bin=apache2; else bin=httpd; fi
fi
threads=
pmax=
args=0
while [ $# -gt 0 ]; do
  case $1 in
    --pools) [ $# -ge 2 ] || usage "--pools: want a file"; pools=$2; shift ;;
    --proxy-file) [ $# -ge 2 ] || usage "--proxy-file: want a file"; proxyfile=$2; shift ;;
    --config) [ $# -ge 2 ] || usage "--config: want a file"; config=$2; shift ;;
    --status) [ $# -ge 2 ] || usage "--status: want a URL"; status=$2; shift ;;
    --full-restart) restart=full ;;
    --*) usage "unknown flag $1" ;;
    *)
      case $args in 0) threads=$1 ;; 1) pmax=$1 ;; *) usage "too many arguments: $*" ;; esac
      args=$((args + 1))
      ;;
  esac
  shift
done
[ $args -ge 1 ] || usage "want THREADS [PROXY_MAX]"
positive threads "$threads"
[ $args = 1 ] || positive proxy_max "$pmax"
positive HOOK_WAIT "$wait"
case $restart in graceful) how=graceful; said="graceful restart" ;; full) how=restart; said=restart ;; *) usage "APACHE_RESTART '$restart': want graceful or full" ;; esac
[ -f "$pools" ] || die "pools file $pools: not found (--pools or APACHE_POOLS)"
[ -n "$proxyfile" ] || proxyfile=$pools
[ -f "$proxyfile" ] || die "proxy file $proxyfile: not found (--proxy-file or APACHE_PROXY_FILE)"

# value FILE DIRECTIVE: its first value in the file (names are case-insensitive).
value() { awk -v k="$2" 'tolower($1) == tolower(k) && $2 ~ /^[0-9]+$/ {print $2; exit}' "$1"; }
# proxymax FILE: the first max= of its proxy lines.
proxymax() {
  awk 'tolower($1) ~ /^(proxypass|proxypassmatch|proxyset|balancermember)$/ && match($0, /max=[0-9]+/) {print substr($0, RSTART + 4, RLENGTH - 4); exit}' "$1"
}

oldmrw=$(value "$pools" MaxRequestWorkers)
[ -n "$oldmrw" ] || oldmrw=$(value "$pools" MaxClients)
[ -n "$oldmrw" ] || die "$pools has no MaxRequestWorkers: point --pools at the file that sets it"
oldtpc=$(value "$pools" ThreadsPerChild)
oldmst=$(value "$pools" MaxSpareThreads)
limit=$(value "$pools" ThreadLimit)
slimit=$(value "$pools" ServerLimit)
oldmax=$(proxymax "$proxyfile")
[ -z "$pmax" ] || [ -n "$oldmax" ] || die "$proxyfile has no ProxyPass, ProxySet or BalancerMember with max=: nothing to set PROXY_MAX in"
[ -n "$pmax" ] || [ -z "$oldmax" ] || pmax=$threads

# One child holding every thread stays so; otherwise ThreadsPerChild stays.
tpc=${oldtpc:-25}
onechild=
if [ "$tpc" = "$oldmrw" ]; then onechild=1; tpc=$threads; fi
[ "$tpc" -le "${limit:-64}" ] || die "ThreadsPerChild $tpc exceeds ThreadLimit ${limit:-64} ($([ -n "$limit" ] && echo "from $pools" || echo "the default")): raise ThreadLimit and restart Apache fully (a graceful restart ignores it); nothing changed"
children=$(((threads + tpc - 1) / tpc))
spare=$([ -n "$onechild" ] && echo 1 || echo 0)
[ $((children + spare)) -le "${slimit:-16}" ] || die "$threads threads need $children children of $tpc threads${onechild:+ and one for a graceful restart}, more than ServerLimit ${slimit:-16}: raise ServerLimit and restart Apache fully; nothing changed"
mst=$oldmst
if [ -n "$onechild" ] && [ -n "$oldmst" ]; then mst=$((threads + 1)); fi

if [ "$oldmrw" = "$threads" ] && [ "${oldmax:-}" = "${pmax:-}" ]; then
  echo "$me: MaxRequestWorkers $oldmrw (unchanged)"
  [ -z "$oldmax" ] || echo "$me: proxy max= $oldmax (unchanged)"
  exit 0
fi

# edit FILE: the file with the new values, on stdout.
edit() {
  awk -v mrw="$threads" -v tpc="$tpc" -v mst="$mst" -v pmax="${pmax:-}" -v pools="$2" '
    pools && tolower($1) ~ /^(maxrequestworkers|maxclients)$/ { sub(/[0-9]+/, mrw) }
    pools && tolower($1) == "threadsperchild" { sub(/[0-9]+/, tpc) }
    pools && tolower($1) == "maxsparethreads" && mst != "" { sub(/[0-9]+/, mst) }
    pmax != "" && tolower($1) ~ /^(proxypass|proxypassmatch|proxyset|balancermember)$/ { gsub(/max=[0-9]+/, "max=" pmax) }
    { print }' "$1"
}

# Each file is written beside itself, the old one copied aside, then moved
# in place; apache2 -t checks the whole configuration, and a refusal puts the
# old files back: the running server reads nothing until the restart.
tmpdir=$(mktemp -d)
trap 'rm -rf "$tmpdir"' EXIT
restore() {
  cp -p "$tmpdir/pools" "$pools"
  [ "$proxyfile" = "$pools" ] || cp -p "$tmpdir/proxy" "$proxyfile"
}
cp -p "$pools" "$tmpdir/pools"
cp -p "$proxyfile" "$tmpdir/proxy"
put() { # put FILE ISPOOLS
  new=$(mktemp "$(dirname "$1")/.apache-hook.XXXXXX")
  cp -p "$1" "$new"
  edit "$1" "$2" >"$new"
  mv "$new" "$1"
}
if [ "$proxyfile" = "$pools" ]; then put "$pools" 1; else put "$pools" 1; put "$proxyfile" ""; fi
if [ -n "$config" ]; then
  check() { "$bin" -t -f "$config" 2>&1; }
  graceful() { "$bin" -f "$config" -k "$how" 2>&1; }
else
  check() { apachectl -t 2>&1; }
  graceful() { apachectl -k "$how" 2>&1; }
fi
if ! out=$(check); then
  restore
  die "apache2 -t refuses the new configuration, the old files are back: $(printf '%s\n' "$out" | tail -n 3 | tr '\n' ' ')"
fi

# page: mod_status's machine-readable page; field NAME: a number of the last one read.
page=
page() { page=$(curl -fsS --max-time 5 "$status?auto" 2>/dev/null) || page=; }
field() { printf '%s\n' "$page" | sed -n "s/^$1: \([0-9]*\)\$/\1/p"; }
page
before=$(field ParentServerConfigGeneration)
[ -n "$before" ] || { restore; die "no ParentServerConfigGeneration at $status?auto (mod_status, --status or APACHE_STATUS): cannot see the restart; the old files are back"; }
if ! out=$(graceful); then
  restore
  die "the $said failed, the old files are back: $out"
fi

# restarted: a new generation and, with one child, its threads alone (no
# process of the old generation still stopping), all from one page.
workers() { echo $(($(field BusyWorkers) + $(field IdleWorkers))); }
restarted() {
  page
  gen=$(field ParentServerConfigGeneration)
  [ -n "$gen" ] && [ "$gen" -gt "$before" ] || return 1
  [ -z "$onechild" ] || { [ "$(field Stopping)" = 0 ] && [ "$(workers)" = "$threads" ]; }
}
# status: the last page's counts that say why a restart has not shown:
# old processes still stopping, and the connections they hold.
status() {
  printf '%s\n' "$page" | awk -F': ' '$1 ~ /^(ParentServerConfigGeneration|Processes|Stopping|BusyWorkers|GracefulWorkers|IdleWorkers|ConnsTotal|ConnsAsyncWaitIO|ConnsAsyncWriting|ConnsAsyncKeepAlive|ConnsAsyncClosing)$/ {
    printf "%s%s %s", sep, $1, $2; sep = ", " }'
}
deadline=$(($(date +%s) + wait))
until restarted; do
  [ "$(date +%s)" -lt "$deadline" ] || die "Apache did not show generation $((before + 1)) alone with $threads threads within ${wait}s ($(workers) threads; $(status)): a process of the old generation still stopping serves its requests in flight; the files say $threads"
  sleep 0.1
done
echo "$me: MaxRequestWorkers $oldmrw -> $threads ($said, $(workers) threads)"
[ -z "$onechild" ] || [ "$oldtpc" = "$tpc" ] || echo "$me: ThreadsPerChild $oldtpc -> $tpc"
[ -z "$oldmst" ] || [ "$oldmst" = "$mst" ] || echo "$me: MaxSpareThreads $oldmst -> $mst"
[ -z "$oldmax" ] || [ "$oldmax" = "$pmax" ] || echo "$me: proxy max= $oldmax -> $pmax ($proxyfile)"
