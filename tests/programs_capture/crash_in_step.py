"""A step whose native code crashes (a null read through ctypes, as a bad library call or
kernel would): the capture must end with a message, not a bare signal."""

import ctypes

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec


@wp.kernel
def add_one(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] + 1.0


def build(device):
    x = wp.array(np.zeros(8, dtype=np.float32), dtype=float, device=device)

    def step():
        wp.launch(add_one, dim=8, inputs=[x], device=device)
        ctypes.string_at(0)

    return CaptureSpec(inputs={"x": x}, outputs={"x": x}, step=step)
