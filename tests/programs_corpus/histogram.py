"""Integer atomics: a histogram by atomic_add into int32 bins (exact on every device)."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N, BINS = 2000, 16


def initial():
    return {"x": np.random.default_rng(5).uniform(0, 1, N).astype(np.float32)}


@wp.kernel
def count(x: wp.array(dtype=float), bins: wp.array(dtype=wp.int32)):
    i = wp.tid()
    b = wp.min(int(x[i] * float(BINS)), BINS - 1)
    wp.atomic_add(bins, b, 1)


def build(device):
    x = wp.array(initial()["x"], dtype=float, device=device)
    bins = wp.zeros(BINS, dtype=wp.int32, device=device)

    def step():
        bins.zero_()
        wp.launch(count, dim=N, inputs=[x, bins], device=device)

    return CaptureSpec(inputs={"x": x}, outputs={"bins": bins}, step=step)


def expected():
    x = initial()["x"]
    b = np.minimum((x * np.float32(BINS)).astype(np.int64), BINS - 1)
    return {"bins": np.bincount(b, minlength=BINS).astype(np.int32)}
