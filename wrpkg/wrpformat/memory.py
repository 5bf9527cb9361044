"""MEMORY section records (regions and their initial data): read and write."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from wrpkg.errors import WrpFormatError
from wrpkg.wrpformat.cursor import Cursor
from wrpkg.wrpformat.limits import MAX_REGION_BYTES, MAX_TOTAL_REGION_BYTES, REGION_RECORD_SIZE

_REGION = struct.Struct("<IIQB7s")
assert _REGION.size == REGION_RECORD_SIZE


@dataclass
class MemoryRegion:
    region_id: int
    element_size: int
    size: int
    initial_data: bytes | None  # `size` bytes, or None when the region has none
    pad: bytes = b"\0" * 7

    @classmethod
    def read(cls, cur: Cursor, i: int, seen: set[int]) -> MemoryRegion:
        """Region record `i` and its initial data; `seen` holds the ids read before it."""
        at = cur.pos
        region_id, element_size, size, has_data, pad = cur.unpack(_REGION, f"memory region record {i}")
        if has_data > 1:
            raise cur.fail(f"region {region_id} has initial-data flag {has_data}, expected 0 or 1", at)
        if region_id in seen:
            raise cur.fail(f"duplicate region id {region_id}", at)
        if size > MAX_REGION_BYTES:
            raise cur.fail(
                f"region {region_id} asks for {size} bytes, more than the {MAX_REGION_BYTES} a region may have "
                "(Warp would allocate them at load)",
                at,
            )
        data = None
        if has_data:
            if size > cur.remaining():
                raise cur.fail(
                    f"region {region_id} declares {size} bytes of initial data, {cur.remaining()} remain", at
                )
            data = cur.raw(size, f"region {region_id} initial data")
        return cls(region_id, element_size, size, data, pad)

    def write(self) -> bytes:
        has_data = self.initial_data is not None
        out = _REGION.pack(self.region_id, self.element_size, self.size, 1 if has_data else 0, self.pad)
        if not has_data:
            return out
        if len(self.initial_data) != self.size:
            raise WrpFormatError(
                None,
                "MEMORY",
                0,
                f"region {self.region_id} has {len(self.initial_data)} bytes of "
                f"initial data but declares size {self.size}",
            )
        return out + self.initial_data


@dataclass
class MemorySection:
    regions: list[MemoryRegion] = field(default_factory=list)
    trailing: bytes = b""  # bytes after the last region (Warp's loader ignores them)

    def region(self, region_id: int) -> MemoryRegion | None:
        for region in self.regions:
            if region.region_id == region_id:
                return region
        return None


def parse_memory(cur: Cursor) -> MemorySection:
    if cur.remaining() < 4:
        raise cur.fail("memory section is shorter than its 4-byte region count")
    count = cur.count("memory region", _REGION.size)
    section = MemorySection()
    seen: set[int] = set()
    total = 0
    for i in range(count):
        at = cur.pos
        region = MemoryRegion.read(cur, i, seen)
        seen.add(region.region_id)
        total += region.size
        if total > MAX_TOTAL_REGION_BYTES:
            raise cur.fail(
                f"regions 0 to {i} ask for {total} bytes in all, more than the {MAX_TOTAL_REGION_BYTES} a .wrp "
                "may allocate (Warp would allocate them at load)",
                at,
            )
        section.regions.append(region)
    section.trailing = cur.raw(cur.remaining(), "trailing memory bytes")
    return section


def write_memory(memory: MemorySection) -> bytes:
    out = bytearray(struct.pack("<I", len(memory.regions)))
    for region in memory.regions:
        out += region.write()
    out += memory.trailing
    return bytes(out)
