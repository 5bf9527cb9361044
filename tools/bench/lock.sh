#!/usr/bin/env bash
# Regenerates tools/bench/requirements.lock (exact versions + sha256 of every wheel) from
# requirements.in. tools/bench/report.sh installs it with `pip install --require-hashes`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install -q pip-tools==7.5.2
cd "$here"
"$tmp/venv/bin/pip-compile" -q --generate-hashes --allow-unsafe --strip-extras \
    --no-emit-index-url --no-emit-find-links --output-file=requirements.lock requirements.in
sed -i 's|^#    pip-compile .*|#    tools/bench/lock.sh|' requirements.lock
