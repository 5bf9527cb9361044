"""A step that replays a graph captured in build(), a common Warp pattern that APIC drops.
WRP_TEST_NESTED_MODE picks:
  direct     wp.capture_launch(g.graph) in step() (default)
  alias      the same through a name imported before the capture (not the patched attribute)
  swallowed  the launch inside try/except Exception: the refusal must survive the except
  inline     the fix: the step calls the captured code itself (captures)
"""

import os

import numpy as np
import warp as wp
from warp import capture_launch as launch_graph

from wrpkg.capture import CaptureSpec

N = 64
MODE = os.environ.get("WRP_TEST_NESTED_MODE", "direct")


@wp.kernel
def add_one(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] + 1.0


def build(device):
    x = wp.array(np.zeros(N, dtype=np.float32), dtype=float, device=device)

    def inner():
        wp.launch(add_one, dim=N, inputs=[x], device=device)

    with wp.ScopedCapture(device=device) as capture:
        inner()

    def step():
        wp.launch(add_one, dim=N, inputs=[x], device=device)
        if MODE == "direct":
            wp.capture_launch(capture.graph)
        elif MODE == "alias":
            launch_graph(capture.graph)
        elif MODE == "swallowed":
            try:
                wp.capture_launch(capture.graph)
            except Exception:
                pass
        else:
            inner()

    return CaptureSpec(inputs={"x": x}, outputs={"x": x}, step=step)
