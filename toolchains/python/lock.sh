#!/usr/bin/env bash
# Regenerates every hash-locked requirements file (exact versions + sha256 of every
# wheel) from its requirements.in:
#   toolchains/python/requirements.lock          the main venv (@wrp_venv)
#   toolchains/cuda/nvrtc_13_0/requirements.lock the PTX compiler's venv (@wrp_nvrtc_13_0_venv)
#   remote/requirements.lock                     the reference cluster's server (remote/cluster.py)
# The Bazel repository rule installs each lock with `pip install --require-hashes`, so
# this is the only place versions change.
#     toolchains/python/lock.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install -q pip-tools==7.5.2
for dir in toolchains/python toolchains/cuda/nvrtc_13_0 remote; do
    (
        cd "$root/$dir"
        "$tmp/venv/bin/pip-compile" -q --generate-hashes --allow-unsafe --strip-extras \
            --no-emit-index-url --no-emit-find-links \
            --output-file=requirements.lock requirements.in
        sed -i 's|^#    pip-compile .*|#    toolchains/python/lock.sh|' requirements.lock
    )
done
