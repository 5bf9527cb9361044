#!/usr/bin/env bash
# Builds TARGETs (default //models:sim_cpu_wrp) in two fresh Bazel output bases and
# compares each bundle's .tar and .sha256 byte for byte. Other arguments are build flags.
#     tools/check_reproducible.sh [//pkg:name ...] [--//rules:archs=sm_90 ...]
set -euo pipefail
cd "$(dirname "$0")/.."
targets=()
flags=()
for arg in "$@"; do
  case $arg in
    //*) targets+=("$arg") ;;
    *) flags+=("$arg") ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(//models:sim_cpu_wrp)
work=$(mktemp -d)
trap 'for b in "$work"/ob*; do bazel --output_base="$b" shutdown >/dev/null 2>&1 || true; done; chmod -R u+w "$work"; rm -rf "$work"' EXIT
for i in 1 2; do
  start=$(date +%s)
  # No convenience symlinks: bazel-<name> pointing at a temporary output base would be
  # loaded as a package by the next `bazel test //...` in this checkout.
  bazel --output_base="$work/ob$i" build --symlink_prefix=/ "${flags[@]}" "${targets[@]}" >"$work/build$i.log" 2>&1 || { tail -20 "$work/build$i.log"; exit 1; }
  bin=$(bazel --output_base="$work/ob$i" info "${flags[@]}" bazel-bin 2>/dev/null)
  for target in "${targets[@]}"; do
    path=${target#//}
    path=${path/://}
    name=${path//\//_}
    cp "$bin/$path.tar" "$work/$name.$i.tar"
    cp "$bin/$path.sha256" "$work/$name.$i.sha256"
    echo "clean build $i: $target: $(sha256sum <"$work/$name.$i.tar" | cut -c1-16) (tar), content hash $(cut -c1-16 "$work/$name.$i.sha256")"
  done
  echo "clean build $i: $(($(date +%s) - start)) s"
done
status=0
for target in "${targets[@]}"; do
  path=${target#//}
  path=${path/://}
  name=${path//\//_}
  if cmp "$work/$name.1.tar" "$work/$name.2.tar" && cmp "$work/$name.1.sha256" "$work/$name.2.sha256"; then
    echo "$target: byte-identical .tar and .sha256 from two clean output bases"
  else
    status=1
  fi
done
exit $status
