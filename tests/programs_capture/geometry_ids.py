"""Kernels that take the id of a wp.HashGrid, wp.Bvh or wp.Volume, which Warp 1.19's APIC
cannot save (it relocates wp.Mesh handles only). WRP_TEST_GEOMETRY_MODE picks:
  hashgrid_uint64  the hash grid id as wp.uint64, the type Warp's own API uses (default)
  hashgrid_handle  the same as wp.handle: APIC would save it as a mesh
  bvh_handle       a wp.Bvh id as wp.handle
  volume_uint64    a wp.Volume id as wp.uint64
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
        obj = wp.Volume.load_from_numpy(np.ones((4, 4, 4), dtype=np.float32), bg_value=0.0, device=device)
        kernel, out = sample, values

    def step():
        wp.launch(kernel, dim=N, inputs=[obj.id, points, out], device=device)

    return CaptureSpec(inputs={"points": points}, outputs={"out": out}, step=step, keep_alive=[obj])
