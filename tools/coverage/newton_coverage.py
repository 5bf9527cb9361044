"""Coverage of the Newton examples and MuJoCo Warp test models: capture, retarget, pack.

Lists every example of the installed `newton` wheel (newton/examples/<group>/example_*.py) and
the MuJoCo Warp test models (mujoco_warp/test_data/**/*.xml), writes a generic capture script
(`build(device) -> wrpkg.capture.CaptureSpec`, docs/capture-script.md) for each in a temp dir,
and runs, each in a fresh process with a timeout and one shared Warp kernel cache:

    python -m wrpkg.capture --device cpu                    (CPU capture)
    python -m wrpkg.capture --device cuda --mode retarget   (CUDA capture without a GPU)
    python -m wrpkg.build.pack                                    (the CPU capture, packed)

It writes docs/coverage/newton_mjwarp.md (the table) and docs/coverage/newton_mjwarp.json (the
raw results, rewritten after each program: a partial run is a partial table, `--resume` goes on).

    PYTHONPATH=. python tools/coverage/newton_coverage.py [--only SUBSTR [--rerun]] [--resume] \
        [--timeout 600] [--jobs 1] [--cache-dir DIR] [--gpu-results FILE] [--table-only]

The generic adapters (their templates: tools/coverage/newton_adapters.py):

- Newton: imports the example module, builds `Example(newton.viewer.ViewerNull(), args)` under
  `wp.ScopedDevice(device)` with the example's own argument defaults (the statements of its
  `if __name__ == "__main__":` block are run up to the parse, which is intercepted; without one,
  `newton.examples.create_parser()`'s), with `Example.capture` replaced by `self.graph = None`
  (and a `wp.ScopedCapture` the example itself makes in `Example.__init__` run as plain code, no graph;
  a library's own capture there stays one);
  the step is `simulate()` (`step()` where there is none, or it takes arguments); the bindings are
  the non-empty `wp.array`s of `state_0` and `state_1`, as `state_0.body_q`, ..., in place (inout)
  (without those, of the Example's other `newton.State` attributes, and of the first and last
  of a list of them, as `states[0].particle_q`).
- MuJoCo Warp: `mujoco.MjModel.from_xml_path`, `mjw.put_model`, `mjw.put_data`, step
  `mjw.step(m, d)` once, `m.opt.graph_conditional = False` (as models/mjwarp/mjw_pendula.py:
  otherwise the solver loop is a `wp.capture_while` on a GPU); inputs `qpos`, `qvel`, `act`,
  `ctrl`, `mocap_pos`, `mocap_quat`; outputs `qpos`, `qvel`, `qacc`, `act`, `time`, `xpos`, `xquat`.

A bound array the step never touches is refused by the harness ("not used by any operation");
the adapter lists such arrays (from the APIC capture in progress) in a side file, and the run is
repeated once without them (the JSON records the names left out, `unused`).

`--gpu-results FILE` fills the last two columns from the JSON of a GPU run
(tools/coverage/gpu_coverage.py: `{"device": ..., "programs": {"<program>": {"replay": ..., "identical": ...}}}`).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from importlib import metadata
from pathlib import Path

# A sibling file: the script's own folder is first on sys.path.
from newton_adapters import MJW_ADAPTER, NEWTON_ADAPTER

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TABLE = ROOT / "docs" / "coverage" / "newton_mjwarp.md"
NO_GPU = "not run here (no GPU)"

# What marks an example as needing a download (no network here) or USD (pxr; not installed here).
DOWNLOAD_PATTERNS = [
    "download_asset",
    "newton.utils.download",
    "download_external_git_folder",
    "hf_hub",
    "urllib",
]
USD_PATTERNS = ["pxr", ".usd", "usd."]


def site_dir(package: str) -> Path:
    import importlib.util  # noqa: PLC0415

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{package} is not installed in {sys.executable}")
    return Path(next(iter(spec.submodule_search_locations)))


def classify(source: str, shipped: set[str]) -> tuple[str, bool]:
    """(what the example needs, whether it can run here)."""
    found = [p for p in DOWNLOAD_PATTERNS if p in source]
    if found:
        return f"download ({', '.join(found)})", False
    assets = sorted(set(re.findall(r"get_asset\(\s*[\"']([^\"']+)[\"']", source)))
    dynamic = re.search(r"get_asset\(\s*[^\"'\s)]", source) is not None
    usd = [p for p in USD_PATTERNS if p in source]
    missing = [a for a in assets if a not in shipped]
    if missing:
        return f"download ({', '.join(missing)} not shipped)", False
    if usd:
        have_pxr = _has_pxr()
        what = ", ".join(assets) if assets else "USD"
        return f"USD ({what}; pxr {'installed' if have_pxr else 'not installed'})", have_pxr
    if dynamic:
        return "shipped asset chosen at run time (get_asset(<expr>))", True
    if assets:
        return f"shipped ({', '.join(assets)})", True
    return "no", True


_PXR: list[bool] = []


def _has_pxr() -> bool:
    if not _PXR:
        import importlib.util  # noqa: PLC0415

        _PXR.append(importlib.util.find_spec("pxr") is not None)
    return _PXR[0]


def mjcf_missing_files(path: Path) -> list[str]:
    """Files a MuJoCo model names (mesh, texture, height field, include) that are not beside it in the
    wheel: e.g. collision_sdf/torus.xml's torus.obj, which MuJoCo Warp's tests generate first."""
    import xml.etree.ElementTree as ET  # noqa: PLC0415

    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        return []
    dirs = [path.parent]
    for compiler in root.iter("compiler"):
        dirs += [
            path.parent / compiler.get(a) for a in ("meshdir", "texturedir", "assetdir") if compiler.get(a)
        ]
    missing = []
    for element in root.iter():
        name = element.get("file")
        if name and not any((d / name).exists() for d in dirs):
            missing.append(name)
    return missing


def list_programs() -> list[dict]:
    """The MuJoCo Warp models (quick), then the Newton examples."""
    programs = []
    mjw_dir = site_dir("mujoco_warp")
    test_data = mjw_dir / "test_data"
    # Every model of the wheel's test data, its subfolders' too (actuation, tendon, flex, humanoid, ...).
    for path in sorted(test_data.rglob("*.xml"), key=lambda p: (len(p.relative_to(test_data).parts), p)):
        relative = path.relative_to(test_data).as_posix()
        missing = mjcf_missing_files(path)
        programs.append(
            {
                "program": f"mujoco_warp/test_data/{relative}",
                "kind": "mjwarp",
                "xml": str(path),
                "stem": "mjw_" + re.sub(r"\W", "_", relative.removesuffix(".xml")),
                "needs_assets": f"yes: {', '.join(missing)} not in the wheel" if missing else "no",
                "runnable": not missing,
            }
        )
    newton_dir = site_dir("newton")
    examples = newton_dir / "examples"
    shipped = {p.name for p in (examples / "assets").iterdir()} if (examples / "assets").is_dir() else set()
    for path in sorted(examples.glob("*/example_*.py")):
        group = path.parent.name
        needs, runnable = classify(path.read_text(encoding="utf-8"), shipped)
        programs.append(
            {
                "program": f"newton/{group}/{path.stem}",
                "kind": "newton",
                "module": f"newton.examples.{group}.{path.stem}",
                "stem": f"newton_{path.stem.removeprefix('example_')}",
                "needs_assets": needs,
                "runnable": runnable,
            }
        )
    return programs


def write_adapter(program: dict, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / f"{program['stem']}.py"
    if program["kind"] == "newton":
        script.write_text(NEWTON_ADAPTER.format(module=program["module"]))
    else:
        script.write_text(MJW_ADAPTER.format(xml=Path(program["xml"]).name, path=program["xml"]))
    return script


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_cmd(cmd: list[str], timeout: float, env: dict, cwd: Path) -> tuple[str, float, str]:
    """(status "ok"/"error"/"timeout", seconds, combined output). `cwd`: the program's temp dir (MuJoCo
    writes MUJOCO_LOG.TXT into the working directory)."""
    start = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=str(cwd),
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, _ = proc.communicate()
        return "timeout", time.monotonic() - start, out or ""
    except BaseException:
        _kill_group(proc)
        raise
    return ("ok" if proc.returncode == 0 else "error"), time.monotonic() - start, out or ""


_ERROR_LINE = re.compile(r"^(?:wrpkg[\w ]*: )?error: (.*)$")
_EXC_LINE = re.compile(r"^(\w+(?:\.\w+)*(?:Error|Exception|Exit|Interrupt)\b.*)$")


def reason(output: str) -> tuple[str, str]:
    """(first line of the error, the exception line of a script traceback inside it, if any)."""
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    first = ""
    for i, line in enumerate(lines):
        match = _ERROR_LINE.match(line.strip())
        if match:
            first = match.group(1)
            rest = lines[i + 1 :]
            break
    else:
        rest = lines
        first = lines[-1].strip() if lines else "(no output)"
    detail = ""
    for line in rest:
        stripped = line.strip()
        if stripped.startswith("fix:"):
            break
        if _EXC_LINE.match(stripped):
            detail = stripped
    return first, detail


def _verdict(status: str, output: str, seconds: float, stage: str) -> dict:
    result = {"verdict": status, "seconds": round(seconds, 1)}
    if status == "timeout":
        result["tail"] = "\n".join(output.splitlines()[-40:])  # the phase it was in
        return result
    if status != "ok":
        first, detail = reason(output)
        adapter = "coverage adapter:" in f"{first} {detail}" or (
            "build(" in first and ("ModuleNotFoundError" in detail or "ImportError" in detail)
        )
        result["verdict"] = "adapter failure" if adapter and stage != "pack" else "refused"
        result["error"] = first
        if detail and detail not in first:
            result["detail"] = detail
        result["tail"] = "\n".join(output.splitlines()[-40:])
    return result


def _capture(program, script, out_dir, device, mode, args, env) -> dict:
    label = f"//coverage:{program['stem']}"
    cmd = [
        sys.executable,
        "-m",
        "wrpkg.capture",
        "--script",
        str(script),
        "--device",
        device,
        "--out-dir",
        str(out_dir),
        "--stem",
        program["stem"],
        "--label",
        label,
        "--cache-dir",
        str(args.cache_dir),
    ]
    if mode:
        cmd += ["--mode", mode]
    unused_file = script.with_suffix(".unused.json")
    exclude_file = script.with_suffix(".exclude.json")
    total = 0.0
    for _attempt in range(3):
        unused_file.unlink(missing_ok=True)
        status, seconds, output = run_cmd(cmd, args.timeout, env, out_dir.parent)
        total += seconds
        if status == "error" and "is not used by any operation" in output and unused_file.exists():
            excluded = set(json.loads(exclude_file.read_text())) if exclude_file.exists() else set()
            new = set(json.loads(unused_file.read_text())) - excluded
            if new:
                exclude_file.write_text(json.dumps(sorted(excluded | new)))
                continue
        break
    result = _verdict(status, output, total, "capture")
    result["command"] = shlex.join(["python", *cmd[1:]])
    return result


def _pack(program, raw, work, args, env, name: str) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "wrpkg.build.pack",
        "--raw-dir",
        str(raw),
        "--stem",
        program["stem"],
        "--name",
        name,
        "--label",
        f"//coverage:{name}",
        "--out-dir",
        str(work / "bundle" / name),
        "--tar",
        str(work / "bundle" / f"{name}.tar"),
        "--hash",
        str(work / "bundle" / f"{name}.sha256"),
    ]
    status, seconds, output = run_cmd(cmd, args.timeout, env, work)
    result = _verdict(status, output, seconds, "pack")
    if status == "ok":
        result["content_hash"] = (work / "bundle" / f"{name}.sha256").read_text().strip()
    return result


def run_program(program: dict, args) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    work = Path(tempfile.mkdtemp(prefix=f"cov_{program['stem']}_"))
    try:
        script = write_adapter(program, work / "script")
        result = {k: program[k] for k in ("program", "kind", "needs_assets", "runnable")}
        result["cpu"] = _capture(program, script, work / "raw_cpu", "cpu", None, args, env)
        result["retarget"] = _capture(program, script, work / "raw_cuda", "cuda", "retarget", args, env)
        exclude = script.with_suffix(".exclude.json")
        if exclude.exists():
            result["unused"] = json.loads(exclude.read_text())
        if result["cpu"]["verdict"] == "ok":
            result["pack"] = _pack(program, work / "raw_cpu", work, args, env, f"{program['stem']}_cpu_wrp")
        elif result["retarget"]["verdict"] == "ok":
            # A program that runs on CUDA only (Newton's sleeping examples): its bundle is the retargeted
            # capture's, with its CUDA source and no per-SM binaries (wrp_artifact adds those).
            result["pack"] = _pack(program, work / "raw_cuda", work, args, env, f"{program['stem']}_wrp")
            result["pack"]["of"] = "the retargeted capture"
        else:
            result["pack"] = {"verdict": "not run (no capture)"}
        return result
    finally:
        if args.keep:
            print(f"  kept {work}", flush=True)
        else:
            shutil.rmtree(work, ignore_errors=True)


def versions() -> dict:
    out = {}
    for dist in ("warp-lang", "newton", "mujoco-warp", "mujoco"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def _cell(stage: dict | None) -> str:
    if not stage:
        return ""
    verdict = stage["verdict"]
    text = verdict
    if verdict in ("ok", "timeout"):
        text = f"{verdict} ({stage['seconds']:.0f} s)" if "seconds" in stage else verdict
        if "of" in stage:
            text += f", of {stage['of']}"
    elif "error" in stage:
        err = stage["error"]
        err = re.sub(r"^//coverage:\S+(?: \(capture script [^)]*\))?: ", "", err)
        if stage.get("detail"):
            err = f"{err} {stage['detail']}"
        if len(err) > 220:
            err = err[:217] + "..."
        text = f"{verdict}: {err}"
    return text.replace("|", "\\|").replace("\n", " ")


def write_table(data: dict, table: Path, gpu: dict, programs: list[dict]) -> None:
    """`gpu`: the JSON of tools/coverage/gpu_coverage.py ({} when no GPU run is at hand)."""
    gpu_run, gpu = gpu, gpu.get("programs", {})
    results = data["programs"]
    rows = list(results.values())
    ran = [r for r in rows if r.get("runnable")]
    pending = [p for p in programs if p["program"] not in results]

    def count(stage):
        return sum(1 for r in ran if r.get(stage, {}).get("verdict") == "ok")

    v = data["versions"]
    lines = [
        "# Newton examples and MuJoCo Warp test models: capture, retarget, pack",
        "",
        "Generated by `tools/coverage/newton_coverage.py`; do not edit. Command:",
        "",
        f"    {data['command']}",
        "",
        f"Date: {data['date']}. Versions: warp-lang {v.get('warp-lang')}, newton {v.get('newton')}, "
        f"mujoco_warp {v.get('mujoco-warp')}, mujoco {v.get('mujoco')}. Machine: {data['machine']}.",
        "",
        *[
            f"Run again on {rerun['date']} (`{rerun['command']}`): {', '.join(rerun['programs'])}.\n"
            for rerun in data.get("reruns", [])
        ],
        f"Programs listed: {data['listed']}; done: {len(rows)} ({len(ran)} run, "
        f"{len(rows) - len(ran)} not run: they need assets the wheel lacks, a download or USD); not reached yet: {len(pending)}. "
        f"Of those run: CPU capture ok {count('cpu')}, retarget ok {count('retarget')}, "
        f"packed ok {count('pack')}.",
        "",
        *(
            [
                f"The last two columns: `{gpu_run['command']}` on an {gpu_run['device']}, {gpu_run['date']} "
                "(each program captured natively and retargeted on that machine's CPU, compared in canonical "
                "form; the retargeted capture replayed on the GPU against the native goldens). "
                f"Replayed to the native goldens: {sum(1 for g in gpu.values() if g['replay'].startswith('ok: '))}; "
                f"byte-identical: {sum(1 for g in gpu.values() if g['identical'].startswith('yes'))} "
                f"of {len(gpu)} checked.",
                "",
            ]
            if gpu
            else []
        ),
        "Each program is captured through a generic adapter (the script's docstring says how: the "
        "example's defaults, `simulate()` as the step, the `wp.array`s of `state_0`/`state_1` bound "
        "in place; for MuJoCo Warp one `mjw.step`). A refusal here can be the adapter's, not the "
        "program's; the JSON next to this file has each run's command and the end of its output.",
        "",
        "| program | needs assets? | CPU capture | retarget | bundle (pack) | replay on the GPU "
        "| byte-identical to native |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    pending_rows = [{**p, "pending": True} for p in pending]
    for r in sorted(rows + pending_rows, key=lambda r: r["program"]):
        g = gpu.get(r["program"], {})
        if r.get("pending"):
            cells = ["not reached yet"] * 3
        elif r.get("runnable"):
            cells = [_cell(r.get("cpu")), _cell(r.get("retarget")), _cell(r.get("pack"))]
        else:
            cells = ["not run (needs assets the wheel lacks)"] * 3
        lines.append(
            "| "
            + " | ".join(
                [
                    f"`{r['program']}`",
                    r["needs_assets"].replace("|", "\\|"),
                    *cells,
                    str(g.get("replay", NO_GPU)),
                    str(g.get("identical", NO_GPU)),
                ]
            )
            + " |"
        )
    table.parent.mkdir(parents=True, exist_ok=True)
    tmp = table.with_suffix(".md.tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(table)


def save(data: dict, table: Path, gpu: dict, programs: list[dict]) -> None:
    path = table.with_suffix(".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)
    write_table(data, table, gpu, programs)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", action="append", default=[], help="run programs whose name contains this")
    parser.add_argument("--resume", action="store_true", help="skip programs already in the JSON")
    parser.add_argument(
        "--rerun",
        action="store_true",
        help="run the --only programs again, keeping every other program's results in the JSON",
    )
    parser.add_argument("--jobs", type=int, default=1, help="programs run at once (default 1)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per command (default 600)")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "wrp_coverage_cache",
        help="Warp kernel cache shared by every run",
    )
    parser.add_argument(
        "--table", type=Path, default=DEFAULT_TABLE, help="the Markdown table (JSON beside it)"
    )
    parser.add_argument("--gpu-results", type=Path, help="JSON of a GPU run: the replay columns")
    parser.add_argument("--list", action="store_true", help="list the programs and what they need, then stop")
    parser.add_argument(
        "--table-only",
        action="store_true",
        help="rewrite the table from the JSON (not the JSON), run nothing",
    )
    parser.add_argument("--keep", action="store_true", help="keep each program's temp dir")
    args = parser.parse_args(argv)
    args.cache_dir = args.cache_dir.resolve()
    args.cache_dir.mkdir(parents=True, exist_ok=True)

    programs = list_programs()
    if args.list:
        for p in programs:
            print(f"{p['program']:70} {p['needs_assets']}")
        return 0
    gpu = {}
    if args.gpu_results:
        gpu = json.loads(args.gpu_results.read_text())
    json_path = args.table.with_suffix(".json")
    data = {"programs": {}}
    if (args.resume or args.rerun or args.table_only) and json_path.exists():
        data = json.loads(json_path.read_text())
    if args.table_only:
        write_table(data, args.table, gpu, programs)
        return 0
    command = "PYTHONPATH=. python tools/coverage/newton_coverage.py " + shlex.join(
        argv if argv is not None else sys.argv[1:]
    )
    selected = [p for p in programs if not args.only or any(s in p["program"] for s in args.only)]
    if args.rerun and "command" in data:
        # The table stays the first run's, with the programs run again named under its header.
        data.setdefault("reruns", []).append(
            {
                "date": datetime.date.today().isoformat(),
                "command": command,
                "programs": [p["program"] for p in selected if p["runnable"]],
            }
        )
    else:
        data.update(
            {
                "command": command,
                "date": datetime.date.today().isoformat(),
                "versions": versions(),
                "machine": f"{os.cpu_count()} CPU cores, no GPU (nice -n 19)",
                "listed": len(programs),
            }
        )
    lock = threading.Lock()

    def one(p):
        if not p["runnable"]:
            result = {k: p[k] for k in ("program", "kind", "needs_assets", "runnable")}
        else:
            print(f"{p['program']}: running", flush=True)
            result = run_program(p, args)
        with lock:
            data["programs"][p["program"]] = result
            save(data, args.table, gpu, programs)
        summary = ", ".join(
            f"{stage} {result[stage]['verdict']}" for stage in ("cpu", "retarget", "pack") if stage in result
        )
        print(f"{p['program']}: {summary or 'not run: ' + p['needs_assets']}", flush=True)

    todo = [p for p in selected if args.rerun or not (args.resume and p["program"] in data["programs"])]
    print(f"{len(todo)} programs to run ({len(selected)} selected, {len(programs)} listed)", flush=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for future in [pool.submit(one, p) for p in todo]:
            future.result()
    save(data, args.table, gpu, programs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
