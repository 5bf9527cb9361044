"""A script whose step launches a good kernel of its own and imports broken_kernel.py, whose kernel
Warp's code generator rejects but which no launch of the step uses: still refused, naming that
module and Warp's file:line (a module the script brings in is built, launched or not), and before
anything is compiled (tests/test_refusal_before_compile.py)."""

import broken_kernel  # noqa: F401 - brings in the module Warp cannot build
import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec


@wp.kernel
def double(x: wp.array(dtype=int)):
    i = wp.tid()
    x[i] = x[i] * 2


def build(device):
    x = wp.array(np.arange(8, dtype=np.int32), dtype=int, device=device)

    def step():
        wp.launch(double, dim=8, inputs=[x], device=device)

    return CaptureSpec(inputs={"x": x}, outputs={"x": x}, step=step)
