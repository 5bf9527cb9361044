"""Benchmark (not a test): replays per second and host time per launch through
wp.capture_launch from Python, to set beside tools/bench/replay_bench.cc on the same bundle.
Prints one JSON object on its last line.

    python tools/bench/python_replay_bench.py BUNDLE_DIR [--steps N] [--rounds N] [--seconds S]

Rounds and steps shrink for a long replay, as in replay_bench.cc (about S seconds of GPU time
each, batches of 5 launches for a replay over 2 ms, at least 15 rounds and 20 steps).
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import warp as wp


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=401)
    parser.add_argument("--seconds", type=float, default=6.0)
    args = parser.parse_args()
    wp.config.quiet = True
    wp.init()
    graph = wp.capture_load(str(next(args.bundle.glob("*.wrp"))), device="cuda:0")
    for _ in range(20):
        wp.capture_launch(graph)
    wp.synchronize_device("cuda:0")
    t0 = time.perf_counter()
    for _ in range(5):
        wp.capture_launch(graph)
    wp.synchronize_device("cuda:0")
    replay_s = (time.perf_counter() - t0) / 5
    # Rounds of `batch` launches, the GPU drained between rounds (so the queue never fills
    # and blocks), median of the per-round means: as tools/bench/replay_bench.cc does.
    batch = 5 if replay_s > 2e-3 else 20
    args.rounds = max(15, min(args.rounds, int(args.seconds / (batch * replay_s))))
    args.steps = max(20, min(args.steps, int(args.seconds / 2 / replay_s)))
    per_round = []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        for _ in range(batch):
            wp.capture_launch(graph)
        per_round.append((time.perf_counter() - t0) / batch * 1e6)
        wp.synchronize_device("cuda:0")
    t0 = time.perf_counter()
    for _ in range(args.steps):
        wp.capture_launch(graph)
    wp.synchronize_device("cuda:0")
    sps = args.steps / (time.perf_counter() - t0)
    host_us = statistics.median(per_round)
    print(f"Python wp.capture_launch : {sps:10.1f} replays/s, host {host_us:.3f} us/launch")
    print(
        json.dumps(
            {
                "rounds": args.rounds,
                "batch": batch,
                "steps": args.steps,
                "host_us": host_us,
                "replays_per_s": sps,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
