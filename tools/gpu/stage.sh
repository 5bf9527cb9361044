#!/usr/bin/env bash
# Builds on this (CPU) machine what tools/gpu/verify_cuda.sh needs on the GPU machine and
# copies it into .gpucarry/ (git-ignored), to be sent with the device tool's `carry`.
set -euo pipefail
cd "$(dirname "$0")/../.."
targets=(//models:sim_recorded_wrp //models:sim_wrp //tests/gpu:launch_forms_wrp
  //tests/gpu:sim_ptx_only_wrp //tests/gpu:sim_source_only_wrp
  //tests/gpu:sim_no_fit_wrp //runtime:replay //models:sim_recorded_wrp_embedded_replay_test
  //examples/deploy:deploy_recorded)
bazel build "${targets[@]}"
rm -rf .gpucarry && mkdir .gpucarry
for b in models/sim_recorded_wrp tests/gpu/sim_ptx_only_wrp tests/gpu/sim_source_only_wrp tests/gpu/sim_no_fit_wrp; do
  cp -rL "bazel-bin/$b" "bazel-bin/$b.tar" "bazel-bin/$b.sha256" .gpucarry/
done
# Retargeted (CPU-made) CUDA captures and bundles, for tools/gpu/retarget_check.py.
mkdir -p .gpucarry/retargeted
cp -rL bazel-bin/models/sim_wrp.raw .gpucarry/retargeted/sim
cp -rL bazel-bin/tests/gpu/launch_forms_wrp.raw .gpucarry/retargeted/launch_forms
cp -rL bazel-bin/models/sim_wrp bazel-bin/tests/gpu/launch_forms_wrp .gpucarry/
cp -L bazel-bin/runtime/replay bazel-bin/models/sim_recorded_wrp_embedded_replay_test \
  bazel-bin/examples/deploy/deploy_recorded .gpucarry/
chmod -R u+w .gpucarry
du -sh .gpucarry
