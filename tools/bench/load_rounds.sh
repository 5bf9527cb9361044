#!/usr/bin/env bash
# The load ratios of the benchmark report with more rounds than bench_all.sh gives them: Warp's own
# single-arch .wrp (captured here), wrpkg.reader.bundle and the C++ runtime on each model's multi-arch bundle, interleaved
# round by round in fresh processes (tools/bench/load_bench.py). On a GPU machine, inputs as bench_all.sh's
# (bench_env.sh). Writes $OUT/load_rounds.json; about 10 s a round on an H200.
#   OUT=/tmp/x bazel run -c opt //tools/bench:load_rounds -- [ROUNDS] [SETTLE_S]   # SETTLE_S: pause before each process (default 0)
set -euo pipefail
r=$0.runfiles/rules_warp
if [ -d "$r" ]; then cd "$r"; else cd "$(dirname "$0")/../.."; fi
source tools/bench/bench_env.sh
out=${OUT:-/tmp/wrp-bench}
work=$(mktemp -d)
mkdir -p "$out"
"$py" -m wrpkg.capture --script models/cloth.py --device cuda --out-dir "$work/cloth_cuda" --stem cloth \
  --label //models:cloth_wrp > "$work/capture.log" 2>&1 || { cat "$work/capture.log"; exit 1; }
"$py" tools/bench/load_bench.py --out "$out/load_rounds.json" --repeat "${1:-21}" --settle "${2:-0}" \
  --start-bench tools/bench/start_bench \
  sim:native:stock:models/recorded/sim_cuda_sm90 sim:sass:wrpkg:models/sim_recorded_wrp \
  sim:sass:cpp:models/sim_recorded_wrp cloth:native:stock:"$work/cloth_cuda" \
  cloth:sass:wrpkg:models/cloth_wrp cloth:sass:cpp:models/cloth_wrp
