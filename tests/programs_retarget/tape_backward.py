"""A step that records a wp.Tape and runs its backward pass, as Newton's differentiable examples do.
Tape.backward() replays each forward launch with the block_dim the device resolved (1 on the CPU,
256 on CUDA); retargeted, the backward launches get the forward launches' CUDA block_dim, as a GPU
capture records them. WRP_TEST_TAPE picks the case: `step` (the tape recorded in the step, default),
`tiled` (a launch_tiled forward with block_dim 64) or `build` (the forward launches recorded on a
tape in build(), the backward pass in the step)."""

import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 64
CASE = os.environ.get("WRP_TEST_TAPE", "step")


@wp.kernel
def square_sum(x: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, x[i] * x[i])


@wp.kernel
def tiled_scale(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i, lane = wp.tid()
    if lane == 0:
        y[i] = 3.0 * x[i]


def build(device):
    # Integer-valued inputs: every sum is exact, so the atomic order does not change the bits.
    x = wp.array(np.arange(N, dtype=np.float32) % 7, dtype=float, device=device, requires_grad=True)
    y = wp.zeros(N, dtype=float, device=device, requires_grad=True)
    loss = wp.zeros(1, dtype=float, device=device, requires_grad=True)

    def forward():
        if CASE == "tiled":
            wp.launch_tiled(tiled_scale, dim=[N], inputs=[x], outputs=[y], block_dim=64, device=device)
            wp.launch(square_sum, dim=N, inputs=[y], outputs=[loss], device=device)
        else:
            wp.launch(square_sum, dim=N, inputs=[x], outputs=[loss], device=device)

    built = None
    if CASE == "build":
        built = wp.Tape()
        with built:
            forward()

    def step():
        x.grad.zero_()
        y.grad.zero_()
        loss.zero_()
        if built is not None:
            wp.launch(square_sum, dim=N, inputs=[x], outputs=[loss], device=device)
            built.backward(loss)
            return
        tape = wp.Tape()
        with tape:
            forward()
        tape.backward(loss)

    return CaptureSpec(inputs={"x": x}, outputs={"loss": loss, "x_grad": x.grad}, step=step)
