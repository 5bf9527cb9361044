"""An ordinary kernel, in its own Python module (so its own Warp module) beside MathDx ones."""

import warp as wp


@wp.kernel
def scale2d(x: wp.array2d(dtype=float), factor: float):
    i, j = wp.tid()
    x[i, j] = x[i, j] * factor
