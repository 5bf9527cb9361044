"""OPERATIONS section records (launches, copies, memsets, conditionals, ...).

Each record class holds its layout, its reader (`read`) and its writer (`write`, the
bytes after the 8-byte op header) side by side; the stream reader and writer only
dispatch on the op type.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field, fields

from wrpkg.errors import WrpFormatError
from wrpkg.wrpformat.cursor import Cursor
from wrpkg.wrpformat.enums import MAX_BRANCH_DEPTH, OpType, RelocKind, ScalarType
from wrpkg.wrpformat.limits import (
    EXACT_RECORD_BYTES,
    LAUNCH_PARAM_SIZE,
    LAUNCH_RELOC_SIZE,
    OP_HEADER_SIZE,
    RECORD_BYTES,
)

_OP_HEADER = struct.Struct("<II")
assert _OP_HEADER.size == OP_HEADER_SIZE


class _OpReader:
    """One operation record after its header: its cursor, and the errors its rules raise."""

    __slots__ = ("cur", "type", "index", "start")

    def __init__(self, cur: Cursor, op_type: int, index: int, start: int):
        self.cur = cur
        self.type = op_type
        self.index = index
        self.start = start

    def fail(self, rule: str) -> WrpFormatError:
        return self.cur.fail(f"operation {self.index}: {rule}", self.start)

    def tail(self) -> bytes:
        """The bytes inside the record's declared size after its known fields."""
        cur = self.cur
        if cur.pos == cur.end:
            return b""
        return cur.raw(cur.end - cur.pos, "tail")


_LAUNCH_PARAM = struct.Struct("<HHIII")
assert _LAUNCH_PARAM.size == LAUNCH_PARAM_SIZE


@dataclass(slots=True)
class LaunchParam:
    """APICLaunchParamRecord: one argument's slice of value_data and its relocation count."""

    param_index: int
    num_relocs: int
    value_offset: int
    value_size: int
    value_align: int

    def write(self) -> bytes:
        return _LAUNCH_PARAM.pack(
            self.param_index, self.num_relocs, self.value_offset, self.value_size, self.value_align
        )


_LAUNCH_RELOC = struct.Struct("<IiQB7s")
assert _LAUNCH_RELOC.size == LAUNCH_RELOC_SIZE
_RELOC_KINDS = {kind.value: kind for kind in RelocKind}


@dataclass(slots=True)
class LaunchReloc:
    """APICLaunchPtrLocation: an 8-byte slot inside a value blob patched at replay."""

    value_byte_offset: int
    region_id: int
    region_offset: int
    kind: RelocKind
    pad: bytes = b"\0" * 7

    def write(self) -> bytes:
        return _LAUNCH_RELOC.pack(
            self.value_byte_offset, self.region_id, self.region_offset, self.kind, self.pad
        )


# APICLaunchRecord after the op header: shape[4], ndim, size, dim, max_blocks, block_dim,
# smem_bytes, grid_stride, is_forward, cluster_dim, _pad1[2], kernel_key_len,
# module_hash_len, num_params, _pad2, num_relocs, value_data_size.
_LAUNCH = struct.Struct("<4IiQQiiiiBB2sHHHHII")
assert _LAUNCH.size + OP_HEADER_SIZE == RECORD_BYTES["KERNEL_LAUNCH"]


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

    @classmethod
    def read(cls, op: _OpReader) -> KernelLaunch:
        rec, fail = op.cur, op.fail
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
        return cls(
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
            tail=op.tail(),
        )

    def write(self) -> bytes:
        key = self.kernel_key.encode("utf-8")
        module_hash = self.module_hash.encode("utf-8")
        body = bytearray(
            _LAUNCH.pack(
                *self.shape,
                self.ndim,
                self.size,
                self.dim,
                self.max_blocks,
                self.block_dim,
                self.smem_bytes,
                self.grid_stride,
                self.is_forward,
                self.cluster_dim,
                self.pad1,
                len(key),
                len(module_hash),
                len(self.params),
                self.pad2,
                len(self.relocs),
                len(self.value_data),
            )
        )
        body += key + module_hash
        for param in [*self.params, *self.adj_params]:
            body += param.write()
        for reloc in self.relocs:
            body += reloc.write()
        return bytes(body + self.value_data + self.tail)


_H2D = struct.Struct("<iIQQ")
assert _H2D.size + OP_HEADER_SIZE == RECORD_BYTES["MEMCPY_H2D"]


@dataclass
class MemcpyH2D:
    dst_region_id: int
    dst_offset: int
    data: bytes
    pad: int = 0
    tail: bytes = b""

    op_type = OpType.MEMCPY_H2D

    @classmethod
    def read(cls, op: _OpReader) -> MemcpyH2D:
        rec = op.cur
        dst_region_id, pad, dst_offset, size = rec.unpack(_H2D, "operation H2D record")
        if size > rec.remaining():
            raise op.fail(f"H2D inline data of {size} bytes overflows the record")
        return cls(dst_region_id, dst_offset, rec.raw(size, "H2D data"), pad, op.tail())

    def write(self) -> bytes:
        return (
            _H2D.pack(self.dst_region_id, self.pad, self.dst_offset, len(self.data)) + self.data + self.tail
        )


class _FlatOp:
    """A record whose fields are its layout's, in order, then the tail: one reader and one
    writer serve every such record."""

    @classmethod
    def read(cls, op: _OpReader):
        return cls(*op.cur.unpack(cls.layout, f"operation {cls.what} record"), tail=op.tail())

    def write(self) -> bytes:
        values = [getattr(self, f.name) for f in fields(self) if f.name != "tail"]
        return self.layout.pack(*values) + self.tail


@dataclass
class MemcpyD2D(_FlatOp):
    dst_region_id: int
    src_region_id: int
    dst_offset: int
    src_offset: int
    size: int
    tail: bytes = b""

    op_type = OpType.MEMCPY_D2D
    layout = struct.Struct("<iiQQQ")
    what = "D2D"


assert MemcpyD2D.layout.size + OP_HEADER_SIZE == RECORD_BYTES["MEMCPY_D2D"]


@dataclass
class Memset(_FlatOp):
    region_id: int
    value: int
    offset: int
    size: int
    tail: bytes = b""

    op_type = OpType.MEMSET
    layout = struct.Struct("<iiQQ")
    what = "memset"


assert Memset.layout.size + OP_HEADER_SIZE == RECORD_BYTES["MEMSET"]


_MEMTILE = struct.Struct("<iIQQ")
assert _MEMTILE.size + OP_HEADER_SIZE == RECORD_BYTES["MEMTILE"]


@dataclass
class Memtile:
    """arr.fill_(v) of a multi-byte dtype: `count` copies of `value` at `offset`."""

    region_id: int
    offset: int
    count: int
    value: bytes  # srcsize bytes
    tail: bytes = b""

    op_type = OpType.MEMTILE

    @classmethod
    def read(cls, op: _OpReader) -> Memtile:
        rec, fail = op.cur, op.fail
        region_id, srcsize, offset, count = rec.unpack(_MEMTILE, "operation memtile record")
        if srcsize == 0:
            raise fail("memtile source size is zero")
        if srcsize > rec.remaining():
            raise fail(f"memtile value of {srcsize} bytes overflows the record")
        if count * srcsize > 0xFFFFFFFFFFFFFFFF:
            raise fail("memtile span overflows 64 bits")
        return cls(region_id, offset, count, rec.raw(srcsize, "memtile value"), op.tail())

    def write(self) -> bytes:
        return (
            _MEMTILE.pack(self.region_id, len(self.value), self.offset, self.count) + self.value + self.tail
        )


@dataclass
class Alloc(_FlatOp):
    region_id: int
    pad: int
    size: int
    tail: bytes = b""

    op_type = OpType.ALLOC
    layout = struct.Struct("<iIQ")
    what = "alloc"


assert Alloc.layout.size + OP_HEADER_SIZE == RECORD_BYTES["ALLOC"]


@dataclass
class OpStream:
    ops: list = field(default_factory=list)
    trailing: bytes = b""  # bytes after the declared op count (Warp warns, then ignores them)


_COND = struct.Struct("<iIQIIII")
assert _COND.size + OP_HEADER_SIZE == RECORD_BYTES["IF"] == RECORD_BYTES["WHILE"]


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

    @classmethod
    def read(cls, op: _OpReader) -> Conditional:
        rec, fail = op.cur, op.fail
        cond_region_id, pad, cond_offset, a_size, a_count, b_size, b_count = rec.unpack(
            _COND, "operation conditional record"
        )
        if a_size + b_size > rec.remaining():
            raise fail("conditional branch sizes overflow the record")
        if (a_size == 0) != (a_count == 0) or (b_size == 0) != (b_count == 0):
            raise fail("conditional branch size and op count disagree (one is zero, the other not)")
        if op.type == OpType.WHILE and b_size != 0:
            raise fail("capture_while record has a non-empty second branch")
        a_end = rec.pos + a_size
        branch_a = parse_stream(rec, a_end, a_count)
        branch_b = parse_stream(rec, a_end + b_size, b_count)
        return cls(OpType(op.type), cond_region_id, cond_offset, branch_a, branch_b, pad, op.tail())

    def write(self) -> bytes:
        a = write_stream_body(self.branch_a)
        b = write_stream_body(self.branch_b)
        counts = (len(a), len(self.branch_a.ops), len(b), len(self.branch_b.ops))
        return _COND.pack(self.cond_region_id, self.pad, self.cond_offset, *counts) + a + b + self.tail


# The fixed size of each record Warp's validator knows (apic_types.h sizeof(), in the table shared with the
# C++ runtime). Records of these types are kept opaque; the reader still enforces the rules below.
_OPAQUE_MIN_SIZE = {
    op_type: RECORD_BYTES[op_type.name]
    for op_type in (
        OpType.SCAN,
        OpType.REDUCTION,
        OpType.SEGMENTED_SORT,
        OpType.RADIX_SORT,
        OpType.RUNLENGTH_ENCODE,
        OpType.BSR_FROM_TRIPLETS,
        OpType.BSR_TRANSPOSE,
        OpType.BVH_REFIT,
        OpType.BVH_REBUILD,
        OpType.HASH_GRID_UPDATE,
    )
}
_U64_MAX = 0xFFFFFFFFFFFFFFFF
_SCALAR_BYTES = {
    ScalarType.INT32: 4,
    ScalarType.UINT32: 4,
    ScalarType.FLOAT32: 4,
    ScalarType.INT64: 8,
    ScalarType.UINT64: 8,
    ScalarType.FLOAT64: 8,
}


@dataclass
class OpaqueOp:
    """Any other known record (scan, sorts, BSR, reduction, ...), kept as its bytes."""

    op_type: int
    payload: bytes  # everything after the 8-byte op header

    @classmethod
    def read(cls, op: _OpReader) -> OpaqueOp:
        _check_opaque(op.cur, OpType(op.type), op.fail)
        return cls(op.type, op.tail())

    def write(self) -> bytes:
        return self.payload


def _check_opaque(rec: Cursor, op_type: OpType, fail) -> None:
    """The loader's rules for records this module keeps as bytes (apic_validate_operation_stream: sizes,
    enums, signs, spans that would overflow at replay); runtime/internal/wrp_operations.cc applies the same."""
    total = rec.end - rec.pos + _OP_HEADER.size
    if total < _OPAQUE_MIN_SIZE[op_type]:
        raise fail(f"{op_type.name} record of {total} bytes is shorter than {_OPAQUE_MIN_SIZE[op_type]}")
    if op_type.name in EXACT_RECORD_BYTES and total != _OPAQUE_MIN_SIZE[op_type]:
        raise fail(f"{op_type.name} record size is {total}, not {_OPAQUE_MIN_SIZE[op_type]}")
    at = rec.pos - _OP_HEADER.size  # offsets below are from the op header, as in apic_types.h

    def i32(offset: int) -> int:
        return struct.unpack_from("<i", rec.data, at + offset)[0]

    def u32(offset: int) -> int:
        return struct.unpack_from("<I", rec.data, at + offset)[0]

    def u64(offset: int) -> int:
        return struct.unpack_from("<Q", rec.data, at + offset)[0]

    def u8(offset: int) -> int:
        return rec.data[at + offset]

    if op_type in (OpType.BVH_REFIT, OpType.BVH_REBUILD, OpType.HASH_GRID_UPDATE):
        raise fail(f"{op_type.name} records a process-local handle and cannot be loaded from a .wrp")
    if op_type == OpType.SCAN:
        dtype, inclusive = u8(48), u8(49)
        if dtype not in (ScalarType.INT32, ScalarType.FLOAT32, ScalarType.INT64, ScalarType.FLOAT64):
            raise fail(f"unknown scan dtype {dtype}")
        if inclusive > 1:
            raise fail("scan inclusive flag out of range")
        if u32(32) > 0 and (i32(36) < 0 or i32(40) < 0 or i32(44) <= 0):
            raise fail("scan has a negative stride or a type length below 1")
    elif op_type == OpType.SEGMENTED_SORT:
        dtype = u8(64)
        if dtype not in (ScalarType.INT32, ScalarType.FLOAT32):
            raise fail(f"unknown segmented-sort dtype {dtype}")
    elif op_type == OpType.RADIX_SORT:
        dtype = u8(48)
        if dtype not in _SCALAR_BYTES:
            raise fail(f"unknown radix-sort dtype {dtype}")
        begin_bit, end_bit, value_size = i32(36), i32(40), i32(44)
        if (
            value_size not in (4, 8)
            or begin_bit < 0
            or end_bit < begin_bit
            or end_bit > 8 * _SCALAR_BYTES[dtype]
        ):
            raise fail(f"radix-sort value size {value_size} or key bits {begin_bit}..{end_bit} out of range")
    elif op_type == OpType.REDUCTION:
        _check_reduction(i32, u32, u64, u8, fail)
    elif op_type == OpType.BSR_FROM_TRIPLETS:
        block_size, scalar_size, row_count, nnz = i32(8), i32(12), i32(16), i32(24)
        if min(block_size, scalar_size, row_count, nnz) < 0:
            raise fail("bsr-from-triplets has a negative size or count")
        if nnz * block_size * scalar_size > _U64_MAX:
            raise fail("bsr-from-triplets block data span overflows 64 bits")
    elif op_type == OpType.BSR_TRANSPOSE:
        if min(i32(8), i32(12), i32(16)) < 0:
            raise fail("bsr-transpose has a negative size or count")


def _check_reduction(i32, u32, u64, u8, fail) -> None:
    """APICReductionRecord's rules (apic_validate_operation_stream, APIC_OP_REDUCTION)."""
    a_region, b_region, out_region, count = i32(8), i32(12), i32(16), u32(20)
    a_offset, b_offset, out_offset = u64(24), u64(32), u64(40)
    a_stride, b_stride, type_len, kind, dtype = i32(48), i32(52), i32(56), u8(60), u8(61)
    is_sum, is_inner = kind == 1, kind == 2
    if (
        not (is_sum or is_inner)
        or dtype not in (ScalarType.FLOAT32, ScalarType.FLOAT64)
        or count == 0
        or count > 0x7FFFFFFF
        or type_len <= 0
        or a_stride < 0
        or a_region < 0
        or out_region < 0
        or (is_sum and (b_region != -1 or b_offset != 0 or b_stride != 0))
        or (is_inner and (b_region < 0 or b_stride < 0))
    ):
        raise fail(f"invalid reduction kind {kind}, dtype {dtype}, count, regions or strides")
    scalar = _SCALAR_BYTES[dtype]
    if (
        a_offset % scalar
        or out_offset % scalar
        or a_stride % scalar
        or (is_inner and (b_offset % scalar or b_stride % scalar))
    ):
        raise fail("reduction offsets or strides are not multiples of the scalar size")
    a_bytes = (count - 1) * a_stride + type_len * scalar
    b_bytes = (count - 1) * b_stride + type_len * scalar if is_inner else 0
    out_bytes = type_len * scalar if is_sum else scalar
    if a_offset + a_bytes > _U64_MAX or out_offset + out_bytes > _U64_MAX or b_offset + b_bytes > _U64_MAX:
        raise fail("reduction span overflows 64 bits")


_READERS = {
    OpType.KERNEL_LAUNCH: KernelLaunch.read,
    OpType.MEMCPY_H2D: MemcpyH2D.read,
    OpType.MEMCPY_D2D: MemcpyD2D.read,
    OpType.MEMSET: Memset.read,
    OpType.MEMTILE: Memtile.read,
    OpType.ALLOC: Alloc.read,
    OpType.IF: Conditional.read,
    OpType.WHILE: Conditional.read,
    **dict.fromkeys(_OPAQUE_MIN_SIZE, OpaqueOp.read),
}
_OP_CLASSES = (KernelLaunch, MemcpyH2D, MemcpyD2D, Memset, Memtile, Alloc, Conditional, OpaqueOp)


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


def parse_stream(cur: Cursor, end: int, op_count: int) -> OpStream:
    """The stream's records, parsed; its nesting was checked first (check_branch_depth), so the
    recursion through conditional records is bounded."""
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
        rec = Cursor(cur.data, op_start + _OP_HEADER.size, op_end, cur.path, cur.section)
        stream.ops.append(_parse_op(rec, op_type, i, op_start))
        cur.pos = op_end
    stream.trailing = bytes(cur.data[cur.pos : end])
    cur.pos = end
    return stream


def check_branch_depth(cur: Cursor, end: int, op_count: int) -> None:
    """Conditional nesting past the table's depth (Warp's own loader takes up to 1024 levels), refused at
    the first branch past it. Every read of a .wrp runs this first: a full parse then recurses a bounded
    depth, and a load that leaves the rest of the stream to Warp's validator still refuses what verify
    refuses. Only op headers and conditional records are read, iteratively; a stream too malformed to
    follow is left to the parse or to Warp, which refuse it."""
    pending = [(cur.pos, end, op_count, 0)]
    while pending:
        pos, stream_end, count, depth = pending.pop()
        for index in range(count):
            if _OP_HEADER.size > stream_end - pos:
                break
            op_type, total_size = _OP_HEADER.unpack_from(cur.data, pos)
            if total_size < _OP_HEADER.size or total_size > stream_end - pos:
                break
            body = pos + _OP_HEADER.size
            if op_type in (OpType.IF, OpType.WHILE) and _COND.size <= total_size - _OP_HEADER.size:
                _, _, _, a_size, a_count, b_size, b_count = _COND.unpack_from(cur.data, body)
                a_start = body + _COND.size
                if a_size + b_size <= pos + total_size - a_start:
                    if depth + 1 > MAX_BRANCH_DEPTH:
                        # Named as a parse names a refusal inside a record: by the conditional's index.
                        raise cur.fail(
                            f"operation {index}: conditional nesting exceeds {MAX_BRANCH_DEPTH} levels",
                            a_start,
                        )
                    pending.append((a_start, a_start + a_size, a_count, depth + 1))
                    pending.append((a_start + a_size, a_start + a_size + b_size, b_count, depth + 1))
            pos += total_size


_NAMES_AN_OP = re.compile(r"operation \d+: ")


def _parse_op(rec: Cursor, op_type: int, index: int, op_start: int):
    op = _OpReader(rec, op_type, index, op_start)
    read = _READERS.get(op_type)
    if read is None:
        raise op.fail(f"unknown or unsupported op type {op_type}")
    try:
        return read(op)
    except WrpFormatError as exc:
        # Every refusal inside a record names its operation (a nested one names the innermost).
        if _NAMES_AN_OP.match(exc.rule):
            raise
        raise WrpFormatError(
            exc.path, exc.section, exc.offset, f"operation {index}: {exc.rule}", fix=exc.fix
        ) from None


def _write_op(op) -> bytes:
    if not isinstance(op, _OP_CLASSES):
        raise TypeError(f"not an operation record: {type(op).__name__}")
    body = op.write()
    return _OP_HEADER.pack(int(op.op_type), _OP_HEADER.size + len(body)) + body


def write_stream_body(stream: OpStream) -> bytes:
    return b"".join(_write_op(op) for op in stream.ops) + stream.trailing
