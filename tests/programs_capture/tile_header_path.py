"""A tile kernel whose CPU object expands __FILE__ inside Warp's tile.h (an assert of
tile_reshape/tile_broadcast), as MuJoCo Warp's modules do (tests/test_capture_paths.py)."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec


@wp.kernel
def tile_total(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    t = wp.tile_load(a, shape=(4, 4))
    total = wp.tile_reshape(wp.tile_sum(t), shape=(1, 1))
    wp.tile_store(out, wp.tile_broadcast(total, shape=(4, 4)))


def build(device):
    a = wp.array(np.arange(16, dtype=np.float32).reshape(4, 4), device=device)
    out = wp.zeros((4, 4), dtype=float, device=device)

    def step():
        wp.launch_tiled(tile_total, dim=[1], inputs=[a, out], block_dim=32, device=device)

    return CaptureSpec(inputs={"a": a}, outputs={"out": out}, step=step)
