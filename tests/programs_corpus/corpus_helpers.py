"""Kernels of a second Warp module, imported by two_modules.py."""

import warp as wp


@wp.func
def smooth_step(x: float):
    t = wp.clamp(x, 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


@wp.kernel
def shape(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = smooth_step(a[i])
