#!/usr/bin/env bash
# Prints one column of toolchains/host_releases.tsv for this host's Debian release
# (VERSION_CODENAME in /etc/os-release) or the one --release names, or fails naming the
# releases the table supports.
#     tools/host_release.sh [--release NAME] release|clang|aarch64_gcc|python|glibc
set -euo pipefail
table=$(cd "$(dirname "$0")/.." && pwd)/toolchains/host_releases.tsv
release=
if [ "${1:-}" = --release ]; then
  release=$2
  shift 2
fi
column=${1:-}
case "$column" in
  release | clang | aarch64_gcc | python | glibc) ;;
  *) echo "usage: host_release.sh [--release NAME] release|clang|aarch64_gcc|python|glibc" >&2; exit 2 ;;
esac
[ -n "$release" ] || release=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
awk -F '\t' -v release="$release" -v column="$column" '
  /^#/ || NF == 0 { next }
  !header { for (i = 1; i <= NF; i++) index_of[$i] = i; header = 1; next }
  { supported = supported (supported ? ", " : "") $1 }
  $1 == release { print $(index_of[column]); found = 1 }
  END {
    if (!found) {
      printf "host_release.sh: Debian release \"%s\" (from /etc/os-release or --release) is not in %s (it lists %s); fix: run on one of those, or add a row for \"%s\" with the versions its packages have\n", release, FILENAME, supported, release > "/dev/stderr"
      exit 1
    }
  }' "$table"
