"""Refused by the retarget mode: an operation that is none of kernel launch, memset, fill, device
copy, conditional node or warp.utils sort/scan/reduction: a sparse matrix rebuilt from triplets
(warp.sparse records a BSR operation). build() builds it once, so warp.sparse's kernels compile
there, before the step."""

import numpy as np
import warp as wp
import warp.sparse as sparse

from wrpkg.capture import CaptureSpec


def build(device):
    rows = wp.array(np.array([0, 1, 2], dtype=np.int32), dtype=wp.int32, device=device)
    cols = wp.array(np.array([2, 1, 0], dtype=np.int32), dtype=wp.int32, device=device)
    vals = wp.array(np.array([1.0, 2.0, 3.0], dtype=np.float32), dtype=float, device=device)
    matrix = sparse.bsr_zeros(3, 3, block_type=float, device=device)
    sparse.bsr_set_from_triplets(matrix, rows, cols, vals)

    def step():
        sparse.bsr_set_from_triplets(matrix, rows, cols, vals)  # refused here

    return CaptureSpec(inputs={"vals": vals}, outputs={"values": matrix.values}, step=step)
