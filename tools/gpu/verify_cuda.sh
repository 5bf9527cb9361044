#!/usr/bin/env bash
# GPU machine, step 2: every check that needs a CUDA GPU (loads on each road, C++ replays, the no-fit
# message, retargeted vs native captures), in one run. Needs warp importable
# (PYTHONPATH=/tmp/wrp-site, see ../shared/gpu) and .gpucarry/ from tools/gpu/stage.sh
# (bundles and C++ binaries built on a CPU machine).
set -uo pipefail
export PYTHONPATH=${PYTHONPATH:-}:$PWD PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=/tmp/wrp-site/warp/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
c=.gpucarry
status=0
step() { echo; echo "== $*"; }
check() { "$@" || { echo "!! FAILED: $*"; status=1; }; }
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader

# The benchmarks have their own run: tools/gpu/stage_bench.sh here, tools/gpu/bench_all.sh there.
step "multi-arch bundle: stock wp.capture_load, then wrpkg.load (verify + arch check)"
check python3 tools/gpu/replay_check.py $c/sim_recorded_wrp --stock
check python3 tools/gpu/replay_check.py $c/sim_recorded_wrp
step "no sm_90 SASS, PTX compute_75: loads through the PTX"
check python3 tools/gpu/replay_check.py $c/sim_ptx_only_wrp
step "sm_75 SASS only, source kept: Warp's source fallback"
check python3 tools/gpu/replay_check.py $c/sim_source_only_wrp
step "sm_75 SASS only, no PTX, no source: refused"
check python3 tools/gpu/replay_check.py $c/sim_no_fit_wrp --expect-mismatch
step "stock wp.capture_load of the no-fit bundle (what Warp alone says)"
python3 -c "import warp as wp; wp.init(); wp.capture_load('$c/sim_no_fit_wrp/sim.wrp', device='cuda:0')" 2>&1 | tail -3

step "C++ replay_test (built on the CPU machine)"
check $c/replay --bundle $c/sim_recorded_wrp --content-hash-file $c/sim_recorded_wrp.sha256
check $c/replay --bundle $c/sim_recorded_wrp --from-memory
check $c/replay --tar $c/sim_recorded_wrp.tar
check $c/sim_recorded_wrp_embedded_replay_test --embedded
check $c/replay --bundle $c/sim_ptx_only_wrp
check $c/replay --bundle $c/sim_source_only_wrp
check bash tests/gpu/expect_arch_mismatch_test.sh $c/replay $c/sim_no_fit_wrp

step "retarget: retargeted captures vs native CUDA captures, then their bundles' replays"
check python3 tools/gpu/retarget_check.py --retargeted $c/retargeted --report /tmp/retarget_report.json \
  models/sim.py tests/programs_retarget/launch_forms.py
check python3 tools/gpu/replay_check.py $c/launch_forms_wrp
check $c/replay --bundle $c/launch_forms_wrp
# Golden values from a CPU replay, held to sim.py's declared tolerances (models/README.md).
check python3 tools/gpu/replay_check.py $c/sim_wrp
check $c/replay --bundle $c/sim_wrp

step "examples/deploy on the GPU (its CPU path runs in CI: the GPU machine's Warp pack has no warp-clang.so)"
check $c/deploy_recorded --device cuda --steps 100

echo
[ "$status" -eq 0 ] && echo "verify_cuda: all passed" || echo "verify_cuda: FAILURES above"
exit "$status"
