#!/usr/bin/env bash
# GPU machine, step 1: capture models/sim.py on CUDA three times and bundle each
# single-arch: twice as-is (determinism: identical canonical bundles), once with Warp
# told to package PTX for compute_80 instead of sm_90 SASS (a stand-in for a capture
# on another GPU model). Raw captures come back in $OUT for the GPU-free steps.
# Run from the repository root with warp importable (see ../shared/gpu).
set -euo pipefail
export PYTHONPATH=${PYTHONPATH:-}:$PWD PYTHONUNBUFFERED=1
out=${OUT:-/tmp/wrp-out}
work=$(mktemp -d)
python3 -c 'import warp as wp; wp.config.quiet = True; wp.init(); d = wp.get_cuda_device(0); print("device:", d.name, "sm", d.arch)'
capture() {  # capture NAME [python statements run before the harness]
  python3 - "$work/$1" "${2:-}" <<'PY'
import sys
import warp as wp
exec(sys.argv[2])
from wrpkg.cli import run_tool
sys.exit(run_tool("wrpkg.capture.tool", ["capture"], ["--script", "models/sim.py", "--device", "cuda",
    "--out-dir", sys.argv[1], "--stem", "sim", "--label", "//models:sim_wrp"]))
PY
}
capture cap1
capture cap2
capture cap_ptx80 'wp.config.cuda_output = "ptx"; wp.config.ptx_target_arch = 80'
for c in cap1 cap2 cap_ptx80; do
  python3 -m wrpkg.build.pack --raw-dir "$work/$c" --stem sim --name sim_wrp --label //models:sim_wrp \
    --out-dir "$work/b_$c/sim_wrp" --tar "$work/b_$c/sim_wrp.tar" --hash "$work/b_$c/sim_wrp.sha256"
  echo "$c: raw sim.wrp $(sha256sum < "$work/$c/sim.wrp" | cut -c1-16)  bundle hash $(cat "$work/b_$c/sim_wrp.sha256")"
  ls "$work/$c/sim_modules"
done
cmp "$work/b_cap1/sim_wrp.tar" "$work/b_cap2/sim_wrp.tar" && echo "cap1 and cap2: byte-identical bundle tars"
tar -C "$work" -cf "$out/raw_captures.tar" cap1 cap2 cap_ptx80
# The model sources this capture was made from: checked in beside a recorded capture
# (models/recorded/<name>.sources.sha256), tests/test_recorded_capture.py fails when they drift.
sha256sum models/sim.py models/sim_kernels.py > "$out/sources.sha256"
