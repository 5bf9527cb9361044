"""A MathDx program: one 16x16x16 `wp.tile_matmul` (cuBLASDx LTO-IR on CUDA), next to an
ordinary kernel of another Python module (`plain_kernels`), so a CUDA capture holds one MathDx
module and one module whose source Warp can retain."""

import numpy as np
import plain_kernels
import warp as wp

from wrpkg.capture import CaptureSpec

wp.set_module_options({"enable_backward": False})

TILE = 16
BLOCK_DIM = 64


@wp.kernel
def matmul(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), c: wp.array2d(dtype=float)):
    i, j = wp.tid()
    ta = wp.tile_load(a, shape=(TILE, TILE), offset=(i * TILE, 0))
    tb = wp.tile_load(b, shape=(TILE, TILE), offset=(0, j * TILE))
    tc = wp.tile_zeros(shape=(TILE, TILE), dtype=float)
    wp.tile_matmul(ta, tb, tc)
    wp.tile_store(c, tc, offset=(i * TILE, j * TILE))


def build(device):
    rng = np.random.default_rng(7)
    a = wp.array(rng.standard_normal((TILE, TILE), dtype=np.float32), dtype=float, device=device)
    b = wp.array(rng.standard_normal((TILE, TILE), dtype=np.float32), dtype=float, device=device)
    c = wp.zeros((TILE, TILE), dtype=float, device=device)

    def step():
        wp.launch_tiled(matmul, dim=(1, 1), inputs=[a, b, c], block_dim=BLOCK_DIM, device=device)
        wp.launch(plain_kernels.scale2d, dim=(TILE, TILE), inputs=[c, 0.5], device=device)

    return CaptureSpec(inputs={"a": a, "b": b}, outputs={"c": c}, step=step)
