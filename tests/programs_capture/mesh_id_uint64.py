"""Mesh queries the way NVIDIA's own mesh samples write them: the kernel takes `mesh: wp.uint64`
and the step passes `mesh.id` (warp/examples: example_mesh_intersect, example_sph, ...).

Warp's APIC saves such an id verbatim (a crash at replay); the capture records it as a
wp.handle relocation instead (wrpkg.capture.launch_recorder), unless told not to. Environment:
  WRP_TEST_MESH_ID_TYPE  uint64 (default): as the samples declare it
                         handle: the same program edited to `wp.handle` (the kernels' source
                         text is the same, so are the module hashes)
  WRP_TEST_MESH_TAG      seed (default): the plain `tag: wp.uint64` parameter holds a large odd integer
                         array_ptr: it holds an array's address (`dist_a.ptr`), still refused
"""

import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 96
MESH_ID = wp.handle if os.environ.get("WRP_TEST_MESH_ID_TYPE", "uint64") == "handle" else wp.uint64
TAG_MODE = os.environ.get("WRP_TEST_MESH_TAG", "seed")


@wp.kernel
def closest_point(
    mesh: MESH_ID,
    points: wp.array(dtype=wp.vec3),
    max_dist: float,
    tag: wp.uint64,
    dist: wp.array(dtype=float),
    face: wp.array(dtype=int),
):
    tid = wp.tid()
    p = points[tid]
    q = wp.mesh_query_point_no_sign(mesh, p, max_dist)
    d = -1.0
    f = -1
    if q.result:
        d = wp.length(wp.mesh_eval_position(mesh, q.face, q.u, q.v) - p)
        f = q.face
    dist[tid] = d + float(tag % wp.uint64(2)) * 0.0
    face[tid] = f


@wp.kernel
def cast_rays(
    mesh: MESH_ID,
    origins: wp.array(dtype=wp.vec3),
    directions: wp.array(dtype=wp.vec3),
    t_hit: wp.array(dtype=float),
):
    tid = wp.tid()
    q = wp.mesh_query_ray(mesh, origins[tid], wp.normalize(directions[tid]), 1.0e6)
    t = -1.0
    if q.result:
        t = q.t
    t_hit[tid] = t


def _mesh(vertices, faces, device):
    return wp.Mesh(
        points=wp.array(np.array(vertices, dtype=np.float32), dtype=wp.vec3, device=device),
        indices=wp.array(np.array(faces, dtype=np.int32).reshape(-1), dtype=int, device=device),
    )


def build(device):
    tetrahedron = _mesh(
        [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], [0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3], device
    )
    corners = [[x, y, z] for x in (2.0, 3.0) for y in (0.0, 1.0) for z in (0.0, 1.0)]
    cube_faces = [
        [0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
        [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3],
    ]  # fmt: skip
    cube = _mesh(corners, cube_faces, device)
    rng = np.random.default_rng(25)
    points = wp.array(rng.uniform(-1, 4, (N, 3)).astype(np.float32), dtype=wp.vec3, device=device)
    directions = wp.array(rng.normal(size=(N, 3)).astype(np.float32), dtype=wp.vec3, device=device)
    dist_a = wp.zeros(N, dtype=float, device=device)
    dist_b = wp.zeros(N, dtype=float, device=device)
    face_a = wp.zeros(N, dtype=int, device=device)
    face_b = wp.zeros(N, dtype=int, device=device)
    t_hit = wp.zeros(N, dtype=float, device=device)
    # A plain integer: large, odd, and no address.
    seed = wp.uint64(0x9E3779B97F4A7C15)

    def step():
        tag = dist_a.ptr if TAG_MODE == "array_ptr" else seed
        wp.launch(
            closest_point, dim=N, inputs=[tetrahedron.id, points, 10.0, tag, dist_a, face_a], device=device
        )
        wp.launch(closest_point, dim=N, inputs=[cube.id, points, 10.0, seed, dist_b, face_b], device=device)
        wp.launch(cast_rays, dim=N, inputs=[cube.id, points, directions, t_hit], device=device)

    return CaptureSpec(
        inputs={"points": points, "directions": directions},
        outputs={"dist_a": dist_a, "dist_b": dist_b, "face_a": face_a, "face_b": face_b, "t_hit": t_hit},
        step=step,
        keep_alive=[tetrahedron, cube],
    )
