"""A binding whose name comes from WRP_TEST_BINDING_NAME (tests/test_capture.py): a name pack or a
reader would refuse (a control character, a backslash, 300 bytes) is refused by the capture itself,
before anything is compiled."""

import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec


@wp.kernel
def scale(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * 2.0


def build(device):
    x = wp.array(np.ones(8, dtype=np.float32), dtype=float, device=device)

    def step():
        wp.launch(scale, dim=8, inputs=[x], device=device)

    return CaptureSpec(inputs={}, outputs={os.environ["WRP_TEST_BINDING_NAME"]: x}, step=step)
