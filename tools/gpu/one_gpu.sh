#!/usr/bin/env bash
# --run_under wrapper of --config=gpu: gives a gpu test a GPU of its own, so that tests
# run side by side (--local_test_jobs) never share one. Tests without WRP_GPU_TEST=1
# (set by rules/private/pools.bzl on gpu-tagged tests) run as they are.
#
# A GPU is taken by an exclusive flock on its device node /dev/nvidia<minor>, opened
# read-only: it needs no writable lock directory (tests run sandboxed) and the kernel
# drops the lock when the test exits, however it exits. The test then sees only that GPU
# (CUDA_VISIBLE_DEVICES=<its UUID>; a UUID, because CUDA's device order need not be the
# order of the device nodes).
set -euo pipefail
[ "${WRP_GPU_TEST:-}" = 1 ] || exec "$@"
# Where the driver lists its GPUs and their device nodes (overridden by its test only).
proc=${WRP_NVIDIA_PROC:-/proc/driver/nvidia}
dev=${WRP_NVIDIA_DEV:-/dev}

gpus=()
for info in "$proc"/gpus/*/information; do
  [ -r "$info" ] || continue
  minor=$(sed -n 's/^Device Minor:[[:space:]]*//p' "$info")
  uuid=$(sed -n 's/^GPU UUID:[[:space:]]*//p' "$info")
  [ -n "$minor" ] && [ -n "$uuid" ] && [ -e "$dev/nvidia$minor" ] && gpus+=("$minor $uuid")
done
if [ "${#gpus[@]}" -eq 0 ]; then
  echo "one_gpu.sh: no NVIDIA GPU visible ($proc/gpus); running the test as it is" >&2
  exec "$@"
fi

waited=0
while :; do
  for gpu in "${gpus[@]}"; do
    minor=${gpu%% *}
    exec {lock}<"$dev/nvidia$minor"
    if flock -n "$lock"; then
      export CUDA_VISIBLE_DEVICES=${gpu#* }
      # In the test's log: which GPU the test had, when several ran side by side.
      echo "one_gpu.sh: ${TEST_TARGET:-this test} runs on /dev/nvidia$minor, CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES" >&2
      # The lock's descriptor stays open in the test process: the GPU is the test's until it exits.
      exec "$@"
    fi
    exec {lock}<&-
  done
  if [ "$waited" = 0 ]; then
    echo "one_gpu.sh: all ${#gpus[@]} GPUs are taken by other tests; waiting" >&2
    waited=1
  fi
  sleep 0.2
done
