"""The tiled kernel of models/cloth.py: one block per grid row sums the row's kinetic energy."""

import warp as wp

ROW = 64  # particles per grid row; the tile holds one row


@wp.kernel
def row_energy(v: wp.array2d(dtype=float), step: int, energy: wp.array2d(dtype=float)):
    row = wp.tid()
    t = wp.tile_load(v[row], shape=ROW)
    # A block-wide tree reduction: a fixed order on a given device, so bit-exact run to run.
    total = wp.tile_sum(t)
    wp.tile_store(energy[step], total, offset=row)
