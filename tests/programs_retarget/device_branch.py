"""A script that branches on its device, as Newton's narrow phase does (block_dim 1 on the CPU, 128
on CUDA): retargeted, it runs the CPU branch, so its CUDA capture launches with block_dim 1 where a
GPU capture launches with 128. The capture names the line that asked (capture.json
cpu_device_branches and a note)."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 256


@wp.kernel
def scale(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * 2.0


def build(device):
    x = wp.array(np.arange(N, dtype=np.float32), dtype=float, device=device)
    block_dim = 1 if wp.get_device(device).is_cpu else 128  # asks here

    def step():
        wp.launch(scale, dim=N, inputs=[x], block_dim=block_dim, device=device)

    return CaptureSpec(inputs={"x": x}, outputs={"x": x}, step=step)
