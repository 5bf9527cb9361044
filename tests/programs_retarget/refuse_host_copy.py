"""Refused by the retarget mode: a copy from host memory inside the captured step."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec


@wp.kernel
def inc(x: wp.array(dtype=float)):
    x[wp.tid()] += 1.0


def build(device):
    x = wp.zeros(4, dtype=float, device=device)
    host = wp.array(np.arange(4, dtype=np.float32), dtype=float, device="cpu", pinned=device != "cpu")

    def step():
        wp.launch(inc, dim=4, inputs=[x], device=device)
        wp.copy(x, host)

    return CaptureSpec(inputs={}, outputs={"x": x}, step=step)
