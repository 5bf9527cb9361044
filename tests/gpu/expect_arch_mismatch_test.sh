#!/usr/bin/env bash
# A bundle with no code for this GPU (no matching SASS, no PTX, no source) must fail to
# load with exit 2 and a message naming what the bundle holds, the device, and the fix.
set -uo pipefail
replay=$1
bundle=$2
out=$("$replay" --bundle "$bundle" 2>&1)
rc=$?
echo "$out"
failed=0
[ "$rc" -eq 2 ] || { echo "FAIL: exit $rc, expected 2"; failed=1; }
for want in "//tests/gpu:sim_no_fit_wrp" "sm_75" "archs"; do
  grep -qF -- "$want" <<<"$out" || { echo "FAIL: message lacks '$want'"; failed=1; }
done
[ "$failed" -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit "$failed"
