#!/usr/bin/env bash
# Where a cold C++ load's time goes, on a GPU machine: tools/bench:start_bench (-c opt) in fresh processes:
# as a program loads (the CUDA runtime started in the context phase), with the runtime cold (--cold-runtime), and with every file verified at open (--verify-all, what
# opening cost before loads verified only what they use); medians of each of wrp::Graph::Load's steps
# (LoadOptions::phases: "device view" reads the .wrp and one image per module, "warp load" is Warp's call,
# "hash wait" the rest of the .wrp's hash after it). Inputs as bench_all.sh's (bench_env.sh).
#   bazel run -c opt //tools/bench:start_phases -- [ROUNDS]
set -euo pipefail
r=$0.runfiles/rules_warp
if [ -d "$r" ]; then cd "$r"; else cd "$(dirname "$0")/../.."; fi
source tools/bench/bench_env.sh
"$py" - "${1:-7}" <<'PY'
import json, statistics, subprocess, sys
rounds = int(sys.argv[1])
for bundle in ("models/sim_recorded_wrp", "models/cloth_wrp"):
    for flags in ([], ["--cold-runtime"], ["--verify-all"]):
        runs = []
        for _ in range(rounds):
            out = subprocess.run(["tools/bench/start_bench", "--bundle", bundle, *flags], check=True,
                                 capture_output=True, text=True).stdout
            runs.append(json.loads(out.strip().splitlines()[-1]))
        med = lambda key: statistics.median(r[key] for r in runs)
        phases = {k: round(statistics.median(r["load_phases"][k] for r in runs), 3) for k in runs[0]["load_phases"]}
        print(json.dumps({"bundle": bundle, "flags": flags, "context_ms": med("context_ms"),
                          "open_verify_ms": med("open_verify_ms"), "load_ms": med("load_ms"),
                          "first_replay_ms": med("first_replay_ms"), "instantiate_ms": med("instantiate_ms"),
                          "load_phases": phases}))
PY
