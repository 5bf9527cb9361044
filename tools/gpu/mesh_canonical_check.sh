#!/usr/bin/env bash
# GPU machine (no Bazel): do Warp's APIC mesh programs have one canonical form, natively
# captured on CUDA or retargeted from the CPU?
#
#   cd <copy of the repository> && OUT=/some/dir bash tools/gpu/mesh_canonical_check.sh
#
# Needs python3 with warp (and numpy) importable, e.g. PYTHONPATH=/tmp/wrp-site, and the
# wheel's warp/tests and warp-clang.so (the CPU side compiles its kernels); nothing else.
# Runs the mesh programs of Warp's own APIC tests (warp/tests/test_apic_mesh.py, through
# tools/apic_corpus.py) three times, side by side, in fresh processes: natively on cuda:0
# twice (`native_a`, `native_b`) and retargeted to sm_90 from their CPU variants with the GPU
# hidden (`retarget`). Then compares, in canonical form (.wrp, .cu and .cubin bytes):
#   retarget vs native_a   the content hash does not depend on the capture mode;
#   native_a vs native_b   nor on the process (each row also says whether the raw .wrp
#                          files were already equal, i.e. whether canonical form had work to do).
# Writes to $OUT: mesh_retarget_vs_native.json, mesh_native_vs_native.json (one row per
# program), mesh_raw_equal.json, differing_programs.tar (every side of every program that
# differs), logs/*.log. Prints the tables; exits 1 when a compared program differs.
# Extra arguments are passed to the three corpus runs (default: -k test_apic_mesh).
set -uo pipefail
[ $# -gt 0 ] || set -- -k test_apic_mesh
source "$(dirname "$0")/corpus_env.sh" mesh-canonical

pids=()
for run in native_a native_b; do
  python3 tools/apic_corpus.py native --out "$work/$run" "$@" >"$out/logs/$run.log" 2>&1 &
  pids+=($!)
done
CUDA_VISIBLE_DEVICES= python3 tools/apic_corpus.py retarget --out "$work/retarget" "$@" >"$out/logs/retarget.log" 2>&1 &
pids+=($!)
status=0
for i in "${!pids[@]}"; do
  run=$(echo native_a native_b retarget | cut -d' ' -f$((i + 1)))
  wait "${pids[$i]}" || { echo "$run corpus run failed: tail of logs/$run.log:"; tail -20 "$out/logs/$run.log"; status=1; }
  tail -1 "$out/logs/$run.log"
done
echo "corpus runs: $(($(date +%s) - start)) s"

echo
echo "== retargeted (CPU) vs native (GPU), canonical bytes"
python3 tools/apic_corpus.py compare "$work/retarget" "$work/native_a" --report "$out/mesh_retarget_vs_native.json" || status=1
echo
echo "== native vs native (two processes), canonical bytes"
python3 tools/apic_corpus.py compare "$work/native_a" "$work/native_b" --report "$out/mesh_native_vs_native.json" || status=1

echo
python3 - "$work" "$out" <<'PY'
import json, sys, tarfile
from pathlib import Path
work, out = Path(sys.argv[1]), Path(sys.argv[2])
raw = {}
for report, (a, b) in (("mesh_retarget_vs_native.json", ("retarget", "native_a")),
                       ("mesh_native_vs_native.json", ("native_a", "native_b"))):
    rows = json.loads((out / report).read_text())
    for row in rows:
        if "byte_identical" not in row:
            continue
        same = (work / a / row["program"] / "prog.wrp").read_bytes() == (work / b / row["program"] / "prog.wrp").read_bytes()
        raw.setdefault(row["program"], {})[f"{a}_vs_{b}"] = {"raw_equal": same, "canonical_equal": row["byte_identical"]}
(out / "mesh_raw_equal.json").write_text(json.dumps(raw, indent=1, sort_keys=True) + "\n")
print(f"{'program':62s} {'retarget/native raw, canonical':32s} native/native raw, canonical")
for program, pairs in sorted(raw.items()):
    cells = [pairs.get(k) for k in ("retarget_vs_native_a", "native_a_vs_native_b")]
    text = ["-" if c is None else f"{'same' if c['raw_equal'] else 'differ'}, {'same' if c['canonical_equal'] else 'DIFFER'}" for c in cells]
    print(f"{program:62s} {text[0]:32s} {text[1]}")
differ = sorted(p for p, pairs in raw.items() if not all(c["canonical_equal"] for c in pairs.values()))
with tarfile.open(out / "differing_programs.tar", "w") as tar:
    for program in differ:
        for side in ("retarget", "native_a", "native_b"):
            if (work / side / program).is_dir():
                tar.add(work / side / program, arcname=f"{side}/{program}")
print(f"{len(differ)} programs differ in canonical form; packed into {out / 'differing_programs.tar'}")
PY
echo "total: $(($(date +%s) - start)) s; report in $out"
rm -rf "$work"
exit $status
