"""On a GPU machine: each capture script captured natively (capture mode "gpu") and retargeted (on the
CPU, the GPU hidden), compared in canonical form, and the retargeted capture replayed on the GPU
against the native golden values. One JSON record per program, written as it goes:

    python3 tools/gpu/native_vs_retarget.py --out $OUT/results.json models/newton/pendulum.py ...

(the check of issue 38 item 2 for models/newton and models/mjwarp; tests/test_retarget_gpu.py holds the
same check for the small programs, under bazel test --config=gpu).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _capture(script: Path, out: Path, mode: str, cache_dir: Path, timeout: float) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    if mode == "retarget":
        env["CUDA_VISIBLE_DEVICES"] = ""
    cmd = [sys.executable, "-m", "wrpkg.capture", "--script", str(script), "--device", "cuda", "--mode", mode]
    cmd += ["--out-dir", str(out), "--stem", script.stem, "--cache-dir", str(cache_dir / mode)]
    start = time.monotonic()
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as exc:
        partial = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
        return {
            "ok": False,
            "seconds": round(time.monotonic() - start, 1),
            "error": f"timeout after {timeout} s",
            "phases": _phases(partial),
        }
    record = {"ok": proc.returncode == 0, "seconds": round(time.monotonic() - start, 1)}
    record["phases"] = _phases(proc.stderr)
    if proc.returncode != 0:
        record["error"] = proc.stderr.strip()[-1500:]
    return record


def _phases(stderr: str) -> list[str]:
    """The capture's progress lines (wrpkg.capture.crash_watch.phase): where its time went, or where it hung."""
    return [line for line in stderr.splitlines() if line.startswith("wrpkg capture [")][-60:]


def _replay_against_native(retargeted: Path, native: Path, stem: str) -> dict:
    """The retargeted .wrp replayed once on cuda:0 (stock wp.capture_load), output by output against the
    native capture's golden values: bit-exact, or within the declared tolerance."""
    import warp as wp  # noqa: PLC0415

    from wrpkg import warp_internals  # noqa: PLC0415
    from wrpkg.golden import compare, golden_tolerance  # noqa: PLC0415

    wp.config.quiet = True
    interface = json.loads((retargeted / "interface.json").read_text())
    graph = wp.capture_load(str(retargeted / f"{stem}.wrp"), device="cuda:0")
    replayed = warp_internals.replay_outputs(graph, [g["name"] for g in interface["golden"]], "cuda:0")
    result = {}
    for record in interface["golden"]:
        native_golden = (native / record["file"]).read_bytes()
        verdict = compare(native_golden, replayed[record["name"]], golden_tolerance(record))
        result[record["name"]] = {
            "bit_exact": replayed[record["name"]] == native_golden,
            "within_tolerance": verdict.match,
            "detail": verdict.detail,
        }
    return result


def check(script: Path, work: Path, cache_dir: Path, timeout: float) -> dict:
    from wrpkg.capture.retarget import compare_captures  # noqa: PLC0415

    record: dict = {"program": str(script.relative_to(REPO)) if script.is_relative_to(REPO) else str(script)}
    retargeted, native = work / f"{script.stem}.retargeted", work / f"{script.stem}.native"
    record["retarget"] = _capture(script, retargeted, "retarget", cache_dir, timeout)
    record["native"] = _capture(script, native, "gpu", cache_dir, timeout)
    if record["retarget"]["ok"] and record["native"]["ok"]:
        differences = compare_captures(retargeted, native, script.stem)
        record["canonical_differences"] = differences[:20]
        record["byte_identical"] = not differences
        # A native capture records the copy-backs of each radix sort, which the loader's sort re-makes
        # on any GPU and a retargeted capture omits (retarget.drop_sort_copies): identical without them
        # is the same program.
        record["identical_without_sort_copies"] = not differences or not compare_captures(
            retargeted, native, script.stem, without_sort_copies=True
        )
        try:
            record["replay_vs_native_golden"] = _replay_against_native(retargeted, native, script.stem)
        except Exception as exc:  # a replay that fails is a result to report, not a crash of the check
            record["replay_vs_native_golden"] = {"error": f"{type(exc).__name__}: {exc}"}
    return record


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scripts", nargs="+", type=Path)
    parser.add_argument(
        "--out", type=Path, required=True, help="the results JSON (rewritten after each program)"
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/wrp-native-vs-retarget"))
    parser.add_argument("--timeout", type=float, default=480)
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    results = json.loads(args.out.read_text()) if args.out.exists() else []
    for script in args.scripts:
        record = check(script.resolve(), args.work, args.work / "kernel-cache", args.timeout)
        results.append(record)
        args.out.write_text(json.dumps(results, indent=1) + "\n")
        print(
            json.dumps(
                {k: record.get(k) for k in ("program", "byte_identical", "identical_without_sort_copies")}
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
