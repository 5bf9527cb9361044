"""Kernels that take the id of a wp.HashGrid, wp.Bvh or wp.Volume, which Warp 1.19's APIC
cannot save (it relocates wp.Mesh handles only). WRP_TEST_GEOMETRY_MODE picks:
  hashgrid_uint64  the hash grid id as wp.uint64, the type Warp's own API uses (default)
  hashgrid_handle  the same as wp.handle: APIC would save it as a mesh
  bvh_handle       a wp.Bvh id as wp.handle
  volume_uint64    a wp.Volume id as wp.uint64: captured, relocated to the volume's buffer
                   (tests/programs_capture/volume_step.py is the full check)
  volume_struct    a wp.Volume id in a wp.uint64 field of a struct: captured, relocated likewise
"""

import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 32
MODE = os.environ.get("WRP_TEST_GEOMETRY_MODE", "hashgrid_uint64")
ID_TYPE = wp.handle if MODE.endswith("_handle") else wp.uint64


@wp.kernel
def neighbours(grid: ID_TYPE, points: wp.array(dtype=wp.vec3), out: wp.array(dtype=int)):
    i = wp.tid()
    query = wp.hash_grid_query(wp.uint64(grid), points[i], 0.25)
    n = wp.int32(0)
    j = wp.int32(0)
    while wp.hash_grid_query_next(query, j):
        n += 1
    out[i] = n


@wp.kernel
def overlaps(bvh: ID_TYPE, points: wp.array(dtype=wp.vec3), out: wp.array(dtype=int)):
    i = wp.tid()
    query = wp.bvh_query_aabb(wp.uint64(bvh), points[i] - wp.vec3(0.1), points[i] + wp.vec3(0.1))
    n = wp.int32(0)
    index = wp.int32(0)
    while wp.bvh_query_next(query, index):
        n += 1
    out[i] = n


@wp.kernel
def sample(volume: ID_TYPE, points: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.volume_sample_f(wp.uint64(volume), points[i], wp.Volume.LINEAR)


@wp.struct
class VolumeRef:
    volume: wp.uint64


@wp.kernel
def sample_struct(ref: VolumeRef, points: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.volume_sample_f(ref.volume, points[i], wp.Volume.LINEAR)


def build(device):
    rng = np.random.default_rng(5)
    points = wp.array(rng.uniform(0, 1, (N, 3)).astype(np.float32), dtype=wp.vec3, device=device)
    counts = wp.zeros(N, dtype=int, device=device)
    values = wp.zeros(N, dtype=float, device=device)
    if MODE.startswith("hashgrid"):
        obj = wp.HashGrid(8, 8, 8, device=device)
        obj.build(points, 0.25)
        kernel, out = neighbours, counts
    elif MODE.startswith("bvh"):
        obj = wp.Bvh(points, points)
        kernel, out = overlaps, counts
    else:
        # Voxel values that vary, so that a sample tells the voxels apart.
        voxels = np.arange(64, dtype=np.float32).reshape(4, 4, 4) * np.float32(0.25)
        obj = wp.Volume.load_from_numpy(voxels, bg_value=-1.0, device=device)
        kernel, out = (sample_struct if MODE == "volume_struct" else sample), values
    arg = obj.id
    if MODE == "volume_struct":
        arg = VolumeRef()
        arg.volume = obj.id
    # The volume's samples are in index space: points spread over its 4 voxels a side.
    points_in_volume = wp.array(
        rng.uniform(-0.5, 4.5, (N, 3)).astype(np.float32), dtype=wp.vec3, device=device
    )
    query_points = points_in_volume if MODE.startswith("volume") else points

    def step():
        wp.launch(kernel, dim=N, inputs=[arg, query_points, out], device=device)

    return CaptureSpec(inputs={"points": query_points}, outputs={"out": out}, step=step, keep_alive=[obj])
