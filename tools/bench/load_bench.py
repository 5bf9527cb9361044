"""Benchmark (not a test): cold loads of one graph packaged several ways, side by side.

    python tools/bench/load_bench.py --out load.json [--repeat 7] [--start-bench BIN] CASE...

CASE is MODEL:ROAD:HOW:PATH, e.g. sim:sass:wrpkg:models/sim_recorded_wrp, where HOW is
  stock        wp.capture_load on the .wrp (Warp's own loader; PATH a bundle or a raw capture)
  wrpkg        wrpkg.reader.bundle.load (verify, arch check, per-device view when SASS fits)
  wrpkg-noview wrpkg.reader.bundle.load(per_device_view=False): verify, then wp.capture_load
  wrpkg-serial wrpkg.reader.bundle.load(hash_during_load=False): the view's hash finishes before Warp's call
  cpp          start_bench (C++: open + verify, wrp::Graph::Load, per-device view when SASS fits)
  cpp-noview   start_bench --no-device-view (C++, the whole fatbins from memory)
  cpp-cold-runtime  start_bench --cold-runtime (C++, the CUDA runtime starts inside the load)
Each load runs in a fresh process (Warp caches modules per process) on a fresh copy of PATH
(Warp caches source-fallback cubins next to the modules), with the driver's JIT cache off and
an empty Warp kernel cache: every run is a first load. Phases are timed apart: Warp init,
CUDA context creation, importing wrpkg.reader.bundle (wrpkg cases), the load itself, the first replay (launch + wait; CUDA loads modules
lazily, so the first replay is where lazy loading is paid). Runs are interleaved across cases
(round r runs every case once) so drift falls on all alike. Writes every run and the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_CHILD = r"""
import json, pathlib, sys, time
t0 = time.perf_counter()
import warp as wp
wp.config.quiet = True
wp.init()
t1 = time.perf_counter()
device = wp.get_device("cuda:0")
device.context  # creates the primary context
wp.synchronize_device(device)
how, path = sys.argv[1], pathlib.Path(sys.argv[2])
road = "directory"
# A program imports wrpkg.reader.bundle once, as it imports warp: timed apart, like Warp's init.
t_import = time.perf_counter()
if how != "stock":
    import wrpkg.reader.bundle
import_ms = (time.perf_counter() - t_import) * 1e3
t2 = time.perf_counter()
if how == "stock":
    wrp = path if path.suffix == ".wrp" else next(path.glob("*.wrp"))
    graph = wp.capture_load(str(wrp), device=device)
else:
    def timing(inner, log):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                log.append(time.perf_counter() - start)
        return wrapper
    views, warp_s = [], []
    wp.capture_load_from_bytes = timing(wp.capture_load_from_bytes, views)
    wp.capture_load = timing(wp.capture_load, warp_s)
    graph, _ = wrpkg.reader.bundle.load(path, device, per_device_view=(how != "wrpkg-noview"),
                               hash_during_load=(how != "wrpkg-serial"))
    road = "device view" if views else "directory"
wp.synchronize_device(device)
t3 = time.perf_counter()
# What wrpkg.reader.bundle adds around Warp's own call (read, verify, arch check, per-device view).
own_ms = None if how == "stock" else (t3 - t2 - sum(views) - sum(warp_s)) * 1e3
# Warp rebuilds and instantiates the loaded graph (what capture_launch does first), timed apart.
wp._src.context.runtime.core.wp_apic_get_cuda_graph_exec(graph._native_graph)
t3b = time.perf_counter()
wp.capture_launch(graph)
wp.synchronize_device(device)
t4 = time.perf_counter()
guest = sorted(p.name for p in path.parent.rglob("apic_guest_*"))
print(json.dumps({"init_ms": (t1 - t0) * 1e3, "context_ms": (t_import - t1) * 1e3, "import_ms": import_ms,
                  "load_ms": (t3 - t2) * 1e3, **({"wrpkg_own_ms": own_ms} if own_ms is not None else {}),
                  "first_replay_ms": (t4 - t3) * 1e3, "instantiate_ms": (t3b - t3) * 1e3, "road": road,
                  "guest_compiled": len(guest)}))
"""

PHASES = (
    "init_ms",
    "context_ms",
    "import_ms",
    "open_verify_ms",
    "load_ms",
    "wrpkg_own_ms",
    "first_replay_ms",
    "instantiate_ms",
)


def run_once(how: str, path: Path, start_bench: Path | None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        # The copy sits in a folder of its own so that a sibling <name>.sha256 comes along.
        copy_dir = Path(tmp) / "copy"
        copy_dir.mkdir()
        copy = copy_dir / path.name
        if path.is_dir():
            shutil.copytree(path, copy, ignore=shutil.ignore_patterns("apic_guest_*"))
            sibling = path.parent / f"{path.name}.sha256"
            if sibling.is_file():
                shutil.copy(sibling, copy_dir / sibling.name)
        else:
            shutil.copy(path, copy)
        env = dict(os.environ, CUDA_CACHE_DISABLE="1", WARP_CACHE_PATH=str(Path(tmp) / "warp-cache"))
        if how.startswith("cpp"):
            if start_bench is None:
                raise SystemExit("load_bench: a cpp case needs --start-bench")
            flags = {"cpp": [], "cpp-noview": ["--no-device-view"], "cpp-cold-runtime": ["--cold-runtime"]}
            cmd = [str(start_bench), "--bundle", str(copy), *flags[how]]
        else:
            cmd = [sys.executable, "-c", _CHILD, how, str(copy)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise SystemExit(f"load_bench: {' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
        return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("cases", nargs="+", help="MODEL:ROAD:HOW:PATH")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--start-bench", type=Path)
    parser.add_argument(
        "--settle",
        type=float,
        default=0.0,
        help="seconds to wait before each fresh process (whether the previous one's GPU teardown matters: "
        "on an H200 it did not, tools/bench/instantiate_probe.sh)",
    )
    args = parser.parse_args()
    # Bytecode first, as an installed package has it: otherwise the first round (or, where the
    # tree cannot be written, every round) compiles wrpkg's sources.
    # The tree the children import: under `bazel run`, the runfiles (not the sources they link to).
    root = Path(__file__).absolute().parents[2]
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "wrpkg")], check=False)
    cases = []
    for text in args.cases:
        model, road, how, path = text.split(":", 3)
        if how not in (
            "stock",
            "wrpkg",
            "wrpkg-noview",
            "wrpkg-serial",
            "cpp",
            "cpp-noview",
            "cpp-cold-runtime",
        ):
            parser.error(f"unknown HOW {how!r} in {text}")
        cases.append({"model": model, "road": road, "how": how, "path": path, "runs": []})
    for _ in range(args.repeat):
        for case in cases:
            time.sleep(args.settle)
            case["runs"].append(run_once(case["how"], Path(case["path"]), args.start_bench))
    for case in cases:
        runs = case["runs"]
        case["median"] = {
            p: statistics.median(r[p] for r in runs) for p in PHASES if all(p in r for r in runs)
        }
        # What a caller waits for after the context exists: verify (C++: open + verify) + load + first replay.
        case["median"]["to_first_replay_ms"] = statistics.median(
            r.get("open_verify_ms", 0.0) + r["load_ms"] + r["first_replay_ms"] for r in runs
        )
        case["road_taken"] = sorted({r["road"] for r in runs})
        m = case["median"]
        print(
            f"{case['model']:<6} {case['road']:<7} {case['how']:<12} load {m['load_ms']:8.2f} ms   "
            f"to first replay {m['to_first_replay_ms']:8.2f} ms   context {m['context_ms']:7.1f} ms   "
            f"({', '.join(case['road_taken'])})",
            flush=True,
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"repeat": args.repeat, "cases": cases}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
