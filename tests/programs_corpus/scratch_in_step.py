"""An array allocated inside the step (a scratch buffer, saved by size only) between two launches."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 64


@wp.kernel
def halve(src: wp.array(dtype=float), dst: wp.array(dtype=float)):
    i = wp.tid()
    dst[i] = src[i] * 0.5


@wp.kernel
def add_one(src: wp.array(dtype=float), dst: wp.array(dtype=float)):
    i = wp.tid()
    dst[i] = src[i] + 1.0


def build(device):
    x = wp.array(np.arange(N, dtype=np.float32), dtype=float, device=device)
    out = wp.zeros(N, dtype=float, device=device)
    keep = []

    def step():
        scratch = wp.empty(N, dtype=float, device=device)
        keep.append(scratch)
        wp.launch(halve, dim=N, inputs=[x, scratch], device=device)
        wp.launch(add_one, dim=N, inputs=[scratch, out], device=device)

    return CaptureSpec(inputs={"x": x}, outputs={"out": out}, step=step, keep_alive=keep)


def expected():
    return {"out": np.arange(N, dtype=np.float32) * 0.5 + 1}
