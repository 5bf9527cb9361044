#!/usr/bin/env bash
# Builds the runtime's libFuzzer targets with Debian's clang (ASan + UBSan; the host release's version,
# toolchains/host_releases.tsv) and runs each one, seeded with a real bundle: its manifest.json for
# manifest_fuzz, its <name>.tar (with tools/fuzz/seeds/tar: pax headers) for ustar_fuzz and bundle_fuzz, and
# for directory_fuzz (hostile manifest.json and golden.json in a copy of the bundle directory) the two
# manifests joined by a NUL byte.
#
#   tools/fuzz/run.sh --seed-dir BUNDLE_DIR --seed-tar BUNDLE.tar --include-root-of HEADER... --link LIB...
#     (--seconds N | --runs N) [--work DIR]
#
# The short run (a few seconds a target) is //tools/fuzz:fuzz_smoke_test. The long run, e.g. at least a
# million executions of each target:
#   bazel build //runtime:particles_cpu_wrp_dir //runtime:particles_cpu_wrp_tar
#   tools/fuzz/run.sh --seed-dir bazel-bin/runtime/particles_cpu_wrp \
#     --seed-tar bazel-bin/runtime/particles_cpu_wrp.tar \
#     --include-root-of "$(bazel info output_base)/external/wrp_nlohmann_json/usr/include/nlohmann/json.hpp" \
#     --include-root-of "$(bazel info output_base)/external/wrp_valijson/usr/include/valijson/validator.hpp" \
#     --include-root-of bazel-bin/runtime/internal \
#     --include-root-of "$(bazel info output_base)/external/wrp_openssl_amd64/usr/include/openssl/evp.h" \
#     --include-root-of "$(bazel info output_base)/external/wrp_openssl_amd64/usr/include/x86_64-linux-gnu/openssl/configuration.h" \
#     --link "$(bazel info output_base)/external/wrp_openssl_amd64/usr/lib/x86_64-linux-gnu/libcrypto.a" \
#     --runs 1000000 --work /tmp/wrp-fuzz
# A finding leaves crash-* (the input) in the work dir and exits non-zero.
set -euo pipefail

seconds="" runs="" seed_dir="" seed_tar="" work="" include_roots=() libs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --seed-dir) seed_dir=$2; shift 2 ;;
    --seed-tar) seed_tar=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    # The include root two levels above a header: nlohmann/json.hpp, valijson/validator.hpp, and (outside
    # Bazel) bazel-bin/runtime/internal for the generated runtime/internal/manifest_schemas.h.
    --include-root-of) include_roots+=("$(cd "$(dirname "$2")/.." && pwd)"); shift 2 ;;
    # A static library the runtime's sources need: OpenSSL's libcrypto.a (runtime/internal/sha256.cc).
    --link) libs+=("$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"); shift 2 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$seed_dir" ] || [ -z "$seed_tar" ] || [ "${#include_roots[@]}" -eq 0 ] || { [ -z "$seconds" ] && [ -z "$runs" ]; }; then
  echo "usage: run.sh --seed-dir BUNDLE_DIR --seed-tar BUNDLE.tar --include-root-of HEADER... --link LIB... (--seconds N | --runs N) [--work DIR]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# The clang of the host's Debian release (toolchains/host_releases.tsv), as tools/setup.sh installs it.
clang=$(bash "$repo/tools/host_release.sh" clang)
clangxx=$(command -v "clang++-$clang" || true)
if [ -z "$clangxx" ]; then
  echo "run.sh: clang++-$clang not found; fix: run tools/setup.sh (installs clang-$clang and libclang-rt-$clang-dev)" >&2
  exit 1
fi
work=${work:-$(mktemp -d "${TEST_TMPDIR:-/tmp}/wrp-fuzz.XXXXXX")}
mkdir -p "$work/obj"

isystem=()
for root in "${include_roots[@]}"; do isystem+=(-isystem "$root"); done
flags=(-std=c++17 -O1 -gline-tables-only -I"$repo" "${isystem[@]}" -fsanitize=address,undefined -fno-sanitize-recover=undefined
  -fno-omit-frame-pointer)
objs=()
for src in bundle internal/buffer internal/bundle_files internal/bundle_limits internal/digest_job internal/unverified_file \
  internal/fatbin internal/json internal/manifest internal/names internal/schema_fields internal/sha256 internal/ustar \
  internal/wrp_check internal/wrp_cursor internal/wrp_operations internal/module_binaries; do
  obj="$work/obj/$(basename "$src").o"
  "$clangxx" "${flags[@]}" -fsanitize=fuzzer-no-link -c "$repo/runtime/$src.cc" -o "$obj" &
  objs+=("$obj")
done
wait
for target in manifest_fuzz ustar_fuzz bundle_fuzz directory_fuzz; do
  "$clangxx" "${flags[@]}" -fsanitize=fuzzer "$here/$target.cc" "${objs[@]}" "${libs[@]}" -ldl -pthread -o "$work/$target" &
done
wait

mkdir -p "$work/seeds/manifest" "$work/seeds/tar" "$work/seeds/directory"
cp "$seed_dir/manifest.json" "$work/seeds/manifest/"
cp "$seed_tar" "$work/seeds/tar/"
# Archives the bundle's tar does not show: paths too long for ustar, in pax headers (tools/fuzz/seeds/tar).
cp "$here"/seeds/tar/*.tar "$work/seeds/tar/"
{ cat "$seed_dir/manifest.json"; printf '\0'; cat "$seed_dir/golden.json"; } >"$work/seeds/directory/manifests"
# directory_fuzz copies the bundle from here, after the cd below.
export WRP_FUZZ_BUNDLE_DIR
WRP_FUZZ_BUNDLE_DIR=$(cd "$seed_dir" && pwd)

limit=()
[ -n "$seconds" ] && limit+=(-max_total_time="$seconds")
[ -n "$runs" ] && limit+=(-runs="$runs")
status=0
for target in manifest_fuzz ustar_fuzz bundle_fuzz directory_fuzz; do
  seeds=$work/seeds/tar
  [ "$target" = manifest_fuzz ] && seeds=$work/seeds/manifest
  [ "$target" = directory_fuzz ] && seeds=$work/seeds/directory
  corpus=$work/corpus/$target
  mkdir -p "$corpus"
  log=$work/$target.log
  # -max_len: for archives, room for the seed bundle plus growth (the whole tar must fit for bundle_fuzz to
  # reach sha256); a manifest is a few KiB.
  max_len=$(($(stat -c %s "$seed_tar") + 4096))
  [ "$target" = manifest_fuzz ] && max_len=16384
  [ "$target" = directory_fuzz ] && max_len=32768
  if (cd "$work" && ASAN_OPTIONS=detect_leaks=1 "./$target" "${limit[@]}" -max_len="$max_len" \
    -print_final_stats=1 "$corpus" "$seeds") >"$log" 2>&1; then
    result=ok
  else
    result=FAILED
    status=1
  fi
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  echo "$target: $result, $execs executions, corpus $(find "$corpus" -type f | wc -l) inputs (log $log)"
  if [ "$result" = FAILED ]; then tail -40 "$log" >&2; fi
done
exit $status
