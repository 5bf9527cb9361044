"""Every launch form the retarget mode accepts, in one capture.

- a tiled kernel launched with `wp.launch_tiled(..., block_dim=64)` next to a default
  launch of another kernel of the same Warp module: two CUDA modules (two block_dims) from
  one Python module;
- an explicit `wp.launch(..., block_dim=128)` and a `max_blocks` launch (grid-stride);
- a kernel with static shared memory (a tile), a `@wp.struct` argument, a 2D launch;
- a memset (`zero_`), a fill (`fill_`) and a device copy (`wp.copy`).
Every output is computed without float atomics, so CPU and CUDA agree to rounding.
WRP_TEST_LAUNCH_BY_NAME=1 launches through `from warp import launch, launch_tiled`, names the
script took while build()'s launch hooks were in place.
"""

import os

import numpy as np
import warp as wp
from warp import launch, launch_tiled

from wrpkg.capture import CaptureSpec

ROWS = 8
COLS = 64
TILE = 64


@wp.struct
class Affine:
    scale: float
    offset: float


@wp.kernel
def tile_row_sum(a: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    row = wp.tid()
    t = wp.tile_load(a[row], shape=TILE)
    s = wp.tile_sum(t)
    wp.tile_store(out, s, offset=row)


@wp.kernel
def affine(x: wp.array2d(dtype=float), p: Affine):
    i, j = wp.tid()
    x[i, j] = x[i, j] * p.scale + p.offset


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


BY_NAME = os.environ.get("WRP_TEST_LAUNCH_BY_NAME") == "1"


def build(device):
    # Looked up at each call: `wp.launch` is whatever Warp (and wrpkg's hooks) hold then.
    def run(*args, **kwargs):
        return (launch if BY_NAME else wp.launch)(*args, **kwargs)

    def run_tiled(*args, **kwargs):
        return (launch_tiled if BY_NAME else wp.launch_tiled)(*args, **kwargs)

    rng = np.random.default_rng(3)
    a = wp.array(rng.uniform(-1.0, 1.0, size=(ROWS, COLS)).astype(np.float32), dtype=float, device=device)
    sums = wp.zeros(ROWS, dtype=float, device=device)
    squares = wp.zeros(ROWS, dtype=float, device=device)
    backup = wp.zeros(ROWS, dtype=float, device=device)
    marks = wp.zeros(16, dtype=wp.int32, device=device)
    p = Affine()
    p.scale = 0.5
    p.offset = 0.25

    def step():
        marks.zero_()
        backup.fill_(2.0)
        run(affine, dim=(ROWS, COLS), inputs=[a, p], device=device)
        run_tiled(tile_row_sum, dim=[ROWS], inputs=[a, sums], block_dim=TILE, device=device)
        wp.copy(backup, sums)
        run(square, dim=ROWS, inputs=[sums, squares], device=device, block_dim=128)
        run(square, dim=ROWS, inputs=[squares, sums], device=device, max_blocks=2)

    return CaptureSpec(
        inputs={"a": a},
        outputs={"a": a, "sums": sums, "squares": squares, "backup": backup, "marks": marks},
        step=step,
        tolerances={"sums": 1e-5, "squares": 1e-5, "backup": 1e-5},
    )
