"""A kernel Warp's code generator rejects (a constant mutated in a dynamic loop): the capture
must end with one error naming the module and Warp's file:line, not a traceback."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec


@wp.kernel
def count_down(x: wp.array(dtype=int)):
    i = wp.tid()
    n = 0
    while x[i] > n:
        n += 1
    x[i] = n


def build(device):
    x = wp.array(np.arange(8, dtype=np.int32), dtype=int, device=device)

    def step():
        wp.launch(count_down, dim=8, inputs=[x], device=device)

    return CaptureSpec(inputs={"x": x}, outputs={"x": x}, step=step)
