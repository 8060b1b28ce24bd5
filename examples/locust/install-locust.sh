#!/usr/bin/env bash
# install-locust.sh [DIR]: install the Locust of requirements.txt from PyPI
# into a virtual environment at DIR (default: a directory named after the
# version and requirements.txt's hash under ${XDG_CACHE_HOME:-~/.cache}/softalloc)
# unless it is already there, and print the path of its locust executable on
# stdout. Needs python3 (3.10 or later) with its venv module (Debian:
# apt-get install python3-venv). examples/venv.sh's venv_install does it.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../venv.sh"
venv_install --python 3.10 locust "$here/requirements.txt" ${1:+"$1"}
