"""A kernel cache made once (wrpkg.capture.kernel_cache, wrp_kernel_cache) seeds captures: they compile
only what it lacks, and write the same bytes as captures that compiled everything themselves."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
from pathlib import Path

import pytest
from wrp_testing import run_python

from wrpkg import wrpformat
from wrpkg.wrpformat.canonical import canonicalize

# A library installed outside the workspace, as Newton is: its kernels are what the cache holds.
LIBRARY = """
from typing import Any

import warp as wp


# Generic: Warp makes the float32 overload's Adjoint while it generates code, after the tool has
# made the sources' paths relative (as MuJoCo Warp's math.py functions are).
@wp.func
def advance(x: Any, v: Any, dt: Any):
    return x + v * dt


@wp.kernel
def integrate(x: wp.array(dtype=float), v: wp.array(dtype=float), dt: float):
    i = wp.tid()
    v[i] = v[i] - 9.81 * dt
    x[i] = advance(x[i], v[i], dt)


@wp.kernel
def never_launched(x: wp.array(dtype=float)):
    x[wp.tid()] = 0.0


def make_damping(factor: float):
    # A factory's kernel: its Warp module is named after it, not after this file.
    @wp.kernel(module="unique")
    def damp(v: wp.array(dtype=float)):
        v[wp.tid()] = v[wp.tid()] * factor

    return damp


damp_half = make_damping(0.5)  # made at import, never launched by the step


class Solver:
    def step(self, x, v, dt):
        wp.launch(integrate, dim=x.shape[0], inputs=[x, v, dt], device=x.device)
"""

SCRIPT = """
import numpy as np
import warp as wp

from kc_physics.solver import Solver
from wrpkg.capture import CaptureSpec


def build(device):
    x = wp.array(np.linspace(0.0, 1.0, 64, dtype=np.float32), device=device)
    v = wp.zeros(64, dtype=float, device=device)
    solver = Solver()

    def step():
        for _ in range(4):
            solver.step(x, v, 0.01)

    return CaptureSpec(step=step, inputs={"v": v}, outputs={"x": x})
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    root = tmp_path_factory.mktemp("program")
    package = root / "site" / "kc_physics"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "solver.py").write_text(LIBRARY)
    # Test modules beside the code (MuJoCo Warp's collision_driver_test.py) are not the library's.
    for name in ("solver_test.py", "test_solver.py"):
        (package / name).write_text("raise RuntimeError('a test module was imported')\n")
    (root / "falling.py").write_text(SCRIPT)
    return root


def _env(program: Path) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join([str(program / "site"), os.environ.get("PYTHONPATH", "")])}


def _make_cache(program: Path, out: Path, *extra: str):
    proc = run_python(
        "-m",
        "wrpkg.capture.kernel_cache",
        "--package",
        "kc_physics",
        "--out-dir",
        str(out),
        *extra,
        env_extra=_env(program),
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads((out / "kernel_cache.json").read_text())


@pytest.fixture(scope="module")
def seed(program, tmp_path_factory):
    """The two halves wrp_kernel_cache makes in two actions: CPU objects, and sm_90 compiles."""
    root = tmp_path_factory.mktemp("seed")
    cpu = _make_cache(program, root / "kernels_cpu")
    cuda = _make_cache(program, root / "kernels_sm90", "--cuda-arch", "90", "--no-cpu")
    return root, cpu, cuda


def _capture(program: Path, out: Path, *extra: str) -> str:
    proc = run_python(
        "-m", "wrpkg.capture", "--script", str(program / "falling.py"), "--out-dir", str(out), "--stem", "sim",
        *extra, env_extra=_env(program),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def _files(out: Path) -> dict[str, str]:
    """Every file of a capture but the raw .wrp (its pointer slots differ run to run) and capture.json."""
    found = {}
    for path in sorted(out.rglob("*")):
        assert not path.is_symlink(), f"{path} is a link into the seed"
        if path.is_file() and path.suffix != ".wrp" and path.name != "capture.json":
            found[str(path.relative_to(out))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _canonical(out: Path) -> str:
    return hashlib.sha256(canonicalize(wrpformat.read_wrp(out / "sim.wrp")).to_bytes()).hexdigest()


def test_the_cache_holds_every_module_of_the_package(seed):
    root, cpu, cuda = seed
    for manifest in cpu, cuda:
        assert manifest["packages"] == ["kc_physics"]
        # The package's module, and its factory's (found by the file its kernel comes from).
        modules = sorted(entry["module"] for entry in manifest["compiled"])
        assert modules[0] == "kc_physics.solver" and modules[1].startswith("make_damping__locals__damp_"), (
            modules
        )
        assert manifest["not_compiled"] == []
        assert manifest["not_imported"] == []  # the test modules were not imported
    assert (cpu["cpu"], cpu["cuda_arch"], cuda["cpu"], cuda["cuda_arch"]) == (True, None, False, 90)
    cpu_dir, cuda_dir = root / "kernels_cpu" / cpu["warp"], root / "kernels_sm90" / cuda["warp"]
    solver = next(e for e in cpu["compiled"] if e["module"] == "kc_physics.solver")
    assert f"wp_kc_physics.solver_{solver['cpu_hash'][:7]}" in [p.name for p in cpu_dir.iterdir()]
    assert [p.name for p in cuda_dir.iterdir()] == ["wrpkg_retarget"]
    assert list((cuda_dir / "wrpkg_retarget").glob("wp_kc_physics.solver_*.sm90/*.sm90.cubin"))
    # Warp's per-process build folders are not cache content; nothing names this machine's paths.
    for path in root.rglob("*"):
        assert not (path.is_dir() and re.search(r"_p[0-9]+_t[0-9]+$", path.name)), path
        if path.is_file():
            assert str(root).encode() not in path.read_bytes(), path


def test_an_excluded_module_is_left_to_the_captures(program, tmp_path):
    """wrp_kernel_cache(exclude=...): modules matching a glob are not compiled, and are listed."""
    manifest = _make_cache(program, tmp_path / "kernels_cpu", "--exclude", "make_damping__locals__*")
    assert [e["module"] for e in manifest["compiled"]] == ["kc_physics.solver"]
    assert len(manifest["excluded"]) == 1 and manifest["excluded"][0].startswith(
        "make_damping__locals__damp_"
    )


@pytest.mark.parametrize("mode", ["cpu", "retarget"])
def test_a_seeded_capture_compiles_nothing_and_writes_the_same_bytes(program, seed, tmp_path, mode):
    extra = ["--device", "cpu"] if mode == "cpu" else ["--device", "cuda", "--mode", "retarget"]
    seeds = ["--seed-cache", str(seed[0] / "kernels_cpu")]
    if mode == "retarget":
        seeds += ["--seed-cache", str(seed[0] / "kernels_sm90")]
    seeded_log = _capture(program, tmp_path / "seeded", *extra, *seeds)
    fresh_log = _capture(program, tmp_path / "fresh", *extra)
    # The capture without a seed compiles the library's launched module, and only that one (not its
    # factory's, which the step does not launch); the seeded one finds it.
    assert "compiling CPU module 1/1: kc_physics.solver" in fresh_log, fresh_log
    assert "compiling CPU module" not in seeded_log
    if mode == "retarget":
        assert "compiling CUDA module kc_physics.solver" in fresh_log
        assert "compiling CUDA module" not in seeded_log
    assert _files(tmp_path / "seeded") == _files(tmp_path / "fresh")
    assert _canonical(tmp_path / "seeded") == _canonical(tmp_path / "fresh")


def test_a_seed_of_another_warp_is_refused_with_the_fix(program, seed, tmp_path):
    manifest = seed[1]
    other = tmp_path / "other"
    other.mkdir()
    (other / "kernel_cache.json").write_text(json.dumps(dict(manifest, warp="0.0.1")))
    (other / "0.0.1").mkdir()
    proc = run_python(
        "-m", "wrpkg.capture", "--script", str(program / "falling.py"), "--device", "cpu",
        "--out-dir", str(tmp_path / "cap"), "--stem", "sim", "--seed-cache", str(other), env_extra=_env(program),
    )  # fmt: skip
    assert proc.returncode != 0
    assert f"kernel cache seed {other} has no folder for Warp" in proc.stderr
    assert "made with Warp 0.0.1" in proc.stderr and "rebuild the wrp_kernel_cache target" in proc.stderr
    assert not (tmp_path / "cap").exists()


def test_a_package_that_does_not_import_is_named(program, tmp_path):
    proc = run_python(
        "-m", "wrpkg.capture.kernel_cache", "--package", "no_such_physics", "--out-dir", str(tmp_path / "kc"),
        env_extra=_env(program),
    )  # fmt: skip
    assert proc.returncode != 0
    assert "importing no_such_physics raised ModuleNotFoundError" in proc.stderr
    assert not (tmp_path / "kc").exists()


def test_paths_left_in_generated_code_are_made_stable_or_the_module_is_left_out(tmp_path, monkeypatch):
    """Functions Warp makes while it generates code (MuJoCo Warp's generic math.py helpers) name
    the kernel-cache action's sandbox: rewritten as a capture rewrites its own, or, where a machine
    path would stay, the module is left to the captures to compile."""
    from wrpkg.capture import kernel_cache

    monkeypatch.chdir(tmp_path)  # the working directory is a machine path, as a sandbox's is
    site = tmp_path / "sandbox" / "site-packages"
    cache = tmp_path / "cache"
    kept = cache / "wp_lib.a_1234567"
    kept.mkdir(parents=True)
    (kept / "wp_lib.a_1234567.cpp").write_text(f"// {site}/lib/math.py:0\nstatic void normalize_0();\n")
    (kept / "wp_lib.a_1234567.o").write_bytes(b"\x7fELF object")
    left_out = cache / kernel_cache.RETARGET_DIR / "wp_lib.b_7654321.sm90"
    left_out.mkdir(parents=True)
    (left_out / "wp_lib.b_7654321.cu").write_text("// lib/b.py:3\n")
    (left_out / "wp_lib.b_7654321.sm90.cubin").write_bytes(b"\x7fELF " + str(tmp_path / "x.cu").encode())

    dropped = kernel_cache.stabilize_sources(cache, {f"{site}/lib/math.py": "lib/math.py"})

    assert (kept / "wp_lib.a_1234567.cpp").read_text() == "// lib/math.py:0\nstatic void normalize_0();\n"
    assert not left_out.exists()
    assert [d["folder"] for d in dropped] == [f"{kernel_cache.RETARGET_DIR}/wp_lib.b_7654321.sm90"]
    assert str(tmp_path) in dropped[0]["reason"]


def test_a_factory_module_is_known_by_the_file_of_its_kernel(program, monkeypatch):
    """A library factory's module (Newton's narrow_phase_primitive_write_contact_False_False_False)
    is named after its kernel: where it comes from is its kernel's file. Taken by its name, it was
    the capture's own and a GPU capture compiled it before the step, launched or not (a Newton
    pendulum's capture on an H200 ran past 470 s)."""
    import warp as wp

    from wrpkg import warp_internals
    from wrpkg.capture import call_sites

    monkeypatch.syspath_prepend(str(program / "site"))
    monkeypatch.chdir(program)
    wp.init()
    solver = importlib.import_module("kc_physics.solver")
    factory = solver.damp_half.module
    assert factory.name.startswith("make_damping__locals__damp_")
    library_file = str(program / "site" / "kc_physics" / "solver.py")
    assert call_sites.module_source_files(factory) == {library_file}
    assert call_sites.module_source_files(warp_internals.context().user_modules["kc_physics.solver"]) == {
        library_file
    }
    assert (
        call_sites.is_installed(library_file, (str(program),)) is False
    )  # inside the working directory here
    (program / "workspace").mkdir(exist_ok=True)
    monkeypatch.chdir(program / "workspace")  # a Bazel action's execroot, outside the library's folder
    assert call_sites.is_installed(library_file, (str(program / "workspace"),)) is True
