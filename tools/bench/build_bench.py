"""Benchmark (not a test): the build side, from Bazel's own JSON profiles. Runs on any machine.

    python3 tools/bench/build_bench.py --out docs/bench/results/build.json [--target //models:sim_recorded_wrp]

For one recorded-capture target (all GPU-free actions) it measures:
  - cold build: every action of the target re-run (its outputs deleted; the Bazel server and the
    pinned venvs already exist), wall time and the sum of action times;
  - per-SM compile time: each WrpCompile action's duration (SASS per SM, and the PTX);
  - compile parallelism: the most compile actions in flight at once, and the speed-up
    (sum of compile times / wall time of the compile phase);
  - adding one SM: wall time and the actions that ran when sm_103 joins the default archs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from wrpkg.archs import DEFAULT_SASS_ARCHS  # noqa: E402

DEFAULT_ARCHS = ",".join(DEFAULT_SASS_ARCHS)
ADDED_ARCH = "sm_103"  # not among the defaults


def bazel(*args: str) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        ["bazel", *args], cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return time.perf_counter() - t0


def forget_outputs(package: str, name: str) -> None:
    """Deletes the target's outputs so that its actions run again (Bazel re-runs an action whose
    outputs are missing, whatever its action cache says)."""
    base = ROOT / "bazel-bin" / package
    for path in base.glob(f"{name}*"):
        if path.is_dir():
            for root, dirs, files in os.walk(path):
                for entry in dirs + files:
                    os.chmod(os.path.join(root, entry), 0o755)
            shutil.rmtree(path)
        else:
            path.chmod(0o644)
            path.unlink()


def actions(profile: Path) -> list[dict]:
    events = json.loads(profile.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    out = []
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "action processing":
            out.append(
                {"name": str(e.get("name", "")), "start_s": e["ts"] / 1e6, "dur_s": e.get("dur", 0) / 1e6}
            )
    return out


def peak_in_flight(spans: list[dict]) -> int:
    edges = sorted([(s["start_s"], 1) for s in spans] + [(s["start_s"] + s["dur_s"], -1) for s in spans])
    live = peak = 0
    for _, delta in edges:
        live += delta
        peak = max(peak, live)
    return peak


def profiled_build(target: str, archs: str, tmp: Path, tag: str) -> tuple[float, list[dict]]:
    profile = tmp / f"{tag}.json"
    wall = bazel("build", target, f"--//rules:archs={archs}", f"--profile={profile}")
    return wall, actions(profile)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", default="//models:sim_recorded_wrp")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    package, name = args.target[2:].split(":")
    compile_re = re.compile(r"Compiling //\S+ for (\S+)")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        bazel("build", args.target, f"--//rules:archs={DEFAULT_ARCHS}")  # server, venvs, analysis: warm
        forget_outputs(package, name)
        cold_wall, cold = profiled_build(args.target, DEFAULT_ARCHS, tmp, "cold")
        compiles = [a for a in cold if compile_re.search(a["name"])]
        per_arch = {compile_re.search(a["name"]).group(1): round(a["dur_s"], 3) for a in compiles}
        phase = (
            max(a["start_s"] + a["dur_s"] for a in compiles) - min(a["start_s"] for a in compiles)
            if compiles
            else 0.0
        )
        add_wall, added = profiled_build(args.target, f"{DEFAULT_ARCHS},{ADDED_ARCH}", tmp, "add_one_sm")
    result = {
        "target": args.target,
        "cores": os.cpu_count(),
        # Other builds on the machine stretch every number: the 1-minute load average at the end.
        "load_average": round(os.getloadavg()[0], 1),
        "archs": DEFAULT_ARCHS.split(","),
        "cold_build_s": round(cold_wall, 2),
        "cold_actions": len(cold),
        "cold_action_sum_s": round(sum(a["dur_s"] for a in cold), 2),
        "compile_s_per_arch": per_arch,
        "compile_peak_in_flight": peak_in_flight(compiles),
        "compile_speedup": round(sum(a["dur_s"] for a in compiles) / phase, 2) if phase else None,
        "added_arch": ADDED_ARCH,
        "add_one_sm_build_s": round(add_wall, 2),
        "add_one_sm_actions": sorted(a["name"] for a in added),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
