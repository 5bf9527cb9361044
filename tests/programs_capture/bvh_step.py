"""A step that moves items, refits a wp.Bvh over them and queries it, as Newton's cloth
self-contact does (VBD: `TriMeshCollisionDetector.refit()`, then its query kernels): Warp's APIC
saves no BVH and refuses a recorded `Bvh.refit()`; wrpkg records it (wrpkg.capture.lowering.bvh_lowering).
WRP_TEST_BVH picks the case: `refit` (default), `query` (queried only, no refit), `groups` (a
grouped BVH, queries from each group's root) or `leaves` (leaf_size 4: packed leaves)."""

import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 96
QUERIES = 48
KIND = os.environ.get("WRP_TEST_BVH", "refit")


@wp.kernel
def move(
    centers: wp.array(dtype=wp.vec3),
    velocities: wp.array(dtype=wp.vec3),
    half: float,
    lowers: wp.array(dtype=wp.vec3),
    uppers: wp.array(dtype=wp.vec3),
):
    i = wp.tid()
    c = centers[i] + velocities[i] * 0.05
    centers[i] = c
    lowers[i] = c - wp.vec3(half)
    uppers[i] = c + wp.vec3(half)


@wp.kernel
def overlaps(
    bvh: wp.uint64,
    queries: wp.array(dtype=wp.vec3),
    reach: float,
    counts: wp.array(dtype=wp.int32),
    order: wp.array(dtype=wp.int32),
):
    i = wp.tid()
    q = queries[i]
    query = wp.bvh_query_aabb(bvh, q - wp.vec3(reach), q + wp.vec3(reach))
    item = wp.int32(0)
    count = wp.int32(0)
    trail = wp.int32(0)
    while wp.bvh_query_next(query, item):
        count += 1
        # The traversal's order is the tree's: this records it.
        trail = trail * 31 + item
    counts[i] = count
    order[i] = trail


@wp.kernel
def group_roots(bvh: wp.uint64, roots: wp.array(dtype=wp.int32)):
    g = wp.tid()
    roots[g] = wp.bvh_get_group_root(bvh, g)


@wp.kernel
def grouped_overlaps(
    bvh: wp.uint64,
    roots: wp.array(dtype=wp.int32),
    queries: wp.array(dtype=wp.vec3),
    reach: float,
    counts: wp.array(dtype=wp.int32),
):
    i = wp.tid()
    q = queries[i]
    query = wp.bvh_query_aabb(bvh, q - wp.vec3(reach), q + wp.vec3(reach), roots[i % 3])
    item = wp.int32(0)
    count = wp.int32(0)
    while wp.bvh_query_next(query, item):
        count += 1
    counts[i] = count


@wp.kernel
def rays(bvh: wp.uint64, origins: wp.array(dtype=wp.vec3), hits: wp.array(dtype=wp.int32)):
    i = wp.tid()
    query = wp.bvh_query_ray(bvh, origins[i], wp.vec3(0.0, 0.0, 1.0))
    item = wp.int32(0)
    count = wp.int32(0)
    while wp.bvh_query_next(query, item):
        count += 1
    hits[i] = count


def build(device):
    rng = np.random.default_rng(11)
    centers = wp.array(rng.uniform(-1.0, 1.0, (N, 3)).astype(np.float32), dtype=wp.vec3, device=device)
    velocities = wp.array(rng.uniform(-4.0, 4.0, (N, 3)).astype(np.float32), dtype=wp.vec3, device=device)
    queries = wp.array(rng.uniform(-1.0, 1.0, (QUERIES, 3)).astype(np.float32), dtype=wp.vec3, device=device)
    half = 0.1
    lowers = wp.array(centers.numpy() - half, dtype=wp.vec3, device=device)
    uppers = wp.array(centers.numpy() + half, dtype=wp.vec3, device=device)
    groups = (
        wp.array((np.arange(N) % 3).astype(np.int32), dtype=wp.int32, device=device)
        if KIND == "groups"
        else None
    )
    bvh = wp.Bvh(lowers, uppers, groups=groups, leaf_size=4 if KIND == "leaves" else 1)
    counts = wp.zeros(QUERIES, dtype=wp.int32, device=device)
    order = wp.zeros(QUERIES, dtype=wp.int32, device=device)
    hits = wp.zeros(QUERIES, dtype=wp.int32, device=device)
    roots = wp.zeros(3, dtype=wp.int32, device=device)

    def step():
        for _ in range(2):
            if KIND != "query":
                wp.launch(move, dim=N, inputs=[centers, velocities, half, lowers, uppers], device=device)
                bvh.refit()
            if KIND == "groups":
                wp.launch(group_roots, dim=3, inputs=[bvh.id, roots], device=device)
                wp.launch(
                    grouped_overlaps, dim=QUERIES, inputs=[bvh.id, roots, queries, 0.3, counts], device=device
                )
            else:
                wp.launch(overlaps, dim=QUERIES, inputs=[bvh.id, queries, 0.3, counts, order], device=device)
            wp.launch(rays, dim=QUERIES, inputs=[bvh.id, queries, hits], device=device)

    outputs = {"counts": counts, "hits": hits}
    if KIND != "query":
        outputs["centers"] = centers
    if KIND != "groups":
        outputs["order"] = order
    return CaptureSpec(inputs={"queries": queries}, outputs=outputs, step=step, keep_alive=[bvh])
