"""A step that moves points, rebuilds a rebuildable index wp.Volume from them and looks the points up
(as Newton's implicit MPM refreshes its sparse grid). Warp rebuilds volumes in native code that its
APIC does not record: without the refusal the CPU capture saved a golden in which every lookup
missed, where the step found 3 of the 32 points.
WRP_TEST_VOLUME_REBUILD picks `step` (default: the rebuild in the step, refused), `build` (the
points moved and the volume rebuilt in build(), the step only looks them up: captures), or
`voxels` / `tiles` (the step reads the volume's voxel or tile coordinates into an array with
Volume.get_voxels() / get_tiles(), native code APIC does not record: refused; before, a second replay
of one load summed the zeros the step left there, 0 where every step gives the same sum)."""

import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

MODE = os.environ.get("WRP_TEST_VOLUME_REBUILD", "step")
N = 32
SHIFT = wp.vec3(0.0, 0.0, 3.0)


@wp.kernel
def move(points: wp.array(dtype=wp.vec3), shift: wp.vec3):
    i = wp.tid()
    points[i] = points[i] + shift


@wp.kernel
def probe(volume: wp.uint64, points: wp.array(dtype=wp.vec3), shift: wp.vec3, found: wp.array(dtype=int)):
    i = wp.tid()
    p = wp.volume_world_to_index(volume, points[i] + shift)
    found[i] = wp.volume_lookup_index(volume, int(wp.floor(p[0])), int(wp.floor(p[1])), int(wp.floor(p[2])))


@wp.kernel
def weigh(coords: wp.array2d(dtype=wp.int32), total: wp.array(dtype=wp.int32)):
    i = wp.tid()
    wp.atomic_add(total, 0, coords[i, 0] + 10 * coords[i, 1] + 100 * coords[i, 2])


def build(device):
    rng = np.random.default_rng(3)
    points = wp.array(rng.uniform(0.0, 8.0, (N, 3)).astype(np.float32), dtype=wp.vec3, device=device)
    volume = wp.Volume.allocate_by_voxels(
        points, voxel_size=1.0, device=device, rebuildable=True, max_active_voxels=4 * N
    )
    found = wp.zeros(N, dtype=int, device=device)
    count = volume.get_tile_count() if MODE == "tiles" else volume.get_voxel_count()
    coords = wp.zeros((count, 3), dtype=wp.int32, device=device)
    total = wp.zeros(1, dtype=wp.int32, device=device)
    if MODE == "build":
        wp.launch(move, dim=N, inputs=[points, SHIFT], device=device)
        volume.rebuild(points)

    def step():
        if MODE == "step":
            wp.launch(move, dim=N, inputs=[points, SHIFT], device=device)
            volume.rebuild(points)  # refused here
        if MODE in ("voxels", "tiles"):
            total.zero_()
            (volume.get_tiles if MODE == "tiles" else volume.get_voxels)(out=coords)  # refused here
            wp.launch(weigh, dim=count, inputs=[coords, total], device=device)
            coords.zero_()
        wp.launch(probe, dim=N, inputs=[volume.id, points, SHIFT, found], device=device)

    return CaptureSpec(
        inputs={"points": points},
        outputs={"found": found, **({"total": total} if MODE in ("voxels", "tiles") else {})},
        step=step,
        keep_alive=[volume],
    )
