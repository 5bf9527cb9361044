"""Generic kernels (typing.Any), one overload of each launched: a float32 cube and a float64
scale, declared with wp.overload so that the module is whole before the capture. (Two overloads
of one kernel in one step are refused: tests/programs_capture/generic_two_overloads.py.)"""

from typing import Any

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 30


@wp.kernel
def cube(a: wp.array(dtype=Any)):
    i = wp.tid()
    a[i] = a[i] * a[i] * a[i]


@wp.kernel
def scale(a: wp.array(dtype=Any), s: Any):
    i = wp.tid()
    a[i] = a[i] * s


wp.overload(cube, {"a": wp.array(dtype=wp.float32)})
wp.overload(scale, {"a": wp.array(dtype=wp.float64), "s": wp.float64})


def build(device):
    a32 = wp.array(np.linspace(-2, 2, N, dtype=np.float32), dtype=wp.float32, device=device)
    a64 = wp.array(np.linspace(-2, 2, N, dtype=np.float64), dtype=wp.float64, device=device)

    def step():
        wp.launch(cube, dim=N, inputs=[a32], device=device)
        wp.launch(scale, dim=N, inputs=[a64, wp.float64(1.0 / 3.0)], device=device)

    return CaptureSpec(inputs={"a32": a32, "a64": a64}, outputs={"a32": a32, "a64": a64}, step=step)


def expected():
    return {
        "a32": np.linspace(-2, 2, N, dtype=np.float32) ** 3,
        "a64": np.linspace(-2, 2, N, dtype=np.float64) * (1.0 / 3.0),
    }
