"""Refused by the retarget mode: a kernel in a deterministic mode (CUDA launches it another way)."""

import warp as wp

from wrpkg.capture import CaptureSpec

wp.set_module_options({"deterministic": wp.config.DeterministicMode.RUN_TO_RUN})


@wp.kernel
def total(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    wp.atomic_add(out, 0, x[wp.tid()])


def build(device):
    x = wp.ones(8, dtype=float, device=device)
    out = wp.zeros(1, dtype=float, device=device)

    def step():
        wp.launch(total, dim=8, inputs=[x, out], device=device)  # refused here

    return CaptureSpec(inputs={"x": x}, outputs={"out": out}, step=step)
