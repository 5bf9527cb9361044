"""Binds a whole array and a strided view into it: the view's binding is the whole base
allocation, located by the view's offset and strides."""

import warp as wp

from wrpkg.capture import CaptureSpec

ROWS, COLS = 4, 8


@wp.kernel
def fill_column(column: wp.array(dtype=wp.vec2f), value: float):
    i = wp.tid()
    column[i] = wp.vec2f(value, float(i))


def build(device):
    grid = wp.zeros((ROWS, COLS), dtype=wp.vec2f, device=device)
    column = grid[:, 3]  # shape (4,), strides (64,), 24 bytes into grid

    def step():
        wp.launch(fill_column, dim=ROWS, inputs=[column, 2.5], device=device)

    return CaptureSpec(inputs={"grid": grid}, outputs={"column": column}, step=step)
