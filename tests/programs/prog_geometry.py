"""Kernels of the second Warp module used by the test captures (mesh query, counters for if/while)."""

import warp as wp


@wp.kernel
def closest_distance(mesh: wp.handle, x: wp.array(dtype=wp.vec3), d: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.mesh_query_point(mesh, x[i], 1.0e6)
    if q.result:
        p = wp.mesh_eval_position(mesh, q.face, q.u, q.v)
        d[i] = wp.length(p - x[i])


@wp.kernel
def closest_distance_indirect(
    meshes: wp.array(dtype=wp.handle), x: wp.array(dtype=wp.vec3), d: wp.array(dtype=float)
):
    # The mesh handle is read from an array: the capture records a pointer location.
    i = wp.tid()
    mesh = meshes[0]
    q = wp.mesh_query_point(mesh, x[i], 1.0e6)
    if q.result:
        p = wp.mesh_eval_position(mesh, q.face, q.u, q.v)
        d[i] = d[i] + wp.length(p - x[i])


@wp.kernel
def count_down(counter: wp.array(dtype=wp.int32), log: wp.array(dtype=float)):
    # One thread: decrement the loop condition and record how many iterations ran.
    counter[0] = counter[0] - 1
    log[0] = log[0] + 1.0


@wp.kernel
def add_constant(a: wp.array(dtype=float), value: float):
    i = wp.tid()
    a[i] = a[i] + value
