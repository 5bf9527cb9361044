"""The .wrp (Warp APIC, format version 18) reader, writer, validator and canonical form.

This package is the one place that knows the byte layout. The authority is warp-lang 1.19.0's
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

from wrpkg.errors import WrpFormatError
from wrpkg.recipe import CompileRecipe
from wrpkg.wrpformat.bindings import BindingInfo, binding_directions, binding_infos
from wrpkg.wrpformat.canonical import canonicalize, replace_module_binary
from wrpkg.wrpformat.enums import (
    CANONICAL_CUDA_TARGET_ARCH,
    FORMAT_VERSION,
    ArchSuffix,
    BinaryKind,
    DeviceType,
    Direction,
    FallbackReason,
    OpType,
    RelocKind,
    ScalarType,
    SectionType,
)
from wrpkg.wrpformat.header import FileHeader, SectionEntry
from wrpkg.wrpformat.memory import MemoryRegion, MemorySection
from wrpkg.wrpformat.metadata import (
    BindingRecord,
    KernelRecord,
    MeshRecord,
    Metadata,
    ModuleRecord,
    PtrLocation,
    is_plain_basename,
    validate_module,
)
from wrpkg.wrpformat.operations import (
    Alloc,
    Conditional,
    KernelLaunch,
    LaunchParam,
    LaunchReloc,
    MemcpyD2D,
    MemcpyH2D,
    Memset,
    Memtile,
    OpaqueOp,
    OpStream,
    iter_ops,
    op_type_name,
)
from wrpkg.wrpformat.wrpfile import RawSection, WrpFile, read_wrp, write_wrp

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
