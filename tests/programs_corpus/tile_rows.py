"""Tiles: each block loads a row as a tile, sums it and scales it (launch_tiled, block_dim 32)."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

ROWS, TILE = 8, 32


def initial():
    return {"m": np.arange(ROWS * TILE, dtype=np.float32).reshape(ROWS, TILE) / 8.0}


@wp.kernel
def row_ops(m: wp.array2d(dtype=float), sums: wp.array2d(dtype=float), scaled: wp.array2d(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(m[i], shape=TILE)
    wp.tile_store(sums[i], wp.tile_sum(t))
    wp.tile_store(scaled[i], t * 2.0)


def build(device):
    m = wp.array(initial()["m"], dtype=float, device=device)
    sums = wp.zeros((ROWS, 1), dtype=float, device=device)
    scaled = wp.zeros((ROWS, TILE), dtype=float, device=device)

    def step():
        wp.launch_tiled(row_ops, dim=ROWS, inputs=[m, sums, scaled], block_dim=32, device=device)

    return CaptureSpec(inputs={"m": m}, outputs={"sums": sums, "scaled": scaled}, step=step)


def expected():
    m = initial()["m"]
    return {"sums": m.sum(axis=1, keepdims=True), "scaled": m * 2}
