#!/usr/bin/env bash
# Refresh the locks (`make lock`): exact versions with hashes for Python 3.11 on Linux x86_64.
#   src/robustlab/locks/py311-linux-x86_64.txt       every extra and the test tools (make test, .ci/run)
#   src/robustlab/locks/py311-linux-x86_64-base.txt  the package alone (make demo), the same versions
# The resolver is uv (pinned below) in its own throwaway venv; it reads pyproject.toml's ranges and
# PyPI. Commit both files with the change that needed them, and rerun the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
UV_VERSION=0.13.9
tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT
"$PYTHON" -m venv "$tools/venv"
"$tools/venv/bin/python" -m pip install --quiet "uv==$UV_VERSION"
uv=("$tools/venv/bin/uv" pip compile pyproject.toml --generate-hashes --python-version 3.11
    --python-platform x86_64-manylinux_2_28 --index-url https://pypi.org/simple --no-annotate --quiet)
header="# The locked stack of robustlab for Python 3.11 on Linux x86_64 (exact versions, sha256 hashes).
# Made by \`make lock\` (scripts/lock.sh, uv $UV_VERSION) from pyproject.toml; the tests and the figures
# in README.md and docs/ were made with it. \`robustlab doctor\` compares an installed stack with it."
out=src/robustlab/locks
mkdir -p "$out"
"${uv[@]}" --extra test -o "$tools/full.txt"
"${uv[@]}" -c "$tools/full.txt" -o "$tools/base.txt"
for name in full base; do
  target=$out/py311-linux-x86_64.txt
  [ "$name" = base ] && target=$out/py311-linux-x86_64-base.txt
  { echo "$header"; grep -v '^#' "$tools/$name.txt"; } > "$target.tmp" && mv "$target.tmp" "$target"
done
echo "locked: $(grep -c '==' $out/py311-linux-x86_64.txt) packages (test), $(grep -c '==' $out/py311-linux-x86_64-base.txt) (base)"
