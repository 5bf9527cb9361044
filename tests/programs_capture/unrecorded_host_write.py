"""A step whose host code writes device memory between two launches, with nothing the step
guard knows of (ctypes on the array's address): Warp's APIC records the launches only, so the
saved graph computes z = 2x + 1 where the program computes z = 1. Only running the step without
a capture shows it (wrpkg.capture.direct_step).

WRP_TEST_DIRECT_MODE picks the variant:
  host_write   the write between the launches (refused)
  fixed        the write as a launch (wp.zeros_like's fill: recorded): captures
  unseeded     build() draws unseeded random numbers: two direct runs differ too (captured, with a note)
  needs_capture  step() raises when not under a capture: the direct run fails (refused)
"""

import ctypes
import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 16
MODE = os.environ.get("WRP_TEST_DIRECT_MODE", "host_write")


@wp.kernel
def double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]


@wp.kernel
def add_one(y: wp.array(dtype=float), z: wp.array(dtype=float)):
    i = wp.tid()
    z[i] = y[i] + 1.0


def build(device):
    values = np.random.default_rng().random(N) if MODE == "unseeded" else np.arange(N, dtype=np.float32)
    x = wp.array(values, dtype=float, device=device)
    y = wp.zeros(N, dtype=float, device=device)
    z = wp.zeros(N, dtype=float, device=device)

    def step():
        if MODE == "needs_capture" and not wp.get_device(device).is_capturing:
            raise RuntimeError("this step runs only under a capture")
        wp.launch(double, dim=N, inputs=[x, y], device=device)
        if MODE == "host_write":
            ctypes.memset(y.ptr, 0, N * 4)
        elif MODE == "fixed":
            y.zero_()
        wp.launch(add_one, dim=N, inputs=[y, z], device=device)

    return CaptureSpec(inputs={"x": x}, outputs={"z": z}, step=step)
