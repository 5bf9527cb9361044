"""A mesh query through a wp.handle: points projected onto a flat square (two triangles in z = 0),
their closest points clamped to the square."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 100


def initial():
    return {"p": np.random.default_rng(6).uniform(-2, 2, (N, 3)).astype(np.float32)}


@wp.kernel
def closest(mesh: wp.handle, p: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    q = wp.mesh_query_point_no_sign(mesh, p[i], 1.0e6)
    out[i] = wp.mesh_eval_position(mesh, q.face, q.u, q.v) if q.result else wp.vec3(0.0)


def build(device):
    points = wp.array(
        np.array([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], dtype=np.float32),
        dtype=wp.vec3,
        device=device,
    )
    faces = wp.array(np.array([0, 1, 2, 0, 2, 3], dtype=np.int32), dtype=wp.int32, device=device)
    mesh = wp.Mesh(points=points, indices=faces)
    p = wp.array(initial()["p"], dtype=wp.vec3, device=device)
    out = wp.zeros(N, dtype=wp.vec3, device=device)

    def step():
        wp.launch(closest, dim=N, inputs=[mesh.id, p, out], device=device)

    return CaptureSpec(inputs={"p": p}, outputs={"out": out}, step=step, keep_alive=[mesh])


def expected():
    p = initial()["p"]
    out = np.clip(p, -1, 1)
    out[:, 2] = 0
    return {"out": out}
