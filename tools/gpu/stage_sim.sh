#!/usr/bin/env bash
# Builds here (no GPU) what tools/gpu/sim_goldens_check.sh needs on the GPU machine and
# copies it into .gpusim/ (git-ignored): the retargeted //models:sim_wrp bundle, its raw
# retargeted capture, and the C++ replay binary. Send it with the device tool's `carry`.
set -euo pipefail
cd "$(dirname "$0")/../.."
bazel build //models:sim_wrp //runtime:replay
rm -rf .gpusim && mkdir -p .gpusim/retargeted
cp -rL bazel-bin/models/sim_wrp bazel-bin/models/sim_wrp.sha256 .gpusim/
cp -rL bazel-bin/models/sim_wrp.raw .gpusim/retargeted/sim
cp -L bazel-bin/runtime/replay .gpusim/
chmod -R u+w .gpusim
# The sources the bundle was built from, so the GPU run can tell a stale .gpusim/.
sha256sum models/sim.py models/sim_kernels.py > .gpusim/sources.sha256
du -sh .gpusim
