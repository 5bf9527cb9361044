#!/usr/bin/env bash
# Every runtime benchmark, in one run on a GPU machine, results as JSON in $OUT (then, on any machine:
# tools/bench/report.sh $OUT draws docs/bench/REPORT.md and its plots). About 4-5 minutes on an H200:
# every load road in 7 fresh processes each, replay benches sized to a few seconds of GPU time each.
#   bazel run -c opt //tools/bench:bench_all               # REPEAT=7 (the least that gives a median of fresh processes)
#   FULL=1 bazel run -c opt //tools/bench:bench_all        # also wrpkg.reader.bundle without the per-device view (1 more minute)
# Its inputs (the bundles, -c opt binaries, Python sources) are the target's runfiles; on a GPU machine
# without Bazel, run it from a copy of them (docs/benchmarks.md). Checks are not run here: the roads'
# loads and replays are //tests:loads_gpu_test and the replay tests (bazel test --config=gpu //...).
set -uo pipefail
r=$0.runfiles/rules_warp
if [ -d "$r" ]; then cd "$r"; else cd "$(dirname "$0")/../.."; fi
source tools/bench/bench_env.sh
out=${OUT:-/tmp/wrp-bench}
repeat=${REPEAT:-7}
full=${FULL:-0}
work=$(mktemp -d)
# Results gather here and reach $OUT as one results.tar: the device tool returns at most 8 files.
res=$work/results
mkdir -p "$out" "$res"
status=0
step() { echo; echo "== $* ($(date -u +%H:%M:%S))"; }
check() { "$@" || { echo "!! FAILED: $*"; status=1; }; }
started=$(date +%s)

step "machine"
"$py" - "$res/machine.json" <<'PY'
import json, os, platform, subprocess, sys
gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,compute_cap,memory.total",
                      "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
info = {"gpu": gpu, "cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
        "kernel": platform.release()}
import warp as wp
info["warp"] = wp.__version__
json.dump(info, open(sys.argv[1], "w"), indent=1)
print(info)
PY

step "capture models/cloth.py on this GPU (Warp's own single-arch .wrp; raw capture returned for recording)"
check "$py" -m wrpkg.capture --script models/cloth.py --device cuda --out-dir "$work/cloth_cuda" --stem cloth \
  --label //models:cloth_wrp
tar -C "$work" -cf "$res/cloth_cuda_capture.tar" cloth_cuda
sha256sum models/cloth.py models/cloth_kernels.py models/cloth_tiles.py > "$res/cloth_cuda_sm90.sources.sha256"
# Warp's source fallback from the same capture: its packaged cubins removed, as on a GPU they do not fit.
cp -r "$work/cloth_cuda" "$work/cloth_source_fallback"
rm -f "$work"/cloth_source_fallback/cloth_modules/*.cubin

# Every way of loading a multi-arch bundle's SASS, for each model (FULL=1: also wrpkg.reader.bundle without the view).
sass_hows=(stock wrpkg cpp cpp-noview cpp-cold-runtime)
[ "$full" = 1 ] && sass_hows+=(wrpkg-noview)
cases=(
  sim:native:stock:models/recorded/sim_cuda_sm90
  sim:ptx:stock:tests/gpu/sim_ptx_only_wrp
  sim:source:stock:tests/gpu/sim_source_only_wrp
  cloth:native:stock:$work/cloth_cuda
  cloth:source:stock:$work/cloth_source_fallback
  cloth:ptx:stock:models/cloth_ptx_only_wrp
)
for how in "${sass_hows[@]}"; do
  cases+=(sim:sass:$how:models/sim_recorded_wrp cloth:sass:$how:models/cloth_wrp)
done
present=()
for case in "${cases[@]}"; do
  if [ -e "${case#*:*:*:}" ]; then present+=("$case"); else echo "!! skipped $case: not there"; status=1; fi
done
cases=("${present[@]}")
step "cold loads, every road, fresh processes, $repeat rounds interleaved"
check "$py" tools/bench/load_bench.py --out "$res/load.json" --repeat "$repeat" --start-bench tools/bench/start_bench \
  "${cases[@]}"

step "wrpkg.reader.bundle's own steps before Warp's call, on this machine's CPU (fresh processes)"
"$py" tools/bench/load_profile.py --repeat "$repeat" models/sim_recorded_wrp models/cloth_wrp | tee "$work/load_profile.txt" || status=1
tail -1 "$work/load_profile.txt" > "$res/load_profile.json"

step "replay throughput and host time per launch (medians of many rounds)"
for model_bundle in sim:models/sim_recorded_wrp cloth:models/cloth_wrp; do
  model=${model_bundle%%:*}
  bundle=${model_bundle#*:}
  "$py" tools/bench/python_replay_bench.py "$bundle" | tee "$work/py_$model.txt" || status=1
  tail -1 "$work/py_$model.txt" > "$res/replay_python_$model.json"
  tools/bench/replay_bench --bundle "$bundle" | tee "$work/cpp_$model.txt" || status=1
  tail -1 "$work/cpp_$model.txt" > "$res/replay_cpp_$model.json"
done

step "C++ verification speed on this machine's CPU (-c opt)"
tools/bench/verify_bench models/cloth_ptx_only_wrp models/cloth_wrp models/sim_recorded_wrp \
  tests/gpu/sim_ptx_only_wrp tests/gpu/sim_source_only_wrp | tee "$res/verify.json" || status=1

# One file to fetch: every result, console log aside.
tar -C "$res" -cf "$out/results.tar" .
echo
echo "bench_all: $(( $(date +%s) - started )) s; results in $out/results.tar:"; tar -tvf "$out/results.tar"
[ "$status" -eq 0 ] && echo "bench_all: all ran" || echo "bench_all: FAILURES above"
exit "$status"
