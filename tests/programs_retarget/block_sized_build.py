"""build() reduces with code that depends on the block size (wp.tile of one value per thread, as
Newton's implicit MPM computes its particles' bounds), launched with block_dim 64, and the step
starts from the result. On a GPU each block reduces 64 values; the CPU runs a block as one thread
and reduces one, so the initial state it would save is not a GPU's: a retargeted capture refuses it.
WRP_TEST_BLOCK_SIZED=step makes the same launch in the step instead, whose CUDA launch is recorded.
WRP_TEST_BLOCK_SIZED=host reads the maxima on the host in build() to size an array the step fills, as
Newton's implicit MPM sizes its grid, and the step does not use the maxima: a GPU would size it from
other maxima. WRP_TEST_BLOCK_SIZED=host_input reads only the input array x on the host."""

import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 256
BLOCK = 64
MODE = os.environ.get("WRP_TEST_BLOCK_SIZED", "")
IN_STEP = MODE == "step"


@wp.kernel
def block_max(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    block, lane = wp.tid()
    v = x[block * wp.block_dim() + lane]
    m = wp.tile_max(wp.tile(v))
    if lane == 0:
        out[block] = m[0]


@wp.kernel
def scale(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * 2.0


def build(device):
    x = wp.array(np.arange(N, dtype=np.float32), dtype=float, device=device)
    maxima = wp.zeros(N // BLOCK, dtype=float, device=device)

    def reduce():
        shape = (N // BLOCK, BLOCK)
        wp.launch(block_max, dim=shape, inputs=[x, maxima], block_dim=BLOCK, device=device)  # launch

    if not IN_STEP:
        reduce()  # block-sized reduction in build()
    if MODE.startswith("host"):
        read = x if MODE == "host_input" else maxima
        size = int(read.numpy().max()) + 1  # host read
        filled = wp.zeros(size, dtype=float, device=device)

        def step():
            wp.launch(scale, dim=size, inputs=[filled], device=device)

        return CaptureSpec(inputs={"filled": filled}, outputs={"filled": filled}, step=step)

    def step():
        if IN_STEP:
            reduce()
        wp.launch(scale, dim=N // BLOCK, inputs=[maxima], device=device)

    inputs = {"x": x, "maxima": maxima} if IN_STEP else {"maxima": maxima}
    return CaptureSpec(inputs=inputs, outputs={"maxima": maxima}, step=step)
