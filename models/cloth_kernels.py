"""Kernels of models/cloth.py: a mass-spring grid, each particle gathering its springs' forces."""

import warp as wp


@wp.struct
class ClothParams:
    gravity: wp.vec3
    dt: float
    stiffness: float
    damping: float
    rest: float


@wp.func
def spring(xi: wp.vec3, xj: wp.vec3, rest: float, stiffness: float):
    d = xj - xi
    length = wp.length(d)
    if length < 1.0e-6:
        return wp.vec3(0.0, 0.0, 0.0)
    return d * (stiffness * (length - rest) / length)


@wp.kernel
def spring_forces(x: wp.array2d(dtype=wp.vec3), params: ClothParams, f: wp.array2d(dtype=wp.vec3)):
    """The force of the (up to four) springs to grid neighbours: a gather, no atomics."""
    i, j = wp.tid()
    rows = x.shape[0]
    cols = x.shape[1]
    xi = x[i, j]
    total = params.gravity
    if i > 0:
        total += spring(xi, x[i - 1, j], params.rest, params.stiffness)
    if i < rows - 1:
        total += spring(xi, x[i + 1, j], params.rest, params.stiffness)
    if j > 0:
        total += spring(xi, x[i, j - 1], params.rest, params.stiffness)
    if j < cols - 1:
        total += spring(xi, x[i, j + 1], params.rest, params.stiffness)
    f[i, j] = total


@wp.kernel
def integrate(
    x: wp.array2d(dtype=wp.vec3),
    v: wp.array2d(dtype=wp.vec3),
    f: wp.array2d(dtype=wp.vec3),
    params: ClothParams,
):
    i, j = wp.tid()
    vel = (v[i, j] + f[i, j] * params.dt) * params.damping
    v[i, j] = vel
    x[i, j] = x[i, j] + vel * params.dt
