"""Initial state computed by a kernel in build(): a retargeted capture saves the CPU's values,
which a GPU would round differently in the last bits. WRP_TEST_INIT_MODE picks:
  kernel  positions computed by a kernel in build() (default): the capture says so
  loop    the same, then the kernel launched 99 times more from one line: the log note says so once
  numpy   the same positions computed with NumPy on the host: nothing to say
"""

import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 64
MODE = os.environ.get("WRP_TEST_INIT_MODE", "kernel")


@wp.kernel
def spiral(x: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    t = float(i) * 0.1
    x[i] = wp.vec3(wp.cos(t) * t, wp.sin(t) * t, t)


@wp.kernel
def drift(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    x[i] = x[i] + v[i] * 0.01


def build(device):
    v = wp.full(N, value=wp.vec3(1.0, 0.0, 0.0), dtype=wp.vec3, device=device)
    if MODE in ("kernel", "loop"):
        x = wp.zeros(N, dtype=wp.vec3, device=device)
        wp.launch(spiral, dim=N, inputs=[x], device=device)
        for _ in range(99 if MODE == "loop" else 0):
            wp.launch(spiral, dim=N, inputs=[x], device=device)
    else:
        t = np.arange(N, dtype=np.float32) * np.float32(0.1)
        x = wp.array(np.stack([np.cos(t) * t, np.sin(t) * t, t], axis=1), dtype=wp.vec3, device=device)

    def step():
        wp.launch(drift, dim=N, inputs=[x, v], device=device)

    return CaptureSpec(inputs={"x": x}, outputs={"x": x}, step=step)
