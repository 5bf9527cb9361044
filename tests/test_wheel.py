"""`pip install .`: the wheel builds from pyproject.toml with the pinned setuptools, holds
exactly the wrpkg package and its `wrpkg` command, and the installed command runs."""

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURE_WRP = REPO / "tests" / "fixtures" / "cuda-sm90-particles" / "sim.wrp"


def _venv_python() -> str:
    """The pinned venv's interpreter in its repository, not through runfiles: setuptools
    reads a vendored file whose name has a space, which Bazel cannot carry as a runfile."""
    return str(Path(os.path.realpath(os.environ["WRP_VENV_VERSIONS"])).parent / "venv" / "bin" / "python3")


def _pip(*args: str, cwd: Path) -> None:
    # A clean environment: the test's PYTHONPATH (the repository's own wrpkg) stays out.
    env = {"PATH": os.defpath, "HOME": str(cwd), "PYTHONNOUSERSITE": "1", "PIP_NO_CACHE_DIR": "1"}
    done = subprocess.run(
        [_venv_python(), "-m", "pip", "--disable-pip-version-check", "--no-input", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, f"pip {' '.join(args)}:\n{done.stdout}\n{done.stderr}"


def test_wheel_builds_installs_and_runs(tmp_path):
    src = tmp_path / "src"
    (src / "wrpkg").mkdir(parents=True)
    shutil.copy(REPO / "pyproject.toml", src)
    sources = sorted(
        str(p.relative_to(REPO / "wrpkg"))
        for pattern in ("*.py", "schemas/*.json")
        for p in (REPO / "wrpkg").rglob(pattern)
    )
    for name in sources:
        (src / "wrpkg" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / "wrpkg" / name, src / "wrpkg" / name)

    dist = tmp_path / "dist"
    _pip(
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "--no-index",
        "--wheel-dir",
        str(dist),
        str(src),
        cwd=tmp_path,
    )
    (wheel,) = dist.glob("wrpkg-0.1.0-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry_points = archive.read("wrpkg-0.1.0.dist-info/entry_points.txt").decode()
        metadata = archive.read("wrpkg-0.1.0.dist-info/METADATA").decode()
    assert sorted(n[len("wrpkg/") :] for n in names if n.startswith("wrpkg/")) == sources
    assert "wrpkg = wrpkg.cli:main" in entry_points
    assert "Requires-Dist: warp-lang==1.19.0" in metadata

    site = tmp_path / "site"
    _pip("install", "--no-deps", "--no-index", "--target", str(site), str(wheel), cwd=tmp_path)
    # Only the installed copy is importable: no repository checkout on the path.
    env = {"PATH": os.defpath, "PYTHONPATH": str(site), "PYTHONNOUSERSITE": "1", "HOME": str(tmp_path)}
    where = subprocess.run(
        [sys.executable, "-c", "import wrpkg; print(wrpkg.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.strip() == str(site / "wrpkg" / "__init__.py")
    version = subprocess.run(
        [str(site / "bin" / "wrpkg"), "--version"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == "wrpkg 0.1.0 (warp-lang 1.19.0)"
    inspect = subprocess.run(
        [str(site / "bin" / "wrpkg"), "inspect", str(FIXTURE_WRP)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert inspect.returncode == 0, inspect.stderr
    assert "device: cuda   target arch: sm_90" in inspect.stdout


def test_pins_agree():
    """The `cuda` extra installs the very builds the hash-locked venv pins."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    lock = (REPO / "toolchains" / "python" / "requirements.lock").read_text()
    pinned = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", lock, flags=re.M))
    for requirement in [*project["dependencies"], *project["optional-dependencies"]["cuda"]]:
        name, _, version = requirement.partition("==")
        if version:
            assert pinned[name] == version, requirement
