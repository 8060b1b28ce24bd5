#!/bin/sh
# tomcat-hikari.sh THREADS CONNECTIONS: a JVM application tier's Tomcat
# maxThreads and HikariCP maximumPoolSize, at run time, through the
# application's admin endpoint (the testbed's Java app, testbed/java):
#
#   GET  /admin/pools                                  -> 200 {"threads":T,"connections":C,...}
#   POST /admin/pools?threads=T&connections=C          -> 200 the same JSON, once HikariCP holds
#                                                         exactly C connections; 400 on a bad
#                                                         value, 504 when the pool did not fill
#   POST /admin/pools?limit=P&connections=C            -> the same on virtual threads, where a
#                                                         concurrency limit of P permits (0: none)
#                                                         stands in for the thread pool
#
#   tomcat-hikari.sh [--admin URL] [--limit] THREADS|PERMITS CONNECTIONS
#
#   --admin  TOMCAT_ADMIN    the endpoint's base URL (http://127.0.0.1:8081)
#   --limit  TOMCAT_LIMIT=1  the first size is the limit's permits (0: no limit), read
#                            back from the answer's "limit"; maxThreads is left alone
#            HOOK_WAIT       seconds the POST may take (60)
#
# An application without such an endpoint can do the same over JMX, with a
# JMX client (jmxterm, or a few lines of Java) and the JVM started with
# -Dcom.sun.management.jmxremote.port=...: set maxThreads on
# Catalina:type=ThreadPool,name="http-nio-8080" (Tomcat applies it to its
# executor at once), and call setMaximumPoolSize and setMinimumIdle on
# com.zaxxer.hikari:type=PoolConfig (NAME) (HikariCP's registerMbeans=true),
# then softEvictConnections on com.zaxxer.hikari:type=Pool (NAME) and read
# TotalConnections there until it is the new size: HikariCP neither closes
# nor opens connections on the setter alone.
set -eu

me=tomcat-hikari
die() { echo "$me: $*" >&2; exit 1; }
usage() { echo "$me: $*" >&2; echo "usage: $me.sh [--admin URL] [--limit] THREADS|PERMITS CONNECTIONS" >&2; exit 2; }
positive() {
  case $2 in '' | *[!0-9]* | 0*) usage "$1 '$2': want a positive integer" ;; esac
}
atleastzero() {
  case $2 in 0) ;; '' | *[!0-9]* | 0*) usage "$1 '$2': want an integer >= 0 (0: no limit)" ;; esac
}

admin=${TOMCAT_ADMIN:-http://127.0.0.1:8081}
wait=${HOOK_WAIT:-60}
limit=${TOMCAT_LIMIT:-}
threads=
conns=
args=0
while [ $# -gt 0 ]; do
  case $1 in
    --admin) [ $# -ge 2 ] || usage "--admin: want a URL"; admin=$2; shift ;;
    --limit) limit=1 ;;
    --*) usage "unknown flag $1" ;;
    *)
      case $args in 0) threads=$1 ;; 1) conns=$1 ;; *) usage "too many arguments: $*" ;; esac
      args=$((args + 1))
      ;;
  esac
  shift
done
[ $args = 2 ] || usage "want THREADS CONNECTIONS"
case $limit in '' | 0) limit= ;; 1) ;; *) usage "TOMCAT_LIMIT '$limit': want 1 or nothing" ;; esac
# key: the endpoint's name for the first size; unit and what: how the lines name it.
if [ -n "$limit" ]; then
  atleastzero permits "$threads"
  key=limit unit=permits what="concurrency limit"
else
  positive threads "$threads"
  key=threads unit=threads what="Tomcat maxThreads"
fi
positive connections "$conns"
positive HOOK_WAIT "$wait"
url=${admin%/}/admin/pools

# field JSON NAME: a number of the endpoint's answer.
field() { printf '%s\n' "$1" | tr ',{}' '\n\n\n' | sed -n "s/^[[:space:]]*\"$2\":[[:space:]]*\([0-9]*\)[[:space:]]*\$/\1/p"; }

# call [POST]: the answer's body, with its status code on a last line.
call() {
  if [ $# -gt 0 ]; then
    curl -sS --max-time "$wait" -X POST -w '\n%{http_code}' "$url?$key=$1&connections=$2"
  else
    curl -sS --max-time 10 -w '\n%{http_code}' "$url"
  fi
}
status() { printf '%s\n' "$1" | tail -n 1; }
body() { printf '%s\n' "$1" | sed '$d'; }

got=$(call 2>&1) || die "GET $url: $got"
[ "$(status "$got")" = 200 ] || die "GET $url: HTTP $(status "$got"): $(body "$got")"
oldt=$(field "$(body "$got")" "$key")
oldc=$(field "$(body "$got")" connections)
[ -n "$oldt" ] && [ -n "$oldc" ] || die "GET $url: want {\"$key\":N,\"connections\":N}, got $(body "$got")"

if [ "$oldt" = "$threads" ] && [ "$oldc" = "$conns" ]; then
  echo "$me: $what $oldt (unchanged)"
  echo "$me: HikariCP maximumPoolSize $oldc (unchanged)"
  exit 0
fi

# The endpoint may have set one pool and failed on the other (HikariCP not
# filling): the old sizes are posted back, so that a failure leaves them.
got=$(call "$threads" "$conns" 2>&1) || {
  call "$oldt" "$oldc" >/dev/null 2>&1 || true
  die "POST $url: $got; the old sizes ($oldt $unit, $oldc connections) posted back"
}
code=$(status "$got")
if [ "$code" != 200 ]; then
  [ "$code" = 400 ] || call "$oldt" "$oldc" >/dev/null 2>&1 || true
  die "the application refuses $threads $unit, $conns connections (HTTP $code: $(body "$got" | tr '\n' ' ')); kept at $oldt $unit, $oldc connections"
fi
nowt=$(field "$(body "$got")" "$key")
nowc=$(field "$(body "$got")" connections)
if [ "$nowt" != "$threads" ] || [ "$nowc" != "$conns" ]; then
  call "$oldt" "$oldc" >/dev/null 2>&1 || true
  die "the application answers ${nowt:-?} $unit, ${nowc:-?} connections after asking $threads, $conns: put back at $oldt, $oldc"
fi
total=$(field "$(body "$got")" totalConnections)
if [ "$oldt" = "$threads" ]; then echo "$me: $what $oldt (unchanged)"
elif [ -n "$limit" ]; then echo "$me: $what $oldt -> $threads permits (read back)"
else echo "$me: $what $oldt -> $threads (read back)"; fi
if [ "$oldc" = "$conns" ]; then echo "$me: HikariCP maximumPoolSize $oldc (unchanged)"; else echo "$me: HikariCP maximumPoolSize $oldc -> $conns (read back${total:+, $total connections open})"; fi
