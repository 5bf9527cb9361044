"""A step that samples two wp.Volumes (a scalar and a vector grid) passed by id, as NVIDIA's
volume samples do: Warp's APIC refuses such an id, and the capture records it as the address
of the volume's NanoVDB buffer, saved with the capture (wrpkg.capture.launch_recorder). One volume is
passed as wp.uint64, the other as wp.handle; a second kernel takes both inside a struct (a wp.uint64
field, and a wp.handle field of a nested struct, beside an array field), as warp.fem passes a
Nanogrid's volume."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 48


@wp.kernel
def sample(
    density: wp.uint64,
    velocity: wp.handle,
    points: wp.array(dtype=wp.vec3),
    values: wp.array(dtype=float),
    gradients: wp.array(dtype=wp.vec3),
    lookups: wp.array(dtype=float),
    flows: wp.array(dtype=wp.vec3),
):
    i = wp.tid()
    p = points[i]
    grad = wp.vec3()
    values[i] = wp.volume_sample_grad_f(density, p, wp.Volume.LINEAR, grad)
    gradients[i] = grad
    lookups[i] = wp.volume_lookup_f(density, int(p[0]), int(p[1]), int(p[2]))
    flows[i] = wp.volume_sample_v(
        wp.uint64(velocity), wp.volume_world_to_index(density, p), wp.Volume.CLOSEST
    )


@wp.struct
class Flow:
    velocity: wp.handle


@wp.struct
class Grids:
    points: wp.array(dtype=wp.vec3)
    density: wp.uint64
    flow: Flow


@wp.kernel
def sample_struct(grids: Grids, values: wp.array(dtype=float), flows: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    p = grids.points[i]
    values[i] = wp.volume_sample_f(grids.density, p, wp.Volume.LINEAR)
    flows[i] = wp.volume_sample_v(wp.uint64(grids.flow.velocity), p * 0.5, wp.Volume.LINEAR)


def build(device):
    rng = np.random.default_rng(11)
    voxels = (np.arange(6 * 5 * 4, dtype=np.float32).reshape(6, 5, 4) - 40) * np.float32(0.125)
    flow = rng.uniform(-1.0, 1.0, (4, 4, 4, 3)).astype(np.float32)
    density = wp.Volume.load_from_numpy(voxels, bg_value=-2.0, device=device)
    velocity = wp.Volume.load_from_numpy(flow, bg_value=wp.vec3(0.0, 0.0, 0.0), device=device)
    points = wp.array(rng.uniform(-1.0, 6.5, (N, 3)).astype(np.float32), dtype=wp.vec3, device=device)
    values = wp.zeros(N, dtype=float, device=device)
    gradients = wp.zeros(N, dtype=wp.vec3, device=device)
    lookups = wp.zeros(N, dtype=float, device=device)
    flows = wp.zeros(N, dtype=wp.vec3, device=device)
    struct_values = wp.zeros(N, dtype=float, device=device)
    struct_flows = wp.zeros(N, dtype=wp.vec3, device=device)
    grids = Grids()
    grids.points = points
    grids.density = density.id
    grids.flow = Flow()
    grids.flow.velocity = velocity.id

    def step():
        wp.launch(
            sample,
            dim=N,
            inputs=[density.id, velocity.id, points, values, gradients, lookups, flows],
            device=device,
        )
        wp.launch(sample_struct, dim=N, inputs=[grids, struct_values, struct_flows], device=device)

    return CaptureSpec(
        inputs={"points": points},
        outputs={
            "values": values,
            "gradients": gradients,
            "lookups": lookups,
            "flows": flows,
            "struct_values": struct_values,
            "struct_flows": struct_flows,
        },
        step=step,
        keep_alive=[density, velocity],
    )
