"""A small valid capture script with a float-atomic output and its declared tolerance."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 256


@wp.kernel
def scale(x: wp.array(dtype=float), factor: float):
    i = wp.tid()
    x[i] = x[i] * factor


@wp.kernel
def total(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, 0, x[i])  # summation order varies on CUDA: not bit-exact there


def build(device):
    x = wp.array(np.linspace(0.0, 1.0, N, dtype=np.float32), dtype=float, device=device)
    out = wp.zeros(1, dtype=float, device=device)

    def step():
        out.zero_()
        for _ in range(4):
            wp.launch(scale, dim=N, inputs=[x, 1.5], device=device)
        wp.launch(total, dim=N, inputs=[x, out], device=device)

    return CaptureSpec(inputs={"x": x}, outputs={"x": x, "sum": out}, step=step, tolerances={"sum": 1e-5})
