#!/usr/bin/env bash
# install-pgbouncer-exporter.sh [DIR]: install the PgBouncer exporter of
# requirements.txt (prometheus-pgbouncer-exporter from PyPI, with its
# dependencies pinned there) into a virtual environment at DIR (default: a
# per-version directory under ${XDG_CACHE_HOME:-~/.cache}/softalloc) unless it
# is already there, and print the path of its pgbouncer-exporter executable on
# stdout. Needs python3 (3.8 or later) with its venv module (Debian: apt-get
# install python3-venv). The exporter reads a YAML file (--config) naming
# PgBouncer's admin console and the address it listens on; the pgbouncer
# preset (softalloc presets) reads what it exports. It logs to stderr by
# default; do not pass --log-file stdout, which 2.1.2 takes for a file of
# that name (it compares the argument with "is not").
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
me=install-pgbouncer-exporter.sh
version=$(sed -n 's/^prometheus-pgbouncer-exporter==\([0-9.]*\)$/\1/p' "$here/requirements.txt")
[ -n "$version" ] || { echo "$me: no prometheus-pgbouncer-exporter==VERSION line in $here/requirements.txt" >&2; exit 1; }
# The directory's name follows the whole file, so that a changed pin installs afresh.
stamp=$version-$(sha256sum "$here/requirements.txt" | cut -c1-8)
dir=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/softalloc/pgbouncer-exporter-$stamp}
py=${PYTHON:-python3}
die() { echo "$me: $*" >&2; exit 1; }

mkdir -p "$(dirname "$dir")"
# Two test packages (or a test and the testbed) may ask at once: one
# installs, the other waits.
exec 9>"$dir.lock"
flock 9
# The marker is written last: a directory without it is a broken install.
if [ -f "$dir/.softalloc-installed" ] && [ "$(cat "$dir/.softalloc-installed")" = "$stamp" ] && [ -x "$dir/bin/pgbouncer-exporter" ]; then
	echo "$dir/bin/pgbouncer-exporter"
	exit 0
fi
command -v "$py" >/dev/null || die "$py not found; install Python 3.8 or later"
"$py" -c 'import sys; sys.exit(sys.version_info < (3, 8))' || die "$("$py" --version 2>&1) is too old; the exporter's pins need 3.8 or later"
rm -rf "$dir"
"$py" -m venv "$dir" >&2 || { rm -rf "$dir"; die "$py -m venv failed; on Debian: apt-get install python3-venv"; }
echo "$me: installing prometheus-pgbouncer-exporter $version into $dir" >&2
# --no-deps: the package's own pins (psycopg2==2.8.5) do not build here;
# requirements.txt pins every dependency instead.
"$dir/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$here/requirements.txt" >&2 ||
	{ rm -rf "$dir"; die "pip install --no-deps -r $here/requirements.txt failed (is PyPI reachable?)"; }
# The module imports what it needs at start: a missing dependency shows here,
# not at the first scrape.
"$dir/bin/python" -W ignore -c 'import prometheus_pgbouncer_exporter.cli' >&2 ||
	{ rm -rf "$dir"; die "the installed exporter does not import; see above"; }
echo "$stamp" >"$dir/.softalloc-installed"
echo "$dir/bin/pgbouncer-exporter"
