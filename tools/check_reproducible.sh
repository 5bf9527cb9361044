#!/usr/bin/env bash
# Builds TARGET (default //models:sim_cpu_wrp) in two fresh Bazel output bases and
# compares the bundle's .tar and .sha256 byte for byte.
#     tools/check_reproducible.sh [//pkg:name]
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:-//models:sim_cpu_wrp}
path=${target#//}
path=${path/://}
work=$(mktemp -d)
trap 'for b in "$work"/ob*; do bazel --output_base="$b" shutdown >/dev/null 2>&1 || true; done; chmod -R u+w "$work"; rm -rf "$work"' EXIT
for i in 1 2; do
  start=$(date +%s)
  bazel --output_base="$work/ob$i" build "$target" >"$work/build$i.log" 2>&1 || { tail -20 "$work/build$i.log"; exit 1; }
  bin=$(bazel --output_base="$work/ob$i" info bazel-bin 2>/dev/null)
  cp "$bin/$path.tar" "$work/$i.tar"
  cp "$bin/$path.sha256" "$work/$i.sha256"
  echo "clean build $i: $(($(date +%s) - start)) s, $(sha256sum <"$work/$i.tar" | cut -c1-16) (tar), content hash $(cut -c1-16 "$work/$i.sha256")"
done
cmp "$work/1.tar" "$work/2.tar" && cmp "$work/1.sha256" "$work/2.sha256" &&
  echo "$target: byte-identical .tar and .sha256 from two clean output bases"
