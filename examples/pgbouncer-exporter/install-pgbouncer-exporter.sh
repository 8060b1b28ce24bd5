#!/usr/bin/env bash
# install-pgbouncer-exporter.sh [DIR]: install the PgBouncer exporter of
# requirements.txt (prometheus-pgbouncer-exporter from PyPI, with its
# dependencies pinned there) into a virtual environment at DIR (default: a
# directory named after the version and requirements.txt's hash under
# ${XDG_CACHE_HOME:-~/.cache}/softalloc) unless it is already there, and print
# the path of its pgbouncer-exporter executable on stdout. Needs python3 (3.8
# or later) with its venv module (Debian: apt-get install python3-venv).
# examples/venv.sh's venv_install does it. The exporter reads a YAML file
# (--config) naming PgBouncer's admin console and the address it listens on;
# the pgbouncer preset (softalloc presets) reads what it exports. It logs to
# stderr by default; do not pass --log-file stdout, which 2.1.2 takes for a
# file of that name (it compares the argument with "is not").
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../venv.sh"
# --no-deps: the package's own pins (psycopg2==2.8.5) do not build here;
# requirements.txt pins every dependency instead. The module imports what it
# needs at start: --check shows a missing dependency now, not at the first
# scrape.
venv_install --exe pgbouncer-exporter --no-deps --check prometheus_pgbouncer_exporter.cli \
	prometheus-pgbouncer-exporter "$here/requirements.txt" ${1:+"$1"}
