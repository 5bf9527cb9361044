"""A step that moves data through a host (device="cpu") array. In a CUDA capture APIC records
regions of the capture device only, so the host array would be replayed as device memory:
refused there. On a CPU capture the host is the capture device and this is ordinary.
WRP_TEST_HOST_MODE picks:
  copy_out   wp.copy(host, x) inside the step (default)
  copy_in    wp.copy(x, host) inside the step
  zero_host  host.zero_() inside the step
  device     the fix: a device scratch array instead (captures)
"""

import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 64
MODE = os.environ.get("WRP_TEST_HOST_MODE", "copy_out")


@wp.kernel
def add_one(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] + 1.0


def build(device):
    x = wp.array(np.zeros(N, dtype=np.float32), dtype=float, device=device)
    pinned = wp.get_device(device).is_cuda
    scratch = wp.zeros(
        N, dtype=float, device="cpu" if MODE != "device" else device, pinned=pinned and MODE != "device"
    )

    def step():
        wp.launch(add_one, dim=N, inputs=[x], device=device)
        if MODE in ("copy_out", "device"):
            wp.copy(scratch, x)
        elif MODE == "copy_in":
            wp.copy(x, scratch)
        else:
            scratch.zero_()

    return CaptureSpec(
        inputs={"x": x}, outputs={"x": x, "scratch": scratch} if MODE == "device" else {"x": x}, step=step
    )
