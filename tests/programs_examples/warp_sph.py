"""NVIDIA's SPH sample (warp/examples/core/example_sph.py) as a capture script: one frame,
a wp.HashGrid rebuilt in each of its 40 substeps and queried by id (wrpkg.capture.lowering.hash_grid_lowering)."""

import warp as wp
import warp.examples.core.example_sph as example_sph

from wrpkg.capture import CaptureSpec


def build(device):
    with wp.ScopedDevice(device):
        example = example_sph.Example(stage_path=None)

    def step():
        with wp.ScopedDevice(device):
            example.step()

    return CaptureSpec(
        inputs={"x": example.x, "v": example.v},
        outputs={"x": example.x, "v": example.v, "rho": example.rho},
        step=step,
        keep_alive=[example],
    )
