"""A launch command made in build() (record_cmd=True, block_dim 64) and launched in the step."""

import warp as wp

from wrpkg.capture import CaptureSpec


@wp.kernel
def fill(x: wp.array(dtype=float)):
    x[wp.tid()] = 3.0


def build(device):
    x = wp.zeros(4, dtype=float, device=device)
    cmd = wp.launch(fill, dim=4, inputs=[x], device=device, record_cmd=True, block_dim=64)

    def step():
        cmd.launch()

    return CaptureSpec(inputs={}, outputs={"x": x}, step=step)
