"""GPU machine (no Bazel): what Warp's APIC saves natively for MathDx tile programs, and whether it replays.

    PYTHONPATH=<repo>:/tmp/wrp-site python3 tools/gpu/mathdx_native_check.py OUT [--retargeted DIR] [PROGRAM ...]

For each capture script of tests/programs_mathdx/ (default: tile_matmul, tile_fft, tile_cholesky),
each step in a fresh process on cuda:0:

1. Warp alone: imports the script as the capture harness does, runs build("cuda:0") and step() once
   eagerly (compiling its modules; its outputs are the reference), builds again, captures step()
   with `wp.capture_begin(apic=True)`, and calls `wp.capture_save(..., source_fallback=True)` (its
   error is reported) and `source_fallback=False` (its module records are reported: binary kind,
   file and size, source file, fallback reason, target arch, digest present).
2. Replays that binary-only .wrp with `wp.capture_load` + `wp.capture_launch` and compares each
   output with the eager run, byte for byte.
3. wrpkg: `python -m wrpkg.capture --mode gpu` (MathDx modules as linked cubins, wrpkg.mathdx);
   reports its records, replays its .wrp the same way and compares.
4. With --retargeted DIR (DIR/<stem>/ is `wrpkg capture --device cuda --mode retarget` output made on
   a CPU machine): compares it with step 3's capture in canonical form
   (wrpkg.capture.retarget.compare_captures) and replays it on the GPU against the eager outputs.

Writes OUT/mathdx_native.json and prints it; exits 1 when a replay differs from the eager run or a
retargeted capture differs from the native one.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "tests" / "programs_mathdx"
DEFAULT = ("tile_matmul", "tile_fft", "tile_cholesky")


def _import_script(script: Path):
    sys.path[:0] = [str(script.parent), str(ROOT)]
    spec = importlib.util.spec_from_file_location(script.stem, script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[script.stem] = module
    spec.loader.exec_module(module)
    return module


def child_warp(script: Path, out: Path) -> None:
    """Step 1, in its own process."""
    import warp as wp  # noqa: PLC0415

    wp.config.quiet = True
    wp.config.kernel_cache_dir = str(out / "kernel_cache")
    wp.init()
    program = _import_script(script)
    report = {
        "device": f"{wp.get_cuda_device(0).name} sm_{wp.get_cuda_device(0).arch}",
        "warp": wp.__version__,
    }
    spec = program.build("cuda:0")
    started = time.perf_counter()
    spec.step()
    wp.synchronize_device("cuda:0")
    report["first_step_s (compiles)"] = round(time.perf_counter() - started, 2)
    eager = out / "eager"
    eager.mkdir(parents=True, exist_ok=True)
    for name, arr in spec.outputs.items():
        (eager / f"{name}.bin").write_bytes(arr.numpy().tobytes())
    spec = program.build("cuda:0")
    wp.capture_begin("cuda:0", apic=True)
    try:
        spec.step()
    finally:
        graph = wp.capture_end("cuda:0")
    try:
        wp.capture_save(
            graph, str(out / "warp_sf" / script.stem), spec.inputs, spec.outputs, source_fallback=True
        )
        report["source_fallback_true"] = "saved"
    except RuntimeError as exc:
        report["source_fallback_true"] = f"RuntimeError: {exc}"
    started = time.perf_counter()
    wp.capture_save(graph, str(out / "warp" / script.stem), spec.inputs, spec.outputs, source_fallback=False)
    report["source_fallback_false_save_s"] = round(time.perf_counter() - started, 2)
    report["outputs"] = sorted(spec.outputs)
    (out / "warp_report.json").write_text(json.dumps(report, indent=1))


def child_replay(wrp: Path, names: list[str], out: Path) -> None:
    """Step 2: loads and replays `wrp` once, writes each output's bytes to out/<name>.bin."""
    import warp as wp  # noqa: PLC0415

    from wrpkg import warp_internals  # noqa: PLC0415

    wp.config.quiet = True
    wp.config.kernel_cache_dir = str(out / "kernel_cache")
    wp.init()
    started = time.perf_counter()
    graph = wp.capture_load(str(wrp), device="cuda:0")
    load_s = time.perf_counter() - started
    out.mkdir(parents=True, exist_ok=True)
    for name, data in warp_internals.replay_outputs(graph, names, "cuda:0").items():
        (out / f"{name}.bin").write_bytes(data)
    (out / "load_s").write_text(f"{load_s:.3f}")


def _run(args: list[str], timeout: int = 900) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout
    )


def module_records(wrp_path: Path) -> list[dict]:
    from wrpkg import wrpformat  # noqa: PLC0415

    wrp = wrpformat.read_wrp(wrp_path)
    modules_dir = wrp_path.with_name(wrp_path.stem + "_modules")
    records = []
    for m in sorted(wrp.metadata.modules, key=lambda m: m.name):
        binary = modules_dir / m.binary_filename
        records.append(
            {
                "name": m.name,
                "hash": m.hash,
                "binary_filename": m.binary_filename,
                "binary_bytes": binary.stat().st_size if binary.exists() else None,
                "binary_kind": m.binary_kind.name,
                "binary_sha256_recorded": bool(m.binary_sha256),
                "target_arch": m.target_arch,
                "source_filename": m.source_filename,
                "fallback_reason": m.fallback_reason.name,
                "recipe": m.compile_recipe.hex(),
            }
        )
    return records


def replay_matches(wrp: Path, names: list[str], eager: Path, out: Path) -> dict:
    proc = _run([__file__, "--child-replay", str(wrp), str(out), *names])
    if proc.returncode:
        return {"rc": proc.returncode, "error": proc.stderr[-2500:]}
    return {
        "load_s": float((out / "load_s").read_text()),
        "equal_to_eager": {
            n: (out / f"{n}.bin").read_bytes() == (eager / f"{n}.bin").read_bytes() for n in names
        },
    }


def check(stem: str, out: Path, retargeted: Path | None) -> dict:
    script = PROGRAMS / f"{stem}.py"
    work = out / stem
    work.mkdir(parents=True, exist_ok=True)
    result: dict = {"program": script.name}
    started = time.perf_counter()
    proc = _run([__file__, "--child-warp", str(script), str(work)])
    result["warp_capture_s"] = round(time.perf_counter() - started, 2)
    if proc.returncode:
        result["warp_error"] = proc.stderr[-3000:]
        return result
    warp_report = json.loads((work / "warp_report.json").read_text())
    result["warp"] = warp_report
    names = warp_report["outputs"]
    eager = work / "eager"
    result["warp"]["records"] = module_records(work / "warp" / f"{stem}.wrp")
    result["warp"]["replay"] = replay_matches(
        work / "warp" / f"{stem}.wrp", names, eager, work / "replay_warp"
    )

    started = time.perf_counter()
    cmd = ["-m", "wrpkg.capture", "--script", str(script), "--device", "cuda", "--mode", "gpu"]
    proc = _run([*cmd, "--out-dir", str(work / "wrpkg"), "--stem", stem, "--label", f"//check:{stem}"])
    result["wrpkg"] = {"rc": proc.returncode, "capture_s": round(time.perf_counter() - started, 2)}
    if proc.returncode:
        result["wrpkg"]["error"] = proc.stderr[-3000:]
    else:
        raw = work / "wrpkg"
        result["wrpkg"]["records"] = module_records(raw / f"{stem}.wrp")
        result["wrpkg"]["modules_dir"] = sorted(os.listdir(raw / f"{stem}_modules"))
        result["wrpkg"]["capture_json"] = json.loads((raw / "capture.json").read_text())
        result["wrpkg"]["replay"] = replay_matches(raw / f"{stem}.wrp", names, eager, work / "replay_wrpkg")
        result["wrpkg"]["goldens_equal_to_eager"] = {
            n: (raw / "golden" / f"{n}.bin").read_bytes() == (eager / f"{n}.bin").read_bytes() for n in names
        }
        if retargeted is not None and (retargeted / stem).is_dir():
            from wrpkg.capture.retarget import compare_captures  # noqa: PLC0415

            differences = compare_captures(retargeted / stem, raw, stem)
            result["retarget"] = {
                "canonical_differences": differences,
                "byte_identical": not differences,
                "replay": replay_matches(
                    retargeted / stem / f"{stem}.wrp", names, eager, work / "replay_retarget"
                ),
            }
    return result


def check_bundles(result: dict, bundles: list[Path], out: Path) -> None:
    """Replays each multi-arch bundle of the program (a `wrpkg pack` directory) on cuda:0 against the
    eager outputs; a bundle whose fatbins hold no SASS for this GPU is expected to fail to load."""
    stem = Path(result["program"]).stem
    names = result.get("warp", {}).get("outputs", [])
    for bundle in bundles:
        replay = replay_matches(
            bundle / f"{stem}.wrp", names, out / stem / "eager", out / stem / f"replay_{bundle.name}"
        )
        result.setdefault("bundles", {})[bundle.name] = replay


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child-warp":
        child_warp(Path(sys.argv[2]), Path(sys.argv[3]))
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "--child-replay":
        child_replay(Path(sys.argv[2]), sys.argv[4:], Path(sys.argv[3]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--retargeted", type=Path, default=None)
    parser.add_argument(
        "--bundle",
        action="append",
        default=[],
        help="STEM=DIR: a multi-arch bundle of program STEM to replay (repeatable)",
    )
    parser.add_argument("programs", nargs="*", default=list(DEFAULT))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results = [check(stem, args.out, args.retargeted) for stem in args.programs]
    for r in results:
        stem = Path(r["program"]).stem
        check_bundles(
            r, [Path(b.split("=", 1)[1]) for b in args.bundle if b.split("=", 1)[0] == stem], args.out
        )
    ok = True
    for r in results:
        for side in ("warp", "wrpkg", "retarget"):
            replay = r.get(side, {}).get("replay")
            if replay is not None and not all(replay.get("equal_to_eager", {0: False}).values()):
                ok = False
        if "retarget" in r and not r["retarget"]["byte_identical"]:
            ok = False
        if "warp_error" in r or r.get("wrpkg", {}).get("rc"):
            ok = False
    report = {"ok": ok, "programs": results}
    (args.out / "mathdx_native.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    print(json.dumps(report, indent=1, sort_keys=True))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
