"""Conditional graph nodes, as MuJoCo Warp's solver loop makes them (opt.graph_conditional): a
wp.capture_if with both branches and a wp.capture_while whose body counts its own iterations down.
Retargeted, each branch's launches become CUDA launches in place (tests/test_retarget.py); on an
H200 the retargeted capture is byte-identical to the native one (tests/test_retarget_gpu.py)."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 64
ITERATIONS = 3


@wp.kernel
def scale(x: wp.array(dtype=float), factor: float):
    i = wp.tid()
    x[i] = x[i] * factor


@wp.kernel
def shift(x: wp.array(dtype=float), offset: float):
    i = wp.tid()
    x[i] = x[i] + offset


@wp.kernel
def start_loop(counter: wp.array(dtype=wp.int32), iterations: int, cond: wp.array(dtype=wp.int32)):
    counter[0] = iterations
    cond[0] = wp.where(iterations > 0, 1, 0)


@wp.kernel
def count_down(counter: wp.array(dtype=wp.int32), cond: wp.array(dtype=wp.int32)):
    counter[0] = counter[0] - 1
    cond[0] = wp.where(counter[0] > 0, 1, 0)


def build(device):
    x = wp.array(np.linspace(0.0, 1.0, N, dtype=np.float32), dtype=float, device=device)
    flag = wp.array([1], dtype=wp.int32, device=device)
    counter = wp.zeros(1, dtype=wp.int32, device=device)
    cond = wp.zeros(1, dtype=wp.int32, device=device)

    def loop_body():
        wp.launch(shift, dim=N, inputs=[x, 0.25], device=device)
        wp.launch(count_down, dim=1, inputs=[counter, cond], device=device)

    def step():
        wp.capture_if(
            flag,
            on_true=lambda: wp.launch(scale, dim=N, inputs=[x, 2.0], device=device),
            on_false=lambda: wp.launch(scale, dim=N, inputs=[x, 0.5], device=device),
        )
        wp.launch(start_loop, dim=1, inputs=[counter, ITERATIONS, cond], device=device)
        wp.capture_while(cond, loop_body)

    return CaptureSpec(inputs={"x": x, "flag": flag}, outputs={"x": x, "counter": counter}, step=step)
