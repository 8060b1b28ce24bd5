# examples/venv.sh: sourced by the install scripts of the examples' Python
# tools (locust/install-locust.sh, pgbouncer-exporter/install-pgbouncer-exporter.sh),
# which install a tool pinned in a requirements file from PyPI into a
# virtual environment of its own.
#
# venv_install [--exe EXE] [--python X.Y] [--no-deps] [--check MODULE] NAME REQUIREMENTS [DIR]
#
# installs the packages of REQUIREMENTS, a pip requirements file with a line
# NAME==VERSION, into a virtual environment at DIR unless it is there
# already, and prints the path of its executable EXE (default NAME) on
# stdout. DIR defaults to EXE-VERSION-HASH under
# ${XDG_CACHE_HOME:-~/.cache}/softalloc, HASH the first 8 hex digits of
# REQUIREMENTS' sha256: a changed pin, the tool's or a dependency's, installs
# afresh. --python is the least Python 3 it takes (default 3.8; $PYTHON, by
# default python3, must have its venv module: apt-get install python3-venv);
# --no-deps installs with pip --no-deps, for a file that pins every
# dependency; --check imports MODULE once installed, so that a missing
# dependency shows now rather than at the tool's first use. Messages go to
# stderr, prefixed with the calling script's name. Two callers at once (two
# test packages, a test and the testbed) take turns: one installs, the other
# waits and finds it installed.
venv_install() (
	set -euo pipefail
	me=${0##*/}
	die() { echo "$me: $*" >&2; exit 1; }
	exe="" least=3.8 nodeps="" check=""
	while [ $# -gt 0 ]; do
		case $1 in
		--exe) exe=$2; shift 2 ;;
		--python) least=$2; shift 2 ;;
		--no-deps) nodeps=--no-deps; shift ;;
		--check) check=$2; shift 2 ;;
		-*) die "venv_install: unknown option $1; want --exe, --python, --no-deps or --check" ;;
		*) break ;;
		esac
	done
	[ $# -ge 2 ] && [ $# -le 3 ] || die "venv_install: want NAME REQUIREMENTS [DIR], got $# arguments: $*"
	name=$1 req=$2 dir=${3:-}
	exe=${exe:-$name}
	[ -f "$req" ] || die "$req: no such requirements file"
	[[ $least =~ ^3\.[0-9]+$ ]] || die "venv_install --python $least: want 3.N"
	version=$(sed -n "s/^${name//./\\.}==\([0-9][0-9A-Za-z.]*\)\$/\1/p" "$req")
	[ -n "$version" ] || die "no $name==VERSION line in $req"
	stamp=$version-$(sha256sum "$req" | cut -c1-8)
	dir=${dir:-${XDG_CACHE_HOME:-$HOME/.cache}/softalloc/$exe-$stamp}
	py=${PYTHON:-python3}

	mkdir -p "$(dirname "$dir")"
	exec 9>"$dir.lock"
	flock 9
	# The marker is written last: a directory without it is a broken install.
	if [ -f "$dir/.softalloc-installed" ] && [ "$(cat "$dir/.softalloc-installed")" = "$stamp" ] && [ -x "$dir/bin/$exe" ]; then
		echo "$dir/bin/$exe"
		exit 0
	fi
	command -v "$py" >/dev/null || die "$py not found; install Python $least or later"
	"$py" -c "import sys; sys.exit(sys.version_info < (3, ${least#3.}))" ||
		die "$("$py" --version 2>&1) is too old; $name $version needs $least or later"
	rm -rf "$dir"
	"$py" -m venv "$dir" >&2 || { rm -rf "$dir"; die "$py -m venv failed; on Debian: apt-get install python3-venv"; }
	echo "$me: installing $name $version into $dir" >&2
	"$dir/bin/pip" install --quiet --disable-pip-version-check $nodeps -r "$req" >&2 ||
		{ rm -rf "$dir"; die "pip install $nodeps${nodeps:+ }-r $req failed (is PyPI reachable?)"; }
	if [ -n "$check" ]; then
		"$dir/bin/python" -W ignore -c "import $check" >&2 ||
			{ rm -rf "$dir"; die "the installed $name does not import $check; see above"; }
	fi
	[ -x "$dir/bin/$exe" ] || { rm -rf "$dir"; die "the installed $name has no $exe in $dir/bin"; }
	echo "$stamp" >"$dir/.softalloc-installed"
	echo "$dir/bin/$exe"
)
