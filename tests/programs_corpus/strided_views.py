"""Views as launch arguments and as bindings: every other element of a 1D array, and a column of a
2D array (bound as the whole base allocation at its offset)."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 40
ROWS, COLS = 6, 5


@wp.kernel
def negate(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = -a[i]


@wp.kernel
def set_row_index(col: wp.array(dtype=float)):
    i = wp.tid()
    col[i] = float(i) * 10.0


def build(device):
    a = wp.array(np.arange(N, dtype=np.float32), dtype=float, device=device)
    grid = wp.zeros((ROWS, COLS), dtype=float, device=device)
    evens = a[::2]
    column = grid[:, 2]

    def step():
        wp.launch(negate, dim=evens.shape[0], inputs=[evens], device=device)
        wp.launch(set_row_index, dim=ROWS, inputs=[column], device=device)

    return CaptureSpec(inputs={"a": a}, outputs={"a": a, "grid": grid, "column": column}, step=step)


def expected():
    a = np.arange(N, dtype=np.float32)
    a[::2] *= -1
    grid = np.zeros((ROWS, COLS), dtype=np.float32)
    grid[:, 2] = np.arange(ROWS) * 10.0
    return {"a": a, "grid": grid, "column": grid[:, 2]}
