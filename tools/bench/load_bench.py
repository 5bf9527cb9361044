"""Benchmark (not a test): load time of one graph packaged four ways, side by side.

    python tools/bench/load_bench.py BUNDLE WARP_WRP PTX_ONLY SOURCE_ONLY [--repeat 3]

Each load runs in a fresh process (Warp caches modules per process), timed around
`wp.capture_load` alone after the CUDA context exists, with the driver's JIT cache off
(CUDA_CACHE_DISABLE=1) and an empty Warp kernel cache, and on a fresh copy of the bundle
(Warp caches source-fallback cubins next to the modules): every run is a first load.
Prints medians and ratios to the bundle.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = r"""
import sys, time, json, pathlib
import warp as wp
wp.init()
wp.synchronize_device("cuda:0")
path = pathlib.Path(sys.argv[1])
t0 = time.perf_counter()
g = wp.capture_load(str(path), device="cuda:0")
wp.synchronize_device("cuda:0")
t1 = time.perf_counter()
wp.capture_launch(g)
wp.synchronize_device("cuda:0")
t2 = time.perf_counter()
guest = sorted(p.name for p in path.parent.rglob("*") if "guest" in p.name)
print(json.dumps({"load_ms": (t1 - t0) * 1e3, "first_replay_ms": (t2 - t1) * 1e3, "guest": guest}))
"""


def wrp_of(path: Path) -> Path:
    return path if path.suffix == ".wrp" else next(path.glob("*.wrp"))


def time_load(path: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / path.name
        if path.is_dir():
            # Without Warp's cached source-fallback cubins from earlier loads of the original.
            shutil.copytree(path, copy, ignore=shutil.ignore_patterns("apic_guest_*"))
        else:
            shutil.copy(path, copy)
        env = dict(os.environ, CUDA_CACHE_DISABLE="1", WARP_CACHE_PATH=str(Path(tmp) / "warp-cache"))
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, str(wrp_of(copy))],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        ).stdout
        return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("bundle", type=Path)
    parser.add_argument("warp_wrp", type=Path, help="Warp's own single-arch capture (a .wrp or its folder)")
    parser.add_argument("ptx_only", type=Path)
    parser.add_argument("source_only", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cases = [
        ("multi-arch bundle (sm_90 SASS)", args.bundle),
        ("Warp's single-arch .wrp", args.warp_wrp),
        ("PTX only (JIT)", args.ptx_only),
        ("source fallback, first load", args.source_only),
    ]
    print("wp.capture_load alone / load + first replay (CUDA loads modules lazily, so the")
    print("first replay is where a JIT or a lazy module load is paid), medians of fresh processes:")
    totals = {}
    for name, path in cases:
        runs = [time_load(path) for _ in range(args.repeat)]
        load = statistics.median(r["load_ms"] for r in runs)
        total = statistics.median(r["load_ms"] + r["first_replay_ms"] for r in runs)
        totals[name] = total
        guest = runs[-1]["guest"]
        print(
            f"{name:<34} load {load:8.1f} ms   load+first replay {total:8.1f} ms"
            + (f"   (Warp compiled: {', '.join(guest)})" if guest else "")
        )
    base = totals[cases[0][0]]
    print(
        "load+first replay, ratio to the multi-arch bundle: "
        + ", ".join(f"{n}: {m / base:.2f}x" for n, m in totals.items())
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
