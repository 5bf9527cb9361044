#!/usr/bin/env bash
# Installs what the build needs on a fresh Debian machine, and nothing twice:
#   - Bazel (Debian's bazel-bootstrap, 4.2.3), from apt
#   - the aarch64 cross compiler (g++-12-aarch64-linux-gnu: GCC 12.2 on Debian 12, 12.4 on 13)
#     and qemu-user-static, from apt, for the Jetson/Grace builds and their qemu tests
#     (tests/aarch64)
#   - nginx (the shared-cache test serves a Bazel HTTP cache with it), from apt
#   - the reference remote cluster's host packages (remote/README.md; tests/remote):
#     postgresql, redis-server, bubblewrap, and mmdebstrap for its runner image
#   - with --containers: Debian's docker.io and mmdebstrap, for --config=docker and the
#     offline runner image (toolchains/containers/README.md)
#   - buildifier, pinned with its integrity hash in third_party/buildifier (npm ci)
# The Python venv (warp-lang, NVRTC, nvFatbin, ruff, clang-format, ...) is made by Bazel
# itself from toolchains/python/requirements.lock on first use
# (toolchains/python/repositories.bzl).
# Supported hosts: the Debian releases toolchains/host_releases.tsv lists (12 bookworm, 13
# trixie); the packages whose versions differ by release come from that table.
set -euo pipefail
cd "$(dirname "$0")/.."
clang=$(bash tools/host_release.sh clang)

containers=0
[ "${1:-}" = --containers ] && containers=1

need_apt=()
[ -x /usr/sbin/nginx ] || need_apt+=(nginx)
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || need_apt+=(postgresql)
command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ] || need_apt+=(redis-server)
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
command -v mmdebstrap >/dev/null 2>&1 || need_apt+=(mmdebstrap)
if [ "$containers" = 1 ]; then
  [ -x /usr/sbin/dockerd ] || need_apt+=(docker.io)
  # --config=docker makes the venvs from Debian's /usr/bin/python3, the image's interpreter.
  dpkg -s python3-venv >/dev/null 2>&1 || need_apt+=(python3-venv)
fi
command -v bazel >/dev/null 2>&1 || need_apt+=(bazel-bootstrap)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
# A fresh Debian root has neither (tools/check_host.sh): Bazel's C++ toolchain needs g++, the
# venv rule python3 with venv and ensurepip (Debian's python3-venv).
command -v python3 >/dev/null 2>&1 && python3 -c 'import ensurepip, venv' 2>/dev/null || need_apt+=(python3 python3-venv)
command -v g++ >/dev/null 2>&1 || need_apt+=(g++)
command -v xz >/dev/null 2>&1 || need_apt+=(xz-utils)
# GCC 12 on every release (the deploy binaries' glibc/libstdc++ floor; the table says why).
gcc_major=$(bash tools/host_release.sh aarch64_gcc | cut -d. -f1)
command -v "aarch64-linux-gnu-g++-$gcc_major" >/dev/null 2>&1 || need_apt+=("g++-$gcc_major-aarch64-linux-gnu")
command -v qemu-aarch64-static >/dev/null 2>&1 || need_apt+=(qemu-user-static)
# runtime:locale_test compiles de_DE.UTF-8 from these sources into its temp dir.
[ -f /usr/share/i18n/locales/de_DE ] || need_apt+=(locales)
# The fuzz targets (tools/fuzz): Debian's clang with libFuzzer and the sanitizer runtimes, of
# the version the host's release has (the table).
command -v "clang++-$clang" >/dev/null 2>&1 || need_apt+=("clang-$clang")
dpkg -s "libclang-rt-$clang-dev" >/dev/null 2>&1 || need_apt+=("libclang-rt-$clang-dev")
if [ "${#need_apt[@]}" -gt 0 ]; then
  echo "setup: apt-get install ${need_apt[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  # One install for all (one dependency resolution), but first name every package this
  # release lacks: a single unknown name would otherwise stop the install of all of them.
  missing=()
  for package in "${need_apt[@]}"; do
    apt-cache show "$package" >/dev/null 2>&1 || missing+=("$package")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "setup: Debian $(bash tools/host_release.sh release) has no package ${missing[*]}; fix: correct its row in toolchains/host_releases.tsv" >&2
    exit 1
  fi
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

bazel_version=$(bazel --version 2>/dev/null || true)
case "$bazel_version" in
  "bazel 4.2.3"* | "bazel no_version"*) ;; # Debian's bootstrap build reports no_version
  *) echo "setup: note: expected Debian's bazel-bootstrap 4.2.3, found '$bazel_version'" >&2 ;;
esac

# npm ci again only when the lock changed since the last install.
lock=third_party/buildifier/package-lock.json
stamp=third_party/buildifier/node_modules/.wrp-lock.sha256
want=$(sha256sum "$lock" | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setup: npm ci (buildifier)" >&2
  (cd third_party/buildifier && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$want" >"$stamp"
fi
