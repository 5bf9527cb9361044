"""Benchmark (not a test): replays per second through wp.capture_launch from Python,
to set beside tools/bench/replay_bench.cc on the same bundle.

    python tools/bench/python_replay_bench.py BUNDLE_DIR [--steps N]
"""

import argparse
import sys
import time
from pathlib import Path

import warp as wp


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args()
    wp.init()
    graph = wp.capture_load(str(next(args.bundle.glob("*.wrp"))), device="cuda:0")
    for _ in range(20):
        wp.capture_launch(graph)
    wp.synchronize_device("cuda:0")
    n = 200
    t0 = time.perf_counter()
    for _ in range(n):
        wp.capture_launch(graph)
    host_us = (time.perf_counter() - t0) / n * 1e6
    wp.synchronize_device("cuda:0")
    t0 = time.perf_counter()
    for _ in range(args.steps):
        wp.capture_launch(graph)
    wp.synchronize_device("cuda:0")
    sps = args.steps / (time.perf_counter() - t0)
    print(f"Python wp.capture_launch : {sps:10.1f} replays/s, host {host_us:.2f} us/launch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
