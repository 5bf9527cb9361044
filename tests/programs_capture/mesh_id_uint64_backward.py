"""A backward launch of a kernel taking `mesh: wp.uint64` (as NVIDIA's mesh samples declare it).

APIC packs a kernel's adjoint parameters too, and walks a `wp.handle` parameter's adjoint record
as a handle: the capture records the adjoint of a relocated `wp.uint64` mesh id the same way, so
the .wrp is the one of the program edited to `wp.handle` (WRP_TEST_MESH_ID_TYPE=handle).
"""

import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 16
MESH_ID = wp.handle if os.environ.get("WRP_TEST_MESH_ID_TYPE", "uint64") == "handle" else wp.uint64


@wp.kernel
def distance(mesh: MESH_ID, points: wp.array(dtype=wp.vec3), dist: wp.array(dtype=float)):
    tid = wp.tid()
    p = points[tid]
    q = wp.mesh_query_point_no_sign(mesh, p, 10.0)
    d = 0.0
    if q.result:
        d = wp.length(wp.mesh_eval_position(mesh, q.face, q.u, q.v) - p)
    dist[tid] = d


def build(device):
    vertices = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32)
    faces = np.array([0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3], dtype=np.int32)
    mesh = wp.Mesh(
        points=wp.array(vertices, dtype=wp.vec3, device=device),
        indices=wp.array(faces, dtype=int, device=device),
    )
    rng = np.random.default_rng(1)
    points = wp.array(rng.uniform(-1, 2, (N, 3)).astype(np.float32), dtype=wp.vec3, device=device)
    dist = wp.zeros(N, dtype=float, device=device)
    adj_points = wp.zeros(N, dtype=wp.vec3, device=device)
    adj_dist = wp.ones(N, dtype=float, device=device)

    def step():
        wp.launch(distance, dim=N, inputs=[mesh.id, points], outputs=[dist], device=device)
        wp.launch(
            distance,
            dim=N,
            inputs=[mesh.id, points],
            outputs=[dist],
            adj_inputs=[0, adj_points],
            adj_outputs=[adj_dist],
            adjoint=True,
            device=device,
        )

    return CaptureSpec(
        inputs={"points": points, "adj_dist": adj_dist},
        outputs={"dist": dist, "adj_points": adj_points},
        step=step,
        keep_alive=[mesh],
    )
