"""Kernels of the first Warp module used by the test captures (a @wp.struct argument, adjoint).

They are the particle program's one definition: runtime/testdata/particles.py launches them
too. tests/fixtures/cuda-sm90-particles/capture_fixture.py keeps its own copy because it is
the record of how that fixture was made (its module hash comes from `__main__`'s kernels).
"""

import numpy as np
import warp as wp


@wp.struct
class Params:
    gravity: wp.vec3
    damping: float


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), p: Params, dt: float):
    i = wp.tid()
    v[i] = v[i] * p.damping + p.gravity * dt
    x[i] = x[i] + v[i] * dt


@wp.kernel
def kinetic_energy(v: wp.array(dtype=wp.vec3), e: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(e, 0, 0.5 * wp.dot(v[i], v[i]))


@wp.kernel
def square(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = a[i] * a[i]


def initial_state(n: int, device: str, rng: np.random.Generator):
    """`n` particles' positions and velocities drawn from `rng`, a zeroed energy, and the
    Params they are stepped with: (x, v, e, params)."""
    x = wp.array(rng.standard_normal((n, 3)).astype(np.float32), dtype=wp.vec3, device=device)
    v = wp.array(rng.standard_normal((n, 3)).astype(np.float32), dtype=wp.vec3, device=device)
    e = wp.zeros(1, dtype=float, device=device)
    params = Params()
    params.gravity = wp.vec3(0.0, -9.8, 0.0)
    params.damping = 0.99
    return x, v, e, params
