"""Captures y = 3 x for 64 floats."""

import numpy as np
import warp as wp
from scale_kernels import scale

from wrpkg.capture import CaptureSpec


def build(device):
    x = wp.array(np.arange(64, dtype=np.float32), dtype=float, device=device)
    y = wp.zeros(64, dtype=float, device=device)

    def step():
        wp.launch(scale, dim=64, inputs=[x, 3.0, y], device=device)

    return CaptureSpec(inputs={"x": x}, outputs={"y": y}, step=step)
