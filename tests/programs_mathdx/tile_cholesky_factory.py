"""tile_cholesky.py with its kernel made in build() by a factory, into the script's own module, as NVIDIA's
example_tile_block_cholesky makes its blocked Cholesky kernels: importing the script defines the module
(scale, below) but not that kernel, so the module Warp would rebuild from the import is another one. The
per-SM compile serves the capture's own SM from the captured cubin and refuses another SM, saying why
(tests/test_compile.py); before issue 40 it refused even the capture's SM, saying the script had changed."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

BLOCK_DIM = 32
TILE = 16


@wp.kernel(enable_backward=False)
def scale(Y: wp.array1d(dtype=wp.float64)):
    i = wp.tid()
    Y[i] = Y[i] * wp.float64(2.0)


def make_kernel():
    @wp.kernel(enable_backward=False)
    def cholesky(
        A: wp.array2d(dtype=wp.float64),
        L: wp.array2d(dtype=wp.float64),
        X: wp.array1d(dtype=wp.float64),
        Y: wp.array1d(dtype=wp.float64),
    ):
        a = wp.tile_load(A, shape=(TILE, TILE))
        factor = wp.tile_cholesky(a)
        wp.tile_store(L, factor)
        x = wp.tile_load(X, shape=TILE)
        y = wp.tile_cholesky_solve(factor, x)
        wp.tile_store(Y, y)

    return cholesky


def build(device):
    kernel = make_kernel()
    a = np.ones((TILE, TILE)) + 5.0 * np.eye(TILE)
    A = wp.array(a, dtype=wp.float64, device=device)
    L = wp.zeros((TILE, TILE), dtype=wp.float64, device=device)
    X = wp.array(np.arange(TILE, dtype=np.float64), dtype=wp.float64, device=device)
    Y = wp.zeros(TILE, dtype=wp.float64, device=device)

    def step():
        wp.launch_tiled(kernel, dim=(1, 1), inputs=[A, L, X, Y], block_dim=BLOCK_DIM, device=device)
        wp.launch(scale, dim=TILE, inputs=[Y], block_dim=BLOCK_DIM, device=device)

    return CaptureSpec(inputs={"A": A, "X": X}, outputs={"L": L, "Y": Y}, step=step)
