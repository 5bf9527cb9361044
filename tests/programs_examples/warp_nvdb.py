"""NVIDIA's NanoVDB sample (warp/examples/core/example_nvdb.py) as a capture script: one frame
of 10,000 particles colliding with a wp.Volume loaded from rocks.nvdb, sampled by id
(the id relocated to the volume's buffer, saved with the capture)."""

import warp as wp
import warp.examples.core.example_nvdb as example_nvdb

from wrpkg.capture import CaptureSpec


def build(device):
    with wp.ScopedDevice(device):
        example = example_nvdb.Example(stage_path=None)

    def step():
        with wp.ScopedDevice(device):
            example.step()

    return CaptureSpec(
        inputs={"positions": example.positions, "velocities": example.velocities},
        outputs={"positions": example.positions, "velocities": example.velocities},
        step=step,
        keep_alive=[example],
    )
