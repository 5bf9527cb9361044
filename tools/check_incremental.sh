#!/usr/bin/env bash
# Shows, with Bazel's own records, what adding one SM to `archs` re-runs:
#  1. the live CUDA capture action of //models:sim_wrp has the same action key whatever
#     --//rules:archs says (so Bazel's cache keeps it), from `bazel aquery`;
#  2. on //models:sim_recorded_wrp (the same pipeline from the recorded H200 capture),
#     the spawns Bazel executes after adding sm_86, from --execution_log_json_file:
#     one WrpCompile and one WrpBundle.
set -euo pipefail
cd "$(dirname "$0")/.."
key() { bazel aquery "mnemonic(\"WrpCaptureCuda\", //models:sim_wrp)" "--//rules:archs=$1" 2>/dev/null | grep ActionKey; }
echo "capture action key, archs sm_80,sm_90:       $(key sm_80,sm_90)"
echo "capture action key, archs sm_80,sm_86,sm_90: $(key sm_80,sm_86,sm_90)"
log=$(mktemp)
count() {
  python3 - "$log" <<'PY'
import collections, json, sys
text = open(sys.argv[1]).read()
dec, i, n = json.JSONDecoder(), 0, collections.Counter()
while i < len(text):
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text):
        break
    obj, i = dec.raw_decode(text, i)
    n[obj.get("mnemonic", "?")] += 1
print(", ".join(f"{k} x{v}" for k, v in sorted(n.items())) or "nothing")
PY
}
bazel build //models:sim_recorded_wrp --//rules:archs=sm_80,sm_90 --execution_log_json_file="$log" >/dev/null 2>&1
echo "build with sm_80, sm_90 (+ PTX), executed:  $(count)"
# Forget any earlier sm_86 output, so its compile cannot come from an older build.
chmod -R u+w bazel-bin/models/sim_recorded_wrp.sm_86 2>/dev/null || true
rm -rf bazel-bin/models/sim_recorded_wrp.sm_86
bazel build //models:sim_recorded_wrp --//rules:archs=sm_80,sm_86,sm_90 --execution_log_json_file="$log" >/dev/null 2>&1
echo "after adding sm_86, executed:              $(count)"
rm -f "$log"

# 3. The per-SM compiles run in parallel: the most WrpCompile spawns in flight at once,
#    from Bazel's JSON profile of a build that compiles every default SM afresh.
chmod -R u+w bazel-bin/models/sim_recorded_wrp.* 2>/dev/null || true
rm -rf bazel-bin/models/sim_recorded_wrp.sm_* bazel-bin/models/sim_recorded_wrp.compute_*
profile=$(mktemp)
bazel build //models:sim_recorded_wrp --profile="$profile" >/dev/null 2>&1
python3 - "$profile" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))
events = events["traceEvents"] if isinstance(events, dict) else events
spans = [(e["ts"], e["ts"] + e.get("dur", 0)) for e in events
         if e.get("ph") == "X" and e.get("cat") == "action processing"
         and "Compiling //models:sim_recorded_wrp" in str(e.get("name", ""))]
edges = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
live = peak = 0
for _, d in edges:
    live += d
    peak = max(peak, live)
print(f"default archs: {len(spans)} compile actions, at most {peak} running at once (--jobs defaults to the core count)")
PY
rm -f "$profile"
