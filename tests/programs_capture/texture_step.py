"""A step that samples a wp.Texture2D. Warp passes a texture as a descriptor holding this process's
handles (the texel data's address on the CPU, a CUDA texture object on a GPU), which APIC saves as
they are: before the refusal, the CPU capture was saved and its replay in a fresh process crashed
with SIGSEGV."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 8


@wp.kernel
def sample(tex: wp.Texture2D, uv: wp.array(dtype=wp.vec2), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.texture_sample(tex, uv[i], dtype=float)


def build(device):
    texels = np.arange(16, dtype=np.float32).reshape(4, 4)
    tex = wp.Texture2D(texels, device=device)
    uv = wp.array(
        np.linspace(0.05, 0.95, N * 2, dtype=np.float32).reshape(N, 2), dtype=wp.vec2, device=device
    )
    out = wp.zeros(N, dtype=float, device=device)

    def step():
        wp.launch(sample, dim=N, inputs=[tex, uv, out], device=device)  # refused here

    return CaptureSpec(inputs={"uv": uv}, outputs={"out": out}, step=step, keep_alive=[tex])
