#!/usr/bin/env bash
# Install robustlab into a venv from the lock (used by `make demo` / `make test` / .ci/run).
#   scripts/install.sh VENV_PYTHON base|test
# On Python 3.11 / Linux x86_64 every package comes from src/robustlab/locks (exact versions,
# checked against their sha256 hashes), then robustlab itself, editable, without dependencies.
# Elsewhere the lock does not apply: pyproject.toml's ranges are installed instead, with a warning
# (`robustlab doctor` then names what differs from the locked stack).
set -euo pipefail
cd "$(dirname "$0")/.."
python=$1
which=$2
case "$which" in
  base) lock=src/robustlab/locks/py311-linux-x86_64-base.txt; extra="" ;;
  test) lock=src/robustlab/locks/py311-linux-x86_64.txt; extra="[test]" ;;
  *) echo "install.sh: second argument must be base or test, not '$which'" >&2; exit 2 ;;
esac
platform=$("$python" -c 'import platform, sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}-{platform.system()}-{platform.machine()}")')
if [ "$platform" = "3.11-Linux-x86_64" ]; then
  "$python" -m pip install --quiet --require-hashes -r "$lock"
  "$python" -m pip install --quiet --no-deps -e .
  "$python" -m pip check >/dev/null || { "$python" -m pip check >&2; echo "install.sh: the lock and pyproject.toml disagree: run \`make lock\`" >&2; exit 1; }
else
  echo "install.sh: the lock is for Python 3.11 on Linux x86_64, this is $platform: installing pyproject.toml's ranges instead (run \`robustlab doctor\` to see what differs from the tested stack)" >&2
  "$python" -m pip install --quiet -e ".$extra"
fi
