"""A CPU APIC capture with three meshes: python three_meshes.py OUT_DIR forward|reverse.

Writes OUT_DIR/sim.wrp (+ sim_modules/) and OUT_DIR/expected.npz (the outputs of a live
replay). The meshes reach the capture every way Warp records one: two as `wp.handle`
kernel arguments, one only through a handle array; a struct array holds a handle and the
same mesh's id in a plain `uint64` field, a kernel takes a mesh id as a `uint64` scalar, and
the handle array also holds a deleted mesh's id and an arbitrary integer (dangling handles).

capture_save registers the meshes, and so numbers their point and index regions, in the
order of a Python set of their addresses. The second argument makes that order explicit
(`forward` or `reverse`), so two runs differ in it whatever addresses the processes get.
"""

import ctypes
import sys
from pathlib import Path

import numpy as np
import warp as wp
import warp._src.context as warp_context

from wrpkg.warp_init import init_warp


@wp.struct
class MeshRef:
    tag: wp.uint64  # the mesh's id as an ordinary integer: Warp does not relocate it
    mesh: wp.handle


@wp.kernel
def distance_to_two(
    mesh_a: wp.handle,
    mesh_b: wp.handle,
    a_tag: wp.uint64,
    x: wp.array(dtype=wp.vec3),
    d_a: wp.array(dtype=float),
    d_b: wp.array(dtype=float),
):
    i = wp.tid()
    qa = wp.mesh_query_point_no_sign(mesh_a, x[i], 100.0)
    d_a[i] = wp.length(wp.mesh_eval_position(mesh_a, qa.face, qa.u, qa.v) - x[i])
    qb = wp.mesh_query_point_no_sign(mesh_b, x[i], 100.0)
    d_b[i] = wp.length(wp.mesh_eval_position(mesh_b, qb.face, qb.u, qb.v) - x[i])
    if a_tag == wp.uint64(0):
        d_a[i] = -1.0


@wp.kernel
def distance_through_refs(
    refs: wp.array(dtype=MeshRef), x: wp.array(dtype=wp.vec3), d: wp.array2d(dtype=float)
):
    i, j = wp.tid()
    mesh = refs[j].mesh
    q = wp.mesh_query_point_no_sign(mesh, x[i], 100.0)
    d[i, j] = wp.length(wp.mesh_eval_position(mesh, q.face, q.u, q.v) - x[i])


@wp.kernel
def distance_through_handles(
    handles: wp.array(dtype=wp.handle), x: wp.array(dtype=wp.vec3), d: wp.array(dtype=float)
):
    # Only handles[0] is read: the other slots hold dangling values.
    i = wp.tid()
    mesh = handles[0]
    q = wp.mesh_query_point_no_sign(mesh, x[i], 100.0)
    d[i] = wp.length(wp.mesh_eval_position(mesh, q.face, q.u, q.v) - x[i])


def make_mesh(points, indices, device):
    return wp.Mesh(
        points=wp.array(np.asarray(points, dtype=np.float32), dtype=wp.vec3, device=device),
        indices=wp.array(np.asarray(indices, dtype=np.int32).reshape(-1), dtype=int, device=device),
    )


CUBE_POINTS = [[x, y, z] for z in (-0.5, 0.5) for y in (-0.5, 0.5) for x in (-0.5, 0.5)]
CUBE_TRIS = [
    [0, 2, 3], [0, 3, 1], [4, 5, 7], [4, 7, 6], [0, 1, 5], [0, 5, 4],
    [2, 6, 7], [2, 7, 3], [0, 4, 6], [0, 6, 2], [1, 3, 7], [1, 7, 5],
]  # fmt: skip
TETRA_POINTS = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.5, 1.0, 0.0], [0.5, 0.5, 1.0]]
TETRA_TRIS = [[0, 1, 2], [0, 1, 3], [1, 2, 3], [2, 0, 3]]
TRIANGLE_POINTS = [[2.0, 0.0, 0.0], [3.0, 0.0, 0.0], [2.0, 1.0, 0.0]]
TRIANGLE_TRIS = [[0, 1, 2]]


def main(out_dir: Path, order: str) -> None:
    wp.config.quiet = True
    init_warp(wp)
    device = "cpu"
    cube = make_mesh(CUBE_POINTS, CUBE_TRIS, device)
    tetra = make_mesh(TETRA_POINTS, TETRA_TRIS, device)
    triangle = make_mesh(TRIANGLE_POINTS, TRIANGLE_TRIS, device)
    # Deleted after the live meshes exist, so no live mesh can reuse its address.
    stale = make_mesh(TETRA_POINTS, TETRA_TRIS, device)
    stale_id = stale.id
    del stale

    x = wp.array(
        np.array([[0.0, 0.0, 0.0], [0.5, 0.5, 0.5], [1.0, 0.2, 0.0], [2.5, 0.5, 1.0]], dtype=np.float32),
        dtype=wp.vec3,
        device=device,
    )
    n = x.shape[0]
    refs_host = np.zeros(2, dtype=MeshRef.numpy_dtype())
    refs_host["tag"] = [tetra.id, cube.id]
    refs_host["mesh"] = [tetra.id, cube.id]
    refs = wp.array(refs_host, dtype=MeshRef, device=device)
    handles = wp.array(np.array([triangle.id, stale_id, 1], dtype=np.uint64), dtype=wp.handle, device=device)
    d_a = wp.zeros(n, dtype=float, device=device)
    d_b = wp.zeros(n, dtype=float, device=device)
    d_refs = wp.zeros((n, 2), dtype=float, device=device)
    d_handles = wp.zeros(n, dtype=float, device=device)

    wp.load_module(device=device)
    with wp.ScopedCapture(device=device, apic=True, force_module_load=False) as capture:
        wp.launch(
            distance_to_two, dim=n, inputs=[cube.id, tetra.id, wp.uint64(cube.id), x, d_a, d_b], device=device
        )
        wp.launch(distance_through_refs, dim=(n, 2), inputs=[refs, x, d_refs], device=device)
        wp.launch(distance_through_handles, dim=n, inputs=[handles, x, d_handles], device=device)
    wp.capture_launch(capture.graph)
    outputs = {"d_a": d_a, "d_b": d_b, "d_refs": d_refs, "d_handles": d_handles}
    out_dir.mkdir(parents=True, exist_ok=True)
    np.savez(out_dir / "expected.npz", **{name: array.numpy() for name, array in outputs.items()})
    for array in outputs.values():
        array.zero_()

    live = [cube.id, tetra.id, triangle.id]
    if order == "reverse":
        live.reverse()
    elif order != "forward":
        raise SystemExit(f"order must be forward or reverse, not {order!r}")
    core = warp_context.runtime.core
    register_mesh = core.wp_apic_register_mesh
    registered = []

    def register_in_order(state, mesh_id):
        # Register every live mesh on the first call, in the chosen order; Warp's own calls
        # then find each one registered already.
        if not registered:
            for live_id in live:
                registered.append(live_id)
                if not register_mesh(state, ctypes.c_uint64(live_id)):
                    return False
        return register_mesh(state, mesh_id)

    core.wp_apic_register_mesh = register_in_order
    try:
        wp.capture_save(capture.graph, str(out_dir / "sim"), inputs={"x": x, "refs": refs}, outputs=outputs)
    finally:
        core.wp_apic_register_mesh = register_mesh
    assert registered == live, registered


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
