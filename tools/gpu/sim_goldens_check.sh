#!/usr/bin/env bash
# GPU machine: do the CPU golden values of the retargeted //models:sim_wrp hold on CUDA?
# Needs warp importable (PYTHONPATH=/tmp/wrp-site, see ../shared/gpu) and .gpusim/ from
# tools/gpu/stage_sim.sh (built on a CPU machine). Run from the repository root:
#   export PYTHONPATH=/tmp/wrp-site OUT=...; bash tools/gpu/sim_goldens_check.sh
# 1. re-records models/sim.py natively on CUDA with tools/gpu/capture_cuda.sh (the recipe of
#    models/recorded/sim_cuda_sm90): $OUT/raw_captures.tar and $OUT/sources.sha256;
# 2. compares the retargeted capture with the native one in canonical form;
# 3. replays the retargeted bundle on the GPU in Python and in C++ against its CPU golden
#    values with the declared tolerances, printing max abs/rel error per output.
set -uo pipefail
export PYTHONPATH=${PYTHONPATH:-}:$PWD PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=/tmp/wrp-site/warp/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OUT=${OUT:-/tmp/wrp-out}
mkdir -p "$OUT"
c=.gpusim
status=0
step() { echo; echo "== $*"; }
check() { "$@" || { echo "!! FAILED: $*"; status=1; }; }
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
if ! sha256sum --quiet -c $c/sources.sha256; then
  echo "!! .gpusim/ was staged from other model sources: run tools/gpu/stage_sim.sh again"; exit 1
fi

step "1. native CUDA capture of models/sim.py (tools/gpu/capture_cuda.sh)"
check bash tools/gpu/capture_cuda.sh
native=$(mktemp -d)
tar -C "$native" -xf "$OUT/raw_captures.tar" cap1

step "2. retargeted capture (CPU machine) vs native CUDA capture, canonical form"
check python3 - "$c/retargeted/sim" "$native/cap1" <<'PY'
import sys
from wrpkg.retarget import compare_captures
problems = compare_captures(sys.argv[1], sys.argv[2], "sim")
print("\n".join(problems) if problems else "sim: retargeted and native captures are byte-identical (canonical .wrp, .cu, .cubin)")
sys.exit(1 if problems else 0)
PY

step "3a. the retargeted bundle replayed on the GPU (Python, wrpkg.load) vs its CPU golden values"
check python3 tools/gpu/replay_check.py $c/sim_wrp
step "3b. the same replay vs the native CUDA capture's golden values (same GPU: expected bit-exact)"
check python3 tools/gpu/replay_check.py $c/sim_wrp --golden-dir "$native/cap1/golden" --exact
step "3c. C++ replay of the retargeted bundle vs its CPU golden values"
check $c/replay --bundle $c/sim_wrp --content-hash-file $c/sim_wrp.sha256

echo
echo "re-recorded capture: $OUT/raw_captures.tar (cap1 is models/recorded/sim_cuda_sm90), $OUT/sources.sha256"
[ "$status" -eq 0 ] && echo "sim_goldens_check: all passed" || echo "sim_goldens_check: FAILURES above"
exit "$status"
