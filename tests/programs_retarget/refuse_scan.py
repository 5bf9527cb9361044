"""Refused by the retarget mode: an operation other than a kernel launch, memset, fill or copy."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec


def build(device):
    x = wp.array(np.arange(8, dtype=np.int32), dtype=wp.int32, device=device)
    y = wp.zeros(8, dtype=wp.int32, device=device)

    def step():
        wp.utils.array_scan(x, y, inclusive=True)  # refused here

    return CaptureSpec(inputs={"x": x}, outputs={"y": y}, step=step)
