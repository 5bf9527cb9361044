"""A capture script for tools/bench/retarget_bench.py: a step of WRP_BENCH_LAUNCHES launches of small
kernels (an array, a scalar and a struct argument each), so that the capture's cost is its per-launch
recording, not the kernels' work."""

import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

LAUNCHES = int(os.environ.get("WRP_BENCH_LAUNCHES", "10000"))


@wp.struct
class Gains:
    scale: float
    bias: float


@wp.kernel
def axpb(x: wp.array(dtype=float), gains: Gains, step: int):
    i = wp.tid()
    x[i] = x[i] * gains.scale + gains.bias + float(step % 3) * 1.0e-3


def build(device: str) -> CaptureSpec:
    x = wp.array(np.linspace(0.0, 1.0, 64, dtype=np.float32), dtype=float, device=device)
    gains = Gains()
    gains.scale = 0.999
    gains.bias = 0.001

    def step() -> None:
        for s in range(LAUNCHES):
            wp.launch(axpb, dim=64, inputs=[x, gains, s], device=device)

    return CaptureSpec(inputs={"x": x}, outputs={"x": x}, step=step)
