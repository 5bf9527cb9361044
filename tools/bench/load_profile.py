"""Benchmark (not a test): where wrpkg.reader.bundle's own time goes, on any machine (no GPU needed).

    python tools/bench/load_profile.py [--repeat 7] [--sm 90] BUNDLE_DIR...

Times, in fresh processes (a real load is a cold one), every step `wrpkg.reader.bundle.load` takes on a
CUDA device before it calls Warp (`wp.capture_load_from_bytes`), with the device faked as an
sm_XX GPU: importing wrpkg.reader.bundle, then `prepare_cuda_load` (wrpkg/reader/bundle.py), the same function
load() runs (`prepare_ms`, the sum of the steps and the glue between them), and apart from it
the .wrp's hash (`hash_ms`), which load() runs on another thread during Warp's call (Warp
checks the images itself). The .wrp
is read on its own thread (`wrp_read_ms`) while the loading thread takes the images out of their
fatbins (`view_images_ms`); `wrp_wait_ms` is what the loading thread then waits for it. Warp is imported first,
outside the timing, as a caller has it imported already; importing wrpkg.reader.bundle is timed apart
(`import_ms`). Bytecode is compiled before the first run, as an installed package has it.
Prints one line per bundle and the medians as JSON on the last line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import functools, json, sys, time
try:
    import warp  # noqa: F401 - imported by every caller before it loads a bundle
except ImportError:
    pass
t0 = time.perf_counter()
import wrpkg.reader.bundle
import wrpkg.reader.device_view
times = {"import_ms": (time.perf_counter() - t0) * 1e3}

def timed(module, name, key):
    inner = getattr(module, name)
    @functools.wraps(inner)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            times[key] = times.get(key, 0.0) + (time.perf_counter() - start) * 1e3
    setattr(module, name, wrapper)

L = wrpkg.reader.bundle
V = wrpkg.reader.device_view
timed(L, "read_manifest_and_hash", "manifest_ms")
timed(L, "check_device", "check_device_ms")
timed(L, "read_view", "view_ms")
timed(L, "read_listed", "wrp_read_ms")  # on the .wrp's own thread, alongside the images
timed(V, "device_images", "view_images_ms")
timed(V.BackgroundWrp, "read", "wrp_wait_ms")  # the loading thread waiting for the .wrp's bytes
t1 = time.perf_counter()
_, view = L.prepare_cuda_load(sys.argv[1], "cuda:0", "NVIDIA H200", int(sys.argv[2]), (13, 0), verify=False)
times["prepare_ms"] = (time.perf_counter() - t1) * 1e3
# load() hashes the .wrp on another thread while Warp parses it: timed apart, on its own.
if view is not None:
    t2 = time.perf_counter()
    failure = view.wrp_failure()
    if failure is not None:
        raise failure
    times["hash_ms"] = (time.perf_counter() - t2) * 1e3
times["road"] = "device view" if view is not None else "directory"
print(json.dumps(times))
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("bundles", nargs="+", type=Path)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--sm", type=int, default=90)
    args = parser.parse_args()
    # The tree the children import: under `bazel run`, the runfiles (not the sources they link to).
    root = Path(__file__).absolute().parents[2]
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "wrpkg")], check=True)
    results = {}
    for bundle in args.bundles:
        runs = []
        for _ in range(args.repeat):
            proc = subprocess.run(
                [sys.executable, "-c", _CHILD, str(bundle), str(args.sm)], capture_output=True, text=True
            )
            if proc.returncode != 0:
                raise SystemExit(f"load_profile: {bundle}: {proc.stderr[-3000:]}")
            runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        keys = [k for k in runs[0] if k != "road"]
        median = {k: round(statistics.median(r[k] for r in runs), 3) for k in keys}
        median["road"] = runs[0]["road"]
        results[bundle.name] = median
        steps = ", ".join(f"{k[:-3]} {v:.2f}" for k, v in median.items() if k.endswith("_ms"))
        print(f"{bundle.name}: {steps} ms ({median['road']})", flush=True)
    print(json.dumps({"repeat": args.repeat, "sm": args.sm, "bundles": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
