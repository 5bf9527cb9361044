"""The bounds a .wrp is held to before Warp sees it: wrpkg/schemas/wrp_limits.json, the one table the
C++ runtime compiles in too (runtime/internal/wrp_cursor.cc), so that both readers refuse at the same bound."""

from __future__ import annotations

import json
from pathlib import Path

_TABLE = json.loads(Path(__file__).parent.parent.joinpath("schemas", "wrp_limits.json").read_bytes())

FORMAT_VERSION: int = _TABLE["format_version"]
HEADER_SIZE: int = _TABLE["header_bytes"]
SECTION_ENTRY_SIZE: int = _TABLE["section_entry_bytes"]
MAX_SECTIONS: int = _TABLE["max_sections"]
# Warp allows 1024 nested capture_if/capture_while levels. The reader recurses in Python, whose stack
# is far smaller than C++'s, so both readers stop earlier; no real program comes close.
MAX_BRANCH_DEPTH: int = _TABLE["max_branch_depth"]
OP_HEADER_SIZE: int = _TABLE["op_header_bytes"]
LAUNCH_PARAM_SIZE: int = _TABLE["launch_param_bytes"]
LAUNCH_RELOC_SIZE: int = _TABLE["launch_reloc_bytes"]
REGION_RECORD_SIZE: int = _TABLE["region_record_bytes"]
# Warp allocates every region when it loads (malloc and zero-fill on CPU, cudaMalloc on CUDA) with no bound
# of its own: a region larger than any machine's memory fails there, or exhausts memory. The readers refuse
# it at verify instead; no device Warp runs on holds this much.
MAX_REGION_BYTES: int = _TABLE["max_region_bytes"]
MAX_TOTAL_REGION_BYTES: int = _TABLE["max_total_region_bytes"]
# Each op type's fixed record size (apic_types.h sizeof, the 8-byte op header included), by OpType name.
RECORD_BYTES: dict[str, int] = dict(_TABLE["record_bytes"])
# Op types whose records must be exactly their fixed size.
EXACT_RECORD_BYTES: frozenset[str] = frozenset(_TABLE["exact_record_bytes"])
# The BVH constructors Warp's loader builds a mesh with, by device (warp BvhConstructor: SAH 0, MEDIAN 1,
# LBVH 2; the CPU has no LBVH), and the least leaf size (a leaf size of 0 crashes the build).
MESH_BVH_CONSTRUCTORS: dict[str, frozenset[int]] = {
    device: frozenset(values) for device, values in _TABLE["mesh_bvh_constructors"].items()
}
MIN_MESH_BVH_LEAF_SIZE: int = _TABLE["min_mesh_bvh_leaf_size"]
