"""NVIDIA's DEM sample (warp/examples/core/example_dem.py) as a capture script: one frame, the
wp.HashGrid rebuilt in the step and queried by id in its 64 substeps. The sample captures its
substeps into a graph in its constructor; the step runs them directly (a nested graph replays
nothing from a saved capture)."""

import warp as wp
import warp.examples.core.example_dem as example_dem

from wrpkg.capture import CaptureSpec


def build(device):
    with wp.ScopedDevice(device):
        example = example_dem.Example(stage_path=None)
    example.use_graph_capture = False

    def step():
        with wp.ScopedDevice(device):
            example.step()

    return CaptureSpec(
        inputs={"x": example.x, "v": example.v},
        outputs={"x": example.x, "v": example.v},
        step=step,
        keep_alive=[example],
    )
