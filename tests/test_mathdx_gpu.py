"""On a CUDA GPU (tagged gpu): MathDx tile programs captured natively, and their retargeted capture
and bundle replayed (tools/gpu/mathdx_native_check.py; the last run on an H200:
docs/bench/results/mathdx_native_h200.json).

For each program of tests/programs_mathdx/: Warp's own capture_save refuses source_fallback=True
and saves binary-only, and that .wrp replays to the eager run's bytes; `wrpkg capture --mode gpu`
keeps each MathDx module as its linked cubin (fallback reason LINK_INPUTS) and replays the same.
For tile_matmul also: the retargeted capture of //tests:mathdx_matmul_wrp is byte-identical to the
native one in canonical form, and it and the bundle (Warp's per-SM rebuild in a fatbin) replay to
the eager bytes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHECK = REPO / "tools" / "gpu" / "mathdx_native_check.py"


def test_mathdx_programs_natively_and_retargeted(tmp_path):
    retargeted = tmp_path / "retargeted"
    retargeted.mkdir()
    (retargeted / "tile_matmul").symlink_to(Path(os.environ["WRP_MATHDX_RAW"]).resolve())
    bundle = Path(os.environ["WRP_MATHDX_BUNDLE"]).resolve()
    cmd = [sys.executable, str(CHECK), str(tmp_path / "out"), "tile_matmul", "tile_fft", "tile_cholesky"]
    cmd += ["--retargeted", str(retargeted), "--bundle", f"tile_matmul={bundle}"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    report = json.loads((tmp_path / "out" / "mathdx_native.json").read_text())
    assert proc.returncode == 0 and report["ok"], proc.stdout[-6000:] + proc.stderr[-3000:]
    for program in report["programs"]:
        assert "external link inputs are required" in program["warp"]["source_fallback_true"]
        linked = [r for r in program["wrpkg"]["records"] if r["fallback_reason"] == "LINK_INPUTS"]
        assert [r["binary_kind"] for r in linked] == ["CUBIN"], program["wrpkg"]["records"]
    matmul = next(p for p in report["programs"] if p["program"] == "tile_matmul.py")
    assert matmul["retarget"]["byte_identical"], matmul["retarget"]
    assert all(matmul["bundles"][bundle.name]["equal_to_eager"].values())
