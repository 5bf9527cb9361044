"""The 64-byte file header and the section table entries."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from wrpkg import WARP_VERSION
from wrpkg.wrpformat.cursor import Cursor
from wrpkg.wrpformat.enums import (
    FORMAT_VERSION,
    HEADER_SIZE,
    INT32_MAX,
    MAGIC,
    MAX_SECTIONS,
    SECTION_ENTRY_SIZE,
    DeviceType,
)


@dataclass
class FileHeader:
    version: int = FORMAT_VERSION
    flags: int = 0
    device_type: int = DeviceType.CPU
    target_arch: int = 0
    # num_sections and section_table_offset are derived by the writer; these are as read.
    num_sections: int = 3
    section_table_offset: int = HEADER_SIZE
    reserved_after_device_type: bytes = b"\0" * 3
    reserved: bytes = b"\0" * 32

    @classmethod
    def read(cls, cur: Cursor) -> FileHeader:
        """The header at the start of the file, with the checks Warp's loader makes on it
        (the section table must fit in the file: `cur` spans the whole file)."""
        size = cur.end
        if size < HEADER_SIZE:
            raise cur.fail(f"file is {size} bytes, smaller than the {HEADER_SIZE}-byte header")
        (
            magic,
            version,
            flags,
            num_sections,
            table_offset,
            device_type,
            reserved_dt,
            target_arch,
            reserved,
        ) = _HEADER.unpack_from(cur.data, 0)
        if magic != MAGIC:
            raise cur.fail(f"bad magic {magic!r}, expected {MAGIC!r}: not a .wrp file")
        if version != FORMAT_VERSION:
            raise cur.fail(
                f"unsupported format version {version}, expected {FORMAT_VERSION}",
                4,
                fix=f"recapture with warp-lang {WARP_VERSION}",
            )
        if device_type not in (DeviceType.CUDA, DeviceType.CPU):
            raise cur.fail(f"unknown device type {device_type}", 24)
        if (
            (device_type == DeviceType.CUDA and target_arch == 0)
            or (device_type == DeviceType.CPU and target_arch != 0)
            or target_arch > INT32_MAX
        ):
            raise cur.fail(f"device type {device_type} and target architecture {target_arch} disagree", 28)
        if num_sections == 0 or num_sections > MAX_SECTIONS:
            raise cur.fail(f"section count {num_sections} is not in 1..{MAX_SECTIONS}", 12)
        if table_offset > size or num_sections > (size - table_offset) // SECTION_ENTRY_SIZE:
            raise cur.fail(
                f"section table ({num_sections} entries at byte {table_offset}) overruns the file", 16
            )
        return cls(
            version, flags, device_type, target_arch, num_sections, table_offset, reserved_dt, reserved
        )

    def write(self, num_sections: int) -> bytes:
        """The header of a file whose section table follows it with `num_sections` entries."""
        return _HEADER.pack(
            MAGIC,
            self.version,
            self.flags,
            num_sections,
            HEADER_SIZE,
            self.device_type,
            self.reserved_after_device_type,
            self.target_arch,
            self.reserved,
        )


@dataclass
class SectionEntry:
    """One section-table entry as read (the writer recomputes offsets and sizes)."""

    type: int
    flags: int
    offset: int
    size: int
    uncompressed_size: int


_HEADER = struct.Struct("<4sIIIQB3sI32s")
SECTION = struct.Struct("<IIQQQ")

assert _HEADER.size == HEADER_SIZE and SECTION.size == SECTION_ENTRY_SIZE
