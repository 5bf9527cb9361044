"""A capture script that fails while being imported."""

import warp as wp

GRID = wp.vec3(1.0, 2.0, 3.0)
BROKEN = undefined_name_in_capture_script  # noqa: F821 - raised on purpose


def build(device):
    raise AssertionError("never reached")
