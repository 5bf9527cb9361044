"""Matrix, quaternion and transform types: points moved by a rotation about z and a translation,
and a 3x3 matrix applied to them."""

import math

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 50
ANGLE = 0.7


def initial():
    return {"p": np.random.default_rng(9).normal(size=(N, 3)).astype(np.float32)}


@wp.kernel
def move(p: wp.array(dtype=wp.vec3), xf: wp.transform, m: wp.mat33, out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = m @ wp.transform_point(xf, p[i])


def build(device):
    p = wp.array(initial()["p"], dtype=wp.vec3, device=device)
    out = wp.zeros(N, dtype=wp.vec3, device=device)
    xf = wp.transform(wp.vec3(1.0, 2.0, 3.0), wp.quat_from_axis_angle(wp.vec3(0.0, 0.0, 1.0), ANGLE))
    m = wp.mat33(2.0, 0.0, 0.0, 0.0, 1.0, 0.5, 0.0, 0.0, 1.0)

    def step():
        wp.launch(move, dim=N, inputs=[p, xf, m, out], device=device)

    return CaptureSpec(inputs={"p": p}, outputs={"out": out}, step=step)


def expected():
    c, s = math.cos(ANGLE), math.sin(ANGLE)
    rot = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
    m = np.array([[2, 0, 0], [0, 1, 0.5], [0, 0, 1]])
    moved = initial()["p"].astype(np.float64) @ rot.T + np.array([1.0, 2.0, 3.0])
    return {"out": (moved @ m.T).astype(np.float32)}
