"""A wp.struct parameter holding scalars, a vector and an array (its pointer relocated by APIC)."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 32


@wp.struct
class Params:
    scale: float
    offset: wp.vec3
    weights: wp.array(dtype=float)


@wp.kernel
def apply(p: Params, x: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = p.scale * p.weights[i] * x[i] + p.offset


def initial():
    rng = np.random.default_rng(4)
    return {"x": rng.normal(size=(N, 3)).astype(np.float32), "w": rng.uniform(0, 1, N).astype(np.float32)}


def build(device):
    init = initial()
    x = wp.array(init["x"], dtype=wp.vec3, device=device)
    w = wp.array(init["w"], dtype=float, device=device)
    out = wp.zeros(N, dtype=wp.vec3, device=device)
    p = Params()
    p.scale = 3.0
    p.offset = wp.vec3(1.0, -2.0, 0.5)
    p.weights = w

    def step():
        wp.launch(apply, dim=N, inputs=[p, x, out], device=device)

    return CaptureSpec(inputs={"x": x, "w": w}, outputs={"out": out}, step=step)


def expected():
    init = initial()
    return {"out": 3.0 * init["w"][:, None] * init["x"] + np.array([1.0, -2.0, 0.5], dtype=np.float32)}
