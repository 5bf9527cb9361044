"""A step that does what Warp's APIC cannot record yet: Warp itself raises NotImplementedError
(here wp.copy() between non-contiguous arrays of two element types, a bit cast that
wrpkg.capture.lowering.copy_lowering does not lower; NVIDIA/warp#1675)."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec


def build(device):
    src = wp.array(np.ones((8, 2), dtype=np.float32), dtype=float, device=device)
    dst = wp.zeros((8, 2), dtype=wp.int32, device=device)

    def step():
        wp.copy(dst[:, 0], src[:, 1])

    return CaptureSpec(inputs={"src": src}, outputs={"dst": dst}, step=step)
