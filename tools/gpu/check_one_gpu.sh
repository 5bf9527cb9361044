#!/usr/bin/env bash
# On a GPU machine: --config=gpu's wrapper (tools/gpu/one_gpu.sh) against the real driver.
# It must find every GPU nvidia-smi lists, hand out one by UUID that CUDA accepts, and make
# a test wait while all GPUs are taken.   bash tools/gpu/check_one_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
wrapper=tools/gpu/one_gpu.sh
status=0
listed=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | wc -l)
found=$(ls /proc/driver/nvidia/gpus/*/information 2>/dev/null | wc -l)
echo "nvidia-smi lists $listed GPUs; /proc/driver/nvidia/gpus has $found"
[ "$listed" = "$found" ] || status=1
given=$(WRP_GPU_TEST=1 "$wrapper" bash -c 'echo "$CUDA_VISIBLE_DEVICES"')
echo "one_gpu.sh gave: $given"
nvidia-smi --query-gpu=uuid --format=csv,noheader | grep -qx "$given" || { echo "!! not a UUID nvidia-smi lists"; status=1; }
count='import ctypes; c = ctypes.CDLL("libcuda.so.1"); n = ctypes.c_int(); c.cuInit(0); c.cuDeviceGetCount(ctypes.byref(n)); print(n.value)'
seen=$(WRP_GPU_TEST=1 "$wrapper" python3 -c "$count")
echo "CUDA devices a wrapped test sees: $seen (of $(python3 -c "$count"))"
[ "$seen" = 1 ] || { echo "!! a wrapped test must see exactly one CUDA device"; status=1; }
# Hold every GPU, then start one more: it must wait until they are released.
for _ in $(seq 1 "$found"); do WRP_GPU_TEST=1 "$wrapper" sleep 3 & done
sleep 1
start=$(date +%s)
WRP_GPU_TEST=1 "$wrapper" true
waited=$(($(date +%s) - start))
wait
echo "with all $found GPUs held, the next test waited ${waited} s (expected about 2)"
[ "$waited" -ge 1 ] || status=1
[ "$status" = 0 ] && echo "one_gpu.sh: OK" || echo "!! one_gpu.sh: FAILED"
exit "$status"
