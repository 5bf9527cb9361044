#!/usr/bin/env bash
# GPU machine: the CUDA checks of capture and replay hardening, in one run.
#   1. capture refuses a mesh id passed as wp.uint64, and an array address passed as an integer, on CUDA;
#      the same program with wp.handle captures and replays;
#   2. a bundle that holds a stale mesh address (captured here with the check switched off, as an older or
#      unchecked capture would ship it) makes the C++ replay_test report the crash, or the GPU fault, with
#      the bundle's label and the likely cause instead of dying silently;
#   3. a load that must compile retained source works in the private per-user cache and writes nothing
#      into the bundle's directory.
# Needs warp importable (PYTHONPATH=/tmp/wrp-site, see ../shared/gpu) and .gpucarry/ from
# tools/gpu/stage.sh of this branch (its `replay` binary and sim_source_only_wrp). Run from the repo root:
#   PYTHONPATH=/tmp/wrp-site bash tools/gpu/check_hardening.sh
set -uo pipefail
export PYTHONPATH=${PYTHONPATH:-}:$PWD PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=/tmp/wrp-site/warp/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
c=.gpucarry
work=$(mktemp -d)
status=0
step() { echo; echo "== $*"; }
fail() { echo "!! FAILED: $*"; status=1; }
expect_in() {  # expect_in FILE TEXT...
  local file=$1; shift
  for text in "$@"; do grep -qF -- "$text" "$file" || fail "'$text' not in $(basename "$file")"; done
}
capture() {  # capture MODE OUT_DIR [unchecked]
  WRP_TEST_STALE_MODE=$1 python3 - "$2" "${3:-}" <<'PY'
import sys
if sys.argv[2] == "unchecked":
    import wrpkg.stale_pointers
    wrpkg.stale_pointers.check_launches = lambda *args, **kwargs: None
    import wrpkg.capture
    wrpkg.capture.check_launches = wrpkg.stale_pointers.check_launches
from wrpkg.cli import run_tool
sys.exit(run_tool("wrpkg.capture", ["capture"], ["--script", "tests/programs_capture/stale_pointer.py",
    "--device", "cuda", "--out-dir", sys.argv[1], "--stem", "sim", "--label", "//tests:stale_wrp"]))
PY
}
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader

step "1. stale pointers are refused on CUDA"
for mode in mesh_uint64 array_ptr; do
  capture $mode "$work/raw_$mode" >"$work/$mode.log" 2>&1 && fail "$mode capture succeeded"
  cat "$work/$mode.log" | grep -v "^Warp" | head -4
  [ -e "$work/raw_$mode" ] && fail "$mode left an output"
done
expect_in "$work/mesh_uint64.log" "kernel 'closest', parameter 'mesh'" "live wp.Mesh" "as wp.handle"
expect_in "$work/array_ptr.log" "kernel 'scale_raw', parameter 'address'" "live wp.array data"
capture handle "$work/raw_handle" >"$work/handle.log" 2>&1 || { fail "wp.handle capture"; cat "$work/handle.log"; }
python3 -m wrpkg.bundle --raw-dir "$work/raw_handle" --stem sim --name stale_wrp --label //tests:handle_wrp \
  --out-dir "$work/handle/stale_wrp" --tar "$work/handle/stale_wrp.tar" --hash "$work/handle/stale_wrp.sha256" \
  || fail "bundle the wp.handle capture"
$c/replay --bundle "$work/handle/stale_wrp" || fail "replay of the wp.handle bundle"

step "2. a bundle with a stale mesh address: replay_test reports it"
capture mesh_uint64 "$work/raw_stale" unchecked >"$work/stale_capture.log" 2>&1 \
  || { fail "unchecked capture"; cat "$work/stale_capture.log"; }
python3 -m wrpkg.bundle --raw-dir "$work/raw_stale" --stem sim --name stale_wrp --label //tests:stale_wrp \
  --out-dir "$work/stale/stale_wrp" --tar "$work/stale/stale_wrp.tar" --hash "$work/stale/stale_wrp.sha256" \
  || fail "bundle the unchecked capture"
$c/replay --bundle "$work/stale/stale_wrp" >"$work/stale_replay.log" 2>&1
rc=$?
cat "$work/stale_replay.log"
echo "replay exit status: $rc"
[ $rc -eq 0 ] && fail "the stale bundle replayed without an error"
expect_in "$work/stale_replay.log" "//tests:stale_wrp" "likely cause" "wp.handle"

step "3. source fallback compiles in the private cache, not in the bundle directory"
bundle=$(mktemp -d)/sim_source_only_wrp
cp -r $c/sim_source_only_wrp "$bundle" && cp $c/sim_source_only_wrp.sha256 "$bundle.sha256"
before=$(cd "$bundle" && find . | sort | sha256sum)
WRP_CACHE_DIR="$work/cache" $c/replay --bundle "$bundle" | tee "$work/source.log" || fail "source-only replay"
expect_in "$work/source.log" "private cache $work/cache/"
[ "$(cd "$bundle" && find . | sort | sha256sum)" = "$before" ] || fail "the bundle directory changed"
echo "private cache holds:"; find "$work/cache" -type f | sed "s|$work/||"

echo
[ $status -eq 0 ] && echo "ALL HARDENING CHECKS PASSED" || echo "SOME HARDENING CHECKS FAILED"
exit $status
