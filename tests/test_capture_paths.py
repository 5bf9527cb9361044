"""Outside Bazel, a bundle's bytes depend neither on the working directory nor on how the
capture script's path is written (relative, absolute, through `..`, run from /)."""

from __future__ import annotations

import os

from test_capture import REPO
from wrp_testing import run_python


def _bundle_hash(tmp_path, name, cwd, script):
    raw, out = tmp_path / name / "raw", tmp_path / name
    proc = run_python(
        "-m",
        "wrpkg.capture",
        "--script",
        script,
        "--device",
        "cpu",
        "--out-dir",
        str(raw),
        "--stem",
        "sim",
        cwd=cwd,
    )
    assert proc.returncode == 0, proc.stderr
    args = ["--raw-dir", str(raw), "--stem", "sim", "--name", "sim_wrp", "--label", "//models:sim_cpu_wrp"]
    args += [
        "--out-dir",
        str(out / "sim_wrp"),
        "--tar",
        str(out / "sim_wrp.tar"),
        "--hash",
        str(out / "sim.sha256"),
    ]
    proc = run_python("-m", "wrpkg.build.pack", *args, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return (out / "sim.sha256").read_text().split()[0]


def test_script_path_spellings_give_one_bundle(tmp_path):
    sim = REPO / "models" / "sim.py"
    hashes = {
        "relative from the repository": _bundle_hash(tmp_path, "rel", REPO, "models/sim.py"),
        "absolute from /": _bundle_hash(tmp_path, "abs", "/", str(sim)),
        "./ from its folder": _bundle_hash(tmp_path, "dot", sim.parent, "./sim.py"),
        "through .. from elsewhere": _bundle_hash(
            tmp_path, "up", tmp_path, os.path.relpath(sim.parent / ".." / "models" / "sim.py", tmp_path)
        ),
    }
    print(hashes)
    assert len(set(hashes.values())) == 1, hashes


def test_cpu_tile_objects_name_warps_headers_without_a_machine_path(tmp_path):
    """Tile code expands __FILE__ inside Warp's tile.h (MuJoCo Warp's modules): the CPU object names
    warp/native/tile.h, never the venv's folder."""
    import warp  # noqa: PLC0415 - Warp only where a test needs it

    raw = tmp_path / "raw"
    script = REPO / "tests" / "programs_capture" / "tile_header_path.py"
    args = ["--script", str(script), "--device", "cpu", "--out-dir", str(raw), "--stem", "sim"]
    proc = run_python("-m", "wrpkg.capture", *args)
    assert proc.returncode == 0, proc.stderr
    objects = [p.read_bytes() for p in (raw / "sim_modules").iterdir() if p.suffix == ".o"]
    assert objects and any(b"warp/native/tile.h" in data for data in objects)
    warp_dir = os.path.dirname(os.path.realpath(warp.__file__)).encode()
    assert not any(warp_dir in data for data in objects)


def _retargeted_sources(out, cwd, script) -> dict[str, bytes]:
    args = ["--script", str(script), "--device", "cuda", "--mode", "retarget", "--out-dir", str(out)]
    proc = run_python("-m", "wrpkg.capture", *args, "--stem", "func_paths", "--label", "//t:paths", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    modules = out / "func_paths_modules"
    return {p.name: p.read_bytes() for p in sorted(modules.iterdir()) if p.suffix == ".cu"}


def test_retargeted_source_does_not_depend_on_the_working_directory(tmp_path):
    """Warp writes each @wp.func's file above it in the .cu; run from the repository the script's file
    was named tests/programs_retarget/func_paths.py, run from elsewhere func_paths.py (issue 40)."""
    script = REPO / "tests" / "programs_retarget" / "func_paths.py"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    from_repo = _retargeted_sources(tmp_path / "a", REPO, script)
    from_elsewhere = _retargeted_sources(tmp_path / "b", elsewhere, script)
    assert from_repo and from_repo == from_elsewhere
    (text,) = (data.decode() for data in from_repo.values())
    assert "\n// func_paths.py:" in text and "\n// func_paths_helpers.py:" in text
