"""The example model: particles falling onto a bumpy ground mesh.

A capture script for `wrpkg.capture` (see models/README.md for the contract): `build(device)`
allocates the state and returns the named inputs and outputs and the `step` callable whose
Warp operations make up one captured graph.

What one capture holds, so the pipeline is exercised end to end:
  - kernels in two Warp modules: `integrate` and `collide_mesh` in `sim_kernels`, and
    `record_energy` and `displacement` in this file;
  - a `@wp.struct` argument (`SimParams`), passed by value to two kernels;
  - a memset (`contacts.zero_()`), a fill (`energy.fill_(-1.0)`) and a copy (`wp.copy`);
  - a mesh query (`wp.mesh_query_point_no_sign` against a `wp.Mesh` ground);
  - STEPS (>= 100) simulation steps.
Every output is computed without float atomics, so golden values are bit-exact on CPU and CUDA.
"""

import math

import numpy as np
import sim_kernels  # the harness puts this script's folder first on sys.path, as `python sim.py` would
import warp as wp

from wrpkg.capture import CaptureSpec

NUM_PARTICLES = 2048
STEPS = 120
GROUND_CELLS = 16  # the ground is a GROUND_CELLS x GROUND_CELLS heightfield, two triangles per cell
GROUND_EXTENT = 6.0  # the ground spans [-GROUND_EXTENT/2, GROUND_EXTENT/2] in x and z


@wp.kernel
def record_energy(
    x: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
    params: sim_kernels.SimParams,
    energy: wp.array(dtype=float),
    step: int,
):
    """Total energy (unit masses) after step `step`, summed by one thread in a fixed order.

    A serial sum instead of `wp.atomic_add` keeps the result bit-exact on CUDA, where the
    order of float atomics varies from run to run.
    """
    total = float(0.0)  # noqa: UP018 - Warp needs the constructor for a loop-carried variable
    for i in range(x.shape[0]):
        total += 0.5 * wp.dot(v[i], v[i]) - wp.dot(params.gravity, x[i])
    energy[step] = total


@wp.kernel
def displacement(x: wp.array(dtype=wp.vec3), x_start: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.length(x[i] - x_start[i])


def make_ground(device: str) -> wp.Mesh:
    """A deterministic bumpy heightfield: y = 0.15 * sin(2x) * cos(3z)."""
    n = GROUND_CELLS
    coords = np.linspace(-GROUND_EXTENT / 2, GROUND_EXTENT / 2, n + 1, dtype=np.float64)
    points = []
    for z in coords:
        for x in coords:
            points.append((x, 0.15 * math.sin(2.0 * x) * math.cos(3.0 * z), z))
    indices = []
    for row in range(n):
        for col in range(n):
            a = row * (n + 1) + col
            b, c, d = a + 1, a + n + 1, a + n + 2
            # Counter-clockwise seen from above, so face normals point up (+y).
            indices.extend((a, c, b, b, c, d))
    return wp.Mesh(
        points=wp.array(np.asarray(points, dtype=np.float32), dtype=wp.vec3, device=device),
        indices=wp.array(np.asarray(indices, dtype=np.int32), dtype=wp.int32, device=device),
        # A loaded .wrp rebuilds every mesh with Warp's SAH constructor and leaf size 1
        # (Warp 1.19 records no other choice). Building the live mesh the same way makes the
        # captured graph compute exactly what this script computes when run eagerly.
        bvh_constructor="sah",
        bvh_leaf_size=1,
    )


def build(device: str) -> CaptureSpec:
    rng = np.random.default_rng(7)
    x0 = rng.uniform((-1.0, 0.4, -1.0), (1.0, 1.6, 1.0), size=(NUM_PARTICLES, 3)).astype(np.float32)
    v0 = rng.normal(0.0, 0.2, size=(NUM_PARTICLES, 3)).astype(np.float32)

    x = wp.array(x0, dtype=wp.vec3, device=device)
    v = wp.array(v0, dtype=wp.vec3, device=device)
    # zeros, not empty: every array's bytes at capture time are saved in the .wrp, and
    # uninitialized memory would make two captures differ.
    x_start = wp.zeros(NUM_PARTICLES, dtype=wp.vec3, device=device)
    disp = wp.zeros(NUM_PARTICLES, dtype=float, device=device)
    energy = wp.zeros(STEPS, dtype=float, device=device)
    contacts = wp.zeros(STEPS, dtype=wp.int32, device=device)
    ground = make_ground(device)

    params = sim_kernels.SimParams()
    params.gravity = wp.vec3(0.0, -9.81, 0.0)
    params.dt = 1.0 / 60.0
    params.damping = 0.999
    params.restitution = 0.4
    params.friction = 0.1
    params.radius = 0.02
    params.max_query_dist = 1.0

    def step() -> None:
        wp.copy(x_start, x)
        contacts.zero_()
        energy.fill_(-1.0)  # steps that did not run read as -1
        for s in range(STEPS):
            wp.launch(sim_kernels.integrate, dim=NUM_PARTICLES, inputs=[x, v, params], device=device)
            wp.launch(
                sim_kernels.collide_mesh,
                dim=NUM_PARTICLES,
                inputs=[ground.id, x, v, params, contacts, s],
                device=device,
            )
            wp.launch(record_energy, dim=1, inputs=[x, v, params, energy, s], device=device)
        wp.launch(displacement, dim=NUM_PARTICLES, inputs=[x, x_start, disp], device=device)

    return CaptureSpec(
        inputs={"x": x, "v": v},
        outputs={"x": x, "v": v, "energy": energy, "contacts": contacts, "displacement": disp},
        step=step,
        # Every output is deterministic (see the module docstring): no tolerances needed.
        tolerances={},
        # The mesh must outlive the capture and the save: keep a reference with the spec.
        keep_alive=[ground],
    )
