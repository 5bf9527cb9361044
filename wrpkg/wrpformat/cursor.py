"""Bounds-checked reads whose errors name the absolute file offset."""

from __future__ import annotations

import struct

from wrpkg.errors import WrpFormatError


class Cursor:
    """Bounds-checked reads over one section; errors name the absolute file offset."""

    __slots__ = ("data", "pos", "end", "path", "section")

    def __init__(self, data: memoryview, start: int, end: int, path: str | None, section: str):
        self.data = data
        self.pos = start
        self.end = end
        self.path = path
        self.section = section

    def fail(self, rule: str, offset: int | None = None, fix: str | None = None) -> WrpFormatError:
        return WrpFormatError(self.path, self.section, self.pos if offset is None else offset, rule, fix=fix)

    def remaining(self) -> int:
        return self.end - self.pos

    def need(self, n: int, what: str) -> None:
        if n > self.end - self.pos:
            raise self.fail(f"{what} needs {n} bytes but only {self.end - self.pos} remain")

    def unpack(self, st: struct.Struct, what: str) -> tuple:
        self.need(st.size, what)
        values = st.unpack_from(self.data, self.pos)
        self.pos += st.size
        return values

    def u8(self, what: str) -> int:
        self.need(1, what)
        value = self.data[self.pos]
        self.pos += 1
        return value

    def u32(self, what: str) -> int:
        self.need(4, what)
        (value,) = struct.unpack_from("<I", self.data, self.pos)
        self.pos += 4
        return value

    def raw(self, n: int, what: str) -> bytes:
        self.need(n, what)
        value = bytes(self.data[self.pos : self.pos + n])
        self.pos += n
        return value

    def text(self, n: int, what: str) -> str:
        start = self.pos
        raw = self.raw(n, what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            # Warp's Python side decodes these names as UTF-8 and would fail later.
            raise self.fail(f"{what} is not valid UTF-8", offset=start) from None

    def string(self, what: str) -> str:
        """A u32 length followed by that many bytes (APICMetadataReader::read_string)."""
        n = self.u32(f"{what} length")
        if n > self.end - self.pos:
            raise self.fail(f"{what} declares {n} bytes but only {self.end - self.pos} remain", self.pos - 4)
        return self.text(n, what)

    def count(self, what: str, min_record_size: int) -> int:
        """A u32 record count, refused when that many minimal records cannot fit."""
        n = self.u32(f"{what} count")
        if n * min_record_size > self.end - self.pos:
            raise self.fail(
                f"{what} count {n} cannot fit: {n} records of at least {min_record_size} bytes "
                f"need {n * min_record_size} bytes, {self.end - self.pos} remain",
                self.pos - 4,
            )
        return n
