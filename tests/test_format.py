"""wrpkg.wrpformat: byte-exact round trips on real captures, validation rules, rewriting,
and `wrpkg inspect`."""

from __future__ import annotations

import hashlib
import io
import json
import struct
from contextlib import redirect_stdout

import pytest
from wrp_testing import FIXTURE_DIR, FIXTURE_WRP, shared_capture

from wrpkg import cli
from wrpkg.errors import WrpFormatError
from wrpkg.reader.inspection import render_text
from wrpkg.wrpformat import (
    BinaryKind,
    Conditional,
    DeviceType,
    Direction,
    KernelLaunch,
    Memtile,
    OpType,
    RelocKind,
    binding_infos,
    read_wrp,
    replace_module_binary,
    write_wrp,
)


@pytest.fixture(scope="module")
def cpu_wrp(tmp_path_factory):
    return shared_capture(tmp_path_factory)


# --- round trips ------------------------------------------------------------------------


def test_cpu_capture_round_trips_byte_exact_and_covers_every_op_kind(cpu_wrp):
    raw = cpu_wrp.read_bytes()
    wrp = read_wrp(cpu_wrp)
    assert wrp.to_bytes() == raw
    assert wrp.device == DeviceType.CPU and wrp.header.target_arch == 0

    # what the capture program (tests/programs/full_capture.py) records
    assert wrp.op_counts() == {
        "memset": 1,  # e.zero_()
        "memtile": 2,  # d.fill_(2.5), b.grad.fill_(1.0)
        "kernel_launch": 11,  # 3 integrate, energy, 2 mesh queries, square fwd+adj, if x2, while body
        "memcpy_d2d": 1,  # wp.copy
        "if": 1,
        "while": 1,
    }
    assert {m.name for m in wrp.metadata.modules} == {"prog_physics", "prog_geometry"}
    assert {k.key for k in wrp.metadata.kernels} == {
        "integrate",
        "kinetic_energy",
        "square",
        "closest_distance",
        "closest_distance_indirect",
        "count_down",
        "add_constant",
    }
    launches = [op for op in wrp.iter_ops() if isinstance(op, KernelLaunch)]
    # @wp.struct Params {vec3 gravity; float damping} passed by value: a 16-byte blob
    integrate = next(op for op in launches if op.kernel_key == "integrate")
    assert [p.value_size for p in integrate.params][2] == 16
    # adjoint launch: is_forward 0 and an adjoint binding block as long as the forward one
    adjoint = [op for op in launches if not op.is_forward]
    assert len(adjoint) == 1 and adjoint[0].kernel_key == "square"
    assert len(adjoint[0].adj_params) == len(adjoint[0].params) == 2
    # mesh query: one mesh record, a HANDLE reloc naming it, a pointer location for the handle array
    assert len(wrp.metadata.meshes) == 1
    handle = [r for op in launches for r in op.relocs if r.kind == RelocKind.HANDLE]
    assert [r.region_offset for r in handle] == [wrp.metadata.meshes[0].original_ptr]
    assert len(wrp.metadata.ptr_locations) == 1
    # conditionals carry their branches as nested op streams
    cond_if, cond_while = (op for op in wrp.operations.ops if isinstance(op, Conditional))
    assert cond_if.kind == OpType.IF and cond_while.kind == OpType.WHILE
    assert [len(cond_if.branch_a.ops), len(cond_if.branch_b.ops)] == [1, 1]
    assert [len(cond_while.branch_a.ops), len(cond_while.branch_b.ops)] == [1, 0]
    fill = next(op for op in wrp.iter_ops() if isinstance(op, Memtile))
    assert struct.unpack("<f", fill.value)[0] == 2.5 and fill.count == 64


def test_cuda_fixture_round_trips_byte_exact():
    raw = FIXTURE_WRP.read_bytes()
    wrp = read_wrp(FIXTURE_WRP)
    assert wrp.to_bytes() == raw
    assert wrp.device == DeviceType.CUDA and wrp.header.target_arch == 90
    assert wrp.metadata.producer_version == "1.19.0"
    (module,) = wrp.metadata.modules
    cubin = (FIXTURE_DIR / "sim_modules" / module.binary_filename).read_bytes()
    source = (FIXTURE_DIR / "sim_modules" / module.source_filename).read_bytes()
    assert module.binary_kind == BinaryKind.CUBIN and module.target_arch == 90
    assert module.binary_sha256 == hashlib.sha256(cubin).hexdigest()
    assert module.source_sha256 == hashlib.sha256(source).hexdigest()
    assert module.recipe.optimization_level == 3 and module.recipe.fuse_fp == 1
    assert len(module.compile_recipe) == 16
    assert wrp.op_counts() == {"kernel_launch": 21, "memset": 1}
    assert [b.name for b in wrp.metadata.bindings] == ["x", "v", "x", "e"]
    infos = {b.name: b for b in binding_infos(wrp)}
    assert infos["x"].direction == Direction.BOTH and infos["x"].byte_size == 4096 * 12
    assert infos["e"].direction == Direction.OUTPUT and infos["e"].byte_size == 4
    # a capture's own lists settle what the file cannot
    infos = {b.name: b for b in binding_infos(wrp, inputs=["x", "v"], outputs=["x", "e"])}
    assert infos["v"].direction == Direction.INPUT


def test_write_wrp_is_atomic_and_exact(tmp_path):
    wrp = read_wrp(FIXTURE_WRP)
    dest = tmp_path / "out.wrp"
    dest.write_bytes(b"old")
    write_wrp(wrp, dest)
    assert dest.read_bytes() == FIXTURE_WRP.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.wrp"]  # no temp file left


# --- validation -------------------------------------------------------------------------


def _patch(data: bytes, offset: int, new: bytes) -> bytes:
    return data[:offset] + new + data[offset + len(new) :]


def _meta_offset(data: bytes) -> int:
    return struct.unpack_from("<Q", data, 64 + 8)[0]


def _reject(data: bytes, section: str, rule_part: str) -> WrpFormatError:
    with pytest.raises(WrpFormatError) as err:
        read_wrp(data, path="bad.wrp")
    assert err.value.section == section, err.value
    assert rule_part in err.value.rule, err.value
    assert err.value.path == "bad.wrp" and isinstance(err.value.offset, int)
    return err.value


def test_rejects_bad_header():
    data = FIXTURE_WRP.read_bytes()
    assert _reject(b"XRP1" + data[4:], "header", "bad magic").offset == 0
    assert _reject(_patch(data, 4, struct.pack("<I", 17)), "header", "format version 17").offset == 4
    _reject(_patch(data, 24, b"\x07"), "header", "unknown device type 7")
    _reject(_patch(data, 28, struct.pack("<I", 0)), "header", "disagree")
    _reject(data[:40], "header", "smaller than the 64-byte header")
    _reject(_patch(data, 12, struct.pack("<I", 100)), "header", "section count")


def test_rejects_sections_that_overrun_or_repeat():
    data = FIXTURE_WRP.read_bytes()
    err = _reject(_patch(data, 64 + 16, struct.pack("<QQ", 1 << 40, 1 << 40)), "section table", "overruns")
    assert err.offset == 64
    _reject(data[:-10], "section table", "overruns")
    # second entry claims METADATA too
    _reject(_patch(data, 64 + 32, struct.pack("<I", 1)), "section table", "duplicate METADATA")
    _reject(_patch(data, 64 + 32 + 24, struct.pack("<Q", 7)), "section table", "compressed")


def test_rejects_wrong_producer_and_metadata_faults():
    data = FIXTURE_WRP.read_bytes()
    meta = _meta_offset(data)
    assert data[meta + 8 : meta + 14] == b"1.19.0"
    err = _reject(_patch(data, meta + 8, b"1.18.0"), "METADATA", "produced by Warp '1.18.0'")
    assert err.offset == meta + 4 and "1.19.0" in (err.fix or "")
    _reject(_patch(data, meta, struct.pack("<I", 17)), "METADATA", "metadata version 17")
    # module count 2^32-1: refused from the counts, before any record is read
    counts = meta + 4 + 4 + 6 + 4
    err = _reject(_patch(data, counts, struct.pack("<I", 0xFFFFFFFF)), "METADATA", "need at least")
    assert err.offset == counts


def test_rejects_module_filename_digest_and_enum_faults():
    data = FIXTURE_WRP.read_bytes()
    name = b"wp___main___5bca816.sm90.cubin"
    at = data.index(name)
    _reject(_patch(data, at, b"/"), "METADATA", "not a plain file name")
    _reject(_patch(data, at + 2, b":"), "METADATA", "not a plain file name")
    _reject(_patch(data, at + 2, b"\\"), "METADATA", "not a plain file name")
    _reject(_patch(data, at + len(name) - 5, b"xubin"), "METADATA", "needs a filename ending in .cubin")
    digest = b"dcef466b"
    _reject(_patch(data, data.index(digest), b"DCEF"), "METADATA", "not a lowercase sha256")
    # binary kind / fallback reason bytes follow the source digest string
    src_digest = data.index(b"696d4096")
    kind_at = src_digest + 64
    assert data[kind_at] == BinaryKind.CUBIN
    _reject(_patch(data, kind_at, b"\x09"), "METADATA", "unknown binary kind 9")
    _reject(_patch(data, kind_at + 1, b"\x63"), "METADATA", "unknown fallback reason 99")
    _reject(_patch(data, kind_at + 2 + 15, b"\x01"), "METADATA", "compile recipe")


def test_rejects_operation_faults():
    data = FIXTURE_WRP.read_bytes()
    ops = struct.unpack_from("<Q", data, 64 + 2 * 32 + 8)[0]
    first_op = ops + 4  # a memset (32 bytes), then launches
    _reject(_patch(data, ops, struct.pack("<I", 1 << 30)), "OPERATIONS", "cannot fit")
    _reject(_patch(data, first_op, struct.pack("<I", 99)), "OPERATIONS", "unknown or unsupported op type 99")
    _reject(_patch(data, first_op, struct.pack("<I", 3)), "OPERATIONS", "unsupported op type 3")
    _reject(_patch(data, first_op + 4, struct.pack("<I", 1 << 31)), "OPERATIONS", "overruns")
    wrp = read_wrp(data)
    launch = wrp.operations.ops[1]
    launch_at = first_op + 32
    reloc_table = launch_at + 80 + len(launch.kernel_key) + len(launch.module_hash) + 16 * len(launch.params)
    _reject(_patch(data, reloc_table + 16, b"\x09"), "OPERATIONS", "unknown kind 9")


def _nested_ifs_wrp(depth: int, else_branch: bool) -> bytes:
    """The CUDA fixture with one more operation: `depth` capture_ifs each inside the one around it (in
    its else branch when `else_branch`), the innermost empty."""
    from wrpkg.wrpformat import OpaqueOp  # noqa: PLC0415

    inner = b""
    for level in range(depth):
        count = 1 if inner else 0
        sizes = (0, 0, len(inner), count) if else_branch else (len(inner), count, 0, 0)
        record = struct.pack("<iIQIIII", 1, 0, 0, *sizes) + inner
        inner = record if level == depth - 1 else struct.pack("<II", int(OpType.IF), 8 + len(record)) + record
    wrp = read_wrp(FIXTURE_WRP.read_bytes())
    wrp.operations.ops.append(OpaqueOp(int(OpType.IF), inner))
    return wrp.to_bytes()


@pytest.mark.parametrize("else_branch", [False, True])
def test_a_load_without_the_operations_refuses_the_nesting_a_full_parse_refuses(else_branch):
    """read_wrp(operations=False), what a load runs before Warp's own validator (which takes 1024 levels),
    walks the conditionals for the table's depth: the same verdict as a full parse at 128 and 129."""
    data = _nested_ifs_wrp(128, else_branch)
    read_wrp(data)
    read_wrp(data, operations=False)
    data = _nested_ifs_wrp(129, else_branch)
    for operations in (True, False):
        with pytest.raises(WrpFormatError, match="conditional nesting exceeds 128 levels"):
            read_wrp(data, operations=operations)


def test_rejects_memory_faults():
    data = FIXTURE_WRP.read_bytes()
    mem = struct.unpack_from("<Q", data, 64 + 32 + 8)[0]
    _reject(_patch(data, mem + 4 + 16, b"\x02"), "MEMORY", "initial-data flag 2")
    _reject(_patch(data, mem + 4 + 8, struct.pack("<Q", 1 << 30)), "MEMORY", "declares")
    # Past the bound of wrpkg/schemas/wrp_limits.json (shared with runtime/internal/wrp_check.cc): Warp would allocate it.
    _reject(
        _patch(data, mem + 4 + 8, struct.pack("<Q", 1 << 62)),
        "MEMORY",
        "more than the 1099511627776 a region",
    )


# --- rewriting --------------------------------------------------------------------------


def test_replace_module_binary_points_at_a_fatbin():
    wrp = read_wrp(FIXTURE_WRP)
    module_hash = wrp.metadata.modules[0].hash
    digest = hashlib.sha256(b"fatbin bytes").hexdigest()
    out = replace_module_binary(wrp, module_hash, "wp___main___5bca816.fat.cubin", digest, BinaryKind.CUBIN)
    again = read_wrp(out.to_bytes())
    (module,) = again.metadata.modules
    assert (module.binary_filename, module.binary_sha256, module.binary_kind) == (
        "wp___main___5bca816.fat.cubin",
        digest,
        BinaryKind.CUBIN,
    )
    assert wrp.metadata.modules[0].binary_sha256 != digest  # the input is left alone
    with pytest.raises(WrpFormatError, match="not a plain file name"):
        replace_module_binary(wrp, module_hash, "sub/x.cubin", digest)
    with pytest.raises(WrpFormatError, match="lowercase sha256"):
        replace_module_binary(wrp, module_hash, "x.cubin", digest.upper())
    with pytest.raises(WrpFormatError, match="ending in .ptx"):
        replace_module_binary(wrp, module_hash, "x.cubin", digest, BinaryKind.PTX)
    with pytest.raises(WrpFormatError, match="no module with hash"):
        replace_module_binary(wrp, "feed", "x.cubin", digest)


# --- inspect ----------------------------------------------------------------------------


def _inspect(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = cli.main(["inspect", *argv])
    return code, out.getvalue()


def test_inspect_json_on_fixture_directory():
    code, out = _inspect(str(FIXTURE_DIR), "--json")
    assert code == 0
    summary = json.loads(out)["wrp"]
    assert (summary["device"], summary["target_arch"], summary["warp_version"]) == ("cuda", 90, "1.19.0")
    (module,) = summary["modules"]
    assert module["binary_kind"] == "CUBIN" and module["binary_size"] == 41488 and module["fatbin"] is None
    assert summary["operations"] == {"kernel_launch": 21, "memset": 1}
    assert {b["name"]: (b["direction"], b["bytes"]) for b in summary["bindings"]}["e"] == ("output", 4)
    assert summary["memory"]["initial_data_bytes"] == 4 + 2 * 4096 * 12


def test_inspect_text_names_what_multi_arch_modules_hold():
    """A bundle's .wrp header keeps one canonical arch; the text says what the fatbins hold."""
    code, out = _inspect(str(FIXTURE_DIR), "--json")
    summary = json.loads(out)["wrp"]
    assert "target arch: sm_90\n" in render_text(summary)
    summary["target_arch"] = 100
    summary["modules"][0]["fatbin"] = ["sm_75", "sm_90", "compute_90"]
    text = render_text(summary)
    assert "target arch: sm_75, sm_90, compute_90 (module fatbins; the header records sm_100)" in text


def test_inspect_text_on_cpu_capture(cpu_wrp):
    code, out = _inspect(str(cpu_wrp))
    assert code == 0
    assert "device: cpu" in out and "prog_geometry" in out and "while 1" in out and "memtile 2" in out


def test_inspect_refuses_a_directory_without_exactly_one_wrp(tmp_path, capsys):
    (tmp_path / "a.wrp").write_bytes(FIXTURE_WRP.read_bytes())
    (tmp_path / "b.wrp").write_bytes(FIXTURE_WRP.read_bytes())
    assert cli.main(["inspect", str(tmp_path)]) == 1
    assert "exactly one .wrp" in capsys.readouterr().err
    (tmp_path / "b.wrp").write_bytes(b"not a wrp file at all, just some bytes that are long enough to read.")
    assert cli.main(["inspect", str(tmp_path / "b.wrp")]) == 1
    assert "bad magic" in capsys.readouterr().err
