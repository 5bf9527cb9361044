"""Issue 38 item 3, packing never fails after a capture succeeded: a path too long for a ustar header (Warp's
files of a Newton module: one path component of 109-129 characters; a long bundle name) is written with a
pax extended header holding only its `path` record (wrpkg.build.pack.write_deterministic_tar), an archive whose
paths all fit stays the ustar bytes it was, and both readers (wrpkg.reader.ustar.ustar_entries,
runtime/internal/ustar.cc) take that one pax form and refuse every other. The hostile archives made of a real
bundle are judged by both readers in tests/test_validity_parity.py (hostile_corpus.py: tar_pax_*); the
record rules are run here in Python with the table runtime/internal/ustar_test.cc runs in C++."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from wrpkg.build.pack import pack, write_deterministic_tar
from wrpkg.errors import BundleError, VerifyError
from wrpkg.files import relative_entries
from wrpkg.reader.ustar import PAX_HEADER_MAX_BYTES, pax_path_problem, ustar_entries
from wrpkg.reader.verify import verify_bundle, verify_tar

REPO = Path(__file__).resolve().parent.parent
LONG_MODULE_SCRIPT = REPO / "tests" / "programs_capture" / "long_module_name.py"
VERIFY_BUNDLE = os.path.abspath(os.environ["WRP_VERIFY_BUNDLE"])  # tests/parity: the C++ runtime's verdict


def _tarfile_archive(root: Path, arc_root: str, fmt: int) -> bytes:
    """What Python's tarfile writes for the tree in `fmt`, with write_deterministic_tar's metadata: the
    writer wrpkg.build.pack used (USTAR_FORMAT) until paths too long for ustar had to be packed."""
    entries = [(arc_root, None)] + [
        (f"{arc_root}/{rel}", None if is_dir else root / rel) for rel, is_dir in relative_entries(root)
    ]
    entries.sort(key=lambda entry: entry[0])
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=fmt) as tar:
        for arcname, path in entries:
            info = tarfile.TarInfo(arcname)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if path is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                data = path.read_bytes()
                info.mode, info.size = 0o644, len(data)
                tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _tree(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def _packed(root: Path, arc_root: str, tmp_path: Path) -> bytes:
    out = tmp_path / "out.tar"
    write_deterministic_tar(root, arc_root, out)
    return out.read_bytes()


def _pax_payloads(data: bytes) -> list[bytes]:
    """The payload of every 'x' header of an archive wrpkg.build.pack wrote."""
    payloads, offset = [], 0
    while offset + 512 <= len(data) and data[offset : offset + 512] != bytes(512):
        size = int(data[offset + 124 : offset + 135], 8)
        if data[offset + 156 : offset + 157] == b"x":
            assert data[offset : offset + 100].rstrip(b"\0") == b"././@PaxHeader"
            payloads.append(data[offset + 512 : offset + 512 + size])
        offset += 512 + (size + 511) // 512 * 512
    return payloads


# --- the writer -------------------------------------------------------------------------------------------


def test_an_archive_whose_paths_fit_is_the_old_ustar_bytes(tmp_path):
    """No pax header, byte for byte what tarfile's USTAR_FORMAT wrote: names of exactly 100 bytes, paths
    split into prefix and name (a prefix of 155), non-ASCII names, empty files, a file of one block."""
    root = _tree(
        tmp_path / "b",
        {
            "manifest.json": b"{}",
            "empty": b"",
            "block": b"x" * 512,
            "n" * 98: b"1",  # "b/" + 98: 100 bytes, the name field's whole width
            f"{'d' * 60}/{'f' * 99}": b"2",  # split: prefix "b/ddd...", name "fff..."
            f"{'p' * 153}/{'q' * 100}": b"3",  # a prefix of 155 bytes and a name of 100
            "s/\u00e9t\u00e9/caf\u00e9": b"4",
            "golden/x.bin": bytes(range(256)) * 9,
        },
    )
    packed = _packed(root, "b", tmp_path)
    assert packed == _tarfile_archive(root, "b", tarfile.USTAR_FORMAT)
    assert b"PaxHeader" not in packed and _pax_payloads(packed) == []
    entries, directories = ustar_entries(packed, "out.tar")
    assert entries[f"b/{'p' * 153}/{'q' * 100}"] == b"3"
    assert entries["b/s/\u00e9t\u00e9/caf\u00e9"] == b"4"  # UTF-8 ustar names read as the file system's
    assert "b/golden" in directories


def test_a_path_ustar_cannot_hold_gets_a_pax_header_with_only_its_path(tmp_path):
    """A component over 100 bytes (a module file of 130 characters) and a bundle directory of 200: each such
    entry, the directories' too, is preceded by a pax header of one `path` record; the others are as
    before. For ASCII paths this is byte for byte what tarfile's PAX_FORMAT writes."""
    long_dir = "b" * 200
    module = "wp_" + "m" * 120 + "_abcdef0.o"
    root = _tree(tmp_path / long_dir, {"manifest.json": b"{}", f"sim_modules/{module}": b"\x7fELF" * 300})
    packed = _packed(root, long_dir, tmp_path)
    assert packed == _tarfile_archive(root, long_dir, tarfile.PAX_FORMAT)
    assert _pax_payloads(packed) == [
        b"211 path=" + long_dir.encode() + b"/\n",
        b"224 path=" + f"{long_dir}/manifest.json".encode() + b"\n",
        b"223 path=" + f"{long_dir}/sim_modules".encode() + b"/\n",
        b"356 path=" + f"{long_dir}/sim_modules/{module}".encode() + b"\n",
    ]
    with tarfile.open(fileobj=io.BytesIO(packed)) as tar:
        members = tar.getmembers()
        assert tar.pax_headers == {}  # no global header
    assert [m.name for m in members] == [long_dir, f"{long_dir}/manifest.json", f"{long_dir}/sim_modules",
                                        f"{long_dir}/sim_modules/{module}"]  # fmt: skip
    for m in members:
        assert m.pax_headers == {"path": m.name + ("/" if m.isdir() else "")}
        assert (m.mtime, m.uid, m.gid, m.uname, m.gname) == (0, 0, 0, "", "")
    entries, directories = ustar_entries(packed, "out.tar")
    assert entries[f"{long_dir}/sim_modules/{module}"] == b"\x7fELF" * 300
    assert directories == [long_dir, f"{long_dir}/sim_modules"]

    # Only names and contents count: not the files' times, not the run.
    os.utime(root / "manifest.json", (1, 1))
    assert _packed(root, long_dir, tmp_path) == packed


def test_a_long_non_ascii_path_is_utf8_in_the_pax_header(tmp_path):
    name = "caf\u00e9_" + "x" * 120
    root = _tree(tmp_path / "b", {name: b"1"})
    packed = _packed(root, "b", tmp_path)
    assert _pax_payloads(packed) == [b"138 path=b/" + name.encode() + b"\n"]
    # The entry's own name field: the path cut to 100 bytes, a non-ASCII character as '?' (as tarfile writes).
    assert b"b/caf?_" + b"x" * 93 + b"0000644" in packed
    with tarfile.open(fileobj=io.BytesIO(packed)) as tar:
        assert tar.getnames() == ["b", f"b/{name}"]
    assert ustar_entries(packed, "out.tar")[0] == {f"b/{name}": b"1"}


@pytest.mark.parametrize(
    "name, problem",
    [
        ("line\nbreak_" + "x" * 120, "its path holds a control character"),
        (os.fsdecode(b"latin1_\xe9_" + b"x" * 120), "not valid UTF-8"),
    ],
)
def test_the_writer_refuses_a_long_path_no_reader_would_take(tmp_path, name, problem):
    root = tmp_path / "b"
    root.mkdir()
    (root / name).write_bytes(b"1")
    with pytest.raises(BundleError, match=problem):
        write_deterministic_tar(root, "b", tmp_path / "out.tar")


def test_the_writer_refuses_exactly_the_characters_the_readers_refuse(tmp_path):
    """wrpkg.build.pack keeps its own copy of ustar.pax_path_problem's rule: the two agree on every character
    of U+0001-U+00A0 and a few beyond (U+2028 is no control)."""
    for code in [*range(1, 0xA1), 0xE9, 0x2028, 0x1F600]:
        if chr(code) == "/":
            continue
        root = tmp_path / str(code) / "b"
        root.mkdir(parents=True)
        name = f"{chr(code)}_" + "x" * 120
        (root / name).write_bytes(b"1")
        try:
            write_deterministic_tar(root, "b", tmp_path / str(code) / "out.tar")
            written = True
        except BundleError:
            written = False
        assert written == (pax_path_problem(f"b/{name}") is None), hex(code)


# --- the Python reader: runtime/internal/ustar_test.cc's table ------------------------------------------------------


def _record(key: bytes, value: bytes) -> bytes:
    rest = len(key) + len(value) + 3
    length = rest + 1
    while len(str(length)) + rest != length:
        length = len(str(length)) + rest
    return b"%d %s=%s\n" % (length, key, value)


def _header(name: bytes, size: int, typeflag: bytes) -> bytes:
    """A ustar header as runtime/internal/test_util.h's AppendTarEntry writes it (name cut to 100 bytes)."""
    header = bytearray(512)
    header[: min(len(name), 100)] = name[:100]
    header[100:108], header[108:116], header[116:124] = b"0000644\0", b"0000000\0", b"0000000\0"
    header[124:136], header[136:148] = b"%011o\0" % size, b"00000000000\0"
    header[156:157], header[257:265] = typeflag, b"ustar\x0000"
    header[148:156] = b" " * 8
    header[148:156] = b"%06o\0 " % sum(header)
    return bytes(header)


def _entry(name: bytes, body: bytes, typeflag: bytes = b"0", size: int | None = None) -> bytes:
    return _header(name, len(body) if size is None else size, typeflag) + body + bytes(-len(body) % 512)


def _with_records(records: bytes, following: bytes = b"0") -> bytes:
    return (
        _entry(b"././@PaxHeader", records, b"x")
        + _entry(b"b/x", b"", following)
        + _entry(b"b/manifest.json", b"{}")
        + bytes(1024)
    )


MALFORMED = [
    (b"", "holds no 'path' record"),
    (_record(b"path", b"b/x") + _record(b"path", b"b/y"), "holds 'path' twice"),
    (b"012 path=b/x\n", "record at byte 0 of the header: its length has a leading zero"),
    (b"0 \n", "its length has a leading zero"),
    (b"+12 path=b/x\n", "does not start with a decimal length"),
    (b"-12 path=b/x\n", "does not start with a decimal length"),
    (b" 12 path=b/x\n", "does not start with a decimal length"),
    (b"12path=b/x\n\n", "its length is not followed by a space"),
    (b"1", "its length is not followed by a space"),
    (b"12", "runs past the end of the header"),
    (b"13 path=b/x\n", "runs past the end of the header"),
    (b"99999999999999999999999 path=b/x\n", "runs past the end of the header"),
    (b"11 path=b/x\n\n", "does not end with a newline"),
    (b"3 path=b/x\n", "does not end with a newline"),
    (b"3 \n" + _record(b"path", b"b/x"), "record at byte 0 of the header is not <key>=<value>"),
    (b"12 path b/x\n", "is not <key>=<value>"),
    (b"12 =path/bx\n", "is not <key>=<value>"),
    (_record(b"path", b"b/x") + b"\n", "record at byte 12 of the header does not start with a decimal length"),
    (_record(b"path", b"b/x") + bytes(3), "does not start with a decimal length"),
    (_record(b"path", b"b/\0x"), "its path holds a NUL byte"),
    (_record(b"path", b"b/\nx"), "its path holds a control character"),
    (_record(b"path", b"b/\x7fx"), "its path holds a control character"),
    (_record(b"path", b"b/\xc2\x85x"), "its path holds a control character"),
    (_record(b"path", b"b/\xe9t\xe9"), "its path is not valid UTF-8"),
    (_record(b"path", b"b/\xc0\xafx"), "its path is not valid UTF-8"),
    (_record(b"path", b"b/\xed\xa0\x80x"), "its path is not valid UTF-8"),
    (_record(b"path", b"b/\xf4\x90\x80\x80"), "its path is not valid UTF-8"),
    (_record(b"path", b"b/\xe2\x82"), "its path is not valid UTF-8"),
    (_record(b"path", b"b/\x01\xff"), "its path is not valid UTF-8"),
    *[
        (_record(b"path", b"b/x") + _record(key, b"1"), f"key '{shown}' is not allowed")
        for key, shown in [(b"linkpath", "linkpath"), (b"size", "size"), (b"uid", "uid"), (b"mtime", "mtime"),
                           (b"hdrcharset", "hdrcharset"), (b"path ", "path "), (b"li\x01nk", "li\\x01nk")]
    ],
]  # fmt: skip


@pytest.mark.parametrize("records, problem", MALFORMED, ids=[repr(r[:24]) for r, _ in MALFORMED])
def test_python_refuses_malformed_pax_records(records, problem):
    with pytest.raises(VerifyError) as err:
        ustar_entries(_with_records(records), "t.tar")
    assert "t.tar: pax extended header at byte 0: " in str(err.value)
    assert problem in str(err.value)


def test_python_reads_pax_paths_as_cpp_does():
    value = "b/a=b\u20ac\U0001f600"
    assert ustar_entries(_with_records(_record(b"path", value.encode())), "t.tar")[0] == {
        value: b"",
        "b/manifest.json": b"{}",
    }
    limit = _record(b"path", b"b/" + b"a" * (PAX_HEADER_MAX_BYTES - 14))
    assert len(limit) == PAX_HEADER_MAX_BYTES
    assert len(next(iter(ustar_entries(_with_records(limit), "t.tar")[0]))) == PAX_HEADER_MAX_BYTES - 12
    over = _record(b"path", b"b/" + b"a" * 70000)
    with pytest.raises(
        VerifyError, match=f"tar header at byte 0: pax extended header of {len(over)} bytes, over"
    ):
        ustar_entries(_with_records(over), "t.tar")
    for typeflag, following in [(b"x", "another pax header"), (b"2", "an entry of tar type b'2'")]:
        with pytest.raises(VerifyError, match=f"pax extended header at byte 0 is followed by {following}"):
            ustar_entries(_with_records(_record(b"path", b"b/x"), typeflag), "t.tar")
    at_end = _entry(b"b/x", b"1") + _entry(b"././@PaxHeader", _record(b"path", b"b/y"), b"x")
    for data in (at_end + bytes(1024), at_end):
        with pytest.raises(VerifyError, match="pax extended header at byte 1024 is followed by no entry"):
            ustar_entries(data, "t.tar")
    for typeflag, what in [
        (b"g", "a pax global header"),
        (b"L", "a GNU long name"),
        (b"K", "a GNU long link name"),
    ]:
        data = (
            _entry(b"././@PaxHeader", _record(b"path", b"b/x"), typeflag) + _entry(b"b/x", b"") + bytes(1024)
        )
        with pytest.raises(VerifyError, match=rf"tar type {typeflag!r} \({what}\)"):
            ustar_entries(data, "t.tar")
    # The same path from a pax header and from the ustar fields: one path twice (bytes, as C++ compares).
    twice = _entry(b"././@PaxHeader", _record(b"path", "b/\u00e9".encode()), b"x") + _entry(b"b/x", b"1")
    twice += _entry("b/\u00e9".encode(), b"2") + bytes(1024)
    with pytest.raises(VerifyError, match="appears twice"):
        ustar_entries(twice, "t.tar")


# --- a capture with a long module name, packed under a long bundle name, verified by both readers -----------


def test_a_long_module_and_bundle_name_pack_and_verify(tmp_path):
    raw = tmp_path / "raw"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "wrpkg.capture", "--script", str(LONG_MODULE_SCRIPT), "--device", "cpu"]
    cmd += ["--out-dir", str(raw), "--stem", "sim", "--label", "//tests:long_module_name"]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    name = "long_bundle_" + "n" * 188
    label = f"//tests:{name}"
    out = tmp_path / "out"
    result = pack(raw, "sim", name, label, out / name, out / f"{name}.tar", out / f"{name}.sha256")
    (module,) = result.manifest.modules
    assert len(module.name) == 130
    assert len(Path(module.binary).name) > 130  # wp_<module>_<hash>.o: one component no ustar name holds
    assert len(name) == 200

    assert verify_bundle(out / name).name == name
    assert verify_tar(out / f"{name}.tar").name == name
    assert len(_pax_payloads((out / f"{name}.tar").read_bytes())) == len(relative_entries(out / name)) + 1
    # The C++ runtime: the directory, loaded on the CPU through Warp, and the archive.
    for args in (["--load", "cpu", str(out / name)], ["--tar", str(out / f"{name}.tar")]):
        proc = subprocess.run([VERIFY_BUNDLE, *args], capture_output=True, text=True, timeout=300)
        assert (proc.returncode, proc.stdout.strip()) == (0, "ok"), proc.stdout + proc.stderr
