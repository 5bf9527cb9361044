"""Scratch arrays made with wp.empty, as Newton and MuJoCo Warp make theirs (tests/test_initial_state.py).

WRP_TEST_SCRATCH selects what the step does with them:
  written   the step writes every scratch element before it reads it (the bytes nobody wrote are
            irrelevant: two captures must give the same bytes, with no note);
  read      the step reads a scratch array nobody wrote (the capture names it and where it was made);
  in_step   a scratch array allocated inside the step (a solver's lazily made buffer), fully written.
"""

import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 256
MODE = os.environ.get("WRP_TEST_SCRATCH", "written")


@wp.kernel
def fill_scratch(x: wp.array(dtype=float), scratch: wp.array(dtype=float)):
    i = wp.tid()
    scratch[i] = 2.0 * x[i]


@wp.kernel
def accumulate(x: wp.array(dtype=float), scratch: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] + scratch[i]


class Solver:
    """Allocates its buffers as a library does: in its own code, not the script's."""

    def __init__(self, device):
        self.device = device
        self.scratch = wp.empty(N, dtype=float, device=device)
        self.lazy = None

    def step(self, x, write_first: bool):
        if MODE == "in_step":
            if self.lazy is None:
                self.lazy = wp.empty(N, dtype=float, device=self.device)
            wp.launch(fill_scratch, dim=N, inputs=[x, self.lazy], device=self.device)
            wp.launch(accumulate, dim=N, inputs=[x, self.lazy], device=self.device)
            return
        if write_first:
            wp.launch(fill_scratch, dim=N, inputs=[x, self.scratch], device=self.device)
        wp.launch(accumulate, dim=N, inputs=[x, self.scratch], device=self.device)


def build(device):
    x = wp.array(np.linspace(0.0, 1.0, N, dtype=np.float32), dtype=float, device=device)
    solver = Solver(device)

    def step():
        solver.step(x, write_first=MODE != "read")

    return CaptureSpec(inputs={"x": x}, outputs={"x": x}, step=step, keep_alive=[solver])
