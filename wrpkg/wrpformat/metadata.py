"""METADATA section records (modules, kernels, bindings, meshes, pointer locations): read and write."""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

from wrpkg import WARP_VERSION
from wrpkg.archs import SUFFIX_MIN_SM
from wrpkg.errors import WrpFormatError
from wrpkg.recipe import CompileRecipe
from wrpkg.wrpformat.cursor import Cursor
from wrpkg.wrpformat.enums import (
    FORMAT_VERSION,
    INT32_MAX,
    BinaryKind,
    DeviceType,
    FallbackReason,
)
from wrpkg.wrpformat.header import FileHeader


def _string(value: str) -> bytes:
    """A u32 length followed by the UTF-8 bytes (the reader's Cursor.string)."""
    raw = value.encode("utf-8")
    return struct.pack("<I", len(raw)) + raw


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
        """The decoded compile recipe; WrpFormatError when Warp's loader would refuse it."""
        return CompileRecipe.from_bytes(self.compile_recipe)

    @classmethod
    def read(cls, cur: Cursor, i: int) -> ModuleRecord:
        """Module record `i`; refuses unknown enum values (validate_module checks the rest)."""
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
        return cls(
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

    def write(self) -> bytes:
        return (
            _string(self.hash)
            + _string(self.name)
            + _string(self.binary_filename)
            + struct.pack("<I", self.target_arch)
            + _string(self.binary_sha256)
            + _string(self.source_filename)
            + _string(self.source_sha256)
            + struct.pack("<BB", self.binary_kind, self.fallback_reason)
            + bytes(self.compile_recipe)
        )


@dataclass
class KernelRecord:
    key: str
    module_hash: str
    forward_name: str
    backward_name: str
    forward_smem_bytes: int
    backward_smem_bytes: int
    block_dim: int

    @classmethod
    def read(cls, cur: Cursor, i: int) -> KernelRecord:
        return cls(
            key=cur.string(f"kernel {i} key"),
            module_hash=cur.string(f"kernel {i} module hash"),
            forward_name=cur.string(f"kernel {i} forward name"),
            backward_name=cur.string(f"kernel {i} backward name"),
            forward_smem_bytes=cur.u32(f"kernel {i} forward smem"),
            backward_smem_bytes=cur.u32(f"kernel {i} backward smem"),
            block_dim=cur.u32(f"kernel {i} block_dim"),
        )

    def write(self) -> bytes:
        names = _string(self.key) + _string(self.module_hash) + _string(self.forward_name)
        names += _string(self.backward_name)
        return names + struct.pack("<III", self.forward_smem_bytes, self.backward_smem_bytes, self.block_dim)


@dataclass
class BindingRecord:
    """A name given to a region in capture_save(inputs=..., outputs=...)."""

    name: str
    region_id: int

    @classmethod
    def read(cls, cur: Cursor, i: int) -> BindingRecord:
        return cls(cur.string(f"binding {i} name"), cur.u32(f"binding {i} region id"))

    def write(self) -> bytes:
        return _string(self.name) + struct.pack("<I", self.region_id)


_MESH = struct.Struct("<iiBBHIIIQ")
assert _MESH.size == 32


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

    @classmethod
    def read(cls, cur: Cursor, i: int) -> MeshRecord:
        return cls(*cur.unpack(_MESH, f"mesh record {i}"))

    def write(self) -> bytes:
        return _MESH.pack(
            self.num_points,
            self.num_tris,
            self.support_winding_number,
            self.bvh_constructor,
            self.bvh_leaf_size,
            self.points_region_id,
            self.indices_region_id,
            self.velocities_region_id,
            self.original_ptr,
        )


_PTR_LOC = struct.Struct("<IQQQ")


@dataclass
class PtrLocation:
    """Slots in a region's initial data that hold mesh handles (fixed up at load)."""

    region_id: int
    offset: int
    stride: int
    count: int

    @classmethod
    def read(cls, cur: Cursor, i: int) -> PtrLocation:
        return cls(*cur.unpack(_PTR_LOC, f"pointer location {i}"))

    def write(self) -> bytes:
        return _PTR_LOC.pack(self.region_id, self.offset, self.stride, self.count)


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


_SHA256_HEX = re.compile(r"[0-9a-f]{64}")

# Smallest encodings, used to refuse counts that cannot fit before looping over them.
_MIN_MODULE = 7 * 4 + 4 + 1 + 1 + 16
_MIN_KERNEL = 4 * 4 + 3 * 4
_MIN_BINDING = 4 + 4


def parse_metadata(cur: Cursor, header: FileHeader) -> Metadata:
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
        module = ModuleRecord.read(cur, i)
        name, module_hash = module.name, module.hash
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
        kernel = KernelRecord.read(cur, i)
        identity = (kernel.module_hash, kernel.key)
        if identity in seen_kernels:
            raise cur.fail(f"kernel {i}: duplicate kernel {kernel.key} in module {kernel.module_hash}", at)
        seen_kernels.add(identity)
        meta.kernels.append(kernel)

    meta.bindings = [BindingRecord.read(cur, i) for i in range(num_bindings)]
    meta.meshes = [MeshRecord.read(cur, i) for i in range(num_meshes)]
    meta.ptr_locations = [PtrLocation.read(cur, i) for i in range(num_ptr_locations)]

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
    try:
        recipe = module.recipe
    except WrpFormatError:
        return "compile recipe has an out-of-range field or non-zero reserved bytes"
    suffix = ".ptx" if module.binary_kind == BinaryKind.PTX else ".cubin"
    if not module.binary_filename.endswith(suffix):
        return f"binary kind {module.binary_kind.name} needs a filename ending in {suffix}"
    if bool(module.source_filename) != bool(module.source_sha256):
        return "source filename and source digest must be both present or both absent"
    if module.source_filename and not module.source_filename.endswith(".cu"):
        return "source filename does not end in .cu"
    if recipe.arch_suffix and module.target_arch < SUFFIX_MIN_SM[recipe.arch_suffix]:
        return "architecture suffix is invalid for the module target arch"
    if module.fallback_reason == FallbackReason.AVAILABLE and not module.source_filename:
        return "source fallback is marked available without source"
    return None


def is_plain_basename(name: str) -> bool:
    """Warp's apic_is_relative_basename: a file name with no directory part."""
    return bool(name) and name not in (".", "..") and not any(c in name for c in "/\\:")


def write_metadata(meta: Metadata) -> bytes:
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
    for record in [*meta.modules, *meta.kernels, *meta.bindings, *meta.meshes, *meta.ptr_locations]:
        out += record.write()
    return bytes(out)
