"""Hostile bundles (issue 26), each made from the good CPU bundle in tmp_path with one defect,
and judged by the Python reader: `wrpkg verify` and `wrpkg inspect` must exit 1 with one
`error:` line that names the file and the defect (no traceback, no hang), and wrpkg.load must
refuse it with a VerifyError; wrpkg.load must hand Warp the bytes it verified.

Where a defect is in manifest.json, the content hash (`<dir>.sha256`, golden.json's
content_hash) is redone, so the defect itself, not the hash check, is what is refused.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from bundle_corpus import _rehash, _tar, _write_canonical

from wrpkg import cli
from wrpkg.errors import VerifyError
from wrpkg.manifest import MAX_JSON_BYTES, MAX_JSON_DEPTH
from wrpkg.verify import verify_bundle, verify_tar

GOOD_DIR = Path(os.environ["WRP_GOOD_BUNDLE_DIR"]).resolve()
GOOD_TAR = Path(os.environ["WRP_GOOD_BUNDLE_TAR"]).resolve()
NAME = GOOD_DIR.name
REPO = Path(cli.__file__).resolve().parents[1]
GOOD_MANIFEST = json.loads((GOOD_DIR / "manifest.json").read_bytes())
MODULE_BINARY = GOOD_MANIFEST["modules"][0]["binary"]
WRP = GOOD_MANIFEST["wrp"]


def copy_good(dest: Path) -> Path:
    """A writable copy of the good bundle at dest/<name>, with its <name>.sha256 beside it."""
    bundle = dest / NAME
    shutil.copytree(GOOD_DIR, bundle, symlinks=False)
    for path in [bundle, *bundle.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    _rehash(bundle)
    return bundle


def wrpkg(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-m", "wrpkg.cli", *args],
        cwd=cwd or REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,  # a reader that blocks on a FIFO fails here instead of hanging the suite
        check=False,
    )


def error_line(proc: subprocess.CompletedProcess) -> str:
    """The one `error:` line of a refusal; asserts exit 1, no traceback and nothing else said."""
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines and lines[0].startswith("error: "), proc.stderr
    assert all(line.startswith("  fix: ") for line in lines[1:]), proc.stderr
    assert len(lines) == 2, proc.stderr  # the error and its fix
    return lines[0]


# --- how each case breaks the good bundle ------------------------------------------------


def manifest_edit(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    """Edits manifest.json as JSON (written canonically) and redoes the content hash."""

    def mutate(bundle: Path) -> None:
        raw = json.loads((bundle / "manifest.json").read_bytes())
        edit(raw)
        _write_canonical(bundle / "manifest.json", raw)
        _rehash(bundle)

    return mutate


def manifest_bytes(edit: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    """Edits manifest.json's bytes (for what json.dumps cannot write) and redoes the hash."""

    def mutate(bundle: Path) -> None:
        path = bundle / "manifest.json"
        data = path.read_bytes()
        edited = edit(data)
        assert edited != data, "the edit found nothing to change"
        path.write_bytes(edited)
        _rehash(bundle)

    return mutate


def golden_edit(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    """Edits golden.json, which is outside the content hash: a genuine bundle otherwise."""

    def mutate(bundle: Path) -> None:
        raw = json.loads((bundle / "golden.json").read_bytes())
        edit(raw)
        _write_canonical(bundle / "golden.json", raw)

    return mutate


def golden_bytes(edit: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def mutate(bundle: Path) -> None:
        path = bundle / "golden.json"
        data = path.read_bytes()
        edited = edit(data)
        assert edited != data, "the edit found nothing to change"
        path.write_bytes(edited)

    return mutate


def replace_once(old: bytes, new: bytes) -> Callable[[bytes], bytes]:
    return lambda data: data.replace(old, new, 1)


def set_field(*keys, value) -> Callable[[dict], None]:
    """Sets raw[k0][k1]... = value."""

    def edit(raw) -> None:
        target = raw
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return edit


def fifo_at(rel: str) -> Callable[[Path], None]:
    def mutate(bundle: Path) -> None:
        path = bundle / rel if not rel.startswith("../") else bundle.parent / rel[3:]
        path.unlink()
        os.mkfifo(path)

    return mutate


def symlink_at(rel: str, target: str) -> Callable[[Path], None]:
    def mutate(bundle: Path) -> None:
        path = bundle / rel if not rel.startswith("../") else bundle.parent / rel[3:]
        path.unlink()
        os.symlink(target, path)

    return mutate


def sparse_file(rel: str, size: int) -> Callable[[Path], None]:
    def mutate(bundle: Path) -> None:
        with open(bundle / rel, "r+b") as handle:
            handle.truncate(size)

    return mutate


def nested(depth: int) -> bytes:
    """A JSON value of `depth` nested arrays."""
    return b"[" * depth + b"]" * depth


def edit_then_verify_as(spelling: str) -> Callable[[Path], None]:
    """The manifest is edited without redoing its hash; the case is verified as `spelling`."""

    def mutate(bundle: Path) -> None:
        raw = json.loads((bundle / "manifest.json").read_bytes())
        raw["files"][0]["sha256"] = "0" * 64
        _write_canonical(bundle / "manifest.json", raw)

    mutate.spelling = spelling
    return mutate


@dataclass
class Hostile:
    name: str
    mutate: Callable[[Path], None]
    file: str  # the file the error must name
    fragment: str  # what the error must say about the defect


FIELD = 'field "'
NOT_PLAIN = "is not a plain relative path inside the bundle"

CASES = [
    # Item 2: manifest paths, refused before any file is read.
    Hostile("wrp_absolute", manifest_edit(set_field("wrp", value="/etc/passwd")), "manifest.json",
            f'field "wrp": "/etc/passwd" {NOT_PLAIN}'),
    Hostile("wrp_dev_zero", manifest_edit(set_field("wrp", value="/dev/zero")), "manifest.json",
            f'field "wrp": "/dev/zero" {NOT_PLAIN}'),
    Hostile("wrp_dotdot", manifest_edit(set_field("wrp", value="../outside.wrp")), "manifest.json",
            f'field "wrp": "../outside.wrp" {NOT_PLAIN}'),
    Hostile("wrp_number", manifest_edit(set_field("wrp", value=7)), "manifest.json",
            'field "wrp": expected a string path, got number'),
    Hostile("wrp_not_listed", manifest_edit(set_field("wrp", value="other.wrp")), "manifest.json",
            'field "wrp": "other.wrp" is not listed in "files"'),
    Hostile("module_binary_dev_zero", manifest_edit(set_field("modules", 0, "binary", value="/dev/zero")),
            "manifest.json", f'field "modules[0].binary": "/dev/zero" {NOT_PLAIN}'),
    Hostile("module_binary_dotdot",
            manifest_edit(set_field("modules", 0, "binary", value="sim_modules/../../x.o")),
            "manifest.json", f'field "modules[0].binary": "sim_modules/../../x.o" {NOT_PLAIN}'),
    Hostile("module_binary_array", manifest_edit(set_field("modules", 0, "binary", value=["a.o"])),
            "manifest.json", 'field "modules[0].binary": expected a string path, got array'),
    Hostile("module_source_absolute", manifest_edit(set_field("modules", 0, "source", value="/etc/passwd")),
            "manifest.json", f'field "modules[0].source": "/etc/passwd" {NOT_PLAIN}'),
    Hostile("file_path_backslash", manifest_edit(set_field("files", 0, "path", value="sub\\sim.wrp")),
            "manifest.json", f'field "files[0].path": "sub\\\\sim.wrp" {NOT_PLAIN}'),
    Hostile("file_path_nul", manifest_edit(set_field("files", 0, "path", value="sim.wrp\0.txt")),
            "manifest.json", f'field "files[0].path": "sim.wrp\\u0000.txt" {NOT_PLAIN}'),
    Hostile("file_path_dot", manifest_edit(set_field("files", 0, "path", value="./sim.wrp")),
            "manifest.json", f'field "files[0].path": "./sim.wrp" {NOT_PLAIN}'),
    Hostile("file_path_empty_component",
            manifest_edit(set_field("files", 1, "path", value=MODULE_BINARY.replace("/", "//"))),
            "manifest.json", f'field "files[1].path": "{MODULE_BINARY.replace("/", "//")}" {NOT_PLAIN}'),
    Hostile("file_path_empty", manifest_edit(set_field("files", 0, "path", value="")), "manifest.json",
            f'field "files[0].path": "" {NOT_PLAIN}'),
    Hostile("file_path_leading_slash", manifest_edit(set_field("files", 0, "path", value="/sim.wrp")),
            "manifest.json", f'field "files[0].path": "/sim.wrp" {NOT_PLAIN}'),
    Hostile("manifest_lists_golden_json", manifest_edit(set_field("files", 0, "path", value="golden.json")),
            "manifest.json", 'field "files[0].path": golden.json is not a deployed file'),
    # Item 6: wrong field types are refused by what they are, not by a TypeError.
    Hostile("file_size_string", manifest_edit(set_field("files", 0, "size", value="5007")), "manifest.json",
            'field "files[0].size": expected a non-negative integer, got "5007"'),
    Hostile("file_sha256_number", manifest_edit(set_field("files", 0, "sha256", value=12)), "manifest.json",
            'field "files[0].sha256": expected 64 lowercase hex digits, got 12'),
    Hostile("binding_name_array", manifest_edit(set_field("bindings", 0, "name", value=["e"])),
            "manifest.json", 'field "bindings[0].name": expected string, got array'),
    Hostile("binding_region_float", manifest_edit(set_field("bindings", 0, "region", value=1.5)),
            "manifest.json", 'field "bindings[0].region": expected an integer or a string, got number'),
    Hostile("binding_listed_twice", manifest_edit(lambda raw: raw["bindings"].append(dict(raw["bindings"][0]))),
            "manifest.json", 'field "bindings[3].name": binding "e" is listed twice'),
    Hostile("modules_object", manifest_edit(set_field("modules", value={})), "manifest.json",
            'field "modules": expected array, got object'),
    Hostile("module_string", manifest_edit(set_field("modules", value=["prog_physics"])), "manifest.json",
            'field "modules[0]": expected object, got string'),
    Hostile("toolchain_null", manifest_edit(set_field("toolchain", value=None)), "manifest.json",
            'field "toolchain": expected object, got null'),
    Hostile("format_version_bool", manifest_edit(set_field("format_version", value=True)), "manifest.json",
            'field "format_version": expected integer, got boolean'),
    # Items 6 and 7: the strict JSON profile.
    Hostile("duplicate_key", manifest_bytes(replace_once(b'"device": "cpu"', b'"device": "cpu", "device": "cpu"')),
            "manifest.json", 'duplicate key "device"'),
    Hostile("nan", manifest_bytes(replace_once(b'"offset": 0', b'"offset": NaN')), "manifest.json",
            "NaN is not a JSON number"),
    Hostile("negative_infinity", manifest_bytes(replace_once(b'"offset": 0', b'"offset": -Infinity')),
            "manifest.json", "-Infinity is not a JSON number"),
    Hostile("float_overflow", manifest_bytes(replace_once(b'"offset": 0', b'"offset": 1e400')),
            "manifest.json", "number 1e400 is out of range"),
    Hostile("integer_of_5000_digits",
            manifest_bytes(replace_once(b'"chunk_bytes": 262144', b'"chunk_bytes": ' + b"9" * 5000)),
            "manifest.json", f"integer {'9' * 24}... does not fit in 64 bits"),
    Hostile("integer_2_to_the_64",
            manifest_bytes(replace_once(b'"chunk_bytes": 262144', b'"chunk_bytes": 18446744073709551616')),
            "manifest.json", "integer 18446744073709551616 does not fit in 64 bits"),
    Hostile("nesting_of_100000",
            manifest_bytes(replace_once(b'"ptx_min_driver": null', b'"ptx_min_driver": ' + nested(100000))),
            "manifest.json", f"nested deeper than {MAX_JSON_DEPTH} levels"),
    # The top-level object is depth 1: 64 arrays in it make 65.
    Hostile("nesting_of_65",
            manifest_bytes(replace_once(b'"ptx_min_driver": null', b'"ptx_min_driver": ' + nested(64))),
            "manifest.json", f"nested deeper than {MAX_JSON_DEPTH} levels"),
    # 63 arrays make 64: inside the limit, so the value is refused for its type instead.
    Hostile("nesting_of_64_is_parsed",
            manifest_bytes(replace_once(b'"ptx_min_driver": null', b'"ptx_min_driver": ' + nested(63))),
            "manifest.json", 'field "ptx_min_driver": expected null, a CUDA version string or an integer'),
    Hostile("invalid_utf8", manifest_bytes(replace_once(b'"device": "cpu"', b'"device": "cp\xff"')),
            "manifest.json", "invalid UTF-8 at byte"),
    Hostile("lone_surrogate", manifest_bytes(replace_once(b'"warp": "1.19.0"', b'"warp": "\\ud800"')),
            "manifest.json", "holds a lone surrogate"),
    # Item 10: golden.json is outside the content hash; the manifest's checks guard it.
    Hostile("golden_file_dev_zero", golden_edit(set_field("golden", 0, "file", value="/dev/zero")),
            "golden.json", f'field "golden[0].file": "/dev/zero" {NOT_PLAIN}'),
    Hostile("golden_file_dotdot", golden_edit(set_field("golden", 0, "file", value="../../etc/passwd")),
            "golden.json", f'field "golden[0].file": "../../etc/passwd" {NOT_PLAIN}'),
    Hostile("golden_file_number", golden_edit(set_field("golden", 0, "file", value=5)), "golden.json",
            'field "golden[0].file": expected a string path, got number'),
    Hostile("golden_name_array", golden_edit(set_field("golden", 0, "name", value=["e"])), "golden.json",
            'field "golden[0].name": expected string, got array'),
    Hostile("golden_bytes_string", golden_edit(set_field("golden", 1, "bytes", value="768")), "golden.json",
            'field "golden[1].bytes": expected a non-negative integer, got "768"'),
    Hostile("golden_entry_null", golden_edit(set_field("golden", 0, value=None)), "golden.json",
            'field "golden[0]": expected object, got null'),
    Hostile("golden_duplicate_key", golden_bytes(replace_once(b'"golden_device": "cpu"',
                                                              b'"golden_device": "cpu", "golden_device": "cuda"')),
            "golden.json", 'duplicate key "golden_device"'),
    Hostile("golden_nan_tolerance", golden_bytes(replace_once(b'"atol": 1e-06', b'"atol": NaN')), "golden.json",
            "NaN is not a JSON number"),
    Hostile("golden_nesting_of_100000", golden_bytes(replace_once(b'"golden_device": "cpu"',
                                                                  b'"golden_device": ' + nested(100000))),
            "golden.json", f"nested deeper than {MAX_JSON_DEPTH} levels"),
    Hostile("golden_integer_of_5000_digits", golden_bytes(replace_once(b'"bytes": 4', b'"bytes": ' + b"4" * 5000)),
            "golden.json", "does not fit in 64 bits"),
    Hostile("golden_invalid_utf8", golden_bytes(replace_once(b'"label": "', b'"label": "\xc3\x28')),
            "golden.json", "invalid UTF-8 at byte"),
    # Item 5: special files are refused, never read.
    Hostile("manifest_fifo", fifo_at("manifest.json"), "manifest.json", "the manifest is a FIFO, not a regular file"),
    Hostile("golden_fifo", fifo_at("golden.json"), "golden.json", "the test manifest is a FIFO, not a regular file"),
    Hostile("hash_file_fifo", fifo_at(f"../{NAME}.sha256"), f"{NAME}.sha256",
            "the content-hash file is a FIFO, not a regular file"),
    Hostile("hash_file_dev_zero", symlink_at(f"../{NAME}.sha256", "/dev/zero"), f"{NAME}.sha256",
            "the content-hash file is a character device, not a regular file"),
    Hostile("hash_file_dangling_link", symlink_at(f"../{NAME}.sha256", "/nonexistent/x.sha256"),
            f"{NAME}.sha256", "cannot read the content-hash file: missing"),
    Hostile("manifest_dev_zero", symlink_at("manifest.json", "/dev/zero"), "manifest.json",
            "the manifest is a character device, not a regular file"),
    Hostile("golden_dev_zero", symlink_at("golden.json", "/dev/zero"), "golden.json",
            "the test manifest is a character device, not a regular file"),
    Hostile("wrp_fifo", fifo_at(WRP), WRP, "a file listed in manifest.json is a FIFO, not a regular file"),
    Hostile("module_dev_zero", symlink_at(MODULE_BINARY, "/dev/zero"), MODULE_BINARY,
            "a file listed in manifest.json is a character device, not a regular file"),
    Hostile("golden_output_fifo", fifo_at("golden/x.bin"), "golden/x.bin",
            "a file listed in golden.json is a FIFO, not a regular file"),
    Hostile("manifest_over_16_mib", sparse_file("manifest.json", MAX_JSON_BYTES + 1), "manifest.json",
            f"the manifest is {MAX_JSON_BYTES + 1} bytes, more than the {MAX_JSON_BYTES} allowed"),
    Hostile("golden_over_16_mib", sparse_file("golden.json", MAX_JSON_BYTES + 1), "golden.json",
            f"the test manifest is {MAX_JSON_BYTES + 1} bytes, more than the {MAX_JSON_BYTES} allowed"),
    Hostile("golden_json_missing", lambda b: (b / "golden.json").unlink(), "golden.json",
            "cannot read the test manifest: missing"),
    # Item 3: an edited manifest must meet DIR's hash file however DIR is spelled.
    Hostile("edited_manifest_as_dir_dot", edit_then_verify_as("DIR/."), "manifest.json",
            "differs from the expected"),
    Hostile("edited_manifest_as_dir_slash", edit_then_verify_as("DIR/"), "manifest.json",
            "differs from the expected"),
    Hostile("edited_manifest_as_dot_inside", edit_then_verify_as("."), "manifest.json",
            "differs from the expected"),
]  # fmt: skip


def test_there_are_at_least_40_distinct_cases():
    assert len({c.name for c in CASES}) == len(CASES) >= 40


def _bundle_arg(case: Hostile, bundle: Path) -> tuple[str, Path | None]:
    """The bundle as the case spells it, and the working directory to run from."""
    spelling = getattr(case.mutate, "spelling", "DIR")
    if spelling == ".":
        return ".", bundle
    return spelling.replace("DIR", str(bundle)), None


@pytest.fixture
def hostile(request, tmp_path) -> tuple[Hostile, Path]:
    case = request.param
    bundle = copy_good(tmp_path)
    case.mutate(bundle)
    return case, bundle


@pytest.mark.parametrize("hostile", CASES, ids=[c.name for c in CASES], indirect=True)
def test_wrpkg_verify_refuses(hostile):
    case, bundle = hostile
    arg, cwd = _bundle_arg(case, bundle)
    line = error_line(wrpkg("verify", arg, cwd=cwd))
    assert case.fragment in line, line
    assert case.file in line, line


# inspect reads what verify reads first (manifest, golden, sibling hash); the cases of listed
# files are verify's alone (inspect summarizes, it does not hash every file).
INSPECT_CASES = [c for c in CASES if c.file in ("manifest.json", "golden.json", f"{NAME}.sha256")]


@pytest.mark.parametrize("hostile", INSPECT_CASES, ids=[c.name for c in INSPECT_CASES], indirect=True)
def test_wrpkg_inspect_refuses(hostile):
    case, bundle = hostile
    arg, cwd = _bundle_arg(case, bundle)
    if case.name == "manifest_fifo" or case.name == "manifest_dev_zero":
        arg = os.path.join(arg, WRP)  # inspect of the .wrp in a bundle reads the bundle's manifest too
    line = error_line(wrpkg("inspect", arg, cwd=cwd))
    assert case.fragment in line, line
    assert case.file in line, line


LOAD_CASES = [
    c
    for c in CASES
    if c.name
    in {
        "wrp_absolute", "wrp_dev_zero", "module_binary_dotdot", "file_size_string", "duplicate_key",
        "nesting_of_100000", "invalid_utf8", "manifest_fifo", "golden_fifo", "hash_file_fifo", "wrp_fifo",
        "module_dev_zero", "golden_file_dev_zero", "golden_nesting_of_100000", "edited_manifest_as_dir_dot",
    }
]  # fmt: skip


@pytest.mark.parametrize("hostile", LOAD_CASES, ids=[c.name for c in LOAD_CASES], indirect=True)
def test_wrpkg_load_refuses(hostile, monkeypatch):
    from wrpkg.load import load

    case, bundle = hostile
    arg, cwd = _bundle_arg(case, bundle)
    if cwd is not None:
        monkeypatch.chdir(cwd)
    with pytest.raises(VerifyError) as err:
        load(arg, device="cpu")
    assert case.fragment in err.value.message and case.file in err.value.message


def test_wrpkg_inspect_refuses_a_fifo_named_wrp(tmp_path):
    fifo = tmp_path / "sim.wrp"
    os.mkfifo(fifo)
    line = error_line(wrpkg("inspect", str(fifo)))
    assert f"{fifo}: the .wrp is a FIFO, not a regular file" in line


def test_the_good_bundle_passes_however_it_is_spelled(tmp_path):
    """The cases above are refused for their defect: the same copy, unbroken, verifies as
    DIR, DIR/, DIR/. and . from inside it, and each finds the sibling hash file."""
    bundle = copy_good(tmp_path)
    for arg, cwd in [(str(bundle), None), (f"{bundle}/", None), (f"{bundle}/.", None), (".", bundle)]:
        proc = wrpkg("verify", arg, cwd=cwd)
        assert proc.returncode == 0 and proc.stdout.startswith("ok: "), proc.stderr
    assert verify_bundle(bundle).name == NAME


def test_hash_file_of_the_resolved_directory_is_used(tmp_path, monkeypatch):
    """`.` from inside the bundle: the hash file is looked up beside the resolved directory, so
    an edited manifest is caught (before, `./..` held no `..sha256` and the check was off)."""
    bundle = copy_good(tmp_path)
    edit_then_verify_as(".")(bundle)
    monkeypatch.chdir(bundle)
    with pytest.raises(VerifyError, match="differs from the expected"):
        verify_bundle(".")


# --- item 4: a directory the reader cannot list --------------------------------------------


def test_unlistable_directory_is_refused_not_skipped(tmp_path, monkeypatch, capsys):
    """An unlisted file in a directory that cannot be listed would pass unseen if the walk
    skipped the directory (os.walk's default). Root reads any directory, so the listing's
    failure is made by os.scandir here; test_unreadable_directory_as_a_user does it for real."""
    bundle = copy_good(tmp_path)
    (bundle / "golden" / "unlisted.bin").write_bytes(b"evil")
    blocked = str(bundle / "golden")
    real_scandir = os.scandir

    def scandir(path="."):
        if os.fspath(path) == blocked:
            raise PermissionError(13, "Permission denied", blocked)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    assert cli.main(["verify", str(bundle)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {blocked}: cannot list this directory of the bundle (Permission denied)")
    assert "Traceback" not in err and len(err.splitlines()) == 2


@pytest.mark.skipif(os.geteuid() == 0, reason="root lists a mode-000 directory")
def test_unreadable_directory_as_a_user(tmp_path):
    bundle = copy_good(tmp_path)
    (bundle / "golden" / "unlisted.bin").write_bytes(b"evil")
    os.chmod(bundle / "golden", 0o311)  # enterable (the listed files open), not listable
    try:
        line = error_line(wrpkg("verify", str(bundle)))
    finally:
        os.chmod(bundle / "golden", 0o755)
    assert "golden: cannot list this directory of the bundle" in line


def test_permission_error_on_open_is_one_line(tmp_path, monkeypatch, capsys):
    """A manifest this user may not read: one line naming it (EACCES made by os.open here, as
    root may read anything)."""
    bundle = copy_good(tmp_path)
    blocked = str(bundle / "manifest.json")
    real_open = os.open

    def guarded_open(path, flags, *args, **kwargs):
        if os.fspath(path) == blocked:
            raise PermissionError(13, "Permission denied", blocked)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", guarded_open)
    assert cli.main(["verify", str(bundle)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {blocked}: cannot read the manifest (Permission denied)"), err


def test_an_os_error_no_check_names_is_still_one_line(monkeypatch, capsys, tmp_path):
    """The net in run_tool: an OSError that escapes a tool prints the file it names."""
    import wrpkg.verify

    def failing_run(args):
        raise FileNotFoundError(2, "No such file or directory", str(tmp_path / "gone"))

    monkeypatch.setattr(wrpkg.verify, "run", failing_run)
    assert cli.main(["verify", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {tmp_path / 'gone'}: No such file or directory\n  fix: "), err


# --- item 8: tar entries ---------------------------------------------------------------


def _good_entries() -> list[tuple[str, bytes | None]]:
    with tarfile.open(GOOD_TAR) as tar:
        return [(m.name, None if m.isdir() else tar.extractfile(m).read()) for m in tar.getmembers()]


def _tar_with_directory_payload(entries, path: Path, directory: str, payload: bytes) -> None:
    """A ustar archive whose directory entry `directory` carries `payload` (tarfile writes
    what it is given: a header of type 5 with a size, then the bytes)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in entries:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                if name.rstrip("/") == directory.rstrip("/"):
                    info.size = len(payload)
                    tar.addfile(info, io.BytesIO(payload))
                    continue
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    path.write_bytes(buffer.getvalue())


TAR_CASES = {
    "directory_absolute": ([("/tmp/evil/", None)], "directory entry '/tmp/evil/'", NOT_PLAIN),
    "directory_dotdot": ([(f"{NAME}/../evil/", None)], f"directory entry '{NAME}/../evil/'", NOT_PLAIN),
    "directory_dot_component": ([(f"{NAME}/./golden/", None)], f"directory entry '{NAME}/./golden/'", NOT_PLAIN),
    "directory_backslash": ([(f"{NAME}/a\\b/", None)], "directory entry", NOT_PLAIN),
    "directory_outside_the_bundle": ([("other/", None)], "directory entry other/", f"lies outside {NAME}/"),
    "file_backslash": ([(f"{NAME}\\evil.bin", b"evil")], "entry path", NOT_PLAIN),
    "file_dot_component": ([(f"{NAME}/./evil.bin", b"evil")], "entry path", NOT_PLAIN),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(TAR_CASES))
def test_verify_tar_refuses_entries(case, tmp_path):
    extra, names, fragment = TAR_CASES[case]
    path = tmp_path / f"{NAME}.tar"
    _tar(_good_entries() + extra, path)
    with pytest.raises(VerifyError) as err:
        verify_tar(path)
    assert names in err.value.message and fragment in err.value.message, err.value.message
    assert str(path) in err.value.message


def test_verify_tar_refuses_a_directory_with_a_payload(tmp_path):
    path = tmp_path / f"{NAME}.tar"
    _tar_with_directory_payload(_good_entries(), path, f"{NAME}/golden/", b"hidden bytes")
    with pytest.raises(VerifyError, match=rf"directory entry '{NAME}/golden/' carries a 12-byte payload"):
        verify_tar(path)


def test_verify_tar_accepts_the_good_archive_and_its_directories(tmp_path):
    entries = _good_entries()
    assert any(data is None for _, data in entries), "the good archive has directory entries"
    path = tmp_path / f"{NAME}.tar"
    _tar(entries, path)
    assert verify_tar(path).name == NAME


def test_verify_tar_refuses_a_fifo(tmp_path):
    path = tmp_path / f"{NAME}.tar"
    os.mkfifo(path)
    with pytest.raises(VerifyError, match="the bundle archive is a FIFO, not a regular file"):
        verify_tar(path)


# --- item 1: wrpkg.load hands Warp the bytes it verified -----------------------------------


@pytest.fixture(scope="module")
def wp():
    import warp

    warp.config.log_level = warp.LOG_WARNING
    warp.init()
    return warp


def _replays_to_golden(wp, graph, manifest, golden_dir: Path) -> None:
    wp.capture_launch(graph)
    for golden in manifest.golden:
        buffer = wp.empty(golden.bytes, dtype=wp.uint8, device="cpu")
        graph.get_param(golden.name, buffer)
        assert buffer.numpy().tobytes() == (golden_dir / golden.file).read_bytes(), golden.name


def test_load_gives_warp_the_verified_bytes_not_a_path(wp, tmp_path, monkeypatch):
    """The files are swapped for garbage after the check, just before Warp's call (the race of
    issue 26, made certain): the graph still replays to the golden outputs, because Warp is
    given the bytes that were verified and never reads the bundle again."""
    from wrpkg.load import load

    bundle = copy_good(tmp_path)
    real_from_bytes = wp.capture_load_from_bytes

    def swap_then_load(data, modules=None, device=None):
        for rel in (WRP, MODULE_BINARY):
            (bundle / rel).write_bytes(b"\xde\xad" * 64)
        return real_from_bytes(data, modules, device=device)

    def no_path_load(*args, **kwargs):
        raise AssertionError("wp.capture_load re-reads the bundle from disk")

    monkeypatch.setattr(wp, "capture_load_from_bytes", swap_then_load)
    monkeypatch.setattr(wp, "capture_load", no_path_load)
    graph, manifest = load(bundle, device="cpu")
    assert (bundle / WRP).read_bytes() == b"\xde\xad" * 64  # the swap did happen
    _replays_to_golden(wp, graph, manifest, GOOD_DIR)


def test_private_copy_is_loaded_and_removed(wp, tmp_path, monkeypatch):
    """The CUDA PTX/source path's private copy, exercised on the CPU bundle: Warp's path loader
    is given a 0700 directory of this process holding exactly the verified bytes; it is gone
    afterwards, and the graph replays."""
    import wrpkg.load
    from wrpkg.verify import read_manifest, verify_files

    bundle = copy_good(tmp_path)
    manifest = read_manifest(bundle)
    verified = verify_files(bundle, manifest, keep=frozenset(f.path for f in manifest.files))
    seen = {}
    real_load = wp.capture_load

    def record_then_load(path, device=None):
        private = Path(path).parent
        seen["dir"], seen["mode"] = private, private.stat().st_mode & 0o777
        seen["files"] = sorted(str(p.relative_to(private)) for p in private.rglob("*") if p.is_file())
        return real_load(path, device=device)

    monkeypatch.setattr(wp, "capture_load", record_then_load)
    graph = wrpkg.load._load_private_copy(wp, manifest, verified, wp.get_device("cpu"))
    assert seen["mode"] == 0o700
    assert seen["files"] == sorted(f.path for f in manifest.files)
    assert not seen["dir"].exists()
    _replays_to_golden(wp, graph, manifest, GOOD_DIR)


def test_private_copy_changed_during_the_load_is_refused(wp, tmp_path, monkeypatch):
    import wrpkg.load
    from wrpkg.verify import read_manifest, verify_files

    bundle = copy_good(tmp_path)
    manifest = read_manifest(bundle)
    verified = verify_files(bundle, manifest, keep=frozenset(f.path for f in manifest.files))
    real_load = wp.capture_load

    def load_then_tamper(path, device=None):
        graph = real_load(path, device=device)
        (Path(path).parent / MODULE_BINARY).write_bytes(b"tampered")
        return graph

    monkeypatch.setattr(wp, "capture_load", load_then_tamper)
    with pytest.raises(
        VerifyError, match=f"the private copy of {MODULE_BINARY} changed while Warp loaded it"
    ):
        wrpkg.load._load_private_copy(wp, manifest, verified, wp.get_device("cpu"))
