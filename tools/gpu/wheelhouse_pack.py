#!/usr/bin/env python3
"""Stores a wheelhouse so that xz can compress it, and rebuilds the exact wheels.

A wheel is a zip of deflated members: xz gains almost nothing on it, while the same
members uncompressed (warp.so, libnvrtc) shrink to about half of their deflated size
under xz -9. Most wheels are written by Python's zipfile at zlib's default level, so
deflating a member again with the same zlib gives the same bytes. `split` keeps, for
each wheel whose every member deflates back to its bytes, the zip with the deflated
payloads cut out (`.skel`) and the members uncompressed (`.data`); any other wheel is
kept as it is. `join` deflates the members again and writes each wheel only when its
sha256 is the one recorded at `split` (pip checks the lock's hashes on top of that).
Stdlib only: it runs with the runner's own python3 before any venv exists.

    wheelhouse_pack.py split WHEELHOUSE PACKED_DIR
    wheelhouse_pack.py join PACKED_DIR WHEELHOUSE
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import struct
import sys
import zipfile
import zlib
from pathlib import Path

INDEX = "index.json"
SCHEMA = "rules_warp.wheelhouse_pack/1"
# zipfile writes at zlib's default level; the others are tried for wheels made by
# tools that chose another one.
LEVELS = (6, 9, 1, 2, 3, 4, 5, 7, 8)
CHUNK = 1 << 20


class PackError(Exception):
    """A wheelhouse or a packed wheelhouse is not what this tool expects."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _deflate(data: bytes, level: int) -> bytes:
    compressor = zlib.compressobj(level, zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush()


def _payloads(path: Path):
    """(payload offset, compressed size, member) of every member, in file order."""
    with zipfile.ZipFile(path) as zf, open(path, "rb") as raw:
        members = sorted(zf.infolist(), key=lambda m: m.header_offset)
        for member in members:
            raw.seek(member.header_offset)
            header = raw.read(30)
            if header[:4] != b"PK\x03\x04":
                raise PackError(f"{path}: no local header for {member.filename}")
            name_len, extra_len = struct.unpack("<HH", header[26:30])
            yield member.header_offset + 30 + name_len + extra_len, member.compress_size, member


def _split_wheel(wheel: Path, out: Path) -> dict:
    """Writes NAME.skel + NAME.data when every member deflates back; else copies the wheel."""
    blob = wheel.read_bytes()
    skel_path, data_path = out / (wheel.name + ".skel"), out / (wheel.name + ".data")
    segments = []
    with zipfile.ZipFile(wheel) as zf, open(skel_path, "wb") as skel, open(data_path, "wb") as data_f:
        position = 0
        for offset, csize, member in _payloads(wheel):
            if member.compress_type == zipfile.ZIP_STORED:
                continue
            why = None
            if member.compress_type != zipfile.ZIP_DEFLATED:
                why = f"{member.filename}: compression method {member.compress_type}"
            else:
                data = zf.read(member)
                payload = blob[offset : offset + csize]
                level = next((lv for lv in LEVELS if _deflate(data, lv) == payload), None)
                if level is None:
                    why = f"{member.filename}: its deflate stream is not zlib's"
            if why:
                skel.close()
                data_f.close()
                skel_path.unlink()
                data_path.unlink()
                return _keep(wheel, out, why)
            skel.write(blob[position:offset])
            data_f.write(data)
            position = offset + csize
            segments.append([offset, csize, len(data), level])
        skel.write(blob[position:])
    return {"wheel": wheel.name, "sha256": _sha256(wheel), "size": len(blob), "segments": segments}


def _keep(wheel: Path, out: Path, why: str) -> dict:
    (out / wheel.name).write_bytes(wheel.read_bytes())
    return {"wheel": wheel.name, "sha256": _sha256(wheel), "size": wheel.stat().st_size, "kept": why}


def _join_wheel(entry: dict, packed: Path, wheelhouse: Path) -> str:
    name = entry["wheel"]
    partial = wheelhouse / (name + ".partial")
    try:
        _rebuild(entry, packed, partial)
        got = _sha256(partial)
        if got != entry["sha256"]:
            raise PackError(
                f"{name}: rebuilt with sha256 {got}, expected {entry['sha256']}; the packed wheelhouse "
                f"{packed} is damaged or this zlib differs: fill it with tools/fill_wheelhouse.sh instead"
            )
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, wheelhouse / name)
    return name


def _rebuild(entry: dict, packed: Path, out: Path) -> None:
    name = entry["wheel"]
    if "kept" in entry:
        out.write_bytes((packed / name).read_bytes())
        return
    with (
        open(packed / (name + ".skel"), "rb") as skel,
        open(packed / (name + ".data"), "rb") as data_f,
        open(out, "wb") as f,
    ):
        position = 0
        for offset, csize, raw_size, level in entry["segments"]:
            f.write(skel.read(offset - position))
            data = data_f.read(raw_size)
            if len(data) != raw_size:
                raise PackError(f"{packed / (name + '.data')}: truncated at {name}'s member at byte {offset}")
            payload = _deflate(data, level)
            if len(payload) != csize:
                raise PackError(
                    f"{name}: a member deflated to {len(payload)} bytes, the wheel had {csize}: the packed "
                    f"wheelhouse {packed} is damaged or this zlib differs from the one `split` ran with; "
                    "fill the wheelhouse with tools/fill_wheelhouse.sh instead"
                )
            f.write(payload)
            position = offset + csize
        f.write(skel.read())


def split(wheelhouse: Path, packed: Path) -> dict:
    wheels = sorted(wheelhouse.glob("*.whl"))
    if not wheels:
        raise PackError(f"{wheelhouse}: no wheels; fill it with tools/fill_wheelhouse.sh")
    packed.mkdir(parents=True, exist_ok=True)
    # The Debian packages the C++ build downloads (tools/fill_wheelhouse.sh adds them): small,
    # compressed already, kept as they are.
    debs = [_keep(d, packed, "a Debian package") for d in sorted(wheelhouse.glob("*.deb"))]
    index = {"schema": SCHEMA, "wheels": [_split_wheel(w, packed) for w in wheels] + debs}
    (packed / INDEX).write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    return index


def join(packed: Path, wheelhouse: Path, jobs: int) -> list[str]:
    try:
        index = json.loads((packed / INDEX).read_text())
    except (OSError, ValueError) as e:
        raise PackError(f"{packed / INDEX}: unreadable ({e}); run `split` again") from e
    if index.get("schema") != SCHEMA:
        raise PackError(f"{packed / INDEX}: schema {index.get('schema')!r}, expected {SCHEMA!r}")
    wheelhouse.mkdir(parents=True, exist_ok=True)
    # Largest first: warp-lang alone is about half of the work.
    entries = sorted(index["wheels"], key=lambda e: -e["size"])
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(lambda e: _join_wheel(e, packed, wheelhouse), entries))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_split = sub.add_parser("split", help="wheelhouse -> packed directory")
    p_split.add_argument("wheelhouse", type=Path)
    p_split.add_argument("packed", type=Path)
    p_join = sub.add_parser("join", help="packed directory -> the exact wheels")
    p_join.add_argument("packed", type=Path)
    p_join.add_argument("wheelhouse", type=Path)
    p_join.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    try:
        if args.command == "split":
            index = split(args.wheelhouse, args.packed)
            kept = [w["wheel"] + " (" + w["kept"] + ")" for w in index["wheels"] if "kept" in w]
            print(f"wheelhouse_pack: {len(index['wheels'])} wheels, kept as they are: {kept or 'none'}")
        else:
            names = join(args.packed, args.wheelhouse, args.jobs)
            print(f"wheelhouse_pack: {len(names)} wheels rebuilt in {args.wheelhouse}, each with its sha256")
    except PackError as e:
        print(f"wheelhouse_pack: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
