"""Refused by the retarget mode: a conditional graph node (wp.capture_if)."""

import warp as wp

from wrpkg.capture import CaptureSpec


@wp.kernel
def inc(x: wp.array(dtype=float)):
    x[wp.tid()] += 1.0


def build(device):
    x = wp.zeros(4, dtype=float, device=device)
    cond = wp.ones(1, dtype=wp.int32, device=device)

    def step():
        wp.capture_if(cond, on_true=lambda: wp.launch(inc, dim=4, inputs=[x], device=device))  # refused here

    return CaptureSpec(inputs={}, outputs={"x": x}, step=step)
