"""Refused by the retarget mode: a sparse-matrix operation after a kernel launch. The refusal needs
the recorded operation stream (the BSR operation is no launch), and still comes before the step's
own kernel is compiled: its module, CPU or CUDA, is never built (tests/test_refusal_before_compile.py;
warp.sparse's modules compile in build(), which builds the matrix once)."""

import numpy as np
import warp as wp
import warp.sparse as sparse

from wrpkg.capture import CaptureSpec


@wp.kernel
def double(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * 2.0


def build(device):
    rows = wp.array(np.array([0, 1, 2], dtype=np.int32), dtype=wp.int32, device=device)
    cols = wp.array(np.array([2, 1, 0], dtype=np.int32), dtype=wp.int32, device=device)
    vals = wp.array(np.array([1.0, 2.0, 3.0], dtype=np.float32), dtype=float, device=device)
    matrix = sparse.bsr_zeros(3, 3, block_type=float, device=device)
    sparse.bsr_set_from_triplets(matrix, rows, cols, vals)

    def step():
        wp.launch(double, dim=3, inputs=[vals], device=device)
        sparse.bsr_set_from_triplets(matrix, rows, cols, vals)  # refused here

    return CaptureSpec(inputs={"vals": vals}, outputs={"values": matrix.values}, step=step)
