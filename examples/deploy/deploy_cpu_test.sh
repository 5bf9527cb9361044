#!/usr/bin/env bash
# The deployment example runs on the CPU bundle and reports a settled simulation:
# more replays must not change the particle count, and the output names the bundle.
set -uo pipefail
deploy=$1
failed=0
out1=$("$deploy" --device cpu --steps 1 2>&1) || { echo "FAIL: deploy --steps 1: $out1"; failed=1; }
out3=$("$deploy" --device cpu --steps 3 2>&1) || { echo "FAIL: deploy --steps 3: $out3"; failed=1; }
echo "$out1"
echo "$out3"
grep -q "//models:sim_cpu_wrp on cpu: 3 replays, 2048 particles" <<<"$out3" || { echo "FAIL: unexpected output"; failed=1; }
[ "$out1" != "$out3" ] || { echo "FAIL: 3 replays printed the same state as 1"; failed=1; }
bad=$("$deploy" --device cpu --steps 0 2>&1) && { echo "FAIL: --steps 0 accepted"; failed=1; }
grep -q "at least 1" <<<"$bad" || { echo "FAIL: no clear error for --steps 0: $bad"; failed=1; }
[ "$failed" -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit "$failed"
