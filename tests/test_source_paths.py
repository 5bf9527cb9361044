"""Generated Warp code names Python source files the same way wherever the capture runs.

Warp writes the absolute path of each `@wp.func`'s file above the function in the generated
`.cu`; rules_warp makes it relative (wrpkg/capture/source_paths.py). A program with `@wp.func`s in
the script and in a sibling module, copied to two folders and retargeted from each, must
give byte-identical canonical captures that name no absolute path; a path Warp wrote before
the relocation is rewritten (with the module record's source digest), and one that cannot be
made relative is refused."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wrpkg import wrpformat
from wrpkg.capture.retarget import compare_captures
from wrpkg.errors import CaptureError

REPO = Path(__file__).resolve().parent.parent
PROGRAMS = REPO / "tests" / "programs_retarget"
FILES = ("func_paths.py", "func_paths_helpers.py")


def capture_copy(root: Path) -> Path:
    src = root / "src"
    src.mkdir(parents=True)
    for name in FILES:
        shutil.copyfile(PROGRAMS / name, src / name)
    out = root / "out"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    cmd = [sys.executable, "-m", "wrpkg.capture", "--script", str(src / "func_paths.py"), "--device", "cuda"]
    cmd += ["--mode", "retarget", "--out-dir", str(out), "--stem", "func_paths", "--label", "//t:paths"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    roots = [tmp_path_factory.mktemp("first") / "a", tmp_path_factory.mktemp("second") / "deeper" / "b"]
    return roots, [capture_copy(root) for root in roots]


def sources(out: Path) -> dict[str, bytes]:
    modules = out / "func_paths_modules"
    return {
        name: (modules / name).read_bytes() for name in sorted(os.listdir(modules)) if name.endswith(".cu")
    }


def test_two_folders_give_the_same_bytes(captures):
    roots, outs = captures
    assert compare_captures(outs[0], outs[1], "func_paths") == []
    for root, out in zip(roots, outs, strict=True):
        (cu,) = sources(out).values()
        text = cu.decode()
        # Warp's comment above each generated function names the file, relative.
        assert "\n// func_paths.py:" in text and "\n// func_paths_helpers.py:" in text
        assert str(root) not in text and os.path.realpath(root) not in text
        assert "\n// /" not in text
        wrp_bytes = (out / "func_paths.wrp").read_bytes()
        assert str(root).encode() not in wrp_bytes


def test_module_records_name_the_rewritten_source(captures):
    _, outs = captures
    wrp = wrpformat.read_wrp(outs[0] / "func_paths.wrp")
    (module,) = wrp.metadata.modules
    data = (outs[0] / "func_paths_modules" / module.source_filename).read_bytes()
    assert module.source_sha256 == hashlib.sha256(data).hexdigest()


def _copy_capture(out: Path, dest: Path) -> tuple[Path, Path, Path]:
    shutil.copytree(out, dest)
    wrp = wrpformat.read_wrp(dest / "func_paths.wrp")
    (module,) = wrp.metadata.modules
    return (
        dest / "func_paths.wrp",
        dest / "func_paths_modules",
        dest / "func_paths_modules" / module.source_filename,
    )


def _with_source(wrp_path: Path, source: Path, text: str) -> None:
    """Puts `text` in place of the retained source, with a matching digest (as Warp would
    have saved code generated before the relocation)."""
    source.write_text(text)
    wrp = wrpformat.read_wrp(wrp_path)
    wrp.metadata.modules[0].source_sha256 = hashlib.sha256(text.encode()).hexdigest()
    wrpformat.write_wrp(wrp, wrp_path)


def test_code_generated_before_relocation_is_rewritten(captures, tmp_path):
    from wrpkg.capture.source_paths import canonicalize_sources  # noqa: PLC0415

    _, outs = captures
    wrp_path, modules, source = _copy_capture(outs[0], tmp_path / "c")
    original = source.read_text()
    absolute = str(tmp_path / "elsewhere" / "func_paths.py")
    stale = original.replace("\n// func_paths.py:", f"\n// {absolute}:")
    stale += f'#line 16 "{absolute}"\n'
    _with_source(wrp_path, source, stale)
    before = wrp_path.read_bytes()
    wrp = wrpformat.read_wrp(wrp_path)
    rewritten = canonicalize_sources(wrp, modules, {absolute: "func_paths.py"}, "//t:paths")
    assert rewritten == [source.name]
    assert source.read_text() == original + '#line 16 "func_paths.py"\n'
    # The record is updated in memory; the capture writes the .wrp once, after every stage.
    (record,) = wrp.metadata.modules
    assert record.source_sha256 == hashlib.sha256(source.read_bytes()).hexdigest()
    assert wrp_path.read_bytes() == before


def test_an_absolute_path_left_is_refused(captures, tmp_path):
    from wrpkg.capture.source_paths import canonicalize_sources  # noqa: PLC0415

    _, outs = captures
    wrp_path, modules, source = _copy_capture(outs[0], tmp_path / "c")
    before = wrp_path.read_bytes()
    unknown = source.read_text().replace("\n// func_paths.py:", "\n// /other/checkout/func_paths.py:", 1)
    _with_source(wrp_path, source, unknown)
    with pytest.raises(CaptureError) as error:
        canonicalize_sources(wrpformat.read_wrp(wrp_path), modules, {}, "//t:paths")
    message = str(error.value)
    assert "//t:paths" in message and "machine-specific path '// /other/checkout/func_paths.py:" in message
    assert "fresh kernel cache" in message
    assert wrp_path.read_bytes() != before  # the test's own edit, untouched by the refusal
    assert source.read_text() == unknown


def test_a_working_directory_of_root_is_a_root(monkeypatch):
    """A remote worker runs the action from its input root: the execroot is "/" there, and
    /models/cloth.py must read models/cloth.py as it does in a local sandbox."""
    from wrpkg.capture.source_paths import stable_path  # noqa: PLC0415

    monkeypatch.chdir("/")
    monkeypatch.setattr(sys, "path", ["/usr/lib/python3/dist-packages"])
    assert stable_path("/models/cloth_kernels.py") == "models/cloth_kernels.py"
    # "/" on sys.path alone is no root: only the working directory makes it one.
    monkeypatch.chdir("/tmp")
    monkeypatch.setattr(sys, "path", ["/"])
    assert stable_path("/models/cloth_kernels.py") is None
