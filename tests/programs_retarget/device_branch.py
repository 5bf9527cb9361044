"""A script that branches on its device, as Newton's narrow phase does (block_dim 1 on the CPU, 128
on CUDA): retargeted, it runs the CPU branch, so its CUDA capture launches with block_dim 1 where a
GPU capture launches with 128. The capture names the line that asked (capture.json
cpu_device_branches and a note). WRP_TEST_BRANCH=readback: the step's CPU branch reads a value back
to the host, as Newton's implicit MPM solver does where a GPU loops with wp.capture_while; the
refusal comes with a note naming the line that asked."""

import os

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
        if os.environ.get("WRP_TEST_BRANCH") == "readback" and x.device.is_cpu:
            print(float(x.numpy().max()))  # read back on the CPU branch only

    return CaptureSpec(inputs={"x": x}, outputs={"x": x}, step=step)
