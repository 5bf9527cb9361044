#!/usr/bin/env python3
"""Benchmark (not a test): captures of physics-engine programs (models/newton, models/mjwarp), side by
side in one run: the CPU capture and the retargeted CUDA capture of each, with a cold kernel cache (a
fresh one, as a Bazel action has) and a warm one (the same cache again), their ratio (goal <= 1.5), and
the size of one SM's compiled modules (wrpkg.build.compile, the per-SM action's work) against the CPU objects.

    PY=$(bazel info output_base)/external/wrp_venv/venv/bin/python3
    $PY tools/bench/library_capture_bench.py [--arch sm_90] [--json OUT.json] [SCRIPT ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_SCRIPTS = ["models/newton/pendulum.py", "models/mjwarp/mjw_pendula.py"]


def _run(cmd: list[str], env: dict) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"library_capture_bench: {' '.join(cmd[:6])} ... failed:\n{done.stderr[-3000:]}")
    return seconds


def _capture(script: Path, mode: str, out: Path, cache: Path, env: dict) -> float:
    device = ["--device", "cpu"] if mode == "cpu" else ["--device", "cuda", "--mode", "retarget"]
    cmd = [sys.executable, "-m", "wrpkg.capture", "--script", str(script), *device]
    cmd += ["--out-dir", str(out), "--stem", script.stem, "--cache-dir", str(cache)]
    return _run(cmd, env)


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def bench(script: Path, arch: str, env: dict, work: Path) -> dict:
    record: dict = {"program": str(script.relative_to(REPO))}
    for mode in ("cpu", "retarget"):
        cache = work / f"{mode}-cache"
        record[f"{mode}_cold_s"] = round(_capture(script, mode, work / f"{mode}-cold", cache, env), 1)
        record[f"{mode}_warm_s"] = round(_capture(script, mode, work / f"{mode}-warm", cache, env), 1)
    record["ratio_cold"] = round(record["retarget_cold_s"] / record["cpu_cold_s"], 2)
    record["ratio_warm"] = round(record["retarget_warm_s"] / record["cpu_warm_s"], 2)
    raw = work / "retarget-warm"
    compiled = work / arch
    cmd = [sys.executable, "-m", "wrpkg.build.compile", "--wrp", str(raw / f"{script.stem}.wrp")]
    cmd += ["--modules-dir", str(raw / f"{script.stem}_modules"), "--arch", arch, "--out-dir", str(compiled)]
    cmd += ["--script", str(script)]
    record[f"compile_{arch}_s"] = round(_run(cmd, env), 1)
    record[f"{arch}_bytes"] = _size(compiled) - (compiled / "compile.json").stat().st_size
    record["cpu_objects_bytes"] = _size(work / "cpu-warm" / f"{script.stem}_modules")
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("scripts", nargs="*", default=DEFAULT_SCRIPTS)
    parser.add_argument("--arch", default="sm_90", help="the SM whose compiled modules are measured")
    parser.add_argument("--json", type=Path, help="also write the records here")
    args = parser.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    records = []
    for name in args.scripts:
        script = (REPO / name).resolve()
        with tempfile.TemporaryDirectory(prefix="wrp-libbench-") as work:
            record = bench(script, args.arch, env, Path(work))
        records.append(record)
        print(
            f"{record['program']}: cpu {record['cpu_cold_s']} s cold / {record['cpu_warm_s']} s warm, "
            f"retarget {record['retarget_cold_s']} s / {record['retarget_warm_s']} s, ratio "
            f"{record['ratio_cold']} cold / {record['ratio_warm']} warm (goal <= 1.5); {args.arch} modules "
            f"{record[f'{args.arch}_bytes']:,} bytes (compiled in {record[f'compile_{args.arch}_s']} s), "
            f"CPU objects {record['cpu_objects_bytes']:,} bytes",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(records, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
