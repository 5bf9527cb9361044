"""A generic kernel whose float64 overload is first created by a launch inside step(): Warp builds
its module again mid-step, and a GPU runs the two launches from two modules. A retargeted
capture generated its CUDA module from the final state only, and the float64 launch replayed
garbage on an H200 (docs/bench/results/retarget_corpus2_h200.json): now refused.
tests/programs_corpus/generic_overloads.py is the fix (wp.overload before the capture)."""

from typing import Any

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 30


@wp.kernel
def cube(a: wp.array(dtype=Any)):
    i = wp.tid()
    a[i] = a[i] * a[i] * a[i]


def build(device):
    a32 = wp.array(np.linspace(-2, 2, N, dtype=np.float32), dtype=wp.float32, device=device)
    a64 = wp.array(np.linspace(-2, 2, N, dtype=np.float64), dtype=wp.float64, device=device)

    def step():
        wp.launch(cube, dim=N, inputs=[a32], device=device)
        wp.launch(cube, dim=N, inputs=[a64], device=device)  # refused here

    return CaptureSpec(inputs={"a32": a32, "a64": a64}, outputs={"a32": a32, "a64": a64}, step=step)
