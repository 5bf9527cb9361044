"""A tiny capture script for the C++ runtime's tests (runtime:bundle_test).

x and v are inputs, x and e outputs: `x` is bound as both, so it is one region (the
binding rule bundle_test checks), and every region's size is known: x, v hold 64 vec3
(768 bytes), e one float (4 bytes).
"""

import sys
from pathlib import Path

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec
from wrpkg.golden import Tolerance

# The particle program is the test programs' (one definition). The capture puts only this
# file's folder on the path; theirs is tests/programs (absolute(), not resolve(): inside
# Bazel's sandbox the declared input is the one to import, not the file it links to).
sys.path.insert(0, str(Path(__file__).absolute().parents[2] / "tests" / "programs"))
from prog_physics import initial_state, integrate, kinetic_energy  # noqa: E402

N = 64
STEPS = 5


def build(device: str) -> CaptureSpec:
    x, v, e, p = initial_state(N, device, np.random.default_rng(0))

    def step():
        e.zero_()
        for _ in range(STEPS):
            wp.launch(integrate, dim=N, inputs=[x, v, p, 1.0 / 60.0], device=device)
        wp.launch(kinetic_energy, dim=N, inputs=[v, e], device=device)

    # e sums with a float atomic: order-dependent on CUDA, hence the tolerance.
    return CaptureSpec(
        inputs={"x": x, "v": v},
        outputs={"x": x, "e": e},
        step=step,
        tolerances={"e": Tolerance(atol=1e-6, rtol=1e-5)},
    )
