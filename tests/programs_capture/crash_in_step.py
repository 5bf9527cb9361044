"""A step whose native code crashes (a null read through ctypes, as a bad library call or
kernel would): the capture must end with a message, not a bare signal.

WRP_TEST_CRASH_ON_GPU_BRANCH=1: build() crashes instead, on the branch it takes for a CUDA device
(as Newton's Kamino solver launches kernels written for a GPU's thread block): a retargeted capture
under the device model takes it on the CPU."""

import ctypes
import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec


@wp.kernel
def add_one(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] + 1.0


def build(device):
    x = wp.array(np.zeros(8, dtype=np.float32), dtype=float, device=device)
    if os.environ.get("WRP_TEST_CRASH_ON_GPU_BRANCH") == "1" and wp.get_device(device).is_cuda:
        ctypes.string_at(0)

    def step():
        wp.launch(add_one, dim=8, inputs=[x], device=device)
        ctypes.string_at(0)

    return CaptureSpec(inputs={"x": x}, outputs={"x": x}, step=step)
