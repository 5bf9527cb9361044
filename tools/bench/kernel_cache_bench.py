"""Benchmark (not a test): a cold build of six Newton targets against a cold build of one, with
the Warp kernels of Newton and MuJoCo Warp compiled once (//models/newton:kernels, a
wrp_kernel_cache) and shared by every capture. Runs on any machine, from the repository root.

    python3 tools/bench/kernel_cache_bench.py [--out docs/bench/results/kernel_cache.json]

"Cold" deletes the targets' outputs and the kernel cache's (the Bazel server and the pinned venvs
already exist), so every action of those targets runs again. Prints the ratio of the two walls
(the goal of issue 43: at most 1.5) and, from Bazel's profiles, the kernel-cache action and each
capture action.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_bench import actions, bazel, forget_outputs  # noqa: E402

PACKAGE = "models/newton"
CACHE = "kernels"
ONE = ["pendulum_cpu_wrp"]
SIX = ["pendulum_cpu_wrp", "pyramid_cpu_wrp", "cloth_vbd_cpu_wrp", "chain_featherstone_cpu_wrp",
       "chain_mujoco_cpu_wrp", "diffsim_ball_cpu_wrp"]  # fmt: skip


def cold_build(names: list[str], tmp: Path, tag: str) -> dict:
    for name in [CACHE, *names]:
        forget_outputs(PACKAGE, name)
    profile = tmp / f"{tag}.json"
    wall = bazel("build", *[f"//{PACKAGE}:{n}" for n in names], f"--profile={profile}")
    spans = actions(profile)
    return {
        "targets": names,
        "wall_s": round(wall, 1),
        "kernel_cache_s": round(sum(a["dur_s"] for a in spans if "Warp kernels of" in a["name"]), 1),
        "captures_s": {
            a["name"].split(" ")[1]: round(a["dur_s"], 1) for a in spans if a["name"].startswith("Capturing ")
        },
        "action_sum_s": round(sum(a["dur_s"] for a in spans), 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    bazel("build", *[f"//{PACKAGE}:{n}" for n in SIX])  # server, venvs, analysis: warm
    with tempfile.TemporaryDirectory() as tmp_name:
        one = cold_build(ONE, Path(tmp_name), "one")
        six = cold_build(SIX, Path(tmp_name), "six")
    result = {
        "cores": os.cpu_count(),
        "load_average": round(os.getloadavg()[0], 1),
        "one": one,
        "six": six,
        "six_over_one": round(six["wall_s"] / one["wall_s"], 2),
    }
    print(json.dumps(result, indent=1))
    print(
        f"cold build: 1 Newton target {one['wall_s']} s, 6 targets {six['wall_s']} s: ratio {result['six_over_one']}"
    )
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
