"""On a CUDA GPU: compare retargeted captures (made on a CPU machine) with native CUDA captures.

    python tools/gpu/retarget_check.py --retargeted DIR --report OUT.json SCRIPT [SCRIPT ...]

For each capture script S (stem = its file name), DIR/<stem>/ holds the raw capture that
`wrpkg capture --device cuda --mode retarget` wrote on a GPU-less machine. This script
1. captures S natively on the GPU (`--mode gpu`, a fresh process),
2. compares the two in canonical form (`wrpkg.retarget.compare_captures`: the .wrp and
   every module file, byte for byte),
3. loads the retargeted .wrp with stock `wp.capture_load` on the GPU, replays it once, and
   compares each output with the native capture's golden bytes (same code, same GPU:
   expected bit-exact unless float atomics) and with the retargeted (CPU-replayed) golden
   bytes (max abs / rel difference, and the verdict under the script's declared atol + rtol).
The report is JSON; the exit status is 1 if any canonical comparison differs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]


def native_capture(script: Path, out: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "wrpkg.capture", "--script", str(script), "--device", "cuda"]
    cmd += ["--mode", "gpu", "--out-dir", str(out), "--stem", script.stem]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)


def replay_outputs(wrp_path: Path, names: list[str]) -> dict[str, bytes]:
    import warp as wp  # noqa: PLC0415

    graph = wp.capture_load(str(wrp_path), device="cuda:0")
    wp.capture_launch(graph)
    wp.synchronize_device("cuda:0")
    outputs = {}
    for name in names:
        size = graph._params[name]["size"]
        buffer = wp.empty(size, dtype=wp.uint8, device="cuda:0")
        graph.get_param(name, buffer)
        outputs[name] = buffer.numpy().tobytes()
    return outputs


def float_diff(replay: bytes, golden: bytes, tolerance) -> dict:
    """Max abs / rel difference as float32 values, and the verdict under the declared
    tolerance (None: bit-exact)."""
    from wrpkg.golden import compare  # noqa: PLC0415

    verdict = compare(golden, replay, tolerance)
    if len(replay) != len(golden) or len(replay) % 4:
        return {"comparable": False, "within_tolerance": verdict.match, "detail": verdict.detail}
    x = np.frombuffer(replay, dtype=np.float32).astype(np.float64)
    y = np.frombuffer(golden, dtype=np.float32).astype(np.float64)
    diff = np.abs(x - y)
    rel = diff / np.maximum(np.maximum(np.abs(x), np.abs(y)), 1e-30)
    return {
        "max_abs": float(diff.max(initial=0.0)),
        "max_rel": float(rel.max(initial=0.0)),
        "within_tolerance": verdict.match,
        "detail": verdict.detail,
    }


def check(script: Path, retargeted_root: Path, work: Path) -> dict:
    from wrpkg.golden import golden_tolerance  # noqa: PLC0415
    from wrpkg.retarget import compare_captures  # noqa: PLC0415

    stem = script.stem
    retargeted = retargeted_root / stem
    native = work / f"{stem}.native"
    proc = native_capture(script, native)
    result = {"program": script.name, "native_capture_rc": proc.returncode}
    if proc.returncode != 0:
        result["native_capture_error"] = proc.stderr[-3000:]
        return result
    result["canonical_differences"] = compare_captures(retargeted, native, stem)
    result["byte_identical"] = not result["canonical_differences"]
    interface = json.loads((retargeted / "interface.json").read_text())
    names = [g["name"] for g in interface["golden"]]
    replayed = replay_outputs(retargeted / f"{stem}.wrp", names)
    per_output = {}
    for record in interface["golden"]:
        name = record["name"]
        native_golden = (native / record["file"]).read_bytes()
        cpu_golden = (retargeted / record["file"]).read_bytes()
        per_output[name] = {
            "replay_equals_native_golden": replayed[name] == native_golden,
            "replay_equals_cpu_golden": replayed[name] == cpu_golden,
            "vs_cpu_golden": float_diff(replayed[name], cpu_golden, golden_tolerance(record)),
        }
    result["outputs"] = per_output
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--retargeted", required=True, type=Path)
    parser.add_argument("--report", required=True, type=Path)
    parser.add_argument("--work", default="/tmp/retarget-check", type=Path)
    parser.add_argument("scripts", nargs="+", type=Path)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    results = [check(script.resolve(), args.retargeted, args.work) for script in args.scripts]
    args.report.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    for r in results:
        print(r["program"], "byte-identical" if r.get("byte_identical") else f"DIFFERS {r}")
    return 0 if all(r.get("byte_identical") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
