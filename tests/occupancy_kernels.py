"""Small Warp kernels of different register pressure and launch bounds, for the occupancy tests
(tests/test_occupancy.py) and the GPU check (tools/gpu/occupancy_check.py)."""

import warp as wp


@wp.kernel
def light(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * 2.0


@wp.kernel
def heavy(m: wp.array(dtype=wp.mat44), out: wp.array(dtype=wp.mat44)):
    # A chain of 4x4 products and inverses keeps many values live at once.
    i = wp.tid()
    a = m[i]
    b = wp.inverse(a)
    c = a * b + wp.transpose(a) * a
    d = wp.inverse(c) * b + c * wp.transpose(b)
    out[i] = d * wp.inverse(d + a) + c


@wp.kernel(launch_bounds=128)
def bounded(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = wp.sin(x[i]) + 1.0


KERNELS = {k.key: k for k in (light, heavy, bounded)}
