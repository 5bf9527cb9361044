"""tools/gpu/wheelhouse_pack.py: the runner pack stores wheels uncompressed and must give back
the exact bytes (pip checks each wheel's sha256 against the lock), or fail saying which."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import zipfile
import zlib
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("wheelhouse_pack", os.environ["WRP_WHEELHOUSE_PACK"])
wheelhouse_pack = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wheelhouse_pack)

MEMBERS = {
    "pkg/__init__.py": b"VALUE = 1\n" * 500,
    "pkg/native.so": bytes(range(256)) * 4000 + os.urandom(20000),
    "pkg-1.0.dist-info/RECORD": b"pkg/__init__.py,,\n",
}


def _wheel(path: Path, *, level: int = 6, stored: str | None = None) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as zf:
        for name, data in MEMBERS.items():
            zf.writestr(name, data, compress_type=zipfile.ZIP_STORED if name == stored else None)
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_wheels_come_back_byte_for_byte(tmp_path):
    house = tmp_path / "house"
    house.mkdir()
    wheels = [
        _wheel(house / "a-1.0-py3-none-any.whl"),
        _wheel(house / "b-1.0-py3-none-any.whl", level=9, stored="pkg/__init__.py"),
    ]
    index = wheelhouse_pack.split(house, tmp_path / "packed")
    assert all("kept" not in w for w in index["wheels"])
    # The payload is stored uncompressed: the point of the pack.
    data = (tmp_path / "packed" / "a-1.0-py3-none-any.whl.data").read_bytes()
    assert MEMBERS["pkg/native.so"] in data
    assert not list((tmp_path / "packed").glob("*.whl"))
    out = tmp_path / "out"
    wheelhouse_pack.join(tmp_path / "packed", out, jobs=2)
    for wheel in wheels:
        assert _sha(out / wheel.name) == _sha(wheel)
    assert sorted(p.name for p in out.iterdir()) == sorted(w.name for w in wheels)


def test_debian_packages_in_the_wheelhouse_are_kept(tmp_path):
    # tools/fill_wheelhouse.sh puts the C++ build's .deb files there (third_party/debian).
    house = tmp_path / "house"
    house.mkdir()
    wheel = _wheel(house / "a-1.0-py3-none-any.whl")
    deb = house / "libfoo-dev_1.0-1_all.deb"
    deb.write_bytes(b"!<arch>\n" + os.urandom(3000))
    index = wheelhouse_pack.split(house, tmp_path / "packed")
    assert [w["kept"] for w in index["wheels"] if w["wheel"] == deb.name] == ["a Debian package"]
    out = tmp_path / "out"
    wheelhouse_pack.join(tmp_path / "packed", out, jobs=2)
    assert _sha(out / deb.name) == _sha(deb) and _sha(out / wheel.name) == _sha(wheel)


def test_a_wheel_not_deflated_by_zlib_defaults_is_kept_as_it_is(tmp_path, monkeypatch):
    house = tmp_path / "house"
    house.mkdir()

    class HuffmanOnly:
        DEFLATED = zlib.DEFLATED

        def __getattr__(self, name):
            return getattr(zlib, name)

        @staticmethod
        def compressobj(level, method, wbits):
            return zlib.compressobj(level, method, wbits, 8, zlib.Z_HUFFMAN_ONLY)

    monkeypatch.setattr(zipfile, "zlib", HuffmanOnly())
    wheel = _wheel(house / "rusty-1.0-py3-none-any.whl")
    monkeypatch.undo()
    index = wheelhouse_pack.split(house, tmp_path / "packed")
    assert "deflate stream is not zlib's" in index["wheels"][0]["kept"]
    wheelhouse_pack.join(tmp_path / "packed", tmp_path / "out", jobs=1)
    assert _sha(tmp_path / "out" / wheel.name) == _sha(wheel)


def test_damaged_pack_fails_naming_the_wheel_and_writes_nothing(tmp_path):
    house = tmp_path / "house"
    house.mkdir()
    _wheel(house / "a-1.0-py3-none-any.whl")
    wheelhouse_pack.split(house, tmp_path / "packed")
    data = tmp_path / "packed" / "a-1.0-py3-none-any.whl.data"
    blob = bytearray(data.read_bytes())
    blob[10] ^= 0xFF
    data.write_bytes(bytes(blob))
    with pytest.raises(wheelhouse_pack.PackError, match="a-1.0-py3-none-any.whl"):
        wheelhouse_pack.join(tmp_path / "packed", tmp_path / "out", jobs=1)
    assert list((tmp_path / "out").iterdir()) == []


def test_no_index_is_a_clear_error(tmp_path):
    (tmp_path / "packed").mkdir()
    with pytest.raises(wheelhouse_pack.PackError, match="run `split` again"):
        wheelhouse_pack.join(tmp_path / "packed", tmp_path / "out", jobs=1)
    assert wheelhouse_pack.main(["join", str(tmp_path / "packed"), str(tmp_path / "out")]) == 1
