"""Kernels whose CPU result is not a CUDA golden, next to one whose result is. WRP_TEST_CAVEATS picks:
all    (default) a plain kernel, an atomic sum by `+=`, an atomic max inside a @wp.func, and
       a tile reduction launched with block_dim 64
plain  the plain kernel alone
"""

import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 256
TILE = 64
MODE = os.environ.get("WRP_TEST_CAVEATS", "all")


@wp.kernel
def scale(x: wp.array(dtype=float), factor: float):
    i = wp.tid()
    x[i] = x[i] * factor


@wp.kernel
def total(x: wp.array(dtype=float), out: wp.array(dtype=wp.int32)):
    i = wp.tid()
    if x[i] > 0.5:
        out[0] += 1  # an integer count: the same on every device, yet an atomic


@wp.func
def keep_max(out: wp.array(dtype=float), value: float):
    wp.atomic_max(out, 0, value)


@wp.kernel
def largest(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    keep_max(out, x[i])


@wp.kernel
def row_sums(x: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(x[i], shape=TILE)
    wp.tile_store(out[i], wp.tile_sum(t))


def build(device):
    x = wp.array(np.linspace(0.0, 1.0, N, dtype=np.float32), dtype=float, device=device)
    sums = wp.zeros(1, dtype=wp.int32, device=device)
    peak = wp.zeros(1, dtype=float, device=device)
    rows = wp.array(np.arange(N, dtype=np.float32).reshape(N // TILE, TILE), dtype=float, device=device)
    row_out = wp.zeros((N // TILE, 1), dtype=float, device=device)

    def step():
        wp.launch(scale, dim=N, inputs=[x, 1.5], device=device)
        if MODE == "all":
            sums.zero_()
            wp.launch(total, dim=N, inputs=[x, sums], device=device)
            wp.launch(largest, dim=N, inputs=[x, peak], device=device)
            wp.launch_tiled(row_sums, dim=N // TILE, inputs=[rows, row_out], block_dim=TILE, device=device)

    inputs, outputs = {"x": x}, {"x": x}
    if MODE == "all":
        inputs["rows"] = rows
        outputs.update(sum=sums, peak=peak, row_sums=row_out)
    return CaptureSpec(inputs=inputs, outputs=outputs, step=step)
