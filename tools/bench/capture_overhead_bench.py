#!/usr/bin/env python3
"""Benchmark (not a test): what `wrpkg.capture` costs beyond Warp's own APIC capture (issue 43 item 2).

For each capture script, side by side in one run, each in a fresh process with the same kernel cache
(warmed first, so Warp's compile is out of both):

- plain Warp: import the script, build(device), `wp.capture_begin(apic=True)`, step(), `capture_end`,
  `capture_save(..., source_fallback=True)`, `capture_load` and one `capture_launch`;
- wrpkg: `python -m wrpkg.capture` of the same script (checks, two golden replays in fresh processes,
  canonical form; in retarget mode also the CUDA modules, from the same warm cache).

It prints both times and the ratio (wrpkg - plain) / plain: the capture's own overhead relative to
plain Warp's capture + save + one replay (goal <= 0.5), the median of --rounds rounds.

    PY=$(bazel info output_base)/external/wrp_venv/venv/bin/python3
    $PY tools/bench/capture_overhead_bench.py [--mode cpu|retarget|gpu] [--rounds 3] [--json OUT] [SCRIPT ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_SCRIPTS = [
    "models/sim.py",
    "models/cloth.py",
    "models/newton/pendulum.py",
    "models/newton/pyramid.py",
    "models/mjwarp/mjw_collision.py",
]

# Plain Warp's capture, save, load and one replay of a capture script, as a user would write it.
_PLAIN = """
import importlib.util, os, sys, warp as wp
script, device, cache, out = sys.argv[1:5]
wp.config.kernel_cache_dir = cache
wp.config.quiet = True
wp.init()
sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
found = importlib.util.spec_from_file_location("capture_script", script)
module = importlib.util.module_from_spec(found)
found.loader.exec_module(module)
spec = module.build(device)
wp.capture_begin(device, apic=True)
spec.step()
graph = wp.capture_end(device)
wp.capture_save(graph, out, inputs=spec.inputs, outputs=spec.outputs, source_fallback=True)
loaded = wp.capture_load(out, device=device)
wp.capture_launch(loaded)
wp.synchronize_device(device)
"""


def _run(cmd: list[str], env: dict) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"capture_overhead_bench: {' '.join(cmd[:8])} ... failed:\n{done.stderr[-3000:]}")
    return seconds


def _plain(script: Path, device: str, cache: Path, out: Path, env: dict) -> float:
    out.mkdir(parents=True, exist_ok=True)
    return _run([sys.executable, "-c", _PLAIN, str(script), device, str(cache), str(out / "plain.wrp")], env)


def _wrpkg(script: Path, mode: str, cache: Path, out: Path, env: dict) -> float:
    device = {"cpu": ["--device", "cpu"], "retarget": ["--device", "cuda", "--mode", "retarget"]}.get(
        mode, ["--device", "cuda", "--mode", "gpu"]
    )
    cmd = [sys.executable, "-m", "wrpkg.capture", "--script", str(script), *device, "--quiet"]
    cmd += ["--out-dir", str(out), "--stem", script.stem, "--cache-dir", str(cache)]
    return _run(cmd, env)


def bench(script: Path, mode: str, rounds: int, env: dict, work: Path) -> dict:
    # Plain Warp's capture of a retargeted target is the CPU capture the retarget starts from.
    device = "cuda:0" if mode == "gpu" else "cpu"
    cache = work / "cache"
    _wrpkg(script, mode, cache, work / "warm", env)  # warms the cache for both
    _plain(script, device, cache, work / "warm-plain", env)
    plain, ours = [], []
    for index in range(rounds):
        plain.append(_plain(script, device, cache, work / f"plain-{index}", env))
        ours.append(_wrpkg(script, mode, cache, work / f"wrpkg-{index}", env))
    record = {
        "program": str(script.relative_to(REPO)),
        "mode": mode,
        "plain_warp_s": round(statistics.median(plain), 2),
        "wrpkg_s": round(statistics.median(ours), 2),
    }
    record["overhead_ratio"] = round((record["wrpkg_s"] - record["plain_warp_s"]) / record["plain_warp_s"], 2)
    return record


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("scripts", nargs="*", default=DEFAULT_SCRIPTS)
    parser.add_argument("--mode", choices=["cpu", "retarget", "gpu"], default="cpu")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", help="also write the records here")
    args = parser.parse_args()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    records = []
    print(f"{'program':<34} {'mode':<9} {'plain Warp':>10} {'wrpkg':>8} {'overhead':>9}  (goal <= 0.5)")
    for name in args.scripts:
        script = (REPO / name).resolve()
        with tempfile.TemporaryDirectory(prefix="wrp-overhead-") as work:
            record = bench(script, args.mode, args.rounds, env, Path(work))
        records.append(record)
        print(
            f"{record['program']:<34} {record['mode']:<9} {record['plain_warp_s']:>9.2f}s "
            f"{record['wrpkg_s']:>7.2f}s {record['overhead_ratio']:>8.2f}x",
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
