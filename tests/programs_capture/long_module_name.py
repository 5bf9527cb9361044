"""A capture whose Warp module has a long name, as Newton's have (newton._src.solvers...): the module's
file names in the bundle are one path component of well over 100 characters, which a plain ustar
header cannot hold (wrpkg.build.pack writes a pax header for them; tests/test_pax_archives.py)."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

# 130 characters; Warp names its files wp_<module>_<hash7>.<arch>.o, over 140 in all.
MODULE = "newton._src.solvers.featherstone.kernels_of_a_module_named_longer_than_a_ustar_header_can_hold_"
MODULE += "x" * (130 - len(MODULE))

N = 64


@wp.kernel(module=MODULE)
def scale(x: wp.array(dtype=float), factor: float):
    i = wp.tid()
    x[i] = x[i] * factor


def build(device):
    x = wp.array(np.linspace(0.0, 1.0, N, dtype=np.float32), dtype=float, device=device)

    def step():
        wp.launch(scale, dim=N, inputs=[x, 1.5], device=device)

    return CaptureSpec(inputs={"x": x}, outputs={"x": x}, step=step)
