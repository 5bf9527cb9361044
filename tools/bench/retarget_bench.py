#!/usr/bin/env python3
"""Benchmark (not a test): what a retarget capture (a CUDA bundle's capture made on the CPU,
wrpkg/capture/retarget.py) costs against a plain CPU capture of the same script, side by side in one run,
fresh kernel caches each time. Prints the times and their ratio for models/cloth.py (3,200
launches), and for steps of N small launches (tools/bench/programs/many_launches.py) what one more
launch costs, which must stay flat as N grows (recording is linear in the launches).

    PY=$(bazel info output_base)/external/wrp_venv/venv/bin/python3
    $PY tools/bench/retarget_bench.py [--rounds 3] [--launches 1000,10000,100000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def capture_seconds(script: Path, mode: str, env: dict) -> float:
    """One capture of `script` in a fresh directory and kernel cache: "cpu" or "retarget"."""
    device = ["--device", "cpu"] if mode == "cpu" else ["--device", "cuda", "--mode", "retarget"]
    with tempfile.TemporaryDirectory(prefix="wrp-bench-") as work:
        cmd = [sys.executable, "-m", "wrpkg.capture", "--script", str(script), *device,
               "--out-dir", f"{work}/raw", "--stem", script.stem, "--cache-dir", f"{work}/cache"]  # fmt: skip
        start = time.perf_counter()
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"retarget_bench: {mode} capture of {script} failed:\n{done.stderr[-3000:]}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3, help="interleaved CPU/retarget pairs per script")
    parser.add_argument("--launches", default="1000,10000,100000", help="step sizes of many_launches.py")
    args = parser.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))

    def pair(script: Path, extra_env: dict) -> tuple[float, float]:
        # Interleaved, so that a machine's load drifts over both alike; medians of the rounds.
        cpu, retarget = [], []
        for _ in range(args.rounds):
            cpu.append(capture_seconds(script, "cpu", dict(env, **extra_env)))
            retarget.append(capture_seconds(script, "retarget", dict(env, **extra_env)))
        return statistics.median(cpu), statistics.median(retarget)

    cpu, retarget = pair(REPO / "models" / "cloth.py", {})
    print(f"models/cloth.py (3,200 launches): cpu {cpu:.2f} s, retarget {retarget:.2f} s, "
          f"ratio {retarget / cpu:.2f} (goal <= 1.5)")  # fmt: skip
    many = REPO / "tools" / "bench" / "programs" / "many_launches.py"
    sizes = [int(x) for x in args.launches.split(",")]
    times = {}
    for n in sizes:
        times[n] = pair(many, {"WRP_BENCH_LAUNCHES": str(n)})
        cpu, retarget = times[n]
        print(f"many_launches.py, {n:,} launches: cpu {cpu:.2f} s, retarget {retarget:.2f} s, "
              f"ratio {retarget / cpu:.2f}")  # fmt: skip
    # What one more launch costs (start-up and compiles cancel out), between consecutive sizes: flat as
    # the step grows when recording is linear.
    marginal = []
    for small, large in zip(sizes, sizes[1:], strict=False):
        cpu = (times[large][0] - times[small][0]) / (large - small)
        retarget = (times[large][1] - times[small][1]) / (large - small)
        marginal.append(retarget)
        print(
            f"a launch between {small:,} and {large:,}: cpu {1e6 * cpu:.0f} us, retarget {1e6 * retarget:.0f} us"
        )
    if len(marginal) > 1:
        print(f"retarget's cost a launch, largest steps against smallest: {marginal[-1] / marginal[0]:.2f} "
              "(about 1: linear)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
