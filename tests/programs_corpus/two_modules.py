"""Kernels from two Python modules (two Warp modules in the capture), one calling a @wp.func of its own."""

import numpy as np
import warp as wp
from corpus_helpers import shape

from wrpkg.capture import CaptureSpec

N = 200


@wp.kernel
def ramp(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = float(i) / float(N - 1) * 1.5 - 0.25


def build(device):
    a = wp.zeros(N, dtype=float, device=device)

    def step():
        wp.launch(ramp, dim=N, inputs=[a], device=device)
        wp.launch(shape, dim=N, inputs=[a], device=device)

    return CaptureSpec(inputs={}, outputs={"a": a}, step=step)


def expected():
    x = (np.arange(N, dtype=np.float64) / (N - 1) * 1.5 - 0.25).astype(np.float32)
    t = np.clip(x, 0, 1)
    return {"a": t * t * (3 - 2 * t)}
