#!/usr/bin/env bash
# Does a C++ load's first replay depend on what ran just before it? Cloth's graph instantiation on an H200 is
# bimodal (about 20 or 29 ms), and start_bench drew the slow mode more often than Python in load_bench, where
# it starts within ~0.1 s of a Python process's exit, while Python's own 1.5 s Warp init outlasts the previous
# process's GPU teardown. Rounds interleave: start_bench right after another start_bench, right after a
# Python wrpkg.reader.bundle process, and after that with a pause; and start_bench with glibc's malloc told to keep
# freed memory (a fresh C++ process has small heap and a 128 KiB mmap threshold, so large blocks the graph's
# build frees are unmapped and faulted in again; a Python process has grown both by then). Prints each
# kind's instantiate times and medians. And start_bench --spin-ms 1000: its core kept busy for a second
# before the load, as a Python program's imports and Warp init keep it (a young process's core may not have
# sped up yet). CPP_ONLY=1 leaves out the kinds that need Python processes.
# Inputs as bench_all.sh's (bench_env.sh).
#   bazel run -c opt //tools/bench:instantiate_probe -- [ROUNDS] [PAUSE_S]
set -euo pipefail
r=$0.runfiles/rules_warp
if [ -d "$r" ]; then cd "$r"; else cd "$(dirname "$0")/../.."; fi
source tools/bench/bench_env.sh
"$py" - "${1:-9}" "${2:-1.0}" "${CPP_ONLY:-0}" <<'PY'
import json, os, statistics, subprocess, sys, time
rounds, pause, cpp_only = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3] == "1"
tunables = "glibc.malloc.mmap_threshold=67108864:glibc.malloc.trim_threshold=268435456:glibc.malloc.top_pad=67108864"
bundle = "models/cloth_wrp"
python_load = ("import warp as wp, wrpkg.reader.bundle; wp.config.quiet = True; wp.init(); "
               f"g, _ = wrpkg.reader.bundle.load('{bundle}', 'cuda:0'); wp.capture_launch(g); wp.synchronize()")
def cpp(env=None, flags=()):
    out = subprocess.run(["tools/bench/start_bench", "--bundle", bundle, *flags], check=True, capture_output=True,
                         text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])["instantiate_ms"]
kinds = {"after C++": [], "C++, malloc tunables": [], "C++, core busy 1 s first": [], "right after Python": [], f"after Python + {pause} s": []}
for _ in range(rounds):
    cpp()
    kinds["after C++"].append(cpp())
    kinds["C++, malloc tunables"].append(cpp({**os.environ, "GLIBC_TUNABLES": tunables}))
    kinds["C++, core busy 1 s first"].append(cpp(flags=("--spin-ms", "1000")))
    if cpp_only:
        continue
    subprocess.run([sys.executable, "-c", python_load], check=True)
    kinds["right after Python"].append(cpp())
    subprocess.run([sys.executable, "-c", python_load], check=True)
    time.sleep(pause)
    kinds[f"after Python + {pause} s"].append(cpp())
for kind, times in kinds.items():
    if times:
        print(f"{kind:<22} median {statistics.median(times):6.2f} ms  {[round(t, 1) for t in times]}")
PY
