#!/usr/bin/env bash
# Builds the offline runner image: a Debian bookworm root filesystem from Debian's own
# packages (mmdebstrap) with bazel-bootstrap, the C++ toolchain, Python and a wheelhouse
# of every hash-locked wheel, so a build inside needs no registry. Writes, under OUT
# (default /var/tmp/rules_warp-image):
#   rootfs.tar           the root filesystem (mtimes clamped to SOURCE_DATE_EPOCH)
#   rootfs.tar.xz        the same, compressed: what a GPU machine without Docker unpacks
#                        and enters with chroot/unshare
#   image.tar            a docker-archive of rootfs.tar with a fixed creation time, so the
#                        image ID is a function of the root filesystem alone
#   image.digest         that image ID (sha256:...), also loaded into dockerd
#     toolchains/containers/build_image.sh [--no-docker] [--no-xz] [--include PKG,...]
#                                          [--release bookworm|trixie] [--test-tools] [OUT]
# --test-tools: also what `bazel test //...` calls beyond the build (the release's clang with
# libFuzzer, the aarch64 cross GCC, qemu-user-static, nginx, locales: its row of
# toolchains/host_releases.tsv), for runners and remote workers that run every test.
# --release: the Debian release of the image (default bookworm, the one the platforms'
# recorded image is). A remote cluster's workers run the release their clients run
# (remote/README.md); its CPython and glibc come from toolchains/host_releases.tsv.
# --include adds Debian packages (tools/gpu/runner_pack.sh adds the tools the test suite
# calls, for `bazel test //...` inside the root filesystem).
# The digest the build platforms use is recorded in toolchains/containers/image.bzl
# (--repo_env=WRP_RUNNER_IMAGE_ID=... names another: toolchains/containers/repositories.bzl);
# this script says when the image it built differs from it.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
load_docker=1
compress=1
extra=
release=bookworm
test_tools=0
while [ $# -gt 0 ]; do
  case "$1" in
    --no-docker) load_docker=0 ;;
    --no-xz) compress=0 ;;
    --include)
      extra=",$2"
      shift
      ;;
    --release)
      release=$2
      shift
      ;;
    --test-tools) test_tools=1 ;;
    -*) echo "build_image.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
out=${1:-/var/tmp/rules_warp-image}
mkdir -p "$out"
exec 9>"$out/.lock"
flock -n 9 || { echo "build_image.sh: another build is writing $out" >&2; exit 1; }
command -v mmdebstrap >/dev/null || {
  echo "build_image.sh: mmdebstrap is missing: run tools/setup.sh --containers" >&2
  exit 1
}
# Fixed: the image's bytes must not depend on the day it was built.
export SOURCE_DATE_EPOCH=1767225600 # 2026-01-01T00:00:00Z
start=$(date +%s)

# The wheelhouse: every wheel of both locks, checked against their hashes by pip, for
# the image's interpreter (Debian bookworm: CPython 3.11, glibc 2.36, x86_64), whatever
# Python the host has (Debian 13's is 3.13): pip is told the image's tags, and runs from a
# venv of its own, since Debian's python3 may have no pip module.
if [ "$test_tools" = 1 ]; then
  clang=$("$repo/tools/host_release.sh" --release "$release" clang)
  gcc_major=$("$repo/tools/host_release.sh" --release "$release" aarch64_gcc | cut -d. -f1)
  extra="$extra,clang-$clang,libclang-rt-$clang-dev,g++-$gcc_major-aarch64-linux-gnu,qemu-user-static,nginx,locales"
fi
image_python=$("$repo/tools/host_release.sh" --release "$release" python)
image_glibc_minor=$("$repo/tools/host_release.sh" --release "$release" glibc)
platforms=()
for minor in $(seq "$image_glibc_minor" -1 5); do platforms+=(--platform "manylinux_2_${minor}_x86_64"); done
platforms+=(--platform manylinux2014_x86_64 --platform manylinux2010_x86_64 --platform manylinux1_x86_64)
pip_venv="$out/pip-venv"
rm -rf "$pip_venv"
python3 -m venv "$pip_venv" || {
  echo "build_image.sh: python3 -m venv failed: run tools/setup.sh --containers (installs python3-venv)" >&2
  exit 1
}
wheels="$out/wheelhouse"
rm -rf "$wheels"
for lock in toolchains/python/requirements.lock toolchains/cuda/nvrtc_13_0/requirements.lock; do
  "$pip_venv/bin/pip" download --quiet --disable-pip-version-check --require-hashes --no-deps \
    --only-binary=:all: --implementation cp --python-version "$image_python" --abi "cp${image_python/./}" \
    "${platforms[@]}" -r "$repo/$lock" -d "$wheels"
done
rm -rf "$pip_venv"
# The Debian packages the C++ build downloads (third_party/debian): offline, from here.
python3 "$repo/third_party/debian/fetch.py" "$wheels"
echo "build_image.sh: wheelhouse $(du -sh "$wheels" | cut -f1) in $(ls "$wheels" | wc -l) wheels" >&2

# Docs, man pages and translations are left out: nothing in a runner reads them. (The man
# directories stay: update-alternatives links into them, e.g. for java.1.gz.)
rm -f "$out/rootfs.tar"
mmdebstrap --verbose --variant=apt --format=tar \
  --include="bazel-bootstrap,python3,python3-venv$extra" \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --essential-hook='mkdir -p "$1"/usr/share/man/man1 "$1"/usr/share/man/man8' \
  --customize-hook='mkdir -p "$1/opt/wheelhouse"' \
  --customize-hook="sync-in '$wheels' /opt/wheelhouse" \
  --customize-hook="copy-in '$repo/toolchains/containers/pip.conf' /etc" \
  --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/var/log/* "$1"/root/.cache' \
  "$release" "$out/rootfs.tar"
echo "build_image.sh: rootfs.tar $(du -h "$out/rootfs.tar" | cut -f1), $(($(date +%s) - start)) s" >&2

# xz -6, not -9: a third of the tarball is wheels (zip archives already), and on two
# shared cores -9 ran for 25 minutes without finishing its first two 192 MiB blocks.
if [ "$compress" = 1 ]; then
  t=$(date +%s)
  xz -6 -T2 -c "$out/rootfs.tar" >"$out/rootfs.tar.xz.tmp"
  mv "$out/rootfs.tar.xz.tmp" "$out/rootfs.tar.xz"
  echo "build_image.sh: rootfs.tar.xz $(stat -c %s "$out/rootfs.tar.xz") bytes, xz $(($(date +%s) - t)) s" >&2
fi

python3 "$repo/toolchains/containers/docker_archive.py" "$out/rootfs.tar" "$out/image.tar" \
  --created "$SOURCE_DATE_EPOCH" --tag rules-warp/runner:latest \
  --env NVIDIA_VISIBLE_DEVICES=all --env NVIDIA_DRIVER_CAPABILITIES=compute,utility \
  >"$out/image.digest"
digest=$(cat "$out/image.digest")
if [ "$load_docker" = 1 ]; then
  docker load --quiet --input "$out/image.tar" >&2
  loaded=$(docker image inspect --format '{{.Id}}' rules-warp/runner:latest)
  [ "$loaded" = "$digest" ] || {
    echo "build_image.sh: dockerd reports image $loaded, the archive says $digest" >&2
    exit 1
  }
fi
recorded=$(sed -nE 's/^RUNNER_IMAGE_ID = "(sha256:[0-9a-f]+)"/\1/p' "$repo/toolchains/containers/image.bzl")
echo "build_image.sh: image $digest, $(($(date +%s) - start)) s in all" >&2
if [ "$release" = bookworm ] && [ "$digest" != "$recorded" ]; then
  echo "build_image.sh: note: toolchains/containers/image.bzl records $recorded;" >&2
  echo "  Debian's packages changed since (or this is a new lock). To use this image, set" >&2
  echo "  RUNNER_IMAGE_ID = \"$digest\" there and commit it." >&2
fi
echo "$digest"
