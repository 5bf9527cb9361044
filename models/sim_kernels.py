"""Kernels of the example simulation that live in their own Warp module.

`sim.py` imports this file, so a capture of the simulation holds (at least) two Warp
modules: this one (`sim_kernels`) and the capture script's own (`sim`).
"""

import warp as wp


@wp.struct
class SimParams:
    """Per-capture constants, passed by value to the kernels (a `@wp.struct` argument)."""

    gravity: wp.vec3
    dt: float
    damping: float
    radius: float
    max_query_dist: float


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), params: SimParams):
    """Semi-implicit Euler with linear damping."""
    i = wp.tid()
    vel = (v[i] + params.gravity * params.dt) * params.damping
    v[i] = vel
    x[i] = x[i] + vel * params.dt


@wp.kernel
def collide_mesh(
    # wp.handle, not wp.uint64: APIC relocates only parameters typed as handles, so a
    # mesh id passed as a plain uint64 would replay a stale address in another process.
    mesh: wp.handle,
    x: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
    params: SimParams,
    contacts: wp.array(dtype=wp.int32),
    step: int,
):
    """Stops particles that touch the ground mesh where they are (inelastic, no slip).

    A touching particle is lifted straight up until it is `radius` above the face and loses
    its velocity. Straight up, not along the face normal: a push along the normal moves a
    resting particle a little downhill every step, until it reaches a crease where two faces
    are equally close and the rounding of the query decides which one pushes it.
    `contacts[step]` counts the particles touching the ground in this step. Integer atomics
    are exact in any order, so this output is deterministic on CUDA as well.
    """
    i = wp.tid()
    p = x[i]
    query = wp.mesh_query_point_no_sign(mesh, p, params.max_query_dist)
    if not query.result:
        return
    closest = wp.mesh_eval_position(mesh, query.face, query.u, query.v)
    face_normal = wp.mesh_eval_face_normal(mesh, query.face)
    # Signed: a fast particle can cross the surface in one step and land below it.
    height = wp.dot(p - closest, face_normal)
    if height >= params.radius:
        return
    x[i] = p + wp.vec3(0.0, (params.radius - height) / face_normal[1], 0.0)
    v[i] = wp.vec3(0.0, 0.0, 0.0)
    wp.atomic_add(contacts, step, 1)
