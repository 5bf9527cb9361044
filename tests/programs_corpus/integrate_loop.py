"""Many launches in one step: 50 explicit Euler steps of a damped spring, ping-ponging two buffers."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N, STEPS, DT, K, C = 16, 50, 0.01, 40.0, 0.5


@wp.kernel
def euler(
    x: wp.array(dtype=float),
    v: wp.array(dtype=float),
    x_out: wp.array(dtype=float),
    v_out: wp.array(dtype=float),
):
    i = wp.tid()
    a = -K * x[i] - C * v[i]
    v_out[i] = v[i] + DT * a
    x_out[i] = x[i] + DT * v[i]


def initial():
    return {"x": np.linspace(-1, 1, N, dtype=np.float32), "v": np.zeros(N, dtype=np.float32)}


def build(device):
    init = initial()
    x0 = wp.array(init["x"], dtype=float, device=device)
    v0 = wp.array(init["v"], dtype=float, device=device)
    x1 = wp.zeros(N, dtype=float, device=device)
    v1 = wp.zeros(N, dtype=float, device=device)

    def step():
        for s in range(STEPS):
            src, dst = ((x0, v0), (x1, v1)) if s % 2 == 0 else ((x1, v1), (x0, v0))
            wp.launch(euler, dim=N, inputs=[src[0], src[1], dst[0], dst[1]], device=device)

    return CaptureSpec(inputs={"x0": x0, "v0": v0}, outputs={"x0": x0, "v0": v0}, step=step)


def expected():
    x, v = initial()["x"], initial()["v"]
    for _ in range(STEPS):
        a = np.float32(-K) * x - np.float32(C) * v
        x, v = x + np.float32(DT) * v, v + np.float32(DT) * a
    return {"x0": x, "v0": v}
