#!/usr/bin/env bash
# On a GPU machine (tagged gpu, exclusive: no other test holds a GPU meanwhile): tools/gpu/one_gpu.sh
# against the real driver. It finds every GPU the driver lists, hands out one by a UUID that CUDA
# accepts (a wrapped test sees exactly one CUDA device), and makes a test wait while all GPUs are
# taken. This test runs without WRP_GPU_TEST: the wrapper of --config=gpu leaves it all the GPUs.
set -uo pipefail
wrapper=$1
failed=0
passed=0
check() {
  if [ "$2" = "$3" ]; then
    echo "PASS: $1"
    passed=$((passed + 1))
  else
    echo "FAIL: $1: got '$2', expected '$3'"
    failed=$((failed + 1))
  fi
}
# CUDA's device count through the driver API (libcuda.so.1), as a wrapped test's CUDA sees it.
count='import ctypes; c = ctypes.CDLL("libcuda.so.1"); n = ctypes.c_int(); c.cuInit(0); c.cuDeviceGetCount(ctypes.byref(n)); print(n.value)'
unset CUDA_VISIBLE_DEVICES
uuids=$(sed -n 's/^GPU UUID:[[:space:]]*//p' /proc/driver/nvidia/gpus/*/information 2>/dev/null | sort)
found=$(echo "$uuids" | grep -c . || true)
echo "the driver lists $found GPUs"
[ "$found" -gt 0 ] || { echo "FAIL: no GPU in /proc/driver/nvidia/gpus (not a GPU machine)"; exit 1; }
check "CUDA sees every GPU the driver lists" "$(python3 -c "$count")" "$found"

given=$(WRP_GPU_TEST=1 "$wrapper" bash -c 'echo "$CUDA_VISIBLE_DEVICES"' 2>/dev/null)
check "one_gpu.sh hands out a UUID the driver lists" "$(echo "$uuids" | grep -cxF -- "$given")" 1
check "a wrapped test sees exactly one CUDA device" "$(WRP_GPU_TEST=1 "$wrapper" python3 -c "$count" 2>/dev/null)" 1

# Hold every GPU, then start one more: it must wait until they are released.
for _ in $(seq 1 "$found"); do WRP_GPU_TEST=1 "$wrapper" sleep 3 2>/dev/null & done
sleep 1
start=$(date +%s)
WRP_GPU_TEST=1 "$wrapper" true 2>/dev/null
waited=$(($(date +%s) - start))
wait
echo "with all $found GPUs held, the next test waited ${waited} s (expected about 2)"
check "a test waits while every GPU is taken" "$([ "$waited" -ge 1 ] && echo waited || echo "did not wait")" waited
echo "$passed passed, $failed failed"
exit "$failed"
