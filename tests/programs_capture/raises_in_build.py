"""A capture script whose build() raises: the harness must show this traceback."""

import warp as wp


def make_state(device):
    raise ValueError("particle count must be positive (raised on purpose by the test)")


def build(device):
    return make_state(device)


_ = wp  # the import is part of what a real script does
