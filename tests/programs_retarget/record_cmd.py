"""A launch command made in the step (record_cmd=True) and launched there, as Newton's Kamino solver does."""

import warp as wp

from wrpkg.capture import CaptureSpec


@wp.kernel
def fill(x: wp.array(dtype=float)):
    x[wp.tid()] = 3.0


def build(device):
    x = wp.zeros(4, dtype=float, device=device)

    def step():
        cmd = wp.launch(fill, dim=4, inputs=[x], device=device, record_cmd=True)
        cmd.launch()

    return CaptureSpec(inputs={}, outputs={"x": x}, step=step)
