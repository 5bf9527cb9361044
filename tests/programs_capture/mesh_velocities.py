"""A step that queries a wp.Mesh's velocities, gives the mesh another velocities array and queries
again. Warp points the mesh at the new array at once, in native code that APIC does not record:
before the refusal, the CPU capture replayed a velocity of 5.0 for the first query, where the step
gave 1.0. WRP_TEST_MESH_VELOCITIES picks `assign` (default: refused) or `write` (the mesh keeps the
array it was built with, and the step writes new velocities into it: captures)."""

import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

MODE = os.environ.get("WRP_TEST_MESH_VELOCITIES", "assign")


@wp.kernel
def query_velocity(mesh: wp.uint64, queries: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    hit = wp.mesh_query_point_no_sign(mesh, queries[i], 10.0)
    out[i] = wp.mesh_eval_velocity(mesh, hit.face, hit.u, hit.v)


@wp.kernel
def double(v: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    v[i] = v[i] * 2.0


def build(device):
    corners = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], dtype=np.float32)
    points = wp.array(corners, dtype=wp.vec3, device=device)
    indices = wp.array(np.array([0, 1, 2, 1, 3, 2], dtype=np.int32), device=device)
    slow = wp.array(np.ones((4, 3), dtype=np.float32), dtype=wp.vec3, device=device)
    fast = wp.array(np.full((4, 3), 5.0, dtype=np.float32), dtype=wp.vec3, device=device)
    mesh = wp.Mesh(points, indices, velocities=slow)
    queries = wp.array(
        np.array([[0.2, 0.2, 0.5], [0.8, 0.7, -0.3]], dtype=np.float32), dtype=wp.vec3, device=device
    )
    before = wp.zeros(2, dtype=wp.vec3, device=device)
    after = wp.zeros(2, dtype=wp.vec3, device=device)

    def step():
        wp.launch(query_velocity, dim=2, inputs=[mesh.id, queries, before], device=device)
        if MODE == "assign":
            mesh.velocities = fast  # refused here
            wp.launch(double, dim=4, inputs=[fast], device=device)
        else:
            wp.copy(slow, fast)
            wp.launch(double, dim=4, inputs=[slow], device=device)
        wp.launch(query_velocity, dim=2, inputs=[mesh.id, queries, after], device=device)

    return CaptureSpec(
        inputs={"queries": queries}, outputs={"before": before, "after": after}, step=step, keep_alive=[mesh]
    )
