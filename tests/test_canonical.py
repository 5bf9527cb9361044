"""canonicalize(): two captures of one program in two processes differ raw but are
byte-identical canonical, and the canonical file replays exactly as the original."""

from __future__ import annotations

import random
import struct

import numpy as np
import pytest
from wrp_testing import FIXTURE_WRP, kernel_cache_dir, place_wrp, replay_cpu, shared_capture

from wrpkg.errors import WrpFormatError
from wrpkg.wrpformat import (
    CANONICAL_CUDA_TARGET_ARCH,
    KernelLaunch,
    RelocKind,
    canonicalize,
    read_wrp,
    validate_module,
)


@pytest.fixture(scope="module")
def two_captures(tmp_path_factory):
    return shared_capture(tmp_path_factory, index=0), shared_capture(tmp_path_factory, index=1)


def _relocated_slots(wrp):
    for op in wrp.iter_ops():
        if isinstance(op, KernelLaunch):
            for param, relocs in op.bindings_with_relocs():
                for reloc in relocs:
                    start = param.value_offset + reloc.value_byte_offset
                    yield reloc, op.value_data[start : start + 8]


def test_two_processes_differ_raw_but_match_canonical(two_captures):
    first, second = two_captures
    raw_a, raw_b = first.read_bytes(), second.read_bytes()
    assert raw_a != raw_b, "CPU captures in two processes were expected to hold different addresses"
    canon_a = canonicalize(read_wrp(raw_a)).to_bytes()
    canon_b = canonicalize(read_wrp(raw_b)).to_bytes()
    assert canon_a == canon_b
    # canonical form is a fixed point and a valid file
    assert canonicalize(read_wrp(canon_a)).to_bytes() == canon_a
    assert read_wrp(canon_a).to_bytes() == canon_a


def test_canonical_zeroes_slots_renumbers_meshes_and_sorts(two_captures):
    original = read_wrp(two_captures[0])
    canon = canonicalize(original)
    assert any(
        value != bytes(8) for reloc, value in _relocated_slots(original) if reloc.kind == RelocKind.DATA_PTR
    )
    assert all(value == bytes(8) for _, value in _relocated_slots(canon))
    (mesh,) = canon.metadata.meshes
    assert mesh.original_ptr == 1
    handles = [r.region_offset for r, _ in _relocated_slots(canon) if r.kind == RelocKind.HANDLE]
    assert handles == [1]
    (loc,) = canon.metadata.ptr_locations
    region = canon.memory.region(loc.region_id)
    assert struct.unpack_from("<Q", region.initial_data, loc.offset)[0] == 1
    assert [m.hash for m in canon.metadata.modules] == sorted(m.hash for m in original.metadata.modules)
    kernel_keys = [(k.module_hash, k.key) for k in canon.metadata.kernels]
    assert kernel_keys == sorted(kernel_keys)
    # the input object is left alone
    assert original.metadata.meshes[0].original_ptr != 1


def test_canonical_ignores_table_order(two_captures):
    wrp = read_wrp(two_captures[0])
    expected = canonicalize(wrp).to_bytes()
    rng = random.Random(7)
    for _ in range(5):
        shuffled = read_wrp(two_captures[0])
        rng.shuffle(shuffled.metadata.modules)
        rng.shuffle(shuffled.metadata.kernels)
        rng.shuffle(shuffled.memory.regions)
        assert canonicalize(shuffled).to_bytes() == expected


def test_canonical_file_replays_bit_exactly(two_captures, tmp_path, tmp_path_factory):
    original_path = two_captures[0]
    original = read_wrp(original_path)
    modules = original_path.parent / "sim_modules"
    canonical_path = place_wrp(canonicalize(original).to_bytes(), modules, tmp_path / "canonical")
    cache = kernel_cache_dir(tmp_path_factory.getbasetemp())

    replayed_original = replay_cpu(original_path, cache_dir=cache)
    replayed_canonical = replay_cpu(canonical_path, cache_dir=cache)
    assert replayed_canonical == replayed_original

    # the replay really ran: outputs moved away from the saved initial data and match an
    # eager run of the same step (saved by the capture program)
    initial = {r.region_id: r.initial_data for r in original.memory.regions}
    expected = np.load(original_path.parent / "expected.npz")
    for binding in original.metadata.bindings:
        if binding.name in expected.files:
            assert replayed_canonical[binding.name] == expected[binding.name].tobytes(), binding.name
    assert (
        replayed_canonical["d"]
        != initial[next(b.region_id for b in original.metadata.bindings if b.name == "d")]
    )
    assert np.frombuffer(replayed_canonical["log"], dtype=np.float32)[0] == 3.0  # capture_while ran 3 times


def test_canonical_cuda_fixture_uses_one_fixed_target_arch():
    wrp = read_wrp(FIXTURE_WRP)
    canon = canonicalize(wrp)
    assert canon.header.target_arch == canon.metadata.target_arch == CANONICAL_CUDA_TARGET_ARCH
    assert {m.target_arch for m in canon.metadata.modules} == {CANONICAL_CUDA_TARGET_ARCH}
    again = read_wrp(canon.to_bytes())  # still passes every loader rule
    assert all(validate_module(m, again.device) is None for m in again.metadata.modules)
    assert all(value == bytes(8) for _, value in _relocated_slots(again))
    assert wrp.header.target_arch == 90
    with pytest.raises(WrpFormatError, match="canonical CUDA target arch"):
        canonicalize(wrp, cuda_target_arch=75)
