"""A float sum by atomics over a million values: on CUDA its order, and so its last bits,
change from run to run; on the CPU it is serial and repeatable. WRP_TEST_SUM_MODE picks:
  exact      no tolerance declared (default): refused where two replays differ
  tolerance  a tolerance that covers the run-to-run spread
"""

import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec
from wrpkg.golden import Tolerance

N = 1 << 20
MODE = os.environ.get("WRP_TEST_SUM_MODE", "exact")


@wp.kernel
def total(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, 0, x[i])


def build(device):
    rng = np.random.default_rng(11)
    x = wp.array(rng.uniform(-1.0, 1.0, N).astype(np.float32), dtype=float, device=device)
    out = wp.zeros(1, dtype=float, device=device)

    def step():
        out.zero_()
        wp.launch(total, dim=N, inputs=[x, out], device=device)

    tolerances = {"sum": Tolerance(atol=1e-2, rtol=1e-4)} if MODE == "tolerance" else {}
    return CaptureSpec(inputs={"x": x}, outputs={"sum": out}, step=step, tolerances=tolerances)
