"""A step that rebuilds a wp.HashGrid and queries it, as NVIDIA's SPH and DEM samples do:
what Warp's APIC refuses ("HashGrid serialization is not yet supported") and wrpkg lowers to
operations it records (wrpkg.capture.lowering.hash_grid_lowering). WRP_TEST_HASH_GRID picks the grid: `float32`
(default), `float64`, `float16`, or `groups` (a grouped build and grouped queries)."""

import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 64
KIND = os.environ.get("WRP_TEST_HASH_GRID", "float32")
SCALAR = {"float32": wp.float32, "float64": wp.float64, "float16": wp.float16, "groups": wp.float32}[KIND]
VEC3 = wp.types.vector(3, SCALAR)


@wp.kernel
def neighbours(
    grid: wp.uint64,
    points: wp.array(dtype=VEC3),
    radius: SCALAR,
    counts: wp.array(dtype=wp.int32),
    sums: wp.array(dtype=SCALAR),
    first: wp.array(dtype=wp.int32),
):
    tid = wp.tid()
    i = wp.hash_grid_point_id(grid, tid)
    p = points[i]
    count = wp.int32(0)
    total = SCALAR(0.0)
    order = wp.int32(0)
    for j in wp.hash_grid_query(grid, p, radius):
        d = wp.length(p - points[j])
        if d <= radius:
            count += 1
            total += d
            # The query's order is the grid's: this records it.
            order = order * 31 + j
    counts[i] = count
    sums[i] = total
    first[i] = order


@wp.kernel
def grouped_neighbours(
    grid: wp.uint64,
    points: wp.array(dtype=VEC3),
    groups: wp.array(dtype=wp.int32),
    radius: SCALAR,
    counts: wp.array(dtype=wp.int32),
):
    i = wp.tid()
    count = wp.int32(0)
    for j in wp.hash_grid_query(grid, points[i], radius, groups[i]):
        if wp.length(points[i] - points[j]) <= radius:
            count += 1
    counts[i] = count


@wp.kernel
def drift(points: wp.array(dtype=VEC3), velocities: wp.array(dtype=VEC3), dt: SCALAR):
    i = wp.tid()
    points[i] = points[i] + velocities[i] * dt


def build(device):
    rng = np.random.default_rng(7)
    np_scalar = {wp.float32: np.float32, wp.float64: np.float64, wp.float16: np.float16}[SCALAR]
    points = wp.array(rng.uniform(-1.0, 1.0, (N, 3)).astype(np_scalar), dtype=VEC3, device=device)
    velocities = wp.array(rng.uniform(-2.0, 2.0, (N, 3)).astype(np_scalar), dtype=VEC3, device=device)
    groups = wp.array((np.arange(N) % 3).astype(np.int32), dtype=wp.int32, device=device)
    grid = wp.HashGrid(8, 8, 8, device=device, dtype=SCALAR)
    radius = 0.45
    counts = [wp.zeros(N, dtype=wp.int32, device=device) for _ in range(2)]
    sums = [wp.zeros(N, dtype=SCALAR, device=device) for _ in range(2)]
    first = [wp.zeros(N, dtype=wp.int32, device=device) for _ in range(2)]

    def step():
        for k in range(2):  # build, query, move: twice
            if KIND == "groups":
                grid.build(points, radius, groups=groups)
                wp.launch(
                    grouped_neighbours,
                    dim=N,
                    inputs=[grid.id, points, groups, radius, counts[k]],
                    device=device,
                )
            else:
                grid.build(points, radius)
                wp.launch(
                    neighbours,
                    dim=N,
                    inputs=[grid.id, points, radius, counts[k], sums[k], first[k]],
                    device=device,
                )
            wp.launch(drift, dim=N, inputs=[points, velocities, 0.1], device=device)

    outputs = {"points": points, "counts0": counts[0], "counts1": counts[1]}
    if KIND != "groups":
        outputs.update({"sums0": sums[0], "sums1": sums[1], "first0": first[0], "first1": first[1]})
    return CaptureSpec(inputs={"velocities": velocities}, outputs=outputs, step=step)
