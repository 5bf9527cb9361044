#!/usr/bin/env bash
# The two commands of the README. Each does all set-up first (idempotent), then:
#   tools/dev.sh build   the main job: bundles the example model
#   tools/dev.sh test    every test that runs on this machine (bazel test //...)
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
has_gpu() { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q GPU; }
case "${1:-}" in
  build)
    if has_gpu; then
      exec bazel build --config=gpu //models:sim_wrp //models:sim_cpu_wrp
    fi
    # No GPU: //models:sim_wrp's CPU capture is retargeted to CUDA (capture_mode "auto").
    exec bazel build //models:sim_wrp //models:sim_cpu_wrp
    ;;
  test)
    if has_gpu; then
      exec bazel test --config=gpu //...
    fi
    exec bazel test //...
    ;;
  *)
    echo "usage: tools/dev.sh build|test" >&2
    exit 2
    ;;
esac
