"""Format constants and the enums of apic_types.h."""

from __future__ import annotations

import enum

# The bounds shared with the C++ runtime (wrpkg/schemas/wrp_limits.json).
from wrpkg.wrpformat.limits import (  # noqa: F401 - re-exported
    FORMAT_VERSION,
    HEADER_SIZE,
    MAX_BRANCH_DEPTH,
    MAX_SECTIONS,
    SECTION_ENTRY_SIZE,
)

MAGIC = b"WRP1"
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
