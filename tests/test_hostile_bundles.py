"""Hostile bundles (issue 26), each made from the good CPU bundle in tmp_path with one defect,
and judged by the Python reader: `wrpkg verify` and `wrpkg inspect` must exit 1 with one
`error:` line that names the file and the defect (no traceback, no hang), and wrpkg.reader.bundle must
refuse it with a VerifyError; wrpkg.reader.bundle must hand Warp the bytes it verified.

Where a defect is in manifest.json, the content hash (`<dir>.sha256`, golden.json's
content_hash) is redone, so the defect itself, not the hash check, is what is refused.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from bundle_corpus import _tar
from hostile_corpus import (
    CASES,
    GOOD_DIR,
    GOOD_TAR,
    MODULE_BINARY,
    NAME,
    NOT_PLAIN,
    WRP,
    Hostile,
    copy_good,
    edit_then_verify_as,
)

from wrpkg import cli, warp_internals
from wrpkg.errors import VerifyError
from wrpkg.reader.verify import verify_bundle, verify_tar

REPO = Path(cli.__file__).resolve().parents[1]


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


# inspect opens a bundle as verify does (wrpkg.Bundle.open) and shows only what it verified:
# every case is refused, with verify's message.
@pytest.mark.parametrize("hostile", CASES, ids=[c.name for c in CASES], indirect=True)
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
        "symlink_to_a_rehashed_bundle", "symlink_to_a_bundle_without_hash_file", "capture_json_fifo",
        "capture_json_over_1_mib", "capture_json_payload", "wrp_ifs_nested_129_deep", "wrp_ifs_nested_1100_deep",
    }
]  # fmt: skip


@pytest.mark.parametrize("hostile", LOAD_CASES, ids=[c.name for c in LOAD_CASES], indirect=True)
def test_wrpkg_load_refuses(hostile, monkeypatch):
    from wrpkg.reader.bundle import load

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


def test_a_symlink_to_the_bundle_meets_the_hash_pinned_beside_the_link(tmp_path):
    """Issue 40: `<link>.sha256` beside a symlink to the bundle is checked, however the link is spelled,
    by verify, Bundle.open and load_bundle; the message names the pinned file. Before, only the hash beside
    the resolved directory counted, and a tampered bundle behind the link loaded."""
    from wrpkg.reader.bundle import Bundle, load

    real = copy_good(tmp_path / "real")
    (real.parent / f"{NAME}.sha256").unlink()
    link = tmp_path / "deployed"
    os.symlink(real, link, target_is_directory=True)
    pinned = tmp_path / "deployed.sha256"
    pinned.write_text(f"{'a' * 64}  deployed/manifest.json\n")
    for spelling in (str(link), f"{link}/", f"{link}/."):
        line = error_line(wrpkg("verify", spelling))
        assert f"differs from the expected {'a' * 64} (pinned in {pinned})" in line, line
        for opener in (Bundle.open, lambda p: load(p, device="cpu")):
            with pytest.raises(VerifyError, match=f"pinned in {pinned}"):
                opener(spelling)
    pinned.write_text(f"{Bundle.open(real).content_hash}  deployed/manifest.json\n")
    assert wrpkg("verify", str(link)).returncode == 0
    assert Bundle.open(link).manifest.name == NAME


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


def _nest(parent: Path, depth: int) -> list[int]:
    """`depth` folders "d" inside each other under `parent`, made through directory descriptors (the
    whole path is longer than PATH_MAX); returns the descriptors, outermost first."""
    fds = [os.open(parent, os.O_RDONLY)]
    for _ in range(depth):
        os.mkdir("d", dir_fd=fds[-1])
        fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
    return fds


def test_a_directory_nested_1200_deep_is_refused_in_one_line(tmp_path, capsys):
    """Issue 40: a tree deeper than Python's recursion limit raised RecursionError from the walk
    (os.walk recurses) in verify, Bundle.open and load_bundle; it is refused as a directory."""
    bundle = copy_good(tmp_path)
    fds = _nest(bundle / "golden", 1200)
    try:
        assert cli.main(["verify", str(bundle)]) == 1
        err = capsys.readouterr().err
        assert "cannot list this directory of the bundle (nested deeper than 64 directories)" in err, err
        assert "Traceback" not in err and len(err.splitlines()) == 2
        with pytest.raises(VerifyError, match="nested deeper than 64 directories"):
            verify_bundle(bundle)
    finally:
        for parent, child in zip(reversed(fds[:-1]), reversed(fds[1:]), strict=True):
            os.close(child)
            os.rmdir("d", dir_fd=parent)
        os.close(fds[0])


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
    import wrpkg.reader.verify

    def failing_run(args):
        raise FileNotFoundError(2, "No such file or directory", str(tmp_path / "gone"))

    monkeypatch.setattr(wrpkg.reader.verify, "run", failing_run)
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
    "directory_absolute": ([("/tmp/evil/", None)], 'directory entry path "/tmp/evil"', NOT_PLAIN),
    "directory_dotdot": ([(f"{NAME}/../evil/", None)], f'directory entry path "{NAME}/../evil"', NOT_PLAIN),
    "directory_dot_component": ([(f"{NAME}/./golden/", None)], f'directory entry path "{NAME}/./golden"', NOT_PLAIN),
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
    with pytest.raises(VerifyError, match=rf"directory entry {NAME}/golden/ carries a 12-byte payload"):
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


# --- item 1: wrpkg.reader.bundle hands Warp the bytes it verified -----------------------------------


@pytest.fixture(scope="module")
def wp():
    import warp

    warp.config.log_level = warp.LOG_WARNING
    warp.init()
    return warp


def _replays_to_golden(wp, graph, manifest, golden_dir: Path) -> None:
    outputs = warp_internals.replay_outputs(graph, [g.name for g in manifest.golden], "cpu")
    for golden in manifest.golden:
        assert outputs[golden.name] == (golden_dir / golden.file).read_bytes(), golden.name


def test_load_gives_warp_the_verified_bytes_not_a_path(wp, tmp_path, monkeypatch):
    """The files are swapped for garbage after the check, just before Warp's call (the race of
    issue 26, made certain): the graph still replays to the golden outputs, because Warp is
    given the bytes that were verified and never reads the bundle again."""
    from wrpkg.reader.bundle import load

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
    import wrpkg.reader.bundle
    from wrpkg.reader.validity import read_manifest, verify_files

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
    graph = wrpkg.reader.bundle._load_private_copy(wp, manifest, verified, wp.get_device("cpu"))
    assert seen["mode"] == 0o700
    assert seen["files"] == sorted(f.path for f in manifest.files)
    assert not seen["dir"].exists()
    _replays_to_golden(wp, graph, manifest, GOOD_DIR)


def test_private_copy_changed_during_the_load_is_refused(wp, tmp_path, monkeypatch):
    import wrpkg.reader.bundle
    from wrpkg.reader.validity import read_manifest, verify_files

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
        wrpkg.reader.bundle._load_private_copy(wp, manifest, verified, wp.get_device("cpu"))
