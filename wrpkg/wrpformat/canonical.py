"""The canonical form of a .wrp, and rewriting a module's binary."""

from __future__ import annotations

import copy
import struct

from wrpkg.errors import WrpFormatError
from wrpkg.wrpformat.enums import (
    CANONICAL_CUDA_TARGET_ARCH,
    INT32_MAX,
    BinaryKind,
    DeviceType,
    FallbackReason,
    RelocKind,
)
from wrpkg.wrpformat.metadata import MeshRecord, PtrLocation, validate_module
from wrpkg.wrpformat.operations import KernelLaunch
from wrpkg.wrpformat.wrpfile import WrpFile


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
