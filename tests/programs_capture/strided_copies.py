"""A step that copies between strided views and indexed arrays and fills strided views: what
Warp's APIC does not record (NVIDIA/warp#1675) and wrpkg lowers to kernel launches
(wrpkg.capture.lowering.copy_lowering). tests/test_copy_lowering.py holds every output to NumPy's answer."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 8


@wp.struct
class Particle:
    x: wp.vec3
    m: float
    id: int


def inputs(n: int = N) -> dict[str, np.ndarray]:
    """The inputs, also for the test's own NumPy answer."""
    return {
        "a": np.arange(n * 4, dtype=np.float32).reshape(n, 4) * np.float32(0.5),
        "v": (np.arange(n * 3, dtype=np.float32).reshape(n, 3) - 7) / np.float32(3),
        "h": (np.arange(n * 2, dtype=np.float16).reshape(n, 2) / np.float16(8)),
        "idx": np.array([7, 2, 5, 0], dtype=np.int32),
    }


def build(device):
    data = inputs()
    a = wp.array(data["a"], dtype=float, device=device)
    v = wp.array(data["v"], dtype=wp.vec3, device=device)
    h = wp.array(data["h"], dtype=wp.float16, device=device)
    idx = wp.array(data["idx"], dtype=wp.int32, device=device)
    particles = wp.zeros((N, 3), dtype=Particle, device=device)
    value = Particle()
    value.x = wp.vec3(1.0, 2.0, 3.0)
    value.m = 2.0
    value.id = 3

    column = wp.zeros((N, 2), dtype=float, device=device)
    transposed = wp.zeros((4, N), dtype=float, device=device)
    window = wp.zeros(10, dtype=float, device=device)
    gathered = wp.zeros((4, 4), dtype=float, device=device)
    scattered = wp.zeros((N, 4), dtype=float, device=device)
    filled = wp.full((N, 4), 1.0, dtype=float, device=device)
    vectors = wp.zeros((N, 2), dtype=wp.vec3, device=device)
    halves = wp.zeros((N, 2), dtype=wp.float16, device=device)
    made_contiguous = wp.zeros((N, 2), dtype=float, device=device)
    masses = wp.zeros(N, dtype=float, device=device)

    @wp.kernel
    def make_particles(p: wp.array2d(dtype=Particle), a: wp.array2d(dtype=float)):
        i = wp.tid()
        p[i, 2] = Particle(wp.vec3(0.0, 0.0, a[i, 0]), a[i, 1], i)

    @wp.kernel
    def particle_masses(p: wp.array2d(dtype=Particle), out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = (
            p[i, 0].m
            + float(p[i, 0].id)
            + p[i, 0].x[2]
            + 10.0 * (p[i, 1].m + p[i, 1].x[2])
            + float(100 * p[i, 1].id)
        )

    def step():
        wp.copy(column[:, 1], a[:, 2])  # strided to strided
        wp.copy(transposed, a.transpose((1, 0)))  # strided source, contiguous destination
        wp.copy(window, a[:, 1], dest_offset=2, src_offset=1, count=5)  # 1-D offsets and count
        wp.copy(gathered, wp.indexedarray(a, [idx]))  # indexed source
        wp.copy(wp.indexedarray(scattered, [idx]), a[4:8])  # indexed destination
        filled[:, 1].fill_(2.5)
        filled[:, 3].zero_()
        vectors[:, 0].fill_(wp.vec3(1.0, 2.0, 3.0))
        wp.copy(vectors[:, 1], v)
        wp.copy(halves[:, 0], h[:, 1])
        halves[:, 1].fill_(0.75)
        # Newton's implicit MPM: a transposed view made contiguous inside the step.
        wp.copy(made_contiguous, a[:, 1:3].contiguous())
        wp.launch(make_particles, dim=N, inputs=[particles, a], device=device)
        particles[:, 0].fill_(value)  # a struct fill and a struct copy
        wp.copy(particles[:, 1], particles[:, 2])
        wp.launch(particle_masses, dim=N, inputs=[particles, masses], device=device)

    return CaptureSpec(
        inputs={"a": a, "v": v, "h": h, "idx": idx},
        outputs={
            "column": column,
            "transposed": transposed,
            "window": window,
            "gathered": gathered,
            "scattered": scattered,
            "filled": filled,
            "vectors": vectors,
            "halves": halves,
            "made_contiguous": made_contiguous,
            "masses": masses,
        },
        step=step,
    )
