"""The whole file: header, section table, the three sections; read_wrp and write_wrp."""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from wrpkg import atomic
from wrpkg.errors import WrpFormatError
from wrpkg.wrpformat import limits
from wrpkg.wrpformat.cursor import Cursor
from wrpkg.wrpformat.enums import (
    HEADER_SIZE,
    SECTION_ENTRY_SIZE,
    DeviceType,
    SectionType,
)
from wrpkg.wrpformat.header import SECTION, FileHeader, SectionEntry
from wrpkg.wrpformat.memory import MemorySection, parse_memory, write_memory
from wrpkg.wrpformat.metadata import Metadata, parse_metadata, write_metadata
from wrpkg.wrpformat.operations import (
    OpStream,
    check_branch_depth,
    iter_ops,
    op_type_name,
    parse_stream,
    write_stream_body,
)


@dataclass
class RawSection:
    """A section of a type this format version does not define (Warp's loader skips it)."""

    type: int
    flags: int
    data: bytes


@dataclass
class WrpFile:
    header: FileHeader
    metadata: Metadata
    memory: MemorySection
    operations: OpStream
    # Section order and flags as read; the writer follows it. Entries are SectionType
    # values for the three defined sections, RawSection for anything else.
    layout: list = field(
        default_factory=lambda: [SectionType.METADATA, SectionType.MEMORY, SectionType.OPERATIONS]
    )
    section_flags: dict = field(default_factory=dict)
    sections: list[SectionEntry] = field(default_factory=list)
    path: str | None = None

    @property
    def device(self) -> DeviceType | int:
        try:
            return DeviceType(self.header.device_type)
        except ValueError:
            return self.header.device_type

    @property
    def is_cuda(self) -> bool:
        return self.header.device_type == DeviceType.CUDA

    def to_bytes(self) -> bytes:
        return _write(self)

    def iter_ops(self) -> Iterator[object]:
        """Every operation, depth first (a conditional before the ops in its branches)."""
        yield from iter_ops(self.operations)

    def op_counts(self) -> dict[str, int]:
        """Operation counts by type name, nested branches included."""
        counts: dict[str, int] = {}
        for op in self.iter_ops():
            name = op_type_name(op.op_type)
            counts[name] = counts.get(name, 0) + 1
        return counts


def read_wrp(path_or_bytes, *, path: str | os.PathLike | None = None, operations: bool = True) -> WrpFile:
    """Parse and validate a .wrp file (a path, or its bytes with `path` naming it in errors).

    `operations=False` leaves the OPERATIONS section unparsed (`operations` is then empty
    and cross-references are not checked): a load-time check of a bundle that was fully
    validated when it was built needs only the header, metadata and memory, and parsing
    thousands of launches in Python costs far more than Warp's whole load."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        data = bytes(path_or_bytes)
        name = str(path) if path is not None else None
    else:
        name = str(path if path is not None else path_or_bytes)
        try:
            data = Path(path_or_bytes).read_bytes()
        except OSError as err:
            raise WrpFormatError(name, "file", 0, f"cannot read the file: {err.strerror}") from err
    return _parse(memoryview(data), name, operations)


def _parse(data: memoryview, path: str | None, with_operations: bool = True) -> WrpFile:
    size = len(data)
    header = FileHeader.read(Cursor(data, 0, size, path, "header"))
    num_sections, table_offset = header.num_sections, header.section_table_offset

    entries: list[SectionEntry] = []
    layout: list = []
    section_flags: dict = {}
    found: dict[int, SectionEntry] = {}
    table = Cursor(data, table_offset, size, path, "section table")
    for i in range(num_sections):
        entry_offset = table.pos
        entry = SectionEntry(*table.unpack(SECTION, f"section entry {i}"))
        entries.append(entry)
        if entry.offset > size or entry.size > size - entry.offset:
            raise table.fail(
                f"section {i} (type {entry.type}) at byte {entry.offset} with {entry.size} bytes overruns "
                f"the {size}-byte file",
                entry_offset,
            )
        if entry.uncompressed_size != entry.size:
            raise table.fail(
                f"section {i} is compressed (size {entry.size} != uncompressed {entry.uncompressed_size}); "
                "format 18 has no compression",
                entry_offset,
            )
        if entry.type in (SectionType.METADATA, SectionType.MEMORY, SectionType.OPERATIONS):
            kind = SectionType(entry.type)
            if kind in found:
                raise table.fail(f"duplicate {kind.name} section", entry_offset)
            found[kind] = entry
            layout.append(kind)
            section_flags[kind] = entry.flags
        else:
            layout.append(
                RawSection(entry.type, entry.flags, bytes(data[entry.offset : entry.offset + entry.size]))
            )
    for kind in (SectionType.METADATA, SectionType.MEMORY, SectionType.OPERATIONS):
        if kind not in found or found[kind].size == 0:
            raise WrpFormatError(
                path, "section table", table_offset, f"required {kind.name} section is missing"
            )

    # Warp validates the operation stream first, then metadata, then memory; the order
    # only decides which error a file with several faults reports.
    ops_entry = found[SectionType.OPERATIONS]
    ops_cur = Cursor(data, ops_entry.offset, ops_entry.offset + ops_entry.size, path, "OPERATIONS")
    if ops_entry.size < 4:
        raise ops_cur.fail("operations section is shorter than its 4-byte op count")
    op_count = ops_cur.u32("operation count")
    # Without operations (a load), Warp validates the rest of the stream; its nesting limit is laxer.
    check_branch_depth(ops_cur, ops_cur.end, op_count)
    operations = parse_stream(ops_cur, ops_cur.end, op_count) if with_operations else []

    meta_entry = found[SectionType.METADATA]
    metadata = parse_metadata(
        Cursor(data, meta_entry.offset, meta_entry.offset + meta_entry.size, path, "METADATA"), header
    )

    mem_entry = found[SectionType.MEMORY]
    memory = parse_memory(Cursor(data, mem_entry.offset, mem_entry.offset + mem_entry.size, path, "MEMORY"))

    wrp = WrpFile(
        header=header,
        metadata=metadata,
        memory=memory,
        operations=operations,
        layout=layout,
        section_flags=section_flags,
        sections=entries,
        path=path,
    )
    # Loads too (no operations parsed): Warp builds meshes from these records without these checks.
    _check_references(wrp, meta_entry.offset)
    return wrp


def _check_references(wrp: WrpFile, meta_offset: int) -> None:
    """Cross-section rules Warp's loader enforces when it builds meshes and fixes handles."""
    sizes = {region.region_id: region.size for region in wrp.memory.regions}

    def fail(rule: str) -> WrpFormatError:
        return WrpFormatError(wrp.path, "METADATA", meta_offset, rule)

    for i, mesh in enumerate(wrp.metadata.meshes):
        for what, region_id in (("points", mesh.points_region_id), ("indices", mesh.indices_region_id)):
            if region_id not in sizes:
                raise fail(f"mesh {i} {what} region {region_id} does not exist")
        problem = _mesh_problem(wrp, mesh, sizes)
        if problem:
            raise fail(f"mesh {i} {problem}")
    for i, loc in enumerate(wrp.metadata.ptr_locations):
        if loc.count == 0:
            continue
        if loc.region_id not in sizes:
            raise fail(f"pointer location {i} refers to missing region {loc.region_id}")
        size = sizes[loc.region_id]
        if (
            loc.offset > size
            or size - loc.offset < 8
            or (loc.stride == 0 and loc.count != 1)
            or (loc.stride != 0 and loc.count - 1 > (size - loc.offset - 8) // loc.stride)
        ):
            raise fail(f"pointer location {i} is out of bounds for region {loc.region_id}")


def _mesh_problem(wrp: WrpFile, mesh, sizes: dict[int, int]) -> str:
    """What Warp's loader would build a mesh from without checking, and read past or crash on (a
    triangle index outside the points, a count past its region, no triangles, leaf size 0); the C++
    reader's MeshProblem (runtime/internal/wrp_check.cc)."""
    if mesh.num_tris == 0:
        return "has no triangles"
    if mesh.support_winding_number > 1:
        return f"has winding-number flag {mesh.support_winding_number}, expected 0 or 1"
    device = "cpu" if wrp.header.device_type == DeviceType.CPU else "cuda"
    if mesh.bvh_constructor not in limits.MESH_BVH_CONSTRUCTORS[device]:
        where = "the CPU" if device == "cpu" else "CUDA"
        return f"has BVH constructor {mesh.bvh_constructor}, which Warp does not build on {where}"
    if mesh.bvh_leaf_size < limits.MIN_MESH_BVH_LEAF_SIZE:
        return f"has BVH leaf size {mesh.bvh_leaf_size}, less than {limits.MIN_MESH_BVH_LEAF_SIZE}"
    points_bytes, indices_bytes = mesh.num_points * 12, mesh.num_tris * 12
    if sizes[mesh.points_region_id] < points_bytes:
        return (
            f"has {mesh.num_points} points, more than its points region {mesh.points_region_id} holds "
            f"({sizes[mesh.points_region_id]} bytes)"
        )
    if sizes[mesh.indices_region_id] < indices_bytes:
        return (
            f"has {mesh.num_tris} triangles, more than its indices region {mesh.indices_region_id} holds "
            f"({sizes[mesh.indices_region_id]} bytes)"
        )
    velocities = sizes.get(mesh.velocities_region_id)
    if mesh.velocities_region_id != 0 and velocities is not None and velocities < points_bytes:
        return (
            f"has {mesh.num_points} points, more than its velocities region {mesh.velocities_region_id} "
            f"holds ({velocities} bytes)"
        )
    # A region without initial data is zero-filled at load: every index 0.
    data = wrp.memory.region(mesh.indices_region_id).initial_data
    indices = memoryview(data)[:indices_bytes].cast("i") if data is not None else (0,)
    if min(indices) < 0 or max(indices) >= mesh.num_points:
        at, index = next((k, v) for k, v in enumerate(indices) if v < 0 or v >= mesh.num_points)
        return f"has triangle index {index} (triangle {at // 3}), outside its {mesh.num_points} points"
    return ""


def _write(wrp: WrpFile) -> bytes:
    payloads = []
    for slot in wrp.layout:
        if isinstance(slot, RawSection):
            payloads.append((slot.type, slot.flags, slot.data))
        elif slot == SectionType.METADATA:
            payloads.append((slot, wrp.section_flags.get(slot, 0), write_metadata(wrp.metadata)))
        elif slot == SectionType.MEMORY:
            payloads.append((slot, wrp.section_flags.get(slot, 0), write_memory(wrp.memory)))
        elif slot == SectionType.OPERATIONS:
            ops = struct.pack("<I", len(wrp.operations.ops)) + write_stream_body(wrp.operations)
            payloads.append((slot, wrp.section_flags.get(slot, 0), ops))
    out = bytearray(wrp.header.write(len(payloads)))
    offset = HEADER_SIZE + SECTION_ENTRY_SIZE * len(payloads)
    for section_type, flags, data in payloads:
        out += SECTION.pack(int(section_type), flags, offset, len(data), len(data))
        offset += len(data)
    for _, _, data in payloads:
        out += data
    return bytes(out)


def write_wrp(wrp: WrpFile, path: str | os.PathLike) -> None:
    """Write atomically: a temporary file in the same directory, then a rename over `path`."""
    atomic.write_file(Path(path), wrp.to_bytes())
