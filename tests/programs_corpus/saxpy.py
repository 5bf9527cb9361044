"""One launch with a scalar parameter: y = a * x + y."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 1000
A = 2.5


def initial():
    rng = np.random.default_rng(1)
    return {"x": rng.uniform(-1, 1, N).astype(np.float32), "y": rng.uniform(-1, 1, N).astype(np.float32)}


@wp.kernel
def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


def build(device):
    init = initial()
    x = wp.array(init["x"], dtype=float, device=device)
    y = wp.array(init["y"], dtype=float, device=device)

    def step():
        wp.launch(saxpy, dim=N, inputs=[A, x, y], device=device)

    return CaptureSpec(inputs={"x": x, "y": y}, outputs={"y": y}, step=step)


def expected():
    init = initial()
    return {"y": np.float32(A) * init["x"] + init["y"]}
