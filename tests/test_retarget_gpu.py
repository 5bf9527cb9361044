"""On a CUDA GPU (tagged gpu): each program retargeted from a CPU capture is byte-identical in
canonical form to its native CUDA capture, and the retargeted .wrp replays on the GPU to the
native capture's golden bytes and to the retargeted (CPU-replayed) golden values within the
declared tolerances. The comparison is tools/gpu/retarget_check.py's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PROGRAMS = [
    REPO / "models" / "sim.py",
    REPO / "models" / "cloth.py",
    REPO / "tests" / "programs_retarget" / "launch_forms.py",
    # @wp.funcs: Warp names their files in the generated code (wrpkg/source_paths.py).
    REPO / "tests" / "programs_retarget" / "func_paths.py",
]


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


@pytest.mark.parametrize("script", PROGRAMS, ids=lambda p: p.name)
def test_retargeted_equals_native(tmp_path, script):
    retargeted = tmp_path / "retargeted"
    cmd = [sys.executable, "-m", "wrpkg.capture", "--script", str(script), "--device", "cuda"]
    cmd += ["--mode", "retarget", "--out-dir", str(retargeted / script.stem), "--stem", script.stem]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=900)
    assert proc.returncode == 0, proc.stderr
    report = tmp_path / "report.json"
    check = [
        sys.executable,
        str(REPO / "tools" / "gpu" / "retarget_check.py"),
        "--retargeted",
        str(retargeted),
    ]
    check += ["--report", str(report), "--work", str(tmp_path / "native"), str(script)]
    proc = subprocess.run(check, capture_output=True, text=True, env=_env(), timeout=900)
    assert report.is_file(), proc.stderr
    (result,) = json.loads(report.read_text())
    assert result["native_capture_rc"] == 0, result.get("native_capture_error")
    assert result["canonical_differences"] == []
    for name, output in result["outputs"].items():
        assert output["replay_equals_native_golden"], name
        # What a retargeted bundle's CUDA replay test checks: its CPU golden values, within
        # the tolerance the script declares for the output (bit-exact where it declares none).
        assert output["vs_cpu_golden"]["within_tolerance"], (name, output["vs_cpu_golden"])
