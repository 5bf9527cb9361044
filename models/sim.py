"""The example model: particles dropped onto a bumpy ground mesh.

A capture script for `wrpkg.capture` (see models/README.md for the contract): `build(device)`
allocates the state and returns the named inputs and outputs and the `step` callable whose
Warp operations make up one captured graph.

What one capture holds, so the pipeline is exercised end to end:
  - kernels in two Warp modules: `integrate` and `collide_mesh` in `sim_kernels`, and
    `record_energy` and `displacement` in this file;
  - a `@wp.struct` argument (`SimParams`), passed by value to three kernels;
  - a memset (`contacts.zero_()`), a fill (`energy.fill_(-1.0)`) and a copy (`wp.copy`);
  - a mesh query (`wp.mesh_query_point_no_sign` against a `wp.Mesh` ground);
  - STEPS (>= 100) simulation steps.

The same graph must give the same answers on the CPU and on CUDA within small declared
tolerances: a retargeted CUDA bundle carries golden values from a CPU replay. CUDA rounds
differently (fused multiply-adds), so the model avoids everything that turns an ulp into a
different outcome: particles do not bounce (a bounce off a curved surface amplifies every
difference, step after step), the ground holds them where they land (no sliding into creases
where two faces tie), and the drops are planned so that no particle reaches the contact
distance within a hair of a step boundary (`plan_drops`), which makes the contact counts
exact on both devices.
"""

import math

import numpy as np
import sim_kernels  # the harness puts this script's folder first on sys.path, as `python sim.py` would
import warp as wp

from wrpkg.capture import CaptureSpec
from wrpkg.golden import Tolerance

NUM_PARTICLES = 2048
STEPS = 120
GROUND_CELLS = 16  # the ground is a GROUND_CELLS x GROUND_CELLS heightfield, two triangles per cell
GROUND_EXTENT = 6.0  # the ground spans [-GROUND_EXTENT/2, GROUND_EXTENT/2] in x and z
GRAVITY = -9.81
DT = 1.0 / 60.0
DAMPING = 0.999
RADIUS = 0.05
# A particle's contact distance is reached no closer than this fraction of that step's
# approach to either end of the step: far more than any rounding difference.
LANDING_MARGIN = 0.2

# CPU and CUDA round differently (about an ulp an operation) and the model keeps that from
# growing (module docstring). A retargeted bundle's golden values come from a CPU replay and
# its CUDA replay is held to these. Perturbing the start state by 2 ulps moves `x` by at most
# 7e-7 and `energy` (about 1e3 to 1.3e4) by 2e-3 (tests/test_capture.py); these leave a
# margin of 100 for the per-operation differences of CUDA. `v` (every particle has landed and
# stopped) and `contacts` (integers) must match exactly.
TOLERANCES = {
    "x": Tolerance(atol=1.0e-4, rtol=1.0e-5),
    "displacement": Tolerance(atol=1.0e-4, rtol=1.0e-5),
    "energy": Tolerance(atol=1.0e-2, rtol=1.0e-4),
}


@wp.kernel
def record_energy(
    x: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
    params: sim_kernels.SimParams,
    energy: wp.array(dtype=float),
    step: int,
):
    """Total energy (unit masses) after step `step`, summed by one thread in a fixed order.

    A serial sum instead of `wp.atomic_add` keeps the result the same from run to run on
    CUDA, where the order of float atomics varies.
    """
    total = float(0.0)  # noqa: UP018 - Warp needs the constructor for a loop-carried variable
    for i in range(x.shape[0]):
        total += 0.5 * wp.dot(v[i], v[i]) - wp.dot(params.gravity, x[i])
    energy[step] = total


@wp.kernel
def displacement(x: wp.array(dtype=wp.vec3), x_start: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.length(x[i] - x_start[i])


def ground_height(x, z):
    return 0.15 * np.sin(2.0 * x) * np.cos(3.0 * z)


def ground_geometry() -> tuple[np.ndarray, np.ndarray]:
    """The ground's vertices (float32, as the mesh holds them) and triangles."""
    n = GROUND_CELLS
    coords = np.linspace(-GROUND_EXTENT / 2, GROUND_EXTENT / 2, n + 1, dtype=np.float64)
    points = [(x, 0.15 * math.sin(2.0 * x) * math.cos(3.0 * z), z) for z in coords for x in coords]
    indices = []
    for row in range(n):
        for col in range(n):
            a = row * (n + 1) + col
            b, c, d = a + 1, a + n + 1, a + n + 2
            # Counter-clockwise seen from above, so face normals point up (+y).
            indices.append((a, c, b))
            indices.append((b, c, d))
    return np.asarray(points, dtype=np.float32), np.asarray(indices, dtype=np.int32)


def make_ground(device: str) -> wp.Mesh:
    """A deterministic bumpy heightfield: y = 0.15 * sin(2x) * cos(3z)."""
    points, triangles = ground_geometry()
    return wp.Mesh(
        points=wp.array(points, dtype=wp.vec3, device=device),
        indices=wp.array(triangles.reshape(-1), dtype=wp.int32, device=device),
        # A loaded .wrp rebuilds every mesh with Warp's SAH constructor and leaf size 1
        # (Warp 1.19 records no other choice). Building the live mesh the same way makes the
        # captured graph compute exactly what this script computes when run eagerly.
        bvh_constructor="sah",
        bvh_leaf_size=1,
    )


def _segment_distance(p, a, b):
    ab = b - a
    t = np.clip(np.einsum("...k,...k", p - a, ab) / np.einsum("...k,...k", ab, ab), 0.0, 1.0)
    return np.linalg.norm(p - (a + t[..., None] * ab), axis=-1)


def triangle_distance(p: np.ndarray, tri: np.ndarray) -> np.ndarray:
    """Unsigned distance (float64) from points (N, 3) to triangles (N, M, 3 corners, 3): (N, M)."""
    a, b, c = tri[:, :, 0], tri[:, :, 1], tri[:, :, 2]
    q = p[:, None, :]
    normal = np.cross(b - a, c - a)
    normal /= np.linalg.norm(normal, axis=-1, keepdims=True)
    height = np.einsum("nmk,nmk->nm", q - a, normal)
    proj = q - height[..., None] * normal
    inside = np.ones(height.shape, dtype=bool)
    for u, w in ((a, b), (b, c), (c, a)):
        inside &= np.einsum("nmk,nmk->nm", np.cross(w - u, proj - u), normal) >= 0.0
    edges = np.minimum(
        np.minimum(_segment_distance(q, a, b), _segment_distance(q, b, c)), _segment_distance(q, c, a)
    )
    return np.where(inside, np.abs(height), edges)


def neighbor_faces(face: np.ndarray) -> np.ndarray:
    """The faces of the 3 x 3 cells around each face's cell (N, 18), the face itself first.

    Every other face is more than a cell away horizontally, far beyond the heights checked.
    """
    n = GROUND_CELLS
    row, col = face // 2 // n, face // 2 % n
    out = [face]
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            cell = np.clip(row + dr, 0, n - 1) * n + np.clip(col + dc, 0, n - 1)
            out += [2 * cell, 2 * cell + 1]
    return np.stack(out, axis=1)


def plan_drops(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Start positions, start velocities and landing steps (float64) of every particle.

    Each particle is thrown straight up (or dropped) above the inside of one ground triangle,
    at least a particle radius from its edges, so it lands on that face and no other face is
    as close. Its flight is replayed here in float64 and its start height drawn again until
    the step that brings it within RADIUS of the ground comes LANDING_MARGIN of that step's
    approach away from either end and leaves it above the surface: the contact test of every
    step then has the same answer on any device.
    """
    points, triangles = ground_geometry()
    tri = points[triangles].astype(np.float64)  # (T, 3 corners, xyz)
    face = rng.integers(0, len(triangles), size=NUM_PARTICLES)
    # Barycentric coordinates of at least 0.25: >= 0.066 from every edge of a 0.375 cell.
    bary = rng.dirichlet((4.0, 4.0, 4.0), size=NUM_PARTICLES)
    bary = 0.25 + 0.25 * bary
    foot = np.einsum("nk,nkj->nj", bary, tri[face])  # the point of the face below the particle
    normal = np.cross(tri[face, 1] - tri[face, 0], tri[face, 2] - tri[face, 0])
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    vy0 = rng.uniform(0.0, 2.5, size=NUM_PARTICLES)
    height = np.zeros(NUM_PARTICLES)
    landing = np.full(NUM_PARTICLES, -1)
    todo = np.arange(NUM_PARTICLES)
    for _ in range(200):
        if todo.size == 0:
            break
        height[todo] = rng.uniform(0.15, 1.0, size=todo.size)
        # The distance to the face's plane along the vertical flight, steps 0..STEPS.
        y = np.zeros((todo.size, STEPS + 1))
        vy = vy0[todo].copy()
        for k in range(1, STEPS + 1):
            vy = (vy + GRAVITY * DT) * DAMPING
            y[:, k] = y[:, k - 1] + vy * DT
        dist = (height[todo, None] + y) * normal[todo, 1:2]
        reached = dist < RADIUS
        ok = reached.any(axis=1)
        k = np.where(ok, reached.argmax(axis=1), 1)
        rows = np.arange(todo.size)
        approach = dist[rows, k - 1] - dist[rows, k]
        into = (RADIUS - dist[rows, k]) / approach
        ok &= (
            (k >= 1)
            & (into > LANDING_MARGIN)
            & (into < 1.0 - LANDING_MARGIN)
            & (dist[rows, k] > 0.2 * RADIUS)
        )
        landing[todo[ok]] = k[ok]
        todo = todo[~ok]
    if todo.size:
        raise RuntimeError(f"plan_drops: {todo.size} particles found no landing with a safe margin")
    x0 = foot + height[:, None] * np.array([0.0, 1.0, 0.0])
    v0 = np.zeros((NUM_PARTICLES, 3))
    v0[:, 1] = vy0
    # No other face may be as close as the landing face in the last steps before contact.
    vy, rise = vy0.copy(), np.zeros((NUM_PARTICLES, STEPS + 1))
    for k in range(1, STEPS + 1):
        vy = (vy + GRAVITY * DT) * DAMPING
        rise[:, k] = rise[:, k - 1] + vy * DT
    faces = neighbor_faces(face)
    rows = np.arange(NUM_PARTICLES)
    for k in (landing - 1, landing):
        p = x0 + rise[rows, k, None] * np.array([0.0, 1.0, 0.0])
        d = triangle_distance(p, tri[faces])
        own, others = d[:, 0], np.where(faces[:, 1:] == face[:, None], np.inf, d[:, 1:])
        if not (others.min(axis=1) > own + 1.0e-3).all():
            raise RuntimeError("plan_drops: a particle would land where two faces are about as close")
    return x0, v0, landing


def build(device: str) -> CaptureSpec:
    x0, v0, _ = plan_drops(np.random.default_rng(7))

    x = wp.array(x0.astype(np.float32), dtype=wp.vec3, device=device)
    v = wp.array(v0.astype(np.float32), dtype=wp.vec3, device=device)
    # zeros, not empty: every array's bytes at capture time are saved in the .wrp, and
    # uninitialized memory would make two captures differ.
    x_start = wp.zeros(NUM_PARTICLES, dtype=wp.vec3, device=device)
    disp = wp.zeros(NUM_PARTICLES, dtype=float, device=device)
    energy = wp.zeros(STEPS, dtype=float, device=device)
    contacts = wp.zeros(STEPS, dtype=wp.int32, device=device)
    ground = make_ground(device)

    params = sim_kernels.SimParams()
    params.gravity = wp.vec3(0.0, GRAVITY, 0.0)
    params.dt = DT
    params.damping = DAMPING
    params.radius = RADIUS
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
        tolerances=TOLERANCES,
        # The mesh must outlive the capture and the save: keep a reference with the spec.
        keep_alive=[ground],
    )
