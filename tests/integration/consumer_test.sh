#!/usr/bin/env bash
# Builds and tests tests/integration/consumer, a separate workspace that uses @rules_warp
# through local_repository, with a nested Bazel: a CPU wrp_artifact, its replay tests, a
# cc_binary with the bundle as a dep, and the analysis-time check of recorded_capture.
#   $1, $2: versions.json of this build's two venvs. The consumer names its venvs
#   differently; they are pointed at these (--override_repository) instead of being
#   pip-installed again, which keeps this test to a few minutes.
set -euo pipefail
here=$(dirname "$(readlink -f "$0")")
root=$(cd "$here/../.." && pwd)
venv=$(dirname "$(readlink -f "$1")")
ptx_venv=$(dirname "$(readlink -f "$2")")
tmp=${TEST_TMPDIR:?run me with bazel test}
work="$tmp/consumer"
cp -r "$here/consumer" "$work"
export HOME="$tmp/home"
mkdir -p "$HOME"
startup=(--output_user_root="$tmp/bazel_root" --host_jvm_args=-Xmx1g --max_idle_secs=60)
flags=(
    --symlink_prefix=/
    --override_repository=rules_warp="$root"
    --override_repository=rules_cc="$root/third_party/rules_cc"
    --override_repository=rules_java="$root/third_party/rules_java"
    --override_repository=remote_coverage_tools="$root/third_party/remote_coverage_tools"
    --override_repository=consumer_venv="$venv"
    --override_repository=consumer_ptx_venv="$ptx_venv"
)
nested() { (cd "$work" && bazel "${startup[@]}" "$@"); }
trap 'nested shutdown >/dev/null 2>&1 || true' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
log="$tmp/log"
no_driver_warning() {
    ! grep -q "Could not find or load the NVIDIA CUDA driver" "$@" || fail "CUDA-driver warning in $*"
}

echo "--- build and test the consumer's targets"
start=$SECONDS
nested test "${flags[@]}" //:all >"$log" 2>&1 || { cat "$log"; fail "bazel test //:all in the consumer"; }
grep -E "^//:scale_wrp(_embedded)?_replay_test +PASSED" "$log" | tee /dev/stderr | wc -l | grep -qx 2 ||
    { cat "$log"; fail "the two replay tests did not both pass"; }
no_driver_warning "$log"
testlogs=$(nested info "${flags[@]}" bazel-testlogs 2>/dev/null)
grep -q "PASS: 1/1 outputs match golden (//:scale_wrp, cpu; goldens made on cpu)" "$testlogs/scale_wrp_replay_test/test.log" ||
    fail "replay test log: $(cat "$testlogs/scale_wrp_replay_test/test.log")"
no_driver_warning "$testlogs/scale_wrp_replay_test/test.log"
echo "consumer build + tests: $((SECONDS - start)) s"

echo "--- run the cc_binary that has the bundle as a dep"
out=$(nested run "${flags[@]}" //:app 2>"$log") || { cat "$log"; fail "bazel run //:app"; }
echo "$out"
[ "$out" = "//:scale_wrp: y[10] = 30" ] || fail "app printed '$out'"

echo "--- a recorded_capture whose stem is wrong fails at analysis, with the fix"
bin=$(nested info "${flags[@]}" bazel-bin 2>/dev/null)
mkdir -p "$work/recorded"
cp -r "$bin/scale_wrp.raw" "$work/recorded/scale"
chmod -R u+w "$work/recorded"
cat >>"$work/BUILD.bazel" <<'END'

filegroup(
    name = "recorded_scale",
    srcs = glob(["recorded/scale/**"]),
)
END
sed -i 's#recorded_capture = ":scale_wrp_raw"#recorded_capture = ":recorded_scale"#' "$work/BUILD.bazel"
if nested build "${flags[@]}" //:wrong_stem_wrp >"$log" 2>&1; then
    fail "//:wrong_stem_wrp built"
fi
grep -q 'recorded_capture //:recorded_scale has no scal.wrp (stem = "scal"); its .wrp files: scale.wrp' "$log" ||
    { cat "$log"; fail "no analysis-time message naming the recorded files"; }
grep -q 'Fix: set stem to the recorded file.s name without .wrp (stem = "scale")' "$log" || { cat "$log"; fail "no fix"; }
grep -q "Analyzing\|ERROR: Analysis of target '//:wrong_stem_wrp' failed" "$log" || { cat "$log"; fail "not at analysis"; }
echo "PASS: consumer workspace ($((SECONDS - start)) s)"
