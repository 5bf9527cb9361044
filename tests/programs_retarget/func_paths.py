"""A capture whose kernels call `@wp.func`s defined in the script and in a sibling module.

Warp writes the defining file's path above every function it generates; the capture must
name it the same way wherever the script lives (tests/test_source_paths.py copies this
folder to two places and compares the captures).
"""

import warp as wp
from func_paths_helpers import smooth

from wrpkg.capture import CaptureSpec

N = 32


@wp.func
def scaled(x: float, s: float):
    return smooth(x) * s


@wp.kernel
def apply(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = scaled(x[i], 2.0)


def build(device):
    x = wp.array([0.1 * i for i in range(N)], dtype=float, device=device)
    y = wp.zeros(N, dtype=float, device=device)

    def step():
        wp.launch(apply, dim=N, inputs=[x, y], device=device)

    return CaptureSpec(inputs={"x": x}, outputs={"y": y}, step=step)
