# Sourced by the GPU benchmarks (bench_all.sh, load_rounds.sh, start_phases.sh, instantiate_probe.sh)
# once they are in the root of their inputs: the runfiles of `bazel run -c opt //tools/bench:<name>`
# (bundles and -c opt binaries at their package paths, the pinned venv beside), or a copy of them on
# a GPU machine without Bazel (docs/benchmarks.md). Sets $py: the venv's Python, else python3 with
# warp from /tmp/wrp-site (../shared/gpu); this root first on PYTHONPATH (wrpkg, tools/bench).
if [ -x ../wrp_venv/venv/bin/python3 ]; then
  py=$PWD/../wrp_venv/venv/bin/python3
  export PYTHONPATH=$PWD
else
  py=python3
  export PYTHONPATH=/tmp/wrp-site:$PWD
fi
export PYTHONUNBUFFERED=1
# The C++ binaries find warp.so through their runpath under Bazel; in a copy, in Warp's wheel.
export LD_LIBRARY_PATH=/tmp/wrp-site/warp/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for input in models/sim_recorded_wrp models/cloth_wrp tools/bench/start_bench; do
  [ -e "$input" ] || {
    echo "$(basename "$0"): no $input here ($PWD): run it as bazel run -c opt //tools/bench:$(basename "$0" .sh)" >&2
    exit 1
  }
done
