#!/usr/bin/env bash
# Draws docs/bench/REPORT.md and its plots from benchmark JSON (a folder; see report.py), with
# matplotlib from tools/bench/requirements.lock (hash-checked) in a venv of its own.
#   tools/bench/report.sh RESULTS_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=${WRP_BENCH_VENV:-$HOME/.cache/rules_warp/bench-venv}
stamp=$(sha256sum "$here/requirements.lock" | cut -c1-16)
if [ ! -f "$venv/.lock-$stamp" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --require-hashes --no-deps -r "$here/requirements.lock"
  touch "$venv/.lock-$stamp"
fi
exec "$venv/bin/python" "$here/report.py" "$@"
