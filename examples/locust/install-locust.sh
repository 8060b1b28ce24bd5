#!/usr/bin/env bash
# install-locust.sh [DIR]: install the Locust of requirements.txt from PyPI
# into a virtual environment at DIR (default: a per-version directory under
# ${XDG_CACHE_HOME:-~/.cache}/softalloc) unless it is already there, and print
# the path of its locust executable on stdout. Needs python3 (3.10 or later)
# with its venv module (Debian: apt-get install python3-venv).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
version=$(sed -n 's/^locust==\([0-9.]*\)$/\1/p' "$here/requirements.txt")
[ -n "$version" ] || { echo "install-locust.sh: no locust==VERSION line in $here/requirements.txt" >&2; exit 1; }
dir=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/softalloc/locust-$version}
py=${PYTHON:-python3}
die() { echo "install-locust.sh: $*" >&2; exit 1; }

mkdir -p "$(dirname "$dir")"
# Two test packages may ask at once: one installs, the other waits.
exec 9>"$dir.lock"
flock 9
# The marker is written last: a directory without it is a broken install.
if [ -f "$dir/.softalloc-installed" ] && [ "$(cat "$dir/.softalloc-installed")" = "$version" ] && [ -x "$dir/bin/locust" ]; then
	echo "$dir/bin/locust"
	exit 0
fi
command -v "$py" >/dev/null || die "$py not found; install Python 3.10 or later"
"$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || die "$("$py" --version 2>&1) is too old; Locust $version needs 3.10 or later"
rm -rf "$dir"
"$py" -m venv "$dir" >&2 || { rm -rf "$dir"; die "$py -m venv failed; on Debian: apt-get install python3-venv"; }
echo "install-locust.sh: installing locust $version into $dir" >&2
"$dir/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt" >&2 ||
	{ rm -rf "$dir"; die "pip install -r $here/requirements.txt failed (is PyPI reachable?)"; }
echo "$version" >"$dir/.softalloc-installed"
echo "$dir/bin/locust"
