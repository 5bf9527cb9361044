"""The .wrp (Warp APIC, format version 18) reader, writer, validator and canonical form.

This is the one place that knows the byte layout. The authority is warp-lang 1.19.0's
`warp/native/apic_types.h` (record layouts) and `warp/native/apic.cpp`
(`apic_load_graph_from_image`, `apic_parse_metadata`, `apic_parse_memory_regions`,
`apic_validate_operation_stream`, `apic_validate_module`: what the loader rejects).

Layout (little-endian, packed, uncompressed):

    header (64 bytes) | section table (32 bytes per entry) | METADATA | MEMORY | OPERATIONS

- `read_wrp()` parses and validates; every rule broken raises `WrpFormatError(path,
  section, offset, rule)` naming the absolute byte offset. Declared sizes and counts are
  checked against the bytes that remain BEFORE anything is allocated or looped over.
- `WrpFile.to_bytes()` / `write_wrp()` write the file back; for every file Warp writes
  the result is byte-identical to the input.
- `canonicalize()` gives the form in which two captures of one program compare equal.
- `replace_module_binary()` points a module record at another binary (a fatbin).
"""

from __future__ import annotations

import copy
import enum
import os
import re
import struct
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from wrpkg import WARP_VERSION
from wrpkg.errors import WrpFormatError

FORMAT_VERSION = 18
MAGIC = b"WRP1"
HEADER_SIZE = 64
SECTION_ENTRY_SIZE = 32
# Warp's loader refuses more sections than this (apic_load_graph_from_image).
MAX_SECTIONS = 64
# Warp allows 1024 nested capture_if/capture_while levels. The reader recurses in Python,
# whose stack is far smaller than C++'s, so it stops earlier; no real program comes close.
MAX_BRANCH_DEPTH = 128
INT32_MAX = 0x7FFFFFFF

# The target_arch canonicalize() writes into the header, the metadata and every module of a
# CUDA graph. Warp's loader (apic.cpp) requires: header arch == metadata arch, non-zero for
# CUDA, <= INT_MAX; every module's arch > 0, >= 90 when its recipe's arch_suffix is 'a'
# and >= 100 when it is 'f'. Nothing else reads these values at load time: the CUDA code
# path picks the binary by the device's own arch (apic.cu, apic_load_cuda_module). 100 is
# the smallest value that satisfies every rule for every recipe, so one fixed value makes
# captures from different GPUs comparable without ever producing a file Warp rejects.
CANONICAL_CUDA_TARGET_ARCH = 100


# ---------------------------------------------------------------------------------------
# Enums (apic_types.h)
# ---------------------------------------------------------------------------------------


class DeviceType(enum.IntEnum):
    CUDA = 0
    CPU = 1


class SectionType(enum.IntEnum):
    METADATA = 0x01
    MEMORY = 0x02
    OPERATIONS = 0x03


class OpType(enum.IntEnum):
    KERNEL_LAUNCH = 1
    MEMCPY_H2D = 2
    MEMCPY_D2H = 3  # reserved by Warp; its loader rejects it
    MEMCPY_D2D = 4
    MEMSET = 5
    ALLOC = 6
    IF = 7
    WHILE = 8
    SCAN = 9
    MEMTILE = 10
    SEGMENTED_SORT = 11
    RADIX_SORT = 12
    RUNLENGTH_ENCODE = 13
    BSR_FROM_TRIPLETS = 14
    BSR_TRANSPOSE = 15
    REDUCTION = 16
    BVH_REFIT = 17
    BVH_REBUILD = 18
    HASH_GRID_UPDATE = 19


class RelocKind(enum.IntEnum):
    DATA_PTR = 1  # region pointer: resolve_ptr(region_id, region_offset)
    HANDLE = 2  # mesh / wp.handle id: region_offset holds the captured handle
    NULL = 3  # literal zero


class BinaryKind(enum.IntEnum):
    """APICCudaBinaryKind. CPU modules (a `.o` object) and binary-only CUDA saves use NONE:
    the format has no separate value for a CPU object."""

    NONE = 0
    PTX = 1
    CUBIN = 2


class ArchSuffix(enum.IntEnum):
    NONE = 0
    A = 1
    F = 2


class FallbackReason(enum.IntEnum):
    AVAILABLE = 0
    SOURCE_UNAVAILABLE = 1
    EXTERNAL_INCLUDES = 2
    LLVM_CUDA = 3
    LINK_INPUTS = 4
    EXPORT_FAILED = 5
    RECIPE_UNAVAILABLE = 6


class ScalarType(enum.IntEnum):
    INT32 = 1
    UINT32 = 2
    INT64 = 3
    UINT64 = 4
    FLOAT32 = 5
    FLOAT64 = 6


class Direction(str, enum.Enum):
    """How a named binding is used. The .wrp does not store it (Warp registers the inputs,
    then the outputs); see `binding_directions`."""

    INPUT = "input"
    OUTPUT = "output"
    BOTH = "both"
    UNKNOWN = "unknown"


# ---------------------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------------------


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


@dataclass
class CompileRecipe:
    """Decoded view of a module's 16-byte APICCudaCompileRecipe."""

    debug: int
    optimization_level: int
    verify_fp: int
    fast_math: int
    fuse_fp: int
    lineinfo: int
    arch_suffix: int
    reserved: bytes

    @classmethod
    def from_bytes(cls, raw: bytes) -> CompileRecipe:
        return cls(*raw[:7], raw[7:16])


@dataclass
class ModuleRecord:
    hash: str
    name: str
    binary_filename: str
    target_arch: int
    binary_sha256: str  # lowercase hex, or "" (CPU modules, binary-only CUDA saves)
    source_filename: str
    source_sha256: str
    binary_kind: BinaryKind
    fallback_reason: FallbackReason
    compile_recipe: bytes  # the raw 16 bytes

    @property
    def recipe(self) -> CompileRecipe:
        return CompileRecipe.from_bytes(self.compile_recipe)


@dataclass
class KernelRecord:
    key: str
    module_hash: str
    forward_name: str
    backward_name: str
    forward_smem_bytes: int
    backward_smem_bytes: int
    block_dim: int


@dataclass
class BindingRecord:
    """A name given to a region in capture_save(inputs=..., outputs=...)."""

    name: str
    region_id: int


@dataclass
class MeshRecord:
    num_points: int
    num_tris: int
    support_winding_number: int
    bvh_constructor: int
    bvh_leaf_size: int
    points_region_id: int
    indices_region_id: int
    velocities_region_id: int  # 0 if absent
    original_ptr: int  # the captured mesh handle; relocations refer to it


@dataclass
class PtrLocation:
    """Slots in a region's initial data that hold mesh handles (fixed up at load)."""

    region_id: int
    offset: int
    stride: int
    count: int


@dataclass
class Metadata:
    format_version: int = FORMAT_VERSION
    producer_version: str = WARP_VERSION
    target_arch: int = 0
    modules: list[ModuleRecord] = field(default_factory=list)
    kernels: list[KernelRecord] = field(default_factory=list)
    bindings: list[BindingRecord] = field(default_factory=list)
    meshes: list[MeshRecord] = field(default_factory=list)
    ptr_locations: list[PtrLocation] = field(default_factory=list)


@dataclass
class MemoryRegion:
    region_id: int
    element_size: int
    size: int
    initial_data: bytes | None  # `size` bytes, or None when the region has none
    pad: bytes = b"\0" * 7


@dataclass
class MemorySection:
    regions: list[MemoryRegion] = field(default_factory=list)
    trailing: bytes = b""  # bytes after the last region (Warp's loader ignores them)

    def region(self, region_id: int) -> MemoryRegion | None:
        for region in self.regions:
            if region.region_id == region_id:
                return region
        return None


@dataclass(slots=True)
class LaunchParam:
    """APICLaunchParamRecord: one argument's slice of value_data and its relocation count."""

    param_index: int
    num_relocs: int
    value_offset: int
    value_size: int
    value_align: int


@dataclass(slots=True)
class LaunchReloc:
    """APICLaunchPtrLocation: an 8-byte slot inside a value blob patched at replay."""

    value_byte_offset: int
    region_id: int
    region_offset: int
    kind: RelocKind
    pad: bytes = b"\0" * 7


@dataclass
class KernelLaunch:
    shape: tuple[int, int, int, int]
    ndim: int
    size: int
    dim: int
    max_blocks: int
    block_dim: int
    smem_bytes: int
    grid_stride: int
    is_forward: int
    cluster_dim: int
    kernel_key: str
    module_hash: str
    params: list[LaunchParam]
    adj_params: list[LaunchParam]  # present (same count as params) only when is_forward == 0
    relocs: list[LaunchReloc]  # forward bindings' relocs, then adjoint ones, in order
    value_data: bytes
    pad1: bytes = b"\0\0"
    pad2: int = 0
    tail: bytes = b""  # bytes inside total_size after value_data

    op_type = OpType.KERNEL_LAUNCH

    def bindings_with_relocs(self) -> Iterator[tuple[LaunchParam, list[LaunchReloc]]]:
        """Each binding (forward, then adjoint) with the relocations that patch its blob."""
        cursor = 0
        for param in [*self.params, *self.adj_params]:
            yield param, self.relocs[cursor : cursor + param.num_relocs]
            cursor += param.num_relocs


@dataclass
class MemcpyH2D:
    dst_region_id: int
    dst_offset: int
    data: bytes
    pad: int = 0
    tail: bytes = b""

    op_type = OpType.MEMCPY_H2D


@dataclass
class MemcpyD2D:
    dst_region_id: int
    src_region_id: int
    dst_offset: int
    src_offset: int
    size: int
    tail: bytes = b""

    op_type = OpType.MEMCPY_D2D


@dataclass
class Memset:
    region_id: int
    value: int
    offset: int
    size: int
    tail: bytes = b""

    op_type = OpType.MEMSET


@dataclass
class Memtile:
    """arr.fill_(v) of a multi-byte dtype: `count` copies of `value` at `offset`."""

    region_id: int
    offset: int
    count: int
    value: bytes  # srcsize bytes
    tail: bytes = b""

    op_type = OpType.MEMTILE


@dataclass
class Alloc:
    region_id: int
    size: int
    pad: int = 0
    tail: bytes = b""

    op_type = OpType.ALLOC


@dataclass
class OpStream:
    ops: list = field(default_factory=list)
    trailing: bytes = b""  # bytes after the declared op count (Warp warns, then ignores them)


@dataclass
class Conditional:
    """wp.capture_if (branch_a = then, branch_b = else) or wp.capture_while (body in branch_a)."""

    kind: OpType  # OpType.IF or OpType.WHILE
    cond_region_id: int
    cond_offset: int
    branch_a: OpStream
    branch_b: OpStream
    pad: int = 0
    tail: bytes = b""

    @property
    def op_type(self) -> OpType:
        return self.kind


@dataclass
class OpaqueOp:
    """Any other known record (scan, sorts, BSR, reduction, ...), kept as its bytes."""

    op_type: int
    payload: bytes  # everything after the 8-byte op header


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


def iter_ops(stream: OpStream) -> Iterator[object]:
    for op in stream.ops:
        yield op
        if isinstance(op, Conditional):
            yield from iter_ops(op.branch_a)
            yield from iter_ops(op.branch_b)


def op_type_name(op_type: int) -> str:
    try:
        return OpType(op_type).name.lower()
    except ValueError:
        return f"op_{op_type}"


# ---------------------------------------------------------------------------------------
# Struct layouts (packed, little-endian)
# ---------------------------------------------------------------------------------------

_HEADER = struct.Struct("<4sIIIQB3sI32s")
_SECTION = struct.Struct("<IIQQQ")
_MESH = struct.Struct("<iiBBHIIIQ")
_PTR_LOC = struct.Struct("<IQQQ")
_REGION = struct.Struct("<IIQB7s")
_OP_HEADER = struct.Struct("<II")
# APICLaunchRecord after the op header: shape[4], ndim, size, dim, max_blocks, block_dim,
# smem_bytes, grid_stride, is_forward, cluster_dim, _pad1[2], kernel_key_len,
# module_hash_len, num_params, _pad2, num_relocs, value_data_size.
_LAUNCH = struct.Struct("<4IiQQiiiiBB2sHHHHII")
_LAUNCH_PARAM = struct.Struct("<HHIII")
_LAUNCH_RELOC = struct.Struct("<IiQB7s")
_H2D = struct.Struct("<iIQQ")
_D2D = struct.Struct("<iiQQQ")
_MEMSET = struct.Struct("<iiQQ")
_MEMTILE = struct.Struct("<iIQQ")
_ALLOC = struct.Struct("<iIQ")
_COND = struct.Struct("<iIQIIII")

assert _HEADER.size == HEADER_SIZE and _SECTION.size == SECTION_ENTRY_SIZE
assert _MESH.size == 32 and _REGION.size == 24 and _LAUNCH.size + 8 == 80
assert _LAUNCH_PARAM.size == 16 and _LAUNCH_RELOC.size == 24
assert _COND.size + 8 == 40 and _MEMTILE.size + 8 == 32 and _D2D.size + 8 == 40

# Minimum sizes of the records Warp's validator knows (apic_types.h sizeof()). Records of
# these types are kept opaque; the reader still enforces the size and field rules below.
_OPAQUE_MIN_SIZE = {
    OpType.SCAN: 52,
    OpType.REDUCTION: 64,
    OpType.SEGMENTED_SORT: 68,
    OpType.RADIX_SORT: 52,
    OpType.RUNLENGTH_ENCODE: 64,
    OpType.BSR_FROM_TRIPLETS: 160,
    OpType.BSR_TRANSPOSE: 116,
    OpType.BVH_REFIT: 24,
    OpType.BVH_REBUILD: 24,
    OpType.HASH_GRID_UPDATE: 64,
}

_RELOC_KINDS = {kind.value: kind for kind in RelocKind}

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


# ---------------------------------------------------------------------------------------
# Reader
# ---------------------------------------------------------------------------------------


class _Cursor:
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
    cur = _Cursor(data, 0, size, path, "header")
    if size < HEADER_SIZE:
        raise cur.fail(f"file is {size} bytes, smaller than the {HEADER_SIZE}-byte header")
    (magic, version, flags, num_sections, table_offset, device_type, reserved_dt, target_arch, reserved) = (
        _HEADER.unpack_from(data, 0)
    )
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
        raise cur.fail(f"section table ({num_sections} entries at byte {table_offset}) overruns the file", 16)

    header = FileHeader(
        version=version,
        flags=flags,
        device_type=device_type,
        target_arch=target_arch,
        num_sections=num_sections,
        section_table_offset=table_offset,
        reserved_after_device_type=reserved_dt,
        reserved=reserved,
    )

    entries: list[SectionEntry] = []
    layout: list = []
    section_flags: dict = {}
    found: dict[int, SectionEntry] = {}
    table = _Cursor(data, table_offset, size, path, "section table")
    for i in range(num_sections):
        entry_offset = table.pos
        entry = SectionEntry(*table.unpack(_SECTION, f"section entry {i}"))
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
    ops_cur = _Cursor(data, ops_entry.offset, ops_entry.offset + ops_entry.size, path, "OPERATIONS")
    if ops_entry.size < 4:
        raise ops_cur.fail("operations section is shorter than its 4-byte op count")
    op_count = ops_cur.u32("operation count")
    operations = _parse_stream(ops_cur, ops_cur.end, op_count, 0) if with_operations else []

    meta_entry = found[SectionType.METADATA]
    metadata = _parse_metadata(
        _Cursor(data, meta_entry.offset, meta_entry.offset + meta_entry.size, path, "METADATA"), header
    )

    mem_entry = found[SectionType.MEMORY]
    memory = _parse_memory(_Cursor(data, mem_entry.offset, mem_entry.offset + mem_entry.size, path, "MEMORY"))

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
    if with_operations:
        _check_references(wrp, meta_entry.offset)
    return wrp


# Smallest encodings, used to refuse counts that cannot fit before looping over them.
_MIN_MODULE = 7 * 4 + 4 + 1 + 1 + 16
_MIN_KERNEL = 4 * 4 + 3 * 4
_MIN_BINDING = 4 + 4


def _parse_metadata(cur: _Cursor, header: FileHeader) -> Metadata:
    version = cur.u32("metadata version")
    if version != FORMAT_VERSION:
        raise cur.fail(
            f"metadata version {version} does not match format version {FORMAT_VERSION}", cur.pos - 4
        )
    producer_at = cur.pos
    producer = cur.string("producer version")
    if producer != WARP_VERSION:
        raise cur.fail(
            f"produced by Warp {producer!r}, but only Warp {WARP_VERSION} files load",
            producer_at,
            fix=f"recapture with warp-lang=={WARP_VERSION}",
        )
    target_arch = cur.u32("metadata target architecture")
    if target_arch != header.target_arch:
        raise cur.fail(
            f"metadata target architecture {target_arch} does not match the header's {header.target_arch}",
            cur.pos - 4,
        )
    counts_at = cur.pos
    num_modules, num_kernels, num_bindings, num_meshes, num_ptr_locations = (
        cur.u32(what) for what in ("module count", "kernel count", "binding count", "mesh count", "ptr count")
    )
    needed = (
        num_modules * _MIN_MODULE
        + num_kernels * _MIN_KERNEL
        + num_bindings * _MIN_BINDING
        + num_meshes * _MESH.size
        + num_ptr_locations * _PTR_LOC.size
    )
    if needed > cur.remaining():
        raise cur.fail(
            f"record counts (modules {num_modules}, kernels {num_kernels}, bindings {num_bindings}, "
            f"meshes {num_meshes}, pointer locations {num_ptr_locations}) need at least {needed} bytes, "
            f"{cur.remaining()} remain",
            counts_at,
        )

    device = DeviceType(header.device_type)
    meta = Metadata(format_version=version, producer_version=producer, target_arch=target_arch)
    seen_modules: set[str] = set()
    for i in range(num_modules):
        at = cur.pos
        module_hash = cur.string(f"module {i} hash")
        name = cur.string(f"module {i} name")
        binary_filename = cur.string(f"module {i} binary filename")
        arch = cur.u32(f"module {i} target arch")
        binary_sha = cur.string(f"module {i} binary sha256")
        source_filename = cur.string(f"module {i} source filename")
        source_sha = cur.string(f"module {i} source sha256")
        kind = cur.u8(f"module {i} binary kind")
        reason = cur.u8(f"module {i} fallback reason")
        recipe = cur.raw(16, f"module {i} compile recipe")
        if kind not in BinaryKind._value2member_map_:
            raise cur.fail(f"module {i} ({name!r}): unknown binary kind {kind}", at)
        if reason not in FallbackReason._value2member_map_:
            raise cur.fail(f"module {i} ({name!r}): unknown fallback reason {reason}", at)
        module = ModuleRecord(
            hash=module_hash,
            name=name,
            binary_filename=binary_filename,
            target_arch=arch,
            binary_sha256=binary_sha,
            source_filename=source_filename,
            source_sha256=source_sha,
            binary_kind=BinaryKind(kind),
            fallback_reason=FallbackReason(reason),
            compile_recipe=recipe,
        )
        problem = validate_module(module, device)
        if problem:
            raise cur.fail(f"module {i} ({name!r}): {problem}", at)
        if module_hash in seen_modules:
            raise cur.fail(f"module {i}: duplicate module hash {module_hash}", at)
        seen_modules.add(module_hash)
        meta.modules.append(module)

    seen_kernels: set[tuple[str, str]] = set()
    for i in range(num_kernels):
        at = cur.pos
        kernel = KernelRecord(
            key=cur.string(f"kernel {i} key"),
            module_hash=cur.string(f"kernel {i} module hash"),
            forward_name=cur.string(f"kernel {i} forward name"),
            backward_name=cur.string(f"kernel {i} backward name"),
            forward_smem_bytes=cur.u32(f"kernel {i} forward smem"),
            backward_smem_bytes=cur.u32(f"kernel {i} backward smem"),
            block_dim=cur.u32(f"kernel {i} block_dim"),
        )
        identity = (kernel.module_hash, kernel.key)
        if identity in seen_kernels:
            raise cur.fail(f"kernel {i}: duplicate kernel {kernel.key} in module {kernel.module_hash}", at)
        seen_kernels.add(identity)
        meta.kernels.append(kernel)

    for i in range(num_bindings):
        meta.bindings.append(
            BindingRecord(cur.string(f"binding {i} name"), cur.u32(f"binding {i} region id"))
        )

    for i in range(num_meshes):
        meta.meshes.append(MeshRecord(*cur.unpack(_MESH, f"mesh record {i}")))

    for i in range(num_ptr_locations):
        meta.ptr_locations.append(PtrLocation(*cur.unpack(_PTR_LOC, f"pointer location {i}")))

    if cur.remaining():
        raise cur.fail(f"metadata has {cur.remaining()} trailing bytes")
    return meta


def validate_module(module: ModuleRecord, device: DeviceType) -> str | None:
    """The rule a module record breaks (Warp's apic_validate_module, plus enum and digest
    checks on every device), or None."""
    if not module.hash:
        return "module hash is empty"
    if not is_plain_basename(module.binary_filename):
        return f"binary filename {module.binary_filename!r} is not a plain file name"
    if device == DeviceType.CUDA and module.target_arch <= 0:
        return "CUDA module has target arch 0"
    if device == DeviceType.CPU and module.target_arch != 0:
        return f"CPU module has non-zero target arch {module.target_arch}"
    if module.target_arch > INT32_MAX:
        return f"module target arch {module.target_arch} overflows int32"
    for what, digest in (("binary", module.binary_sha256), ("source", module.source_sha256)):
        if digest and not _SHA256_HEX.fullmatch(digest):
            return f"{what} digest {digest[:80]!r} is not a lowercase sha256 hex digest"
    if module.source_filename and not is_plain_basename(module.source_filename):
        return f"source filename {module.source_filename!r} is not a plain file name"
    if len(module.compile_recipe) != 16:
        return "compile recipe is not 16 bytes"
    if device != DeviceType.CUDA:
        return None

    if not module.binary_sha256:
        # A binary-only save: Warp accepts only the complete empty representation.
        if (
            module.source_filename
            or module.source_sha256
            or module.binary_kind != BinaryKind.NONE
            or module.fallback_reason != FallbackReason.SOURCE_UNAVAILABLE
            or any(module.compile_recipe)
        ):
            return "CUDA binary-only module contains incomplete artifact metadata"
        return None
    if module.binary_kind not in (BinaryKind.PTX, BinaryKind.CUBIN):
        return f"binary kind {int(module.binary_kind)} is neither PTX nor CUBIN"
    recipe = module.recipe
    if (
        recipe.debug > 1
        or recipe.optimization_level > 3
        or recipe.verify_fp > 1
        or recipe.fast_math > 1
        or recipe.fuse_fp > 1
        or recipe.lineinfo > 1
        or recipe.arch_suffix > ArchSuffix.F
        or any(recipe.reserved)
    ):
        return "compile recipe has an out-of-range field or non-zero reserved bytes"
    suffix = ".ptx" if module.binary_kind == BinaryKind.PTX else ".cubin"
    if not module.binary_filename.endswith(suffix):
        return f"binary kind {module.binary_kind.name} needs a filename ending in {suffix}"
    if bool(module.source_filename) != bool(module.source_sha256):
        return "source filename and source digest must be both present or both absent"
    if module.source_filename and not module.source_filename.endswith(".cu"):
        return "source filename does not end in .cu"
    if (recipe.arch_suffix == ArchSuffix.A and module.target_arch < 90) or (
        recipe.arch_suffix == ArchSuffix.F and module.target_arch < 100
    ):
        return "architecture suffix is invalid for the module target arch"
    if module.fallback_reason == FallbackReason.AVAILABLE and not module.source_filename:
        return "source fallback is marked available without source"
    return None


def is_plain_basename(name: str) -> bool:
    """Warp's apic_is_relative_basename: a file name with no directory part."""
    return bool(name) and name not in (".", "..") and not any(c in name for c in "/\\:")


def _parse_memory(cur: _Cursor) -> MemorySection:
    if cur.remaining() < 4:
        raise cur.fail("memory section is shorter than its 4-byte region count")
    count = cur.count("memory region", _REGION.size)
    section = MemorySection()
    seen: set[int] = set()
    for i in range(count):
        at = cur.pos
        region_id, element_size, size, has_data, pad = cur.unpack(_REGION, f"memory region record {i}")
        if has_data > 1:
            raise cur.fail(f"region {region_id} has initial-data flag {has_data}, expected 0 or 1", at)
        if region_id in seen:
            raise cur.fail(f"duplicate region id {region_id}", at)
        seen.add(region_id)
        data = None
        if has_data:
            if size > cur.remaining():
                raise cur.fail(
                    f"region {region_id} declares {size} bytes of initial data, {cur.remaining()} remain", at
                )
            data = cur.raw(size, f"region {region_id} initial data")
        section.regions.append(MemoryRegion(region_id, element_size, size, data, pad))
    section.trailing = cur.raw(cur.remaining(), "trailing memory bytes")
    return section


def _parse_stream(cur: _Cursor, end: int, op_count: int, depth: int) -> OpStream:
    if depth > MAX_BRANCH_DEPTH:
        raise cur.fail(f"conditional nesting exceeds {MAX_BRANCH_DEPTH} levels")
    if op_count * _OP_HEADER.size > end - cur.pos:
        raise cur.fail(
            f"operation count {op_count} cannot fit: {end - cur.pos} bytes hold at most "
            f"{(end - cur.pos) // _OP_HEADER.size} op headers"
        )
    stream = OpStream()
    for i in range(op_count):
        op_start = cur.pos
        if _OP_HEADER.size > end - op_start:
            raise cur.fail(f"truncated op header at operation {i}")
        op_type, total_size = _OP_HEADER.unpack_from(cur.data, op_start)
        if total_size < _OP_HEADER.size or total_size > end - op_start:
            raise cur.fail(
                f"operation {i} declares size {total_size}, which overruns its stream or is too small"
            )
        op_end = op_start + total_size
        rec = _Cursor(cur.data, op_start + _OP_HEADER.size, op_end, cur.path, cur.section)
        stream.ops.append(_parse_op(rec, op_type, i, op_start, depth))
        cur.pos = op_end
    stream.trailing = bytes(cur.data[cur.pos : end])
    cur.pos = end
    return stream


def _parse_op(rec: _Cursor, op_type: int, index: int, op_start: int, depth: int):

    def fail(rule: str):
        return rec.fail(f"operation {index}: {rule}", op_start)

    def tail() -> bytes:
        if rec.pos == rec.end:
            return b""
        return rec.raw(rec.end - rec.pos, "tail")

    if op_type == OpType.KERNEL_LAUNCH:
        (s0, s1, s2, s3, ndim, size, dim, max_blocks, block_dim, smem, grid_stride, is_forward, cluster_dim, pad1,
         key_len, hash_len, num_params, pad2, num_relocs, value_data_size) = rec.unpack(_LAUNCH, "operation launch record")  # fmt: skip
        adj_count = 0 if is_forward else num_params
        needed = (
            key_len
            + hash_len
            + (num_params + adj_count) * _LAUNCH_PARAM.size
            + num_relocs * _LAUNCH_RELOC.size
            + value_data_size
        )
        if needed > rec.remaining():
            raise fail(f"kernel launch variable data ({needed} bytes) overflows the record")
        key = rec.text(key_len, "kernel key")
        module_hash = rec.text(hash_len, "module hash")
        # The whole variable part was bounds-checked above: read the tables in bulk.
        data, pos = rec.data, rec.pos
        params_end = pos + (num_params + adj_count) * _LAUNCH_PARAM.size
        all_params = [LaunchParam(*fields) for fields in _LAUNCH_PARAM.iter_unpack(data[pos:params_end])]
        params, adj_params = all_params[:num_params], all_params[num_params:]
        relocs_end = params_end + num_relocs * _LAUNCH_RELOC.size
        relocs = []
        for r, (value_byte_offset, region_id, region_offset, kind, rpad) in enumerate(
            _LAUNCH_RELOC.iter_unpack(data[params_end:relocs_end])
        ):
            reloc_kind = _RELOC_KINDS.get(kind)
            if reloc_kind is None:
                raise fail(f"reloc {r} has unknown kind {kind}")
            relocs.append(LaunchReloc(value_byte_offset, region_id, region_offset, reloc_kind, rpad))
        rec.pos = relocs_end
        value_data = rec.raw(value_data_size, "value data")
        cursor = 0
        for j, param in enumerate(all_params):
            if (
                param.value_offset > value_data_size
                or param.value_size > value_data_size - param.value_offset
            ):
                raise fail(f"param {j} value slice is outside value_data")
            if cursor + param.num_relocs > num_relocs:
                raise fail(f"param {j} reloc count exceeds the reloc table")
            for reloc in relocs[cursor : cursor + param.num_relocs]:
                if reloc.value_byte_offset + 8 > param.value_size:
                    raise fail(f"param {j} reloc at byte {reloc.value_byte_offset} is outside its value blob")
            cursor += param.num_relocs
        if cursor != num_relocs:
            raise fail(f"params claim {cursor} relocs but the table holds {num_relocs}")
        return KernelLaunch(
            shape=(s0, s1, s2, s3),
            ndim=ndim,
            size=size,
            dim=dim,
            max_blocks=max_blocks,
            block_dim=block_dim,
            smem_bytes=smem,
            grid_stride=grid_stride,
            is_forward=is_forward,
            cluster_dim=cluster_dim,
            kernel_key=key,
            module_hash=module_hash,
            params=params,
            adj_params=adj_params,
            relocs=relocs,
            value_data=value_data,
            pad1=pad1,
            pad2=pad2,
            tail=tail(),
        )
    if op_type == OpType.MEMCPY_H2D:
        dst_region_id, pad, dst_offset, size = rec.unpack(_H2D, "operation H2D record")
        if size > rec.remaining():
            raise fail(f"H2D inline data of {size} bytes overflows the record")
        return MemcpyH2D(dst_region_id, dst_offset, rec.raw(size, "H2D data"), pad, tail())
    if op_type == OpType.MEMCPY_D2D:
        return MemcpyD2D(*rec.unpack(_D2D, "operation D2D record"), tail=tail())
    if op_type == OpType.MEMSET:
        return Memset(*rec.unpack(_MEMSET, "operation memset record"), tail=tail())
    if op_type == OpType.MEMTILE:
        region_id, srcsize, offset, count = rec.unpack(_MEMTILE, "operation memtile record")
        if srcsize == 0:
            raise fail("memtile source size is zero")
        if srcsize > rec.remaining():
            raise fail(f"memtile value of {srcsize} bytes overflows the record")
        if count * srcsize > 0xFFFFFFFFFFFFFFFF:
            raise fail("memtile span overflows 64 bits")
        return Memtile(region_id, offset, count, rec.raw(srcsize, "memtile value"), tail())
    if op_type == OpType.ALLOC:
        region_id, pad, size = rec.unpack(_ALLOC, "operation alloc record")
        return Alloc(region_id, size, pad, tail())
    if op_type in (OpType.IF, OpType.WHILE):
        cond_region_id, pad, cond_offset, a_size, a_count, b_size, b_count = rec.unpack(
            _COND, "operation conditional record"
        )
        if a_size + b_size > rec.remaining():
            raise fail("conditional branch sizes overflow the record")
        if (a_size == 0) != (a_count == 0) or (b_size == 0) != (b_count == 0):
            raise fail("conditional branch size and op count disagree (one is zero, the other not)")
        if op_type == OpType.WHILE and b_size != 0:
            raise fail("capture_while record has a non-empty second branch")
        a_end = rec.pos + a_size
        branch_a = _parse_stream(rec, a_end, a_count, depth + 1)
        branch_b = _parse_stream(rec, a_end + b_size, b_count, depth + 1)
        return Conditional(OpType(op_type), cond_region_id, cond_offset, branch_a, branch_b, pad, tail())
    if op_type in _OPAQUE_MIN_SIZE:
        _check_opaque(rec, OpType(op_type), fail)
        return OpaqueOp(op_type, tail())
    raise fail(f"unknown or unsupported op type {op_type}")


def _check_opaque(rec: _Cursor, op_type: OpType, fail) -> None:
    """The loader's rules for records this module keeps as bytes (sizes, enums)."""
    total = rec.end - rec.pos + _OP_HEADER.size
    if total < _OPAQUE_MIN_SIZE[op_type]:
        raise fail(f"{op_type.name} record of {total} bytes is shorter than {_OPAQUE_MIN_SIZE[op_type]}")
    body = rec.data
    at = rec.pos - _OP_HEADER.size  # offsets below are from the op header, as in apic_types.h
    if op_type in (OpType.BVH_REFIT, OpType.BVH_REBUILD, OpType.HASH_GRID_UPDATE):
        raise fail(f"{op_type.name} records a process-local handle and cannot be loaded from a .wrp")
    if op_type == OpType.REDUCTION and total != 64:
        raise fail("reduction record size is not 64")
    if op_type == OpType.SCAN:
        dtype, inclusive = body[at + 48], body[at + 49]
        if dtype not in (ScalarType.INT32, ScalarType.FLOAT32, ScalarType.INT64, ScalarType.FLOAT64):
            raise fail(f"unknown scan dtype {dtype}")
        if inclusive > 1:
            raise fail("scan inclusive flag out of range")
    elif op_type == OpType.SEGMENTED_SORT:
        dtype = body[at + 64]
        if dtype not in (ScalarType.INT32, ScalarType.FLOAT32):
            raise fail(f"unknown segmented-sort dtype {dtype}")
    elif op_type == OpType.RADIX_SORT:
        dtype = body[at + 48]
        if dtype not in ScalarType._value2member_map_:
            raise fail(f"unknown radix-sort dtype {dtype}")
    elif op_type == OpType.REDUCTION:
        kind, dtype = body[at + 60], body[at + 61]
        if kind not in (1, 2) or dtype not in (ScalarType.FLOAT32, ScalarType.FLOAT64):
            raise fail(f"invalid reduction kind {kind} or dtype {dtype}")


def _check_references(wrp: WrpFile, meta_offset: int) -> None:
    """Cross-section rules Warp's loader enforces when it builds meshes and fixes handles."""
    sizes = {region.region_id: region.size for region in wrp.memory.regions}

    def fail(rule: str) -> WrpFormatError:
        return WrpFormatError(wrp.path, "METADATA", meta_offset, rule)

    for i, mesh in enumerate(wrp.metadata.meshes):
        for what, region_id in (("points", mesh.points_region_id), ("indices", mesh.indices_region_id)):
            if region_id not in sizes:
                raise fail(f"mesh {i} {what} region {region_id} does not exist")
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


# ---------------------------------------------------------------------------------------
# Writer
# ---------------------------------------------------------------------------------------


def _string(value: str) -> bytes:
    raw = value.encode("utf-8")
    return struct.pack("<I", len(raw)) + raw


def _write_metadata(meta: Metadata) -> bytes:
    out = bytearray()
    out += struct.pack("<I", meta.format_version)
    out += _string(meta.producer_version)
    out += struct.pack(
        "<6I",
        meta.target_arch,
        len(meta.modules),
        len(meta.kernels),
        len(meta.bindings),
        len(meta.meshes),
        len(meta.ptr_locations),
    )
    for m in meta.modules:
        out += _string(m.hash) + _string(m.name) + _string(m.binary_filename)
        out += struct.pack("<I", m.target_arch)
        out += _string(m.binary_sha256) + _string(m.source_filename) + _string(m.source_sha256)
        out += struct.pack("<BB", m.binary_kind, m.fallback_reason) + bytes(m.compile_recipe)
    for k in meta.kernels:
        out += _string(k.key) + _string(k.module_hash) + _string(k.forward_name) + _string(k.backward_name)
        out += struct.pack("<III", k.forward_smem_bytes, k.backward_smem_bytes, k.block_dim)
    for b in meta.bindings:
        out += _string(b.name) + struct.pack("<I", b.region_id)
    for mesh in meta.meshes:
        out += _MESH.pack(
            mesh.num_points,
            mesh.num_tris,
            mesh.support_winding_number,
            mesh.bvh_constructor,
            mesh.bvh_leaf_size,
            mesh.points_region_id,
            mesh.indices_region_id,
            mesh.velocities_region_id,
            mesh.original_ptr,
        )
    for loc in meta.ptr_locations:
        out += _PTR_LOC.pack(loc.region_id, loc.offset, loc.stride, loc.count)
    return bytes(out)


def _write_memory(memory: MemorySection) -> bytes:
    out = bytearray(struct.pack("<I", len(memory.regions)))
    for region in memory.regions:
        has_data = region.initial_data is not None
        out += _REGION.pack(
            region.region_id, region.element_size, region.size, 1 if has_data else 0, region.pad
        )
        if has_data:
            if len(region.initial_data) != region.size:
                raise WrpFormatError(
                    None, "MEMORY", 0, f"region {region.region_id} has {len(region.initial_data)} bytes of "
                    f"initial data but declares size {region.size}"
                )  # fmt: skip
            out += region.initial_data
    out += memory.trailing
    return bytes(out)


def _write_op(op) -> bytes:
    if isinstance(op, KernelLaunch):
        key = op.kernel_key.encode("utf-8")
        module_hash = op.module_hash.encode("utf-8")
        body = bytearray(
            _LAUNCH.pack(
                *op.shape,
                op.ndim,
                op.size,
                op.dim,
                op.max_blocks,
                op.block_dim,
                op.smem_bytes,
                op.grid_stride,
                op.is_forward,
                op.cluster_dim,
                op.pad1,
                len(key),
                len(module_hash),
                len(op.params),
                op.pad2,
                len(op.relocs),
                len(op.value_data),
            )
        )
        body += key + module_hash
        for p in [*op.params, *op.adj_params]:
            body += _LAUNCH_PARAM.pack(
                p.param_index, p.num_relocs, p.value_offset, p.value_size, p.value_align
            )
        for r in op.relocs:
            body += _LAUNCH_RELOC.pack(r.value_byte_offset, r.region_id, r.region_offset, r.kind, r.pad)
        body += op.value_data + op.tail
    elif isinstance(op, MemcpyH2D):
        body = _H2D.pack(op.dst_region_id, op.pad, op.dst_offset, len(op.data)) + op.data + op.tail
    elif isinstance(op, MemcpyD2D):
        body = _D2D.pack(op.dst_region_id, op.src_region_id, op.dst_offset, op.src_offset, op.size) + op.tail
    elif isinstance(op, Memset):
        body = _MEMSET.pack(op.region_id, op.value, op.offset, op.size) + op.tail
    elif isinstance(op, Memtile):
        body = _MEMTILE.pack(op.region_id, len(op.value), op.offset, op.count) + op.value + op.tail
    elif isinstance(op, Alloc):
        body = _ALLOC.pack(op.region_id, op.pad, op.size) + op.tail
    elif isinstance(op, Conditional):
        a = _write_stream_body(op.branch_a)
        b = _write_stream_body(op.branch_b)
        body = (
            _COND.pack(
                op.cond_region_id,
                op.pad,
                op.cond_offset,
                len(a),
                len(op.branch_a.ops),
                len(b),
                len(op.branch_b.ops),
            )
            + a
            + b
            + op.tail
        )
    elif isinstance(op, OpaqueOp):
        body = op.payload
    else:
        raise TypeError(f"not an operation record: {type(op).__name__}")
    return _OP_HEADER.pack(int(op.op_type), _OP_HEADER.size + len(body)) + bytes(body)


def _write_stream_body(stream: OpStream) -> bytes:
    return b"".join(_write_op(op) for op in stream.ops) + stream.trailing


def _write(wrp: WrpFile) -> bytes:
    payloads = []
    for slot in wrp.layout:
        if isinstance(slot, RawSection):
            payloads.append((slot.type, slot.flags, slot.data))
        elif slot == SectionType.METADATA:
            payloads.append((slot, wrp.section_flags.get(slot, 0), _write_metadata(wrp.metadata)))
        elif slot == SectionType.MEMORY:
            payloads.append((slot, wrp.section_flags.get(slot, 0), _write_memory(wrp.memory)))
        elif slot == SectionType.OPERATIONS:
            ops = struct.pack("<I", len(wrp.operations.ops)) + _write_stream_body(wrp.operations)
            payloads.append((slot, wrp.section_flags.get(slot, 0), ops))
    h = wrp.header
    out = bytearray(
        _HEADER.pack(
            MAGIC,
            h.version,
            h.flags,
            len(payloads),
            HEADER_SIZE,
            h.device_type,
            h.reserved_after_device_type,
            h.target_arch,
            h.reserved,
        )
    )
    offset = HEADER_SIZE + SECTION_ENTRY_SIZE * len(payloads)
    for section_type, flags, data in payloads:
        out += _SECTION.pack(int(section_type), flags, offset, len(data), len(data))
        offset += len(data)
    for _, _, data in payloads:
        out += data
    return bytes(out)


def write_wrp(wrp: WrpFile, path: str | os.PathLike) -> None:
    """Write atomically: a temporary file in the same directory, then a rename over `path`."""
    path = Path(path)
    data = wrp.to_bytes()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# ---------------------------------------------------------------------------------------
# Canonical form and rewriting
# ---------------------------------------------------------------------------------------


def canonicalize(wrp: WrpFile, *, cuda_target_arch: int = CANONICAL_CUDA_TARGET_ARCH) -> WrpFile:
    """The form in which two captures of the same program are byte-identical.

    - every relocated 8-byte slot in kernel-parameter value blobs is zeroed (Warp patches
      each one at replay, so its captured value is a stale process-local address);
    - mesh handles are renumbered 1, 2, ... in order of first use (launch HANDLE relocs,
      depth first, then handle slots named by pointer locations, then the remaining mesh
      records by content), in the mesh records, the relocs and the region data slots;
    - modules sort by hash, kernels by (module hash, key), regions by id, mesh records by
      new handle, pointer locations by value (Warp writes them in hash-map order);
    - a CUDA graph's header, metadata and module target_arch become `cuda_target_arch`
      (see CANONICAL_CUDA_TARGET_ARCH for why that is safe).
    The result loads and replays exactly as the original does.
    """
    out = copy.deepcopy(wrp)
    meta = out.metadata
    regions = {region.region_id: region for region in out.memory.regions}

    # --- mesh handles -------------------------------------------------------------------
    mesh_handles = {mesh.original_ptr for mesh in meta.meshes}
    order: list[int] = []

    def note(handle: int) -> None:
        if handle in mesh_handles and handle not in order:
            order.append(handle)

    for op in out.iter_ops():
        if isinstance(op, KernelLaunch):
            for reloc in op.relocs:
                if reloc.kind == RelocKind.HANDLE:
                    note(reloc.region_offset)
    for loc in meta.ptr_locations:
        region = regions.get(loc.region_id)
        if region is None or region.initial_data is None:
            continue
        for slot in _ptr_slots(loc):
            note(struct.unpack_from("<Q", region.initial_data, slot)[0])
    for mesh in sorted(meta.meshes, key=_mesh_content_key):
        note(mesh.original_ptr)
    renumber = {old: new for new, old in enumerate(order, start=1)}

    for mesh in meta.meshes:
        mesh.original_ptr = renumber[mesh.original_ptr]
    meta.meshes.sort(key=lambda mesh: mesh.original_ptr)
    for op in out.iter_ops():
        if isinstance(op, KernelLaunch):
            for reloc in op.relocs:
                if reloc.kind == RelocKind.HANDLE and reloc.region_offset in renumber:
                    reloc.region_offset = renumber[reloc.region_offset]
    # Patch slots from the original bytes (as Warp's loader does) so a renumbered value is
    # never mistaken for another captured handle when locations overlap.
    patched: dict[int, bytearray] = {}
    for loc in meta.ptr_locations:
        region = regions.get(loc.region_id)
        if region is None or region.initial_data is None:
            continue
        buf = patched.setdefault(loc.region_id, bytearray(region.initial_data))
        for slot in _ptr_slots(loc):
            (handle,) = struct.unpack_from("<Q", region.initial_data, slot)
            if handle in renumber:
                struct.pack_into("<Q", buf, slot, renumber[handle])
    for region_id, buf in patched.items():
        regions[region_id].initial_data = bytes(buf)

    # --- relocated pointer slots --------------------------------------------------------
    for op in out.iter_ops():
        if isinstance(op, KernelLaunch) and op.relocs:
            blob = bytearray(op.value_data)
            for param, relocs in op.bindings_with_relocs():
                for reloc in relocs:
                    start = param.value_offset + reloc.value_byte_offset
                    blob[start : start + 8] = b"\0" * 8
            op.value_data = bytes(blob)

    # --- table order --------------------------------------------------------------------
    meta.modules.sort(key=lambda m: m.hash)
    meta.kernels.sort(key=lambda k: (k.module_hash, k.key))
    meta.ptr_locations.sort(key=lambda loc: (loc.region_id, loc.offset, loc.stride, loc.count))
    out.memory.regions.sort(key=lambda region: region.region_id)

    # --- CUDA target arch ---------------------------------------------------------------
    if out.is_cuda:
        if not 100 <= cuda_target_arch <= INT32_MAX:
            raise WrpFormatError(
                wrp.path,
                "header",
                28,
                f"canonical CUDA target arch {cuda_target_arch} must be in 100..2^31-1",
            )
        out.header.target_arch = cuda_target_arch
        meta.target_arch = cuda_target_arch
        for module in meta.modules:
            module.target_arch = cuda_target_arch
    return out


def _ptr_slots(loc: PtrLocation) -> range:
    if loc.count == 0:
        return range(0)
    return range(loc.offset, loc.offset + loc.count * max(loc.stride, 1), max(loc.stride, 1))


def _mesh_content_key(mesh: MeshRecord) -> tuple:
    return (
        mesh.num_points,
        mesh.num_tris,
        mesh.points_region_id,
        mesh.indices_region_id,
        mesh.velocities_region_id,
        mesh.support_winding_number,
        mesh.bvh_constructor,
        mesh.bvh_leaf_size,
        mesh.original_ptr,
    )


def replace_module_binary(
    wrp: WrpFile,
    module_hash: str,
    new_filename: str,
    new_sha256: str,
    kind: BinaryKind = BinaryKind.CUBIN,
    *,
    new_source_filename: str | None = None,
) -> WrpFile:
    """A copy of `wrp` whose module `module_hash` names another binary (e.g. a fatbin).

    `new_source_filename` renames the retained CUDA source too (same sha256): Warp names
    it after the capture SM (`.sm90.cu`), which a multi-arch bundle must not depend on.

    The loader hands the file's bytes to cuModuleLoadDataEx after checking their sha256, so
    a fatbin may stand in for a cubin; its filename must still end in `.cubin` (CUBIN) or
    `.ptx` (PTX). Raises WrpFormatError when the result would be rejected by Warp.
    """
    out = copy.deepcopy(wrp)
    matches = [m for m in out.metadata.modules if m.hash == module_hash]
    if not matches:
        known = ", ".join(m.hash for m in out.metadata.modules) or "none"
        raise WrpFormatError(
            wrp.path, "METADATA", 0, f"no module with hash {module_hash!r} (modules: {known})"
        )
    module = matches[0]
    module.binary_filename = new_filename
    module.binary_sha256 = new_sha256
    module.binary_kind = BinaryKind(kind)
    if new_source_filename is not None:
        module.source_filename = new_source_filename
        if not new_source_filename:
            module.source_sha256 = ""
            module.fallback_reason = FallbackReason.SOURCE_UNAVAILABLE
    problem = validate_module(module, DeviceType(out.header.device_type))
    if problem:
        raise WrpFormatError(
            wrp.path,
            "METADATA",
            0,
            f"module {module.name} ({module_hash}) after replacing its binary: {problem}",
            fix="name a CUBIN (or fatbin) '<name>.cubin' and PTX '<name>.ptx', and pass the lowercase sha256",
        )
    return out


# ---------------------------------------------------------------------------------------
# Summaries used by `wrpkg inspect` and other tools
# ---------------------------------------------------------------------------------------


@dataclass
class BindingInfo:
    name: str
    region_id: int
    direction: Direction
    byte_size: int | None  # the region's size, when the region is in the file


def binding_directions(bindings: list[BindingRecord]) -> list[Direction]:
    """Directions derivable from the file alone.

    capture_save registers every input, then every output, and names are unique within
    each, so a name that appears twice is both; records before the latest first-occurrence
    of such a name are inputs, records at or after the earliest second occurrence are
    outputs. Anything else is UNKNOWN (the file cannot tell; pass the capture's own lists).
    """
    first: dict[str, int] = {}
    second: dict[str, int] = {}
    for i, b in enumerate(bindings):
        if b.name in first:
            second.setdefault(b.name, i)
        else:
            first[b.name] = i
    if not second:
        return [Direction.UNKNOWN] * len(bindings)
    inputs_end = max(first[name] for name in second)  # inputs reach at least this index
    outputs_start = min(second.values())  # outputs start at or before this index
    result = []
    for i, b in enumerate(bindings):
        if b.name in second:
            result.append(Direction.BOTH)
        elif i <= inputs_end:
            result.append(Direction.INPUT)
        elif i >= outputs_start:
            result.append(Direction.OUTPUT)
        else:
            result.append(Direction.UNKNOWN)
    return result


def binding_infos(
    wrp: WrpFile, *, inputs: list[str] | None = None, outputs: list[str] | None = None
) -> list[BindingInfo]:
    """One entry per distinct binding name, with its direction and its region's byte size.

    `inputs`/`outputs` (e.g. from capture.json) override what the file alone can tell.
    """
    sizes = {region.region_id: region.size for region in wrp.memory.regions}
    derived = binding_directions(wrp.metadata.bindings)
    infos: dict[str, BindingInfo] = {}
    for binding, direction in zip(wrp.metadata.bindings, derived, strict=True):
        if inputs is not None or outputs is not None:
            is_in = binding.name in (inputs or [])
            is_out = binding.name in (outputs or [])
            direction = (
                Direction.BOTH
                if is_in and is_out
                else Direction.INPUT
                if is_in
                else Direction.OUTPUT
                if is_out
                else direction
            )
        if binding.name not in infos:
            infos[binding.name] = BindingInfo(
                binding.name, binding.region_id, direction, sizes.get(binding.region_id)
            )
    return list(infos.values())


__all__ = [
    "CANONICAL_CUDA_TARGET_ARCH",
    "FORMAT_VERSION",
    "Alloc",
    "ArchSuffix",
    "BinaryKind",
    "BindingInfo",
    "BindingRecord",
    "CompileRecipe",
    "Conditional",
    "DeviceType",
    "Direction",
    "FallbackReason",
    "FileHeader",
    "KernelLaunch",
    "KernelRecord",
    "LaunchParam",
    "LaunchReloc",
    "MemcpyD2D",
    "MemcpyH2D",
    "MemoryRegion",
    "MemorySection",
    "Memset",
    "Memtile",
    "MeshRecord",
    "Metadata",
    "ModuleRecord",
    "OpStream",
    "OpType",
    "OpaqueOp",
    "PtrLocation",
    "RawSection",
    "RelocKind",
    "ScalarType",
    "SectionEntry",
    "SectionType",
    "WrpFile",
    "WrpFormatError",
    "binding_directions",
    "binding_infos",
    "canonicalize",
    "is_plain_basename",
    "iter_ops",
    "op_type_name",
    "read_wrp",
    "replace_module_binary",
    "validate_module",
    "write_wrp",
]
