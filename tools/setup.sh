#!/usr/bin/env bash
# Installs what the build needs on a fresh Debian machine, and nothing twice:
#   - Bazel (Debian's bazel-bootstrap, 4.2.3) and clang-format (lint), from apt
#   - the aarch64 cross compiler (g++-aarch64-linux-gnu, GCC 12.2) and qemu-user-static,
#     from apt, for the Jetson/Grace builds and their qemu tests (tests/aarch64)
#   - nginx (the shared-cache test serves a Bazel HTTP cache with it), from apt
#   - with --containers: Debian's docker.io and mmdebstrap, for --config=docker and the
#     offline runner image (toolchains/containers/README.md)
#   - buildifier, pinned with its integrity hash in third_party/buildifier (npm ci)
# The Python venv (warp-lang, NVRTC, nvFatbin, ...) is made by Bazel itself from
# toolchains/python/requirements.lock on first use (toolchains/python/repositories.bzl).
set -euo pipefail
cd "$(dirname "$0")/.."

containers=0
[ "${1:-}" = --containers ] && containers=1

need_apt=()
[ -x /usr/sbin/nginx ] || need_apt+=(nginx)
if [ "$containers" = 1 ]; then
  [ -x /usr/sbin/dockerd ] || need_apt+=(docker.io)
  command -v mmdebstrap >/dev/null 2>&1 || need_apt+=(mmdebstrap)
  # --config=docker makes the venvs from Debian's /usr/bin/python3, the image's interpreter.
  dpkg -s python3-venv >/dev/null 2>&1 || need_apt+=(python3-venv)
fi
command -v bazel >/dev/null 2>&1 || need_apt+=(bazel-bootstrap)
command -v clang-format >/dev/null 2>&1 || need_apt+=(clang-format)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3 python3-venv)
command -v xz >/dev/null 2>&1 || need_apt+=(xz-utils)
command -v aarch64-linux-gnu-g++ >/dev/null 2>&1 || need_apt+=(g++-aarch64-linux-gnu)
command -v qemu-aarch64-static >/dev/null 2>&1 || need_apt+=(qemu-user-static)
# runtime:locale_test compiles de_DE.UTF-8 from these sources into its temp dir.
[ -f /usr/share/i18n/locales/de_DE ] || need_apt+=(locales)
# The fuzz targets (tools/fuzz): Debian's clang with libFuzzer and the sanitizer runtimes.
command -v clang++-14 >/dev/null 2>&1 || need_apt+=(clang-14)
[ -d /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux ] || need_apt+=(libclang-rt-14-dev)
if [ "${#need_apt[@]}" -gt 0 ]; then
  echo "setup: apt-get install ${need_apt[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
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
