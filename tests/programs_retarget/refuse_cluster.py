"""Refused by the retarget mode: a kernel with thread block clusters (cluster_dim > 1)."""

import warp as wp

from wrpkg.capture import CaptureSpec


@wp.kernel(cluster_dim=2)
def fill(x: wp.array(dtype=float)):
    x[wp.tid()] = 3.0


def build(device):
    x = wp.zeros(512, dtype=float, device=device)

    def step():
        wp.launch(fill, dim=512, inputs=[x], device=device)  # refused here

    return CaptureSpec(inputs={}, outputs={"x": x}, step=step)
