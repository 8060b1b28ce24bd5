#!/usr/bin/env bash
# Installs what `make test` needs and a fresh Debian machine lacks: the real
# servers the tests talk to (Apache httpd, MariaDB, Prometheus and its
# exporters, the Pushgateway, WordPress on php-fpm, nginx, PostgreSQL and
# PgBouncer for the example hooks), Chromium for the HTML
# report's check, Java 17 and Maven for the testbed's Java app,
# Python's venv for Locust (examples/locust), the Go modules, the Java app's
# Maven dependencies and Locust. The packages' own
# services are kept from starting on install (no ports taken, nothing left
# running): the tests start what they need, on loopback.
#
# Without root (or passwordless sudo) it says what is missing and goes on:
# the end-to-end tests then skip with the same message, outside CI.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(apache2 apache2-utils mariadb-server mariadb-client-core prometheus prometheus-pushgateway
  prometheus-apache-exporter prometheus-mysqld-exporter prometheus-node-exporter prometheus-process-exporter
  openjdk-17-jdk-headless maven python3-venv
  wordpress wordpress-theme-twentytwentythree php8.2-fpm php8.2-mysql php8.2-cli chromium curl procps
  nginx postgresql pgbouncer prometheus-postgres-exporter)
missing=()
if command -v dpkg-query >/dev/null; then
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
fi
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    if sudo -n true 2>/dev/null; then sudo="sudo -n"; else
      echo "test-deps: not installed: ${missing[*]}; as root: apt-get install ${missing[*]} (the end-to-end tests skip without them)" >&2
      missing=()
    fi
  fi
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "== apt-get install ${missing[*]}"
  policy=/usr/sbin/policy-rc.d
  had_policy=0; [ -e "$policy" ] && had_policy=1
  if [ $had_policy = 0 ]; then
    $sudo sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod +x $policy"
    trap '$sudo rm -f "$policy"' EXIT
  fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if [ $had_policy = 0 ]; then $sudo rm -f "$policy"; fi
fi

go mod download

# The pinned Locust of examples/locust, into a virtual environment from PyPI
# (the Locust tests install it themselves if this could not).
examples/locust/install-locust.sh >/dev/null || echo "test-deps: Locust not installed; the Locust tests skip outside CI" >&2

# The pinned prometheus-pgbouncer-exporter of examples/pgbouncer-exporter, from
# PyPI (Debian's 1.7 fails every scrape of its PgBouncer 1.18); the pgbouncer
# preset's test and the testbed's PgBouncer variant install it themselves if
# this could not.
examples/pgbouncer-exporter/install-pgbouncer-exporter.sh >/dev/null || echo "test-deps: prometheus-pgbouncer-exporter not installed; the PgBouncer test skips outside CI" >&2

# The Java app's Maven dependencies, fetched once, so that the end-to-end
# test builds it offline (mvn -o).
if command -v mvn >/dev/null && command -v java >/dev/null; then
  testbed/testbed.sh java-deps
fi
