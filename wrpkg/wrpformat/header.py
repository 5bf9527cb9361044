"""The 64-byte file header and the section table entries."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from wrpkg.wrpformat.enums import FORMAT_VERSION, HEADER_SIZE, SECTION_ENTRY_SIZE, DeviceType


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


@dataclass
class SectionEntry:
    """One section-table entry as read (the writer recomputes offsets and sizes)."""

    type: int
    flags: int
    offset: int
    size: int
    uncompressed_size: int


_HEADER = struct.Struct("<4sIIIQB3sI32s")
_SECTION = struct.Struct("<IIQQQ")

assert _HEADER.size == HEADER_SIZE and _SECTION.size == SECTION_ENTRY_SIZE
