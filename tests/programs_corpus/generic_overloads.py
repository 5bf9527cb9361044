"""Generic kernels (typing.Any): cube launched on float32 and on float64 in one step (two overloads of
one kernel), and a float64 scale; the overloads declared with wp.overload so that the module is
whole before the capture. Warp's APIC keeps one kernel record per key in a module, and its replay ran
the float32 code for the float64 launch too (that output came back unchanged); rules_warp gives the
float64 overload a record of its own (wrpkg/capture/launch_recorder.py, _key_later_overload)."""

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
wp.overload(cube, {"a": wp.array(dtype=wp.float64)})
wp.overload(scale, {"a": wp.array(dtype=wp.float64), "s": wp.float64})


def build(device):
    a32 = wp.array(np.linspace(-2, 2, N, dtype=np.float32), dtype=wp.float32, device=device)
    a64 = wp.array(np.linspace(-2, 2, N, dtype=np.float64), dtype=wp.float64, device=device)
    b64 = wp.array(np.linspace(-1, 3, N, dtype=np.float64), dtype=wp.float64, device=device)

    def step():
        wp.launch(cube, dim=N, inputs=[a32], device=device)
        wp.launch(scale, dim=N, inputs=[a64, wp.float64(1.0 / 3.0)], device=device)
        wp.launch(cube, dim=N, inputs=[b64], device=device)
        wp.launch(cube, dim=N, inputs=[a32], device=device)

    bindings = {"a32": a32, "a64": a64, "b64": b64}
    return CaptureSpec(inputs=bindings, outputs=bindings, step=step)


def expected():
    return {
        "a32": (np.linspace(-2, 2, N, dtype=np.float32) ** 3) ** 3,
        "a64": np.linspace(-2, 2, N, dtype=np.float64) * (1.0 / 3.0),
        "b64": np.linspace(-1, 3, N, dtype=np.float64) ** 3,
    }
