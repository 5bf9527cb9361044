"""A generic kernel (typing.Any) launched with float32 and float64 arrays: two overloads."""

from typing import Any

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 30


@wp.kernel
def cube(a: wp.array(dtype=Any)):
    i = wp.tid()
    a[i] = a[i] * a[i] * a[i]


def build(device):
    a32 = wp.array(np.linspace(-2, 2, N, dtype=np.float32), dtype=wp.float32, device=device)
    a64 = wp.array(np.linspace(-2, 2, N, dtype=np.float64), dtype=wp.float64, device=device)

    def step():
        wp.launch(cube, dim=N, inputs=[a32], device=device)
        wp.launch(cube, dim=N, inputs=[a64], device=device)

    return CaptureSpec(inputs={"a32": a32, "a64": a64}, outputs={"a32": a32, "a64": a64}, step=step)


def expected():
    return {
        "a32": np.linspace(-2, 2, N, dtype=np.float32) ** 3,
        "a64": np.linspace(-2, 2, N, dtype=np.float64) ** 3,
    }
