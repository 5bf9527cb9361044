"""Memsets and fills recorded as APIC operations: zero_(), fill_() with a float and with a vec3,
then a kernel that reads them."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 64


@wp.kernel
def combine(a: wp.array(dtype=float), v: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i] + v[i][1] + float(i)


def build(device):
    a = wp.array(np.arange(N, dtype=np.float32), dtype=float, device=device)
    v = wp.zeros(N, dtype=wp.vec3, device=device)
    out = wp.array(np.full(N, 7.0, dtype=np.float32), dtype=float, device=device)

    def step():
        a.fill_(1.5)
        v.fill_(wp.vec3(0.0, 0.25, 9.0))
        out.zero_()
        wp.launch(combine, dim=N, inputs=[a, v, out], device=device)

    return CaptureSpec(inputs={"a": a, "v": v}, outputs={"out": out, "v": v}, step=step)


def expected():
    v = np.tile(np.array([0.0, 0.25, 9.0], dtype=np.float32), (N, 1))
    return {"out": (1.5 + 0.25 + np.arange(N)).astype(np.float32), "v": v}
