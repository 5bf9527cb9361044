#!/usr/bin/env bash
# Shows with Bazel's execution log which spawns a remote executor would send to the GPU
# pool: on the runner platform (--extra_execution_platforms, as --config=remote), builds the
# CUDA and CPU bundles and runs CPU and gpu tests, then checks that Pool=gpu is on the CUDA
# capture and the gpu tests' test spawns only, and the runner image on every spawn.
# On a machine without a GPU the capture and gpu tests fail, after they were logged.
#     tools/check_gpu_routing.sh            (a clean output base: about 10 minutes on 2 cores)
set -uo pipefail
cd "$(dirname "$0")/.."
# A clean output base, so every spawn runs (and is logged); the pinned venvs are taken
# from this workspace's output base instead of being downloaded again.
work=$(mktemp -d)
log=$work/exec.json
ext=$(bazel info output_base 2>/dev/null)/external
bazel build @wrp_venv//:versions.json @wrp_nvrtc_13_0_venv//:versions.json >/dev/null 2>&1
trap 'bazel --output_base="$work/ob" shutdown >/dev/null 2>&1; chmod -R u+w "$work"; rm -rf "$work"' EXIT
image=$(sed -nE 's/^RUNNER_IMAGE_ID = "(sha256:[0-9a-f]+)"/docker:\/\/\1/p' toolchains/containers/image.bzl)
gpu_tests=(//models:sim_recorded_wrp_replay_test //tests/gpu:arch_mismatch_test //models:sim_wrp_replay_test)
cpu_tests=(//models:sim_cpu_wrp_replay_test)
bazel --output_base="$work/ob" test --config=gpu --symlink_prefix=/ \
  --override_repository=wrp_venv="$ext/wrp_venv" --override_repository=wrp_nvrtc_13_0_venv="$ext/wrp_nvrtc_13_0_venv" \
  --keep_going --extra_execution_platforms=//platforms:linux_x86_64_runner \
  --execution_log_json_file="$log" --nocache_test_results \
  //models:sim_wrp //models:sim_cpu_wrp "${gpu_tests[@]}" "${cpu_tests[@]}" 2>&1 | grep -E '^(//|INFO: [0-9]+ process)'
args=()
for t in "${gpu_tests[@]}"; do args+=(--gpu-test "$t"); done
python3 tools/check_exec_log.py "$log" --image "$image" "${args[@]}"
