"""The PTX compiler: NVRTC 13.0.88 in its own venv (toolchains/cuda:nvrtc_13_0), run the
way the PTX compile action runs it (`python -m wrpkg.build.compile --arch compute_75`).

Why it exists: PTX from NVRTC 13.4 (ISA 9.4) does not JIT on a CUDA 13.0 driver (seen on
an H200, driver 580); NVRTC 13.0's PTX (ISA 9.0) JITs on every CUDA 13 driver. No GPU
needed: this checks what the PTX is and which NVRTC wrote it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from wrp_testing import run_python

from wrpkg import archs
from wrpkg.cuda_tools import ptx_isa_version
from wrpkg.wrpformat import read_wrp

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "cuda-sm90-particles"
WRP = FIXTURE / "sim.wrp"
MODULES = FIXTURE / "sim_modules"


def _ptx_python() -> Path:
    """The PTX toolchain's interpreter: $(rootpath @rules_warp_toolchains//:nvrtc_13_0) under Bazel;
    outside it, the venv Bazel made (bazel-<workspace>/external/wrp_nvrtc_13_0_venv)."""
    given = os.environ.get("WRP_PTX_PYTHON")
    if given:
        return Path(given).absolute()  # not resolved: the venv is found from this path
    found = sorted(ROOT.glob("bazel-*/external/wrp_nvrtc_13_0_venv/venv/bin/python3"))
    if not found:
        pytest.fail(
            "the PTX compiler's venv is missing: run `bazel test //tests:ptx_toolchain_test`, "
            "or `bazel build @rules_warp_toolchains//:nvrtc_13_0` once before running pytest directly"
        )
    return found[0]


def _run_ptx_python(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    # A clean environment, as the Bazel action has: no host CUDA, no user site-packages.
    env = {
        "PATH": os.defpath,
        "PYTHONPATH": str(ROOT),
        "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
    }
    return run_python(*args, python=_ptx_python(), env=env, cwd=cwd, timeout=600)


@pytest.fixture(scope="module")
def ptx_compile(tmp_path_factory):
    out = tmp_path_factory.mktemp("ptx") / "compute_75"
    done = _run_ptx_python(
        "-m", "wrpkg.build.compile", "--wrp", str(WRP), "--modules-dir", str(MODULES),
        "--arch", "compute_75", "--out-dir", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out, done.stderr


def test_ptx_is_isa_9_0_from_nvrtc_13_0_88(ptx_compile):
    out, log = ptx_compile
    (module,) = read_wrp(WRP).metadata.modules
    ptx_path = out / f"{module.hash}.compute_75.ptx"
    ptx = ptx_path.read_bytes()
    assert sorted(p.name for p in out.iterdir()) == sorted([ptx_path.name, "compile.json"])
    header = ptx[:2000].decode()
    assert "\n.version 9.0\n" in header and "\n.target sm_75\n" in header
    assert ptx_isa_version(ptx) == "9.0"
    assert ptx.endswith(b"\0")  # NUL-terminated, as Warp writes .ptx files
    assert "with NVRTC 13.0.88" in log

    listing = json.loads((out / "compile.json").read_text())
    assert listing["arch"] == "compute_75" and listing["kind"] == "ptx"
    toolchain = listing["toolchain"]
    assert toolchain["nvrtc"] == toolchain["toolchain"] == archs.PTX_TOOLCHAIN == "13.0.88"
    assert toolchain["nvrtc_api"] == "13.0"
    # wrpkg.archs' table for 13.0.88 is what that NVRTC's nvrtcGetSupportedArchs() says.
    assert toolchain["supported_sms"] == list(archs.SUPPORTED_SMS["13.0.88"])
    assert "nvfatbin" not in toolchain  # the PTX venv holds no packing tools
    (entry,) = listing["modules"]
    assert entry["ptx_isa_version"] == "9.0" and entry["nvrtc_arch"] == "compute_75"
    assert entry["size"] == len(ptx) and "matches_packaged_binary" not in entry


def test_nvrtc_options_follow_the_loaded_nvrtc():
    # Warp's CUDA >= 13.1 workaround (--Ofast-compile=mid for -O0) must not apply to NVRTC 13.0.
    code = "\n".join([
        "from wrpkg import cuda_tools",
        "from wrpkg.recipe import CompileRecipe",
        "v = cuda_tools.nvrtc_cuda_version()",
        "print(cuda_tools.pinned_nvrtc_version(), v)",
        "print(CompileRecipe(optimization_level=0).nvrtc_options('compute_75', '/i', cuda_version=v)[3].decode())",
    ])  # fmt: skip
    done = _run_ptx_python("-c", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["13.0.88 13000", "--Ofast-compile=max"]


def test_ptx_compiler_refuses_sass_archs_its_nvrtc_lacks(tmp_path):
    # sm_107 is an NVRTC 13.4 target that 13.0.88 does not have: the arch check uses the
    # installed NVRTC's list, not the SASS toolchain's.
    assert 107 in archs.SUPPORTED_SMS[archs.DEFAULT_TOOLCHAIN]
    assert 107 not in archs.SUPPORTED_SMS[archs.PTX_TOOLCHAIN]
    done = _run_ptx_python(
        "-m", "wrpkg.build.compile", "--wrp", str(WRP), "--modules-dir", str(MODULES),
        "--arch", "compute_107", "--out-dir", str(tmp_path / "out"),
    )  # fmt: skip
    assert done.returncode != 0
    assert "NVRTC 13.0.88 has no target sm_107" in done.stderr
    assert not (tmp_path / "out").exists()
