"""Refused by the retarget mode: a scan after a kernel launch. The refusal needs the recorded
operation stream (the scan is no launch), and still comes before anything is compiled: the
kernel's module, CPU or CUDA, is never built (tests/test_refusal_before_compile.py)."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec


@wp.kernel
def double(x: wp.array(dtype=wp.int32)):
    i = wp.tid()
    x[i] = x[i] * 2


def build(device):
    x = wp.array(np.arange(8, dtype=np.int32), dtype=wp.int32, device=device)
    y = wp.zeros(8, dtype=wp.int32, device=device)

    def step():
        wp.launch(double, dim=8, inputs=[x], device=device)
        wp.utils.array_scan(x, y, inclusive=True)  # refused here

    return CaptureSpec(inputs={"x": x}, outputs={"y": y}, step=step)
