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
    # tests/remote runs its cluster's workers in the runner image of this host's release,
    # with the tools tests call (a remote `bazel test //...` runs them there too).
    release=$(bash tools/host_release.sh release)
    image=/var/tmp/rules_warp-image-$release
    if [ ! -f "$image/image.digest" ]; then
      echo "dev.sh: building the runner image for tests/remote into $image" >&2
      bash toolchains/containers/build_image.sh --no-docker --no-xz --test-tools --release "$release" "$image" >/dev/null
    fi
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
