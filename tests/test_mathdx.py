"""MathDx tile modules (wp.tile_matmul, tile_fft, tile_cholesky; wrpkg.mathdx) without a GPU.

//tests:mathdx_matmul_wrp is tests/programs_mathdx/tile_matmul.py (a 16x16 tile_matmul beside an
ordinary kernel of another module) retargeted on the CPU and compiled for sm_90 by the per-SM
compile action, which rebuilds the MathDx module with Warp from the capture script. Checked here:
the retargeted capture is byte-identical in canonical form to the same program captured natively
on an H200 (tests/fixtures/mathdx_matmul_h200), the bundle's fatbin holds Warp's rebuilt linked
cubin (the H200's, byte for byte) and no PTX for that module, and the compiles that cannot
rebuild such a module say so, naming it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wrpkg import mathdx, wrpformat
from wrpkg.build.compile import compile_wrp
from wrpkg.capture.retarget import compare_captures
from wrpkg.errors import CompileError
from wrpkg.reader import fatbin, inspection

REPO = Path(__file__).resolve().parent.parent
NATIVE = REPO / "tests" / "fixtures" / "mathdx_matmul_h200"
SCRIPT = REPO / "tests" / "programs_mathdx" / "tile_matmul.py"
STEM = "tile_matmul"
NATIVE_CUBIN = NATIVE / "tile_matmul_modules" / "wp_tile_matmul_f50f2db.sm90.cubin"


@pytest.fixture
def raw() -> Path:
    return Path(os.environ["WRP_MATHDX_RAW"])


@pytest.fixture
def bundle() -> Path:
    return Path(os.environ["WRP_MATHDX_BUNDLE"])


def _records(wrp_path: Path) -> dict[str, wrpformat.ModuleRecord]:
    return {m.name: m for m in wrpformat.read_wrp(wrp_path).metadata.modules}


def test_retargeted_capture_is_the_h200_capture(raw):
    assert compare_captures(raw, NATIVE, STEM) == []


def test_module_records(raw):
    records = _records(raw / f"{STEM}.wrp")
    linked, plain = records["tile_matmul"], records["plain_kernels"]
    # The MathDx module: Warp's linked cubin, its digest and recipe, no source (LINK_INPUTS).
    assert mathdx.is_linked(linked)
    assert (linked.binary_kind, linked.target_arch, linked.source_filename) == (
        wrpformat.BinaryKind.CUBIN,
        90,
        "",
    )
    assert linked.binary_sha256 and wrpformat.validate_module(linked, wrpformat.DeviceType.CUDA) is None
    # The ordinary module keeps its source, as capture_save(source_fallback=True) writes it.
    assert plain.fallback_reason == wrpformat.FallbackReason.AVAILABLE and plain.source_filename.endswith(
        ".cu"
    )
    assert sorted(os.listdir(raw / f"{STEM}_modules")) == sorted(
        [linked.binary_filename, plain.binary_filename, plain.source_filename]
    )
    assert json.loads((raw / "capture.json").read_text())["mathdx_linked_modules"] == ["tile_matmul"]


def test_bundle_holds_warps_per_sm_linked_cubin_and_no_ptx(bundle):
    manifest = json.loads((bundle / "manifest.json").read_text())
    modules = {m["name"]: m for m in manifest["modules"]}
    linked, plain = modules["tile_matmul"], modules["plain_kernels"]
    assert [s["arch"] for s in linked["sass"]] == ["sm_90"]
    assert linked["ptx"] is None and linked["source"] is None and linked["no_ptx"] == mathdx.NO_PTX_NOTE
    assert plain["ptx"] is not None and plain["source"] is not None and "no_ptx" not in plain
    data = (bundle / linked["binary"]).read_bytes()
    images = fatbin.parse_fatbin(data)
    assert [image.kind for image in images] == [fatbin.KIND_ELF]
    # The compile action's sm_90 rebuild (Warp's Module._compile from the script) is the H200's cubin.
    assert bytes(fatbin.sass_image(data, "sm_90")) == NATIVE_CUBIN.read_bytes()
    record = _records(bundle / f"{STEM}.wrp")["tile_matmul"]
    assert mathdx.is_linked(record) and record.binary_filename.endswith(".fatbin.cubin")


def test_inspect_names_the_linked_module(bundle):
    summary = inspection.summarize(bundle / f"{STEM}.wrp")
    linked = {m["name"]: m["linked"] for m in summary["modules"]}
    assert linked == {"tile_matmul": mathdx.NO_PTX_NOTE, "plain_kernels": None}
    assert f"[{mathdx.NO_PTX_NOTE}]" in inspection.render_text(summary)
    # The bundle as a whole: PTX only where every module has it (none here), and why not.
    text = inspection.render_bundle_text(inspection.summarize_bundle(bundle))
    assert f"PTX: none\n  tile_matmul: {mathdx.NO_PTX_NOTE}\n" in text, text


def test_compile_without_the_script_serves_only_the_capture_sm(tmp_path):
    wrp, modules = NATIVE / f"{STEM}.wrp", NATIVE / f"{STEM}_modules"
    result = compile_wrp(wrp, modules, "sm_90", tmp_path / "sm_90", label="//t:m")
    entry = {m["name"]: m for m in result["modules"]}["tile_matmul"]
    assert entry["linked"] and entry["built_by"].startswith("the capture")
    assert entry["sha256"] == _records(wrp)["tile_matmul"].binary_sha256
    with pytest.raises(CompileError) as err:
        compile_wrp(wrp, modules, "sm_80", tmp_path / "sm_80", label="//t:m")
    message = str(err.value)
    assert "//t:m: module tile_matmul (f50f2dbaa639) links MathDx LTO-IR" in message
    assert "capture script" in message and "sm_80" in message


def test_ptx_compile_skips_the_linked_module(tmp_path):
    wrp, modules = NATIVE / f"{STEM}.wrp", NATIVE / f"{STEM}_modules"
    result = compile_wrp(wrp, modules, "compute_75", tmp_path / "ptx", label="//t:m")
    assert [m["name"] for m in result["modules"]] == ["plain_kernels"]
    assert result["skipped"] == [
        {
            "hash": _records(wrp)["tile_matmul"].hash,
            "name": "tile_matmul",
            "reason": "link_inputs",
            "note": mathdx.NO_PTX_NOTE,
        }
    ]


@pytest.mark.parametrize("out", ["out", "not/yet/made/out"])
def test_compile_refuses_a_script_that_no_longer_makes_the_module(tmp_path, out):
    # The kernel edited after the capture: Warp would build another module, so the compile refuses
    # (before building anything) instead of packaging it. Issue 40: an --out-dir whose parent does not
    # exist yet is made (before, mkdtemp beside it raised FileNotFoundError, a traceback).
    script = tmp_path / "scripts" / "tile_matmul.py"
    script.parent.mkdir()
    text = SCRIPT.read_text()
    assert "tc = wp.tile_zeros(shape=(TILE, TILE), dtype=float)" in text
    script.write_text(
        text.replace("dtype=float)\n    wp.tile_matmul", "dtype=wp.float32)\n    wp.tile_matmul")
    )
    (script.parent / "plain_kernels.py").write_text((SCRIPT.parent / "plain_kernels.py").read_text())
    cmd = [sys.executable, "-m", "wrpkg.build.compile", "--wrp", str(NATIVE / f"{STEM}.wrp")]
    cmd += [
        "--modules-dir",
        str(NATIVE / f"{STEM}_modules"),
        "--arch",
        "sm_90",
        "--out-dir",
        str(tmp_path / out),
    ]
    cmd += ["--script", str(script), "--label", "//t:m"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode != 0
    assert "//t:m: module tile_matmul (f50f2dbaa639) links MathDx LTO-IR" in proc.stderr, proc.stderr
    assert "not the captured one (module 'tile_matmul': kernel 'matmul' (tile_matmul.py:17))" in proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / out).exists()
