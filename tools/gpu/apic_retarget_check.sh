#!/usr/bin/env bash
# GPU machine (no Bazel): does the retarget mode give the bytes a real CUDA capture gives?
#
#   cd <copy of the repository> && OUT=/some/dir bash tools/gpu/apic_retarget_check.sh
#
# Needs python3 with warp (and numpy) importable, e.g. PYTHONPATH=/tmp/wrp-site; nothing else.
# 1. Warp's own APIC tests (warp/tests/test_apic*.py) through tools/apic_corpus.py: their
#    cuda:0 variants captured natively (`native`), their CPU variants retargeted to sm_90 with
#    the GPU hidden (`retarget`), both at once; then every program both saved is compared in
#    canonical form (.wrp, .cu, .cubin bytes).
# 2. models/sim.py and models/cloth.py: retargeted with the GPU hidden, then
#    tools/gpu/retarget_check.py captures each natively, compares the two byte for byte and
#    replays the retargeted .wrp on the GPU against both goldens.
# Writes to $OUT: apic_retarget.json (one row per program), apic_native_corpus.json and
# apic_retarget_corpus.json (per test: unittest outcome, programs, refusals), models_retarget.json,
# differing_programs.tar (both captures of every program that differs), logs/*.log.
# Prints the comparison tables; exits 1 when any compared program or model differs.
# Extra arguments are passed to both corpus runs (e.g. -k test_apic_mesh for a subset).
set -uo pipefail
source "$(dirname "$0")/corpus_env.sh" apic-retarget

# The four runs are independent processes: run them side by side.
python3 tools/apic_corpus.py native --out "$work/native" "$@" >"$out/logs/native.log" 2>&1 &
native_pid=$!
CUDA_VISIBLE_DEVICES= python3 tools/apic_corpus.py retarget --out "$work/retarget" "$@" >"$out/logs/retarget.log" 2>&1 &
retarget_pid=$!
model_pids=()
for model in sim cloth; do
  CUDA_VISIBLE_DEVICES= python3 -m wrpkg.capture --script "models/$model.py" --device cuda --mode retarget \
    --out-dir "$work/models/$model" --stem "$model" --label "//models:${model}_wrp" >"$out/logs/retarget_$model.log" 2>&1 &
  model_pids+=($!)
done
status=0
wait "$native_pid" || { echo "native corpus run failed: tail of logs/native.log:"; tail -20 "$out/logs/native.log"; status=1; }
wait "$retarget_pid" || { echo "retarget corpus run failed: tail of logs/retarget.log:"; tail -20 "$out/logs/retarget.log"; status=1; }
for pid in "${model_pids[@]}"; do wait "$pid" || status=1; done
echo "corpus runs and model retargets: $(($(date +%s) - start)) s"
tail -1 "$out/logs/native.log"
tail -1 "$out/logs/retarget.log"
cp "$work/native/corpus.json" "$out/apic_native_corpus.json" 2>/dev/null
cp "$work/retarget/corpus.json" "$out/apic_retarget_corpus.json" 2>/dev/null

echo
echo "== Warp's APIC test programs: retargeted (CPU) vs native (H200), canonical bytes"
python3 tools/apic_corpus.py compare "$work/retarget" "$work/native" --report "$out/apic_retarget.json" || status=1
python3 - "$out/apic_retarget.json" "$work" "$out/differing_programs.tar" <<'PY'
import json, sys, tarfile
rows = json.load(open(sys.argv[1]))
differ = [r["program"] for r in rows if r.get("byte_identical") is False]
with tarfile.open(sys.argv[3], "w") as tar:
    for program in differ:
        for side in ("retarget", "native"):
            tar.add(f"{sys.argv[2]}/{side}/{program}", arcname=f"{side}/{program}")
print(f"{len(differ)} differing programs packed into {sys.argv[3]}")
PY

echo
echo "== models: retargeted (CPU) vs native (H200)"
for model in sim cloth; do
  [ -f "$work/models/$model/$model.wrp" ] || { echo "$model: retarget failed:"; tail -20 "$out/logs/retarget_$model.log"; }
done
python3 tools/gpu/retarget_check.py --retargeted "$work/models" --report "$out/models_retarget.json" \
  --work "$work/native_models" models/sim.py models/cloth.py || status=1
echo "total: $(($(date +%s) - start)) s; report in $out"
rm -rf "$work"
exit $status
