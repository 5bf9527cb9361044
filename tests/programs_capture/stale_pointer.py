"""A mesh query whose kernel takes the mesh id as wp.uint64 instead of wp.handle, the mistake
that saves the capture process's mesh address into the graph. WRP_TEST_STALE_MODE picks:
  mesh_uint64  the mistake (default)
  array_ptr    an array's .ptr passed as wp.uint64 (just as stale)
  handle       the correct program: mesh id as wp.handle, plus a large plain wp.uint64 seed
"""

import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 64
MODE = os.environ.get("WRP_TEST_STALE_MODE", "mesh_uint64")
MESH_ID_TYPE = wp.handle if MODE == "handle" else wp.uint64


@wp.kernel
def closest(
    mesh: MESH_ID_TYPE, points: wp.array(dtype=wp.vec3), dist: wp.array(dtype=float), seed: wp.uint64
):
    i = wp.tid()
    q = wp.mesh_query_point(mesh, points[i], 10.0)
    d = 0.0
    if q.result:
        d = wp.length(points[i] - wp.mesh_eval_position(mesh, q.face, q.u, q.v))
    dist[i] = d + float(seed % wp.uint64(2))


@wp.kernel
def scale_raw(address: wp.uint64, points: wp.array(dtype=wp.vec3), dist: wp.array(dtype=float)):
    i = wp.tid()
    dist[i] = points[i][0] * 2.0 + float(address % wp.uint64(1))


def build(device):
    vertices = wp.array(
        np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32), dtype=wp.vec3, device=device
    )
    faces = wp.array(np.array([0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3], dtype=np.int32), dtype=int, device=device)
    mesh = wp.Mesh(points=vertices, indices=faces)
    rng = np.random.default_rng(3)
    points = wp.array(rng.uniform(-1, 2, (N, 3)).astype(np.float32), dtype=wp.vec3, device=device)
    dist = wp.zeros(N, dtype=float, device=device)
    # A plain integer: large, odd, and not an address.
    seed = wp.uint64(0x9E3779B97F4A7C15)

    def step():
        if MODE == "array_ptr":
            wp.launch(scale_raw, dim=N, inputs=[points.ptr + 12, points, dist], device=device)
        else:
            wp.launch(closest, dim=N, inputs=[mesh.id, points, dist, seed], device=device)

    return CaptureSpec(inputs={"points": points}, outputs={"dist": dist}, step=step, keep_alive=[mesh])
