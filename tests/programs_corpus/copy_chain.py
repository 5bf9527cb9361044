"""Device copies recorded as APIC operations: a whole-array wp.copy and a ranged one
(dest_offset, src_offset, count), around a kernel."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 128


@wp.kernel
def square(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] * a[i]


def build(device):
    src = wp.array(np.linspace(0, 4, N, dtype=np.float32), dtype=float, device=device)
    work = wp.zeros(N, dtype=float, device=device)
    out = wp.zeros(N, dtype=float, device=device)

    def step():
        wp.copy(work, src)
        wp.launch(square, dim=N, inputs=[work], device=device)
        wp.copy(out, work, dest_offset=N // 2, src_offset=0, count=N // 2)

    return CaptureSpec(inputs={"src": src}, outputs={"work": work, "out": out}, step=step)


def expected():
    sq = np.linspace(0, 4, N, dtype=np.float32) ** 2
    out = np.zeros(N, dtype=np.float32)
    out[N // 2 :] = sq[: N // 2]
    return {"work": sq, "out": out}
