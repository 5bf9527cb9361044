"""A 2D grid and a 3D array: a five-point Laplacian over the interior (2D launch), and a 3D
launch writing i + 10 j + 100 k."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

H, W = 16, 24
D = (3, 4, 5)


def initial():
    return {"u": np.random.default_rng(2).uniform(0, 1, (H, W)).astype(np.float32)}


@wp.kernel
def laplacian(u: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    if i == 0 or j == 0 or i == H - 1 or j == W - 1:
        out[i, j] = 0.0
        return
    out[i, j] = u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j]


@wp.kernel
def index3(v: wp.array3d(dtype=wp.int32)):
    i, j, k = wp.tid()
    v[i, j, k] = i + 10 * j + 100 * k


def build(device):
    u = wp.array(initial()["u"], dtype=float, device=device)
    out = wp.zeros((H, W), dtype=float, device=device)
    v = wp.zeros(D, dtype=wp.int32, device=device)

    def step():
        wp.launch(laplacian, dim=(H, W), inputs=[u, out], device=device)
        wp.launch(index3, dim=D, inputs=[v], device=device)

    return CaptureSpec(inputs={"u": u}, outputs={"out": out, "v": v}, step=step)


def expected():
    u = initial()["u"]
    out = np.zeros_like(u)
    out[1:-1, 1:-1] = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - np.float32(4) * u[1:-1, 1:-1]
    i, j, k = np.indices(D)
    return {"out": out, "v": (i + 10 * j + 100 * k).astype(np.int32)}
