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
    restitution: float
    friction: float
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
    """Pushes particles out of the ground mesh and reflects their normal velocity.

    `contacts[step]` counts the particles touching the mesh in this step. Integer atomics
    are exact in any order, so this output is deterministic on CUDA as well.
    """
    i = wp.tid()
    p = x[i]
    query = wp.mesh_query_point_no_sign(mesh, p, params.max_query_dist)
    if not query.result:
        return
    closest = wp.mesh_eval_position(mesh, query.face, query.u, query.v)
    face_normal = wp.mesh_eval_face_normal(mesh, query.face)
    delta = p - closest
    dist = wp.length(delta)
    # The unsigned query does not say which side the particle is on; the face normal does.
    # A fast particle can cross the surface in one step and land below it: push it back up.
    below = wp.dot(delta, face_normal) < 0.0
    if not below and dist >= params.radius:
        return
    n = face_normal
    if not below and dist > 1.0e-6:
        n = delta / dist
    x[i] = closest + n * params.radius
    vel = v[i]
    vn = wp.dot(vel, n)
    if vn < 0.0:
        v_normal = n * vn
        v_tangent = (vel - v_normal) * (1.0 - params.friction)
        v[i] = v_tangent - v_normal * params.restitution
    wp.atomic_add(contacts, step, 1)
