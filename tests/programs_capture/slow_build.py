"""A build() that takes a while (a stand-in for a long compile): the watching parent says that the
phase is still going (test_capture.py, the progress lines)."""

import os
import time

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec


@wp.kernel
def double(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * 2.0


def build(device):
    time.sleep(float(os.environ.get("WRP_TEST_BUILD_SECONDS", "3")))
    x = wp.array(np.arange(8, dtype=np.float32), dtype=float, device=device)

    def step():
        wp.launch(double, dim=8, inputs=[x], device=device)

    return CaptureSpec(inputs={"x": x}, outputs={"x": x}, step=step)
