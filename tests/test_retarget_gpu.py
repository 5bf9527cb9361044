"""On a CUDA GPU (tagged gpu): each program of the corpus retargeted from a CPU capture is
byte-identical in canonical form to its native CUDA capture (or differs where the capture says
why), and the retargeted .wrp replays on the GPU to the native capture's golden bytes; whether
its CPU-made goldens hold there is recorded per program. The comparison is
tools/gpu/retarget_check.py's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CAPTURE = REPO / "tests" / "programs_capture"
# Each program and what its retargeted capture is expected to be against the native one:
# identical: byte-identical in canonical form; cpu_goldens_hold: the GPU replay meets the
# CPU-made goldens (bit-exact, or within the declared tolerance). Where they do not, the
# bundle's gpu replay tests use goldens made on the GPU (--//rules:gpu_goldens). The last
# run on an H200: docs/bench/results/retarget_corpus_h200.json.
PROGRAMS = {
    REPO / "models" / "sim.py": {"identical": True, "cpu_goldens_hold": True},
    REPO / "models" / "cloth.py": {"identical": True, "cpu_goldens_hold": True},
    REPO / "tests" / "programs_retarget" / "launch_forms.py": {"identical": True, "cpu_goldens_hold": True},
    # @wp.funcs: Warp names their files in the generated code (wrpkg/source_paths.py).
    REPO / "tests" / "programs_retarget" / "func_paths.py": {"identical": True, "cpu_goldens_hold": True},
    CAPTURE / "cpu_golden_caveats.py": {"identical": True, "cpu_goldens_hold": True},
    CAPTURE / "view_binding.py": {"identical": True, "cpu_goldens_hold": True},
    CAPTURE / "atomic_sum.py": {"identical": True, "cpu_goldens_hold": True},
    # Mesh queries round differently on the GPU (2.4e-7) and declare no tolerance.
    CAPTURE / "mesh_id_uint64.py": {"identical": True, "cpu_goldens_hold": False},
    # Initial state computed by a kernel in build(): the GPU rounds it differently, so the
    # saved initial state differs; the retargeted capture says so (capture.json).
    CAPTURE / "build_kernel_state.py": {"identical": False, "cpu_goldens_hold": True},
}


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


@pytest.mark.parametrize("script", sorted(PROGRAMS), ids=lambda p: p.name)
def test_retargeted_equals_native(tmp_path, script):
    expected = PROGRAMS[script]
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
    if not expected["identical"]:
        assert result["canonical_differences"], "expected to differ from the native capture, and it does not"
        info = json.loads((retargeted / script.stem / "capture.json").read_text())
        assert info.get("initial_state_from_build_kernels"), "the difference is not named at capture"
        return
    assert result["canonical_differences"] == []
    interface = json.loads((retargeted / script.stem / "interface.json").read_text())
    declared = {
        g["name"] for g in interface["golden"] if g.get("atol") is not None or g.get("rtol") is not None
    }
    for name, output in result["outputs"].items():
        # Same code on the same GPU: bit-exact, unless the output declares a tolerance (atomics).
        assert output["replay_equals_native_golden"] or name in declared, name
    # What a retargeted bundle's replay test checks without --//rules:gpu_goldens: its CPU golden
    # values, within the tolerance the script declares (bit-exact where none).
    holds = {name: o["vs_cpu_golden"]["within_tolerance"] for name, o in result["outputs"].items()}
    assert all(holds.values()) == expected["cpu_goldens_hold"], (holds, result["outputs"])
