"""Benchmark (not a test): replays per second through wp.capture_launch from Python,
to set beside tools/bench/replay_bench.cc on the same bundle.

    python tools/bench/python_replay_bench.py BUNDLE_DIR [--steps N]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import warp as wp


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    wp.init()
    graph = wp.capture_load(str(next(args.bundle.glob("*.wrp"))), device="cuda:0")
    for _ in range(20):
        wp.capture_launch(graph)
    wp.synchronize_device("cuda:0")
    # Rounds of `batch` launches, the GPU drained between rounds (so the queue never fills
    # and blocks), median of the per-round means: as tools/bench/replay_bench.cc does.
    rounds, batch = 21, 20
    per_round = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(batch):
            wp.capture_launch(graph)
        per_round.append((time.perf_counter() - t0) / batch * 1e6)
        wp.synchronize_device("cuda:0")
    host_us = statistics.median(per_round)
    t0 = time.perf_counter()
    for _ in range(args.steps):
        wp.capture_launch(graph)
    wp.synchronize_device("cuda:0")
    sps = args.steps / (time.perf_counter() - t0)
    print(f"Python wp.capture_launch : {sps:10.1f} replays/s, host {host_us:.2f} us/launch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
