#!/usr/bin/env python3
"""Benchmark (not a test): time from process start to a refusal's message, for every refused
program of tests/refusal_programs.py, with fresh kernel caches (each capture has its own, as a
Bazel action does). Issue 25 item 3 asks for at most 2 s. Runs `python -m wrpkg.capture` as
the wrp_artifact action does (the watched child included) and times the first `error:` line of
its output; the median of --rounds runs, rounds interleaved over the programs so that a
machine's load drifts over all alike. That a refusal compiles nothing is a test
(//tests:refusal_before_compile_test), not this.

    PY=$(bazel info output_base)/external/wrp_venv/venv/bin/python3
    $PY tools/bench/refusal_bench.py [--rounds 3] [--only REGEX] [--baseline CHECKOUT]

--baseline also runs another checkout's wrpkg on the same programs, interleaved with this one's
(e.g. `git archive <commit> | tar -x -C /tmp/before`): a before/after on one machine.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from refusal_programs import REFUSALS  # noqa: E402 - after the path


def time_to_message(refusal, repo: Path) -> tuple[float, float, str]:
    """(seconds to the first "error:" line, seconds to exit, that line) of one capture."""
    env = dict(os.environ, **refusal.env)
    env["PYTHONPATH"] = os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    with tempfile.TemporaryDirectory(prefix="wrp-refusal-bench-") as work:
        env["WARP_CACHE_PATH"] = f"{work}/warp-cache"  # the capture sets its own; nothing shared
        # This checkout's program, run by `repo`'s wrpkg (a baseline may predate the program).
        out = Path(work) / "raw"
        cmd = [sys.executable, "-m", "wrpkg.capture", *refusal.capture_args(out, "//bench:refused")]
        start = time.perf_counter()
        proc = subprocess.Popen(
            cmd, env=env, cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        first, line = None, ""
        for text in proc.stderr:
            if first is None and "error:" in text:
                first, line = time.perf_counter() - start, text.strip()
        proc.wait()
        done = time.perf_counter() - start
    if proc.returncode != 1 or first is None:
        sys.exit(f"refusal_bench: {refusal.name} was not refused (exit {proc.returncode})")
    return first, done, line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3, help="runs per program (median)")
    parser.add_argument("--only", default="", help="programs whose name matches this regular expression")
    parser.add_argument(
        "--baseline", type=Path, default=None, help="another checkout to time beside this one"
    )
    args = parser.parse_args(argv)
    repos = [REPO] + ([args.baseline.resolve()] if args.baseline else [])
    chosen = [r for r in REFUSALS if re.search(args.only, r.name)]
    times: dict[tuple[str, Path], list[float]] = {(r.name, repo): [] for r in chosen for repo in repos}
    for _ in range(args.rounds):
        for refusal in chosen:
            for repo in repos:
                times[refusal.name, repo].append(time_to_message(refusal, repo)[0])
    print(f"time from process start to the refusal's message, fresh kernel caches, median of {args.rounds} "
          "(goal <= 2 s)")  # fmt: skip
    width = max(len(r.name) for r in chosen)
    print(
        f"  {'program':<{width}}  "
        + "  ".join(f"{'this' if repo == REPO else str(repo):>10}" for repo in repos)
    )
    for refusal in chosen:
        cells = []
        for repo in repos:
            runs = times[refusal.name, repo]
            cells.append(f"{statistics.median(runs):8.2f} s")
        note = "  (build() compiles)" if refusal.build_compiles else ""
        print(f"  {refusal.name:<{width}}  " + "  ".join(cells) + note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
