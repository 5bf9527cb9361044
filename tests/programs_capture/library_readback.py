"""A step whose host read-back happens inside library code (tests/test_call_sites.py).

WRP_TEST_READBACK=warp: Warp's own marching cubes (wp.MarchingCubes.surface) reads its vertex count back on
the host, inside warp/_src/geometry/marching_cubes.py, to size its output.
WRP_TEST_READBACK=installed: a package installed under a site-packages folder (minilib, made by the test,
on PYTHONPATH) reads an array with .numpy() inside the step, as a physics library's broad phase might.
WRP_TEST_READBACK=installed_sparse: that package rebuilds a warp.sparse matrix from triplets in the step
(retargeted: the BSR operation is refused naming both lines).
"""

import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 64


@wp.kernel
def scale(x: wp.array(dtype=float), factor: float):
    i = wp.tid()
    x[i] = x[i] * factor


def build(device):
    x = wp.array(np.ones(N, dtype=np.float32), dtype=float, device=device)
    grid = np.linspace(-1.0, 1.0, 8, dtype=np.float32)
    sphere = np.sqrt(sum(np.meshgrid(grid * grid, grid * grid, grid * grid, indexing="ij"))) - 0.5
    field = wp.array(sphere.astype(np.float32), dtype=float, device=device)
    cubes = wp.MarchingCubes(8, 8, 8)
    if os.environ.get("WRP_TEST_READBACK") == "installed_sparse":
        import minilib  # noqa: PLC0415 - made by the test

        triplets = minilib.Triplets(device)

    def step():
        wp.launch(scale, dim=N, inputs=[x, 2.0], device=device)
        if os.environ.get("WRP_TEST_READBACK") == "installed":
            import minilib  # noqa: PLC0415 - made by the test

            factor = minilib.largest(x)
        elif os.environ.get("WRP_TEST_READBACK") == "installed_sparse":
            triplets.rebuild()
            factor = 1.0
        else:
            cubes.surface(field, 0.0)
            factor = 1.0
        wp.launch(scale, dim=N, inputs=[x, factor], device=device)

    return CaptureSpec(inputs={"x": x}, outputs={"x": x}, step=step, keep_alive=[cubes])
