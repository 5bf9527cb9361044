#!/usr/bin/env bash
# The load ratios of the benchmark report with more rounds than tools/gpu/bench_all.sh gives them: Warp's own
# single-arch .wrp (captured here), wrpkg.load and the C++ runtime on each model's multi-arch bundle, interleaved
# round by round in fresh processes (tools/bench/load_bench.py). Needs warp in /tmp/wrp-site (../shared/gpu) and
# .gpubench/ from tools/gpu/stage_bench.sh. Writes $OUT/load_rounds.json; about 10 s a round on an H200.
#   OUT=/tmp/x tools/gpu/load_rounds.sh [ROUNDS] [SETTLE_S]   # SETTLE_S: pause before each process (default 0)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/wrp-bench}
work=$(mktemp -d)
mkdir -p "$out"
export PYTHONPATH=/tmp/wrp-site:$PWD PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=/tmp/wrp-site/warp/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
python3 -m wrpkg.capture --script models/cloth.py --device cuda --out-dir "$work/cloth_cuda" --stem cloth \
  --label //models:cloth_wrp > "$work/capture.log" 2>&1 || { cat "$work/capture.log"; exit 1; }
python3 tools/bench/load_bench.py --out "$out/load_rounds.json" --repeat "${1:-21}" --settle "${2:-0}" --start-bench .gpubench/start_bench \
  sim:native:stock:models/recorded/sim_cuda_sm90 sim:sass:wrpkg:.gpubench/sim_recorded_wrp \
  sim:sass:cpp:.gpubench/sim_recorded_wrp cloth:native:stock:"$work/cloth_cuda" \
  cloth:sass:wrpkg:.gpubench/cloth_wrp cloth:sass:cpp:.gpubench/cloth_wrp
