"""A capture script that binds an output name to something that is not a wp.array."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec


@wp.kernel
def double(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = 2.0 * x[i]


def build(device):
    x = wp.array(np.arange(8, dtype=np.float32), dtype=float, device=device)

    def step():
        wp.launch(double, dim=8, inputs=[x], device=device)

    return CaptureSpec(inputs={"x": x}, outputs={"x": x, "result": np.zeros(8)}, step=step)
