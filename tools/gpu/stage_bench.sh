#!/usr/bin/env bash
# Builds on this (CPU) machine what tools/gpu/bench_all.sh needs on the GPU machine and copies it into
# .gpubench/ (git-ignored, a few MiB), to be sent with the device tool's `carry`. Benchmark binaries are
# built with -c opt, as deployment binaries should be.
set -euo pipefail
cd "$(dirname "$0")/../.."
# The cloth model's CUDA bundles are retargeted from its CPU capture (no GPU needed to build them).
bundles=(//models:sim_recorded_wrp //tests/gpu:sim_ptx_only_wrp //tests/gpu:sim_source_only_wrp
  //models:cloth_wrp //models:cloth_ptx_only_wrp)
bazel build "${bundles[@]}"
rm -rf .gpubench && mkdir .gpubench
for t in "${bundles[@]}"; do
  p=${t#//}; p=${p/://}
  cp -rL "bazel-bin/$p" "bazel-bin/$p.sha256" .gpubench/
done
# After the bundles are copied: bazel-bin then points at the -c opt output tree.
bazel build -c opt //tools/bench:start_bench //tools/bench:replay_bench //tools/bench:verify_bench //runtime:replay
cp -L bazel-bin/tools/bench/start_bench bazel-bin/tools/bench/replay_bench bazel-bin/tools/bench/verify_bench \
  bazel-bin/runtime/replay .gpubench/
chmod -R u+w .gpubench
du -sh .gpubench
