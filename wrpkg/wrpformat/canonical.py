"""The canonical form of a .wrp, and rewriting a module's binary."""

from __future__ import annotations

import copy
import hashlib
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
from wrpkg.wrpformat.operations import (
    Alloc,
    Conditional,
    KernelLaunch,
    MemcpyD2D,
    MemcpyH2D,
    Memset,
    Memtile,
    OpaqueOp,
)
from wrpkg.wrpformat.wrpfile import WrpFile


def canonicalize(wrp: WrpFile, *, cuda_target_arch: int = CANONICAL_CUDA_TARGET_ARCH) -> WrpFile:
    """The form in which two captures of the same program are byte-identical.

    - meshes are renumbered by `_canonicalize_meshes` (handles, dangling handles, plain
      words holding a mesh handle, the regions Warp made for mesh data);
    - every relocated 8-byte slot in kernel-parameter value blobs is zeroed (Warp patches
      each one at replay, so its captured value is a stale process-local address);
    - modules sort by hash, kernels by (module hash, key), regions by id, mesh records by
      new handle, pointer locations by value (Warp writes them in hash-map order);
    - a CUDA graph's header, metadata and module target_arch become `cuda_target_arch`
      (see CANONICAL_CUDA_TARGET_ARCH for why that is safe).
    The result loads and replays as the original does (a word that held a dead address
    holds another number that names nothing at replay; see `_canonicalize_meshes`).
    """
    out = copy.deepcopy(wrp)
    meta = out.metadata
    _canonicalize_meshes(out)

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
    meta.ptr_locations.sort(key=_ptr_location_key)
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


def _canonicalize_meshes(wrp: WrpFile) -> None:
    """Rewrite, in place, every number a capture holds because of where its meshes lived.

    A mesh handle is the address of the mesh (host `wp::Mesh` on the CPU, descriptor on
    CUDA), and capture_save registers the meshes, and so numbers the regions holding their
    points, indices and velocities, in the iteration order of a Python set of those
    addresses. None of it depends on the program; all of it depends on the process. So:

    - handles are renumbered 1, 2, ... in order of first use: launch HANDLE relocs in
      stream order (depth first), then handle slots in (region, offset) order, then meshes
      no slot names, by content (sizes and the sha256 of their data, never their address);
      in the mesh records, the relocs and the handle slots;
    - a handle slot or HANDLE reloc holding anything that is not a saved mesh (a deleted
      mesh, a BVH, an arbitrary integer) becomes 0. Warp's loader leaves such a value as it
      is, so it can only be a dead address, and a small stale value could otherwise equal a
      canonical number and be turned into a live mesh at load. 0 is the null handle, which
      the loader never remaps;
    - an 8-byte-aligned word of region data or of a launch's value blob, outside the handle
      slots, equal to a saved mesh's handle (a mesh id in a plain `uint64` field) becomes
      that mesh's canonical number. Warp saves such a word as an ordinary integer and does
      not remap it at load, so after a load it named nothing either way; the canonical
      number keeps which mesh it was;
    - the regions Warp made for mesh data (referenced by mesh records and by nothing else)
      keep their set of ids, reassigned in canonical mesh order (points, indices,
      velocities of mesh 1, then of mesh 2, ...). Regions that a launch, a copy, a binding
      or a handle slot also names were numbered by the capture itself and keep their ids.
    """
    meta = wrp.metadata
    regions = {region.region_id: region for region in wrp.memory.regions}
    original = {
        rid: region.initial_data for rid, region in regions.items() if region.initial_data is not None
    }
    # Warp writes pointer locations in hash-map order; first use must not follow it.
    meta.ptr_locations.sort(key=_ptr_location_key)
    slots: dict[int, set[int]] = {}
    for loc in meta.ptr_locations:
        if loc.region_id in original:
            slots.setdefault(loc.region_id, set()).update(_ptr_slots(loc))

    renumber = _mesh_use_order(wrp, original, slots)
    for mesh in meta.meshes:
        mesh.original_ptr = renumber[mesh.original_ptr]
    meta.meshes.sort(key=lambda mesh: mesh.original_ptr)
    for op in wrp.iter_ops():
        if isinstance(op, KernelLaunch):
            for reloc in op.relocs:
                if reloc.kind == RelocKind.HANDLE:
                    reloc.region_offset = renumber.get(reloc.region_offset, 0)
            op.value_data = _renumber_words(op.value_data, renumber, _param_words(op).__contains__)

    # Read every slot and word from the original bytes (as Warp's loader does), so a
    # renumbered value is never mistaken for another captured handle.
    for region_id, data in original.items():
        region_slots = slots.get(region_id, set())
        new = _renumber_words(data, renumber, lambda at, skip=region_slots: at % 8 == 0 and at not in skip)
        if region_slots:
            buf = bytearray(new)
            for slot in region_slots:
                (handle,) = _U64.unpack_from(data, slot)
                _U64.pack_into(buf, slot, renumber.get(handle, 0))
            new = bytes(buf)
        regions[region_id].initial_data = new

    _renumber_mesh_regions(wrp)


def _mesh_use_order(wrp: WrpFile, original: dict[int, bytes], slots: dict[int, set[int]]) -> dict[int, int]:
    """{captured handle: canonical number} for every mesh record."""
    meta = wrp.metadata
    mesh_handles = {mesh.original_ptr for mesh in meta.meshes}
    order: list[int] = []

    def note(handle: int) -> None:
        if handle in mesh_handles and handle not in order:
            order.append(handle)

    for op in wrp.iter_ops():
        if isinstance(op, KernelLaunch):
            for reloc in op.relocs:
                if reloc.kind == RelocKind.HANDLE:
                    note(reloc.region_offset)
    for region_id in sorted(slots):
        for slot in sorted(slots[region_id]):
            note(_U64.unpack_from(original[region_id], slot)[0])
    for mesh in sorted(meta.meshes, key=lambda mesh: _mesh_content_key(mesh, original)):
        note(mesh.original_ptr)
    return {old: new for new, old in enumerate(order, start=1)}


def _renumber_mesh_regions(wrp: WrpFile) -> None:
    meta = wrp.metadata
    named_elsewhere = _region_ids_named_outside_meshes(wrp)
    owned: list[int] = []
    for mesh in meta.meshes:  # already in canonical order
        for region_id in (mesh.points_region_id, mesh.indices_region_id, mesh.velocities_region_id):
            if region_id and region_id not in named_elsewhere and region_id not in owned:
                owned.append(region_id)
    new_id = dict(zip(owned, sorted(owned), strict=True))
    if all(old == new for old, new in new_id.items()):
        return
    for region in wrp.memory.regions:
        region.region_id = new_id.get(region.region_id, region.region_id)
    for mesh in meta.meshes:
        mesh.points_region_id = new_id.get(mesh.points_region_id, mesh.points_region_id)
        mesh.indices_region_id = new_id.get(mesh.indices_region_id, mesh.indices_region_id)
        if mesh.velocities_region_id:
            mesh.velocities_region_id = new_id.get(mesh.velocities_region_id, mesh.velocities_region_id)


def _region_ids_named_outside_meshes(wrp: WrpFile) -> set[int]:
    """Every region id the file names other than in mesh records.

    Records kept as opaque bytes (scans, sorts, ...) are not decoded here: any aligned
    int32 in them counts as a reference, which can only keep an id unchanged."""
    meta = wrp.metadata
    named = {binding.region_id for binding in meta.bindings}
    named.update(loc.region_id for loc in meta.ptr_locations)
    for op in wrp.iter_ops():
        if isinstance(op, KernelLaunch):
            named.update(reloc.region_id for reloc in op.relocs if reloc.kind == RelocKind.DATA_PTR)
        elif isinstance(op, MemcpyH2D):
            named.add(op.dst_region_id)
        elif isinstance(op, MemcpyD2D):
            named.update((op.dst_region_id, op.src_region_id))
        elif isinstance(op, (Memset, Memtile, Alloc)):
            named.add(op.region_id)
        elif isinstance(op, Conditional):
            named.add(op.cond_region_id)
        elif isinstance(op, OpaqueOp):
            usable = len(op.payload) - len(op.payload) % 4
            named.update(value for (value,) in struct.iter_unpack("<i", op.payload[:usable]))
    return named


def _param_words(op: KernelLaunch) -> set[int]:
    """Offsets of the 8-byte-aligned words of each parameter's value blob."""
    words: set[int] = set()
    for param in [*op.params, *op.adj_params]:
        words.update(range(param.value_offset, param.value_offset + param.value_size - 7, 8))
    return words


def _renumber_words(data: bytes, renumber: dict[int, int], is_word) -> bytes:
    """`data` with each word at an offset `is_word` accepts that holds a key of `renumber`
    replaced by its value."""
    if not renumber or not data:
        return data
    buf = None
    for handle, number in renumber.items():
        pattern = _U64.pack(handle)
        at = data.find(pattern)
        while at != -1:
            if is_word(at):
                buf = buf if buf is not None else bytearray(data)
                _U64.pack_into(buf, at, number)
            at = data.find(pattern, at + 1)
    return bytes(buf) if buf is not None else data


_U64 = struct.Struct("<Q")


def _ptr_location_key(loc: PtrLocation) -> tuple:
    return (loc.region_id, loc.offset, loc.stride, loc.count)


def _ptr_slots(loc: PtrLocation) -> range:
    if loc.count == 0:
        return range(0)
    return range(loc.offset, loc.offset + loc.count * max(loc.stride, 1), max(loc.stride, 1))


def _mesh_content_key(mesh: MeshRecord, original: dict[int, bytes]) -> tuple:
    def digest(region_id: int) -> str:
        return hashlib.sha256(original.get(region_id) or b"").hexdigest() if region_id else ""

    return (
        mesh.num_points,
        mesh.num_tris,
        mesh.support_winding_number,
        mesh.bvh_constructor,
        mesh.bvh_leaf_size,
        digest(mesh.points_region_id),
        digest(mesh.indices_region_id),
        digest(mesh.velocities_region_id),
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
