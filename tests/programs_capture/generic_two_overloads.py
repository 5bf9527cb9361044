"""A generic kernel (typing.Any) whose float32 and float64 overloads, declared with wp.overload,
are both launched in one step: Warp's APIC records a kernel by its key within its module, and
the saved graph replayed the float32 code for the float64 launch too (its output came back
unchanged). Refused at capture in every mode. The fix: tests/programs_corpus/generic_overloads.py."""

from typing import Any

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 30


@wp.kernel
def cube(a: wp.array(dtype=Any)):
    i = wp.tid()
    a[i] = a[i] * a[i] * a[i]


wp.overload(cube, {"a": wp.array(dtype=wp.float32)})
wp.overload(cube, {"a": wp.array(dtype=wp.float64)})


def build(device):
    a32 = wp.array(np.linspace(-2, 2, N, dtype=np.float32), dtype=wp.float32, device=device)
    a64 = wp.array(np.linspace(-2, 2, N, dtype=np.float64), dtype=wp.float64, device=device)

    def step():
        wp.launch(cube, dim=N, inputs=[a32], device=device)
        wp.launch(cube, dim=N, inputs=[a64], device=device)  # refused here

    return CaptureSpec(inputs={"a32": a32, "a64": a64}, outputs={"a32": a32, "a64": a64}, step=step)
