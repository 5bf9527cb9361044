#!/usr/bin/env bash
# tools/gpu/one_gpu.sh against a described machine with two GPUs (driver listing and
# device nodes under TEST_TMPDIR): two gpu tests at once get different GPUs, a third waits
# until one of them exits, and a test without WRP_GPU_TEST keeps its environment.
set -uo pipefail
wrapper=$1
fake=$TEST_TMPDIR/machine
mkdir -p "$fake/dev"
for gpu in "0 GPU-aaaaaaaa-0000-0000-0000-000000000000" "1 GPU-bbbbbbbb-1111-1111-1111-111111111111"; do
  minor=${gpu%% *}
  mkdir -p "$fake/proc/gpus/0000:0$minor:00.0"
  printf 'Model: \t\t NVIDIA H200\nGPU UUID: \t %s\nDevice Minor: \t %s\n' "${gpu#* }" "$minor" \
    >"$fake/proc/gpus/0000:0$minor:00.0/information"
  : >"$fake/dev/nvidia$minor"
done
export WRP_NVIDIA_PROC=$fake/proc WRP_NVIDIA_DEV=$fake/dev
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
# Each "test" writes the GPU it was given and when it started, holds it for a while.
run() { # name seconds
  WRP_GPU_TEST=1 "$wrapper" bash -c 'echo "$CUDA_VISIBLE_DEVICES $(date +%s.%N)" >"$0"; sleep "$1"' \
    "$TEST_TMPDIR/$1" "$2" 2>>"$TEST_TMPDIR/stderr"
}
start=$(date +%s.%N)
run a 2 &
run b 2 &
sleep 0.5
run c 0
wait
a=$(cut -d' ' -f1 "$TEST_TMPDIR/a")
b=$(cut -d' ' -f1 "$TEST_TMPDIR/b")
c=$(cut -d' ' -f1 "$TEST_TMPDIR/c")
check "two gpu tests at once get two different GPUs" "$(printf '%s\n' "$a" "$b" | sort -u | wc -l)" 2
check "each is told its GPU by UUID" "$(printf '%s\n' "$a" "$b" | grep -c '^GPU-')" 2
waited=$(awk -v s="$start" '{print ($2 - s >= 1.5) ? "yes" : "no"}' "$TEST_TMPDIR/c")
check "a third waits until a GPU is free" "$waited" yes
check "and says so" "$(grep -c 'all 2 GPUs are taken' "$TEST_TMPDIR/stderr")" 1
check "a test that needs no GPU keeps its CUDA_VISIBLE_DEVICES" \
  "$(CUDA_VISIBLE_DEVICES=keep "$wrapper" bash -c 'echo $CUDA_VISIBLE_DEVICES')" keep
rm -rf "$fake/proc/gpus"
check "without GPUs a gpu test runs as it is" "$(WRP_GPU_TEST=1 "$wrapper" echo ran 2>/dev/null)" ran
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
