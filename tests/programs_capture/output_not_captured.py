"""A capture script whose output array is never touched by the captured step.

The step holds only a memset and a fill, so the test needs no kernel compile.
"""

import warp as wp

from wrpkg.capture import CaptureSpec


def build(device):
    x = wp.zeros(8, dtype=float, device=device)
    stale = wp.zeros(8, dtype=float, device=device)  # a copy the step never writes

    def step():
        x.zero_()
        x.fill_(3.0)

    return CaptureSpec(inputs={"x": x}, outputs={"x": x, "forces": stale}, step=step)
