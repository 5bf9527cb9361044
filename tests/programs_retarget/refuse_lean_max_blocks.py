"""Refused by the retarget mode: max_blocks on a kernel without a grid-stride loop."""

import warp as wp

from wrpkg.capture import CaptureSpec


@wp.kernel(grid_stride=False)
def fill(x: wp.array(dtype=float)):
    x[wp.tid()] = 3.0


def build(device):
    x = wp.zeros(4, dtype=float, device=device)

    def step():
        wp.launch(fill, dim=4, inputs=[x], device=device, max_blocks=1)  # refused here

    return CaptureSpec(inputs={}, outputs={"x": x}, step=step)
