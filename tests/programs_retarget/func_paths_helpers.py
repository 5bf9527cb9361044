"""A `@wp.func` in a module of its own, next to the capture script."""

import warp as wp


@wp.func
def smooth(x: float):
    return x * x * (3.0 - 2.0 * x)
