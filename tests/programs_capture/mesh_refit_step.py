"""A deforming wp.Mesh refitted and queried in every step, as NVIDIA's `example_mesh` and
Newton's ray-cast sensors do: a 12 x 12 grid of quads (288 triangles) waved by a kernel, then
`mesh.refit()`, then closest-point queries and ray casts. Warp refits in native code its APIC
does not record; wrpkg records Warp's refit (wrpkg.capture.lowering.mesh_lowering). WRP_TEST_MESH_STEP picks
`refit` (default), `twice` (two steps' worth: wave, refit, wave, refit, then the queries),
`stale` (waved but not refitted: what the queries give when no refit is recorded), and two that a
load cannot build again (wrpkg.capture.lowering.mesh_builds): `grouped` (a mesh with groups), `warmed` (build()
moves the points and refits before the capture: the tree is not the one the saved points build) and
`view` (the points a view into a larger array: the CPU replay differed from the direct run in every
output, the wave's writes missing from the mesh the load built)."""

import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

GRID = 12
QUERIES = 40
MODE = os.environ.get("WRP_TEST_MESH_STEP", "refit")


@wp.kernel
def wave(points: wp.array(dtype=wp.vec3), phase: float):
    i = wp.tid()
    p = points[i]
    points[i] = wp.vec3(p[0], p[1], p[2] + 0.8 * wp.sin(0.9 * p[0] + phase) * wp.cos(0.7 * p[1]))


@wp.kernel
def closest(
    mesh: wp.uint64,
    queries: wp.array(dtype=wp.vec3),
    faces: wp.array(dtype=wp.int32),
    dists: wp.array(dtype=float),
):
    i = wp.tid()
    q = queries[i]
    hit = wp.mesh_query_point_no_sign(mesh, q, 50.0)
    if hit.result:
        faces[i] = hit.face
        dists[i] = wp.length(wp.mesh_eval_position(mesh, hit.face, hit.u, hit.v) - q)
    else:
        faces[i] = -1


@wp.kernel
def cast(mesh: wp.uint64, origins: wp.array(dtype=wp.vec3), t_hits: wp.array(dtype=float)):
    i = wp.tid()
    hit = wp.mesh_query_ray(mesh, origins[i], wp.vec3(0.0, 0.0, -1.0), 100.0)
    if hit.result:
        t_hits[i] = hit.t
    else:
        t_hits[i] = -1.0


def build(device):
    xs, ys = np.meshgrid(np.arange(GRID + 1, dtype=np.float32), np.arange(GRID + 1, dtype=np.float32))
    corners = np.stack([xs.ravel(), ys.ravel(), np.zeros(xs.size, dtype=np.float32)], axis=1)
    triangles = []
    for row in range(GRID):
        for col in range(GRID):
            a = row * (GRID + 1) + col
            triangles += [a, a + 1, a + GRID + 1, a + 1, a + GRID + 2, a + GRID + 1]
    if MODE == "view":
        padded = np.concatenate([np.full((3, 3), 7, np.float32), corners, np.full((2, 3), 9, np.float32)])
        points = wp.array(padded, dtype=wp.vec3, device=device)[3 : 3 + len(corners)]
    else:
        points = wp.array(corners, dtype=wp.vec3, device=device)
    indices = wp.array(np.array(triangles, dtype=np.int32), dtype=int, device=device)
    groups = wp.array(np.arange(len(triangles) // 3, dtype=np.int32) % 2, dtype=int, device=device)
    mesh = wp.Mesh(points=points, indices=indices, groups=groups if MODE == "grouped" else None)
    if MODE == "warmed":
        wp.launch(wave, dim=points.shape[0], inputs=[mesh.points, 0.5], device=device)
        mesh.refit()
    rng = np.random.default_rng(7)
    spots = rng.uniform([0, 0, -2], [GRID, GRID, 2], size=(QUERIES, 3)).astype(np.float32)
    queries = wp.array(spots, dtype=wp.vec3, device=device)
    origins = wp.array(spots * np.float32([1, 1, 0]) + np.float32([0, 0, 5]), dtype=wp.vec3, device=device)
    faces = wp.zeros(QUERIES, dtype=wp.int32, device=device)
    dists = wp.zeros(QUERIES, dtype=float, device=device)
    t_hits = wp.zeros(QUERIES, dtype=float, device=device)

    def step():
        for phase in (0.0, 1.3) if MODE == "twice" else (0.0,):
            wp.launch(wave, dim=points.shape[0], inputs=[mesh.points, phase], device=device)
            if MODE != "stale":
                mesh.refit()
        wp.launch(closest, dim=QUERIES, inputs=[mesh.id, queries, faces, dists], device=device)
        wp.launch(cast, dim=QUERIES, inputs=[mesh.id, origins, t_hits], device=device)

    return CaptureSpec(
        inputs={"queries": queries, "origins": origins},
        outputs={"faces": faces, "dists": dists, "t_hits": t_hits},
        step=step,
        keep_alive=[mesh],
    )
