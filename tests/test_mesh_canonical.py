"""Canonical form of captures with several meshes (wrpkg/wrpformat/canonical.py).

Warp numbers mesh regions in the order of a Python set of mesh addresses, and saves a mesh
id found in a plain uint64 field or a dead handle as it finds it. tests/programs_mesh/
three_meshes.py captures three meshes in two fresh processes that register them in opposite
orders: the raw files differ, their canonical forms must not, and the canonical file must
replay like the original."""

from __future__ import annotations

import os
import struct
import subprocess
import sys

import numpy as np
import pytest
from wrp_testing import REPO_ROOT, TESTS_DIR, kernel_cache_dir, place_wrp, replay_cpu

from wrpkg.wrpformat import BindingRecord, KernelLaunch, RelocKind, canonicalize, read_wrp

PROGRAM = TESTS_DIR / "programs_mesh" / "three_meshes.py"
OUTPUTS = ("d_a", "d_b", "d_refs", "d_handles")


def _capture(out_dir, order, cache_dir):
    env = dict(os.environ, WARP_CACHE_PATH=str(cache_dir))
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    result = subprocess.run(
        [sys.executable, str(PROGRAM), str(out_dir), order],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return out_dir / "sim.wrp"


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    base = tmp_path_factory.getbasetemp()
    cache = kernel_cache_dir(base)
    return {order: _capture(base / f"meshes-{order}", order, cache) for order in ("forward", "reverse")}


def _words(data: bytes) -> tuple[int, ...]:
    return struct.unpack(f"<{len(data) // 8}Q", data)


def _binding_data(wrp, name):
    region_id = next(b.region_id for b in wrp.metadata.bindings if b.name == name)
    return wrp.memory.region(region_id).initial_data


def test_two_processes_differ_raw_but_match_canonical(captures):
    forward, reverse = (read_wrp(captures[order]) for order in ("forward", "reverse"))
    # the two saves numbered the mesh regions differently
    mesh_regions = [
        [(m.num_points, m.points_region_id) for m in w.metadata.meshes] for w in (forward, reverse)
    ]
    assert sorted(mesh_regions[0]) != sorted(mesh_regions[1])
    canonical = canonicalize(forward).to_bytes()
    assert canonical == canonicalize(reverse).to_bytes()
    assert canonicalize(read_wrp(canonical)).to_bytes() == canonical  # a fixed point


def test_meshes_are_numbered_by_first_use_and_own_their_regions_in_that_order(captures):
    raw = read_wrp(captures["reverse"])
    canon = canonicalize(raw)
    meshes = canon.metadata.meshes
    # handle arguments first (cube, tetrahedron), then the mesh only a handle array names
    assert [(m.original_ptr, m.num_points, m.num_tris) for m in meshes] == [(1, 8, 12), (2, 4, 4), (3, 3, 1)]
    owned = [region for m in meshes for region in (m.points_region_id, m.indices_region_id)]
    assert owned == sorted(owned)
    assert sorted(owned) == sorted(
        r for m in raw.metadata.meshes for r in (m.points_region_id, m.indices_region_id)
    )
    for mesh in meshes:
        points = canon.memory.region(mesh.points_region_id)
        assert points.size == mesh.num_points * 12 and points.element_size == 12
        assert canon.memory.region(mesh.indices_region_id).size == mesh.num_tris * 12
    launches = [op for op in canon.iter_ops() if isinstance(op, KernelLaunch)]
    handle_relocs = [r.region_offset for op in launches for r in op.relocs if r.kind == RelocKind.HANDLE]
    assert handle_relocs == [1, 2]


def test_dangling_handles_become_zero_and_plain_ids_the_mesh_number(captures):
    raw = read_wrp(captures["forward"])
    canon = canonicalize(raw)
    # handle array: the triangle, a deleted mesh's id, the integer 1 (which would otherwise
    # name canonical mesh 1 at load)
    assert _words(_binding_data(raw, "refs")) != _words(_binding_data(canon, "refs"))
    handles = next(loc for loc in canon.metadata.ptr_locations if loc.stride == 8 and loc.count == 3)
    assert _words(canon.memory.region(handles.region_id).initial_data) == (3, 0, 0)
    raw_handles = _words(raw.memory.region(handles.region_id).initial_data)
    assert raw_handles[2] == 1 and raw_handles[1] not in {m.original_ptr for m in raw.metadata.meshes}
    # MeshRef {tag: uint64, mesh: handle} x2: the tetrahedron, then the cube
    assert _words(_binding_data(canon, "refs")) == (2, 2, 1, 1)
    # distance_to_two(mesh_a, mesh_b, a_tag: uint64 = cube id, ...): handles zeroed as every
    # relocated slot is, the uint64 word holds the cube's number
    launch = next(
        op for op in canon.iter_ops() if isinstance(op, KernelLaunch) and "distance_to_two" in op.kernel_key
    )
    tag = launch.params[2]
    assert tag.value_size == 8
    assert launch.value_data[tag.value_offset : tag.value_offset + 8] == struct.pack("<Q", 1)


def test_canonical_file_replays_like_the_original(captures, tmp_path, tmp_path_factory):
    original_path = captures["reverse"]
    canon = canonicalize(read_wrp(original_path))
    canonical_path = place_wrp(canon.to_bytes(), original_path.parent / "sim_modules", tmp_path / "canonical")
    cache = kernel_cache_dir(tmp_path_factory.getbasetemp())
    replayed_original = replay_cpu(original_path, cache_dir=cache)
    replayed_canonical = replay_cpu(canonical_path, cache_dir=cache)
    expected = np.load(original_path.parent / "expected.npz")
    for name in OUTPUTS:
        assert replayed_canonical[name] == replayed_original[name], name
        replayed = np.frombuffer(replayed_canonical[name], dtype=np.float32).reshape(expected[name].shape)
        np.testing.assert_allclose(replayed, expected[name], atol=1e-6, err_msg=name)
    # every mesh answered: the cube's centre is 0.5 from its surface, the triangle is far
    assert expected["d_a"][0] == pytest.approx(0.5, abs=1e-6)
    assert expected["d_handles"][0] == pytest.approx(2.0, abs=1e-6)
    assert expected["d_refs"][0, 0] == pytest.approx(0.0, abs=1e-6)


def test_a_mesh_region_named_elsewhere_keeps_its_id(captures):
    raw = read_wrp(captures["reverse"])
    cube = next(m for m in raw.metadata.meshes if m.num_points == 8)
    raw.metadata.bindings.append(BindingRecord("cube_points", cube.points_region_id))
    canon = canonicalize(raw)
    canon_cube = next(m for m in canon.metadata.meshes if m.num_points == 8)
    assert canon_cube.points_region_id == cube.points_region_id
    assert canon.memory.region(cube.points_region_id).size == 8 * 12
    # the regions only meshes name still take their ids in canonical order
    owned = [r for m in canon.metadata.meshes for r in (m.points_region_id, m.indices_region_id)]
    owned.remove(cube.points_region_id)
    assert owned == sorted(owned)
