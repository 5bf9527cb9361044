"""A step that moves a wp.Mesh's points and updates it before querying: Warp updates meshes in
native code its APIC does not record, so the saved graph would query the mesh as the load builds
it (seen on the CPU: a distance of 2.449 replayed where the step gave 2.0).
WRP_TEST_MESH_UPDATE picks `refit` (default: recorded as Warp's refit, wrpkg.capture.lowering.mesh_lowering),
`winding` (a refit of a mesh with support_winding_number=True: refused), `points` (assigning
Mesh.points, which refits: refused),
`bvh` (a wp.Bvh over the same corners rebuilt: a refit is recorded, wrpkg.capture.lowering.bvh_lowering) or `create` (a new wp.Mesh of the moved points,
made in the step: the same replay of 2.449 where the step gave 2.0)."""

import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

MODE = os.environ.get("WRP_TEST_MESH_UPDATE", "refit")


@wp.kernel
def lift(points: wp.array(dtype=wp.vec3), dz: float):
    i = wp.tid()
    points[i] = points[i] + wp.vec3(0.0, 0.0, dz)


@wp.kernel
def distance(mesh: wp.uint64, queries: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    hit = wp.mesh_query_point_no_sign(mesh, queries[i], 100.0)
    if hit.result:
        out[i] = wp.length(wp.mesh_eval_position(mesh, hit.face, hit.u, hit.v) - queries[i])


def build(device):
    corners = np.array([[0, 0, 0], [4, 0, 0], [0, 4, 0], [4, 4, 0]], dtype=np.float32)
    triangles = np.array([0, 1, 2, 1, 3, 2], dtype=np.int32)
    points = wp.array(corners, dtype=wp.vec3, device=device)
    mesh = wp.Mesh(
        points=points,
        indices=wp.array(triangles, dtype=int, device=device),
        support_winding_number=MODE == "winding",
    )
    moved = wp.array(corners + np.float32(3), dtype=wp.vec3, device=device)
    queries = wp.array(np.array([[1, 1, 5], [2, 3, -2]], dtype=np.float32), dtype=wp.vec3, device=device)
    out = wp.zeros(2, dtype=float, device=device)
    bvh = wp.Bvh(points, points)

    def step():
        wp.launch(lift, dim=4, inputs=[mesh.points, 3.0], device=device)
        if MODE in ("refit", "winding"):
            mesh.refit()
        elif MODE == "points":
            mesh.points = moved
        elif MODE == "bvh":
            bvh.rebuild()
        else:
            made = wp.Mesh(points=mesh.points, indices=mesh.indices)
            wp.launch(distance, dim=2, inputs=[made.id, queries, out], device=device)
            return
        wp.launch(distance, dim=2, inputs=[mesh.id, queries, out], device=device)

    return CaptureSpec(
        inputs={"queries": queries}, outputs={"out": out}, step=step, keep_alive=[mesh, moved, bvh]
    )
