"""A MathDx program: `wp.tile_fft` then `wp.tile_ifft` of 4 rows of 32 complex float32 values
(cuFFTDx LTO-IR on CUDA), as NVIDIA's example_tile_fft.py with vec2f."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

wp.set_module_options({"enable_backward": False})

BLOCK_DIM = 8
ROWS = 4
N = 32


@wp.kernel
def fft_rows(
    x: wp.array2d(dtype=wp.vec2f), spectrum: wp.array2d(dtype=wp.vec2f), y: wp.array2d(dtype=wp.vec2f)
):
    a = wp.tile_load(x, shape=(ROWS, N))
    wp.tile_fft(a)
    wp.tile_store(spectrum, a)
    wp.tile_ifft(a)
    wp.tile_store(y, a)


def build(device):
    rng = np.random.default_rng(11)
    x = wp.array(rng.standard_normal((ROWS, N, 2), dtype=np.float32), dtype=wp.vec2f, device=device)
    spectrum = wp.zeros((ROWS, N), dtype=wp.vec2f, device=device)
    y = wp.zeros((ROWS, N), dtype=wp.vec2f, device=device)

    def step():
        wp.launch_tiled(fft_rows, dim=(1, 1), inputs=[x, spectrum, y], block_dim=BLOCK_DIM, device=device)

    return CaptureSpec(inputs={"x": x}, outputs={"spectrum": spectrum, "y": y}, step=step)
