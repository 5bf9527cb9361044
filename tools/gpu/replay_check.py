"""GPU check: load a bundle, replay it once from its captured state, compare with golden.

    python tools/gpu/replay_check.py BUNDLE_DIR [--stock] [--expect-mismatch]
                                     [--golden-dir DIR] [--exact]

--stock loads with a bare wp.capture_load (no wrpkg checks) to show stock Warp reads the
bundle; --expect-mismatch expects wrpkg.load to refuse the device and prints its message.
--golden-dir compares with DIR/<name>.bin (e.g. a native capture's golden values) instead of
the bundle's; --exact compares bit for bit whatever tolerances the manifest declares.
Each float32 output's line also gives its max abs and max rel error.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import warp as wp

from wrpkg import golden
from wrpkg.errors import ArchMismatchError
from wrpkg.golden import golden_tolerance
from wrpkg.load import load


def float_errors(want: bytes, got: bytes) -> str:
    """Max abs and max rel (|replay - golden| / |golden|, over golden != 0) as float32 values."""
    if len(want) != len(got) or len(want) % 4:
        return ""
    g = np.frombuffer(want, dtype="<f4").astype(np.float64)
    a = np.frombuffer(got, dtype="<f4").astype(np.float64)
    diff = np.abs(a - g)
    nonzero = g != 0
    rel = float((diff[nonzero] / np.abs(g[nonzero])).max(initial=0.0))
    return f" [max abs {float(diff.max(initial=0.0)):.3g}, max rel {rel:.3g}]"


def compare(graph, bundle: Path, manifest: dict, golden_dir: Path | None, exact: bool) -> list[str]:
    failures = []
    sizes = {b["name"]: b["bytes"] for b in manifest["bindings"]}
    for g in manifest["golden"]:
        source = golden_dir / Path(g["file"]).name if golden_dir else bundle / g["file"]
        want = np.frombuffer(source.read_bytes(), dtype=np.uint8)
        out = wp.zeros(sizes[g["name"]], dtype=wp.uint8, device="cuda:0")
        graph.get_param(g["name"], out)
        got = out.numpy()
        tol = None if exact else golden_tolerance(g)
        result = golden.compare(want.tobytes(), got.tobytes(), tol)
        ok = result.match
        # Outputs with a declared tolerance are float32; the others may be integers.
        errors = float_errors(want.tobytes(), got.tobytes()) if golden_tolerance(g) else ""
        print(f"    {g['name']:<14} {result.detail}{errors}: {'OK' if ok else 'MISMATCH'}")
        if not ok:
            failures.append(g["name"])
    return failures


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("bundle")
    parser.add_argument("--stock", action="store_true")
    parser.add_argument("--expect-mismatch", action="store_true")
    parser.add_argument("--golden-dir", type=Path)
    parser.add_argument("--exact", action="store_true")
    args = parser.parse_args()
    bundle = Path(args.bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    # The golden outputs are in the test manifest, outside the content hash.
    manifest["golden"] = json.loads((bundle / "golden.json").read_text())["golden"]
    wp.init()
    wp.synchronize_device("cuda:0")
    t0 = time.perf_counter()
    try:
        if args.stock:
            graph = wp.capture_load(str(bundle / manifest["wrp"]), device="cuda:0")
        else:
            graph, _ = load(bundle, device="cuda:0")
    except ArchMismatchError as err:
        print(f"  {bundle.name}: refused: {err}")
        return 0 if args.expect_mismatch else 1
    load_ms = (time.perf_counter() - t0) * 1e3
    if args.expect_mismatch:
        print(f"  {bundle.name}: loaded, but a mismatch was expected")
        return 1
    wp.capture_launch(graph)
    wp.synchronize_device("cuda:0")
    print(
        f"  {bundle.name} ({'stock wp.capture_load' if args.stock else 'wrpkg.load'}): loaded in {load_ms:.0f} ms"
    )
    compiled = sorted(p.name for p in bundle.rglob("apic_guest_*"))
    print(f"  Warp compiled retained source at load: {', '.join(compiled) if compiled else 'no'}")
    failures = compare(graph, bundle, manifest, args.golden_dir, args.exact)
    print(f"  {bundle.name}: {'PASS' if not failures else 'FAIL ' + ', '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
