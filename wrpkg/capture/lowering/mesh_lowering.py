"""`wp.Mesh.refit()` in a step, as Warp operations APIC records.

Warp refits a mesh in native code (`wp_mesh_refit_host`, `wp_mesh_refit_device`) that its APIC
does not record, so a saved graph would query the mesh as the load built it, from the points of
the load (seen on the CPU: a distance of 2.449 replayed where the step gave 2.0). NVIDIA's
`example_mesh` and Newton's ray-cast sensors refit a deforming mesh in every step. While a step
records, in any mode, each `mesh.refit()` is recorded as Warp's own refit, on whichever mesh the
replay has (the mesh is passed as a `wp.handle`, which APIC relocates to the mesh it creates at
load), each device's way, so that a replay gives the bits Warp's refit of that device gives:

1. one thread a triangle: its bounds into the mesh's `lowers`/`uppers` (the CPU's
   `bounds3::add_point`, CUDA's `compute_triangle_bounds`) and its summed edge lengths;
2. `wp.utils.array_scan` of those lengths (a recorded operation: the CPU's loop, CUB on a GPU,
   as Warp's refit scans them), the mesh's `average_edge_length` from the last (one thread);
   on CUDA also the BVH's child counters cleared, as `bvh_refit_device` does;
3. the BVH refit: on the CPU one thread walks the tree in post-order (`bvh_refit_recursive`),
   on CUDA one thread a leaf climbs as Warp's `bvh_refit_kernel` does.

Refused, by the step guard's words: a mesh built with `support_winding_number=True` (its refit
also updates solid-angle data), and a new `Mesh.points` (the descriptor's array changes).
"""

import functools

from wrpkg import warp_internals

_MODULE = "wrpkg_lowered_mesh_refit"

_BOUNDS_SNIPPET = """
wp::Mesh& m = *(wp::Mesh*)(mesh);
const wp::vec3 p = m.points.data[m.indices.data[tid * 3 + 0]];
const wp::vec3 q = m.points.data[m.indices.data[tid * 3 + 1]];
const wp::vec3 r = m.points.data[m.indices.data[tid * 3 + 2]];
#if defined(__CUDA_ARCH__)
m.lowers[tid] = wp::min(wp::min(p, q), r);
m.uppers[tid] = wp::max(wp::max(p, q), r);
edge_lengths.data[tid] = wp::length(p - q) + wp::length(p - r) + wp::length(q - r);
#else
wp::bounds3 b;
b.add_point(p);
b.add_point(q);
b.add_point(r);
m.lowers[tid] = b.lower;
m.uppers[tid] = b.upper;
edge_lengths.data[tid] = wp::length(p - q) + wp::length(p - r) + wp::length(r - q);
#endif
"""

_AVERAGE_SNIPPET = """
wp::Mesh& m = *(wp::Mesh*)(mesh);
if (tid == 0) {
#if defined(__CUDA_ARCH__)
    m.average_edge_length = edge_sums.data[m.num_tris - 1] / (3 * m.num_tris);
#else
    m.average_edge_length = edge_sums.data[m.num_tris - 1] / (m.num_tris * 3);
#endif
}
#if defined(__CUDA_ARCH__)
if (m.bvh.node_counts && tid < m.bvh.max_nodes)
    m.bvh.node_counts[tid] = 0;
#endif
"""

# CUDA: bvh_refit_kernel (warp/native/bvh.cu) for node `tid`. CPU: bvh_refit_recursive
# (warp/native/bvh.cpp) as a post-order walk over the parent links, by thread 0.
_REFIT_SNIPPET = """
wp::BVH& bvh = ((wp::Mesh*)(mesh))->bvh;
wp::BVHPackedNodeHalf* node_lowers = bvh.node_lowers;
wp::BVHPackedNodeHalf* node_uppers = bvh.node_uppers;
#if defined(__CUDA_ARCH__)
int index = tid;
if (index >= bvh.num_leaf_nodes)
    return;
bool leaf = node_lowers[index].b;
int parent = bvh.node_parents[index];
if (!leaf)
    return;
if (parent == -1 || !node_lowers[parent].b) {
    wp::bounds3 bound;
    for (int primitive_counter = node_lowers[index].i; primitive_counter < node_uppers[index].i; primitive_counter++) {
        const int primitive = bvh.primitive_indices[primitive_counter];
        bound.add_bounds(bvh.item_lowers[primitive], bvh.item_uppers[primitive]);
    }
    (wp::vec3&)node_lowers[index] = bound.lower;
    (wp::vec3&)node_uppers[index] = bound.upper;
}
for (;;) {
    parent = bvh.node_parents[index];
    if (parent == -1)
        return;
    __threadfence();
    int finished = atomicAdd(&bvh.node_counts[parent], 1);
    if (finished != 1)
        return;
    wp::BVHPackedNodeHalf& parent_lower = node_lowers[parent];
    wp::BVHPackedNodeHalf& parent_upper = node_uppers[parent];
    if (parent_lower.b) {
        int parent_parent = bvh.node_parents[parent];
        if (parent_parent == -1 || !node_lowers[parent_parent].b) {
            wp::bounds3 bound;
            for (int primitive_counter = parent_lower.i; primitive_counter < parent_upper.i; primitive_counter++) {
                const int primitive = bvh.primitive_indices[primitive_counter];
                bound.add_bounds(bvh.item_lowers[primitive], bvh.item_uppers[primitive]);
            }
            (wp::vec3&)parent_lower = bound.lower;
            (wp::vec3&)parent_upper = bound.upper;
        }
    } else {
        const int left_child = parent_lower.i;
        const int right_child = parent_upper.i;
        wp::vec3 left_lower = (wp::vec3&)(node_lowers[left_child]);
        wp::vec3 left_upper = (wp::vec3&)(node_uppers[left_child]);
        wp::vec3 right_lower = (wp::vec3&)(node_lowers[right_child]);
        wp::vec3 right_upper = (wp::vec3&)(node_uppers[right_child]);
        wp::vec3 lower = wp::min(left_lower, right_lower);
        wp::vec3 upper = wp::max(left_upper, right_upper);
        (wp::vec3&)parent_lower = lower;
        (wp::vec3&)parent_upper = upper;
    }
    index = parent;
}
#else
if (tid != 0 || !bvh.root || bvh.num_nodes <= 0)
    return;
int index = *bvh.root;
int previous = bvh.node_parents[index];
const int top = previous;
while (index != top) {
    wp::BVHPackedNodeHalf& lower = node_lowers[index];
    wp::BVHPackedNodeHalf& upper = node_uppers[index];
    const int parent = bvh.node_parents[index];
    int next = parent;
    if (lower.b) {
        wp::bounds3 bound;
        for (int item_counter = lower.i; item_counter < upper.i; item_counter++) {
            const int item = bvh.primitive_indices[item_counter];
            bound.add_bounds(bvh.item_lowers[item], bvh.item_uppers[item]);
        }
        reinterpret_cast<wp::vec3&>(lower) = bound.lower;
        reinterpret_cast<wp::vec3&>(upper) = bound.upper;
    } else if (previous == parent) {
        next = lower.i;
    } else if (previous == (int)lower.i) {
        next = upper.i;
    } else {
        const wp::vec3& left_lower = reinterpret_cast<const wp::vec3&>(node_lowers[lower.i]);
        const wp::vec3& left_upper = reinterpret_cast<const wp::vec3&>(node_uppers[lower.i]);
        const wp::vec3& right_lower = reinterpret_cast<const wp::vec3&>(node_lowers[upper.i]);
        const wp::vec3& right_upper = reinterpret_cast<const wp::vec3&>(node_uppers[upper.i]);
        wp::vec3 new_lower = wp::std_min(left_lower, right_lower);
        wp::vec3 new_upper = wp::std_max(left_upper, right_upper);
        reinterpret_cast<wp::vec3&>(lower) = new_lower;
        reinterpret_cast<wp::vec3&>(upper) = new_upper;
    }
    previous = index;
    index = next;
}
#endif
"""


@functools.cache
def _kernels():
    """(triangle bounds, average edge length, BVH refit): one module for every mesh."""
    import warp as wp  # noqa: PLC0415 - Warp is imported lazily

    def triangle_bounds(mesh: wp.handle, edge_lengths: wp.array(dtype=wp.float32), tid: int): ...

    def average_edge(mesh: wp.handle, edge_sums: wp.array(dtype=wp.float32), tid: int): ...

    def refit_nodes(mesh: wp.handle, tid: int): ...

    funcs = []
    for stub, snippet in (
        (triangle_bounds, _BOUNDS_SNIPPET),
        (average_edge, _AVERAGE_SNIPPET),
        (refit_nodes, _REFIT_SNIPPET),
    ):
        stub.__name__ = stub.__qualname__ = f"mesh_refit_{stub.__name__}"
        funcs.append(wp.func_native(snippet)(stub))
    bounds_func, average_func, refit_func = funcs

    def bounds_kernel(mesh: wp.handle, edge_lengths: wp.array(dtype=wp.float32)):
        bounds_func(mesh, edge_lengths, wp.tid())

    def average_kernel(mesh: wp.handle, edge_sums: wp.array(dtype=wp.float32)):
        average_func(mesh, edge_sums, wp.tid())

    def refit_kernel(mesh: wp.handle):
        refit_func(mesh, wp.tid())

    kernel = functools.partial(wp.kernel, module=_MODULE, enable_backward=False)
    return (
        kernel(bounds_kernel, name="mesh_refit_triangle_bounds"),
        kernel(average_kernel, name="mesh_refit_average_edge_length"),
        kernel(refit_kernel, name="mesh_refit_bvh"),
    )


class MeshRefitLowering:
    """Hooks `wp.Mesh.refit` for one recording."""

    def __init__(self, guard):
        # The recording's wrpkg.capture.step_guard.StepGuard: it words and keeps the refusals.
        self._guard = guard
        self._scratch: dict[int, tuple] = {}  # id(mesh) -> (edge lengths, their sums), reused
        self.refits = 0

    def patches(self) -> list[tuple[object, str, object]]:
        import warp as wp  # noqa: PLC0415

        lowering = self
        original_refit = wp.Mesh.refit

        def refit(mesh):
            if warp_internals.context()._get_apic_capture_for_device(mesh.device) is None:
                return original_refit(mesh)
            if getattr(mesh, "support_winding_number", False):
                raise lowering._guard.refuse_geometry_update(
                    "Mesh.refit() of a mesh built with support_winding_number=True, whose solid-angle data "
                    "wrpkg does not record"
                )
            lowering.refit(mesh)
            return None

        return [(wp.Mesh, "refit", refit)]

    def refit(self, mesh) -> None:
        """Records `mesh.refit()` as Warp operations (the module docstring)."""
        import warp as wp  # noqa: PLC0415

        num_tris = mesh.indices.shape[0] // 3
        if num_tris == 0:
            return
        device = mesh.device
        scratch = self._scratch.get(id(mesh))
        if scratch is None:
            scratch = (
                wp.empty(num_tris, dtype=wp.float32, device=device),
                wp.empty(num_tris, dtype=wp.float32, device=device),
                mesh,
            )
            self._scratch[id(mesh)] = scratch
        lengths, sums, _ = scratch
        bounds_kernel, average_kernel, refit_kernel = _kernels()
        wp.launch(bounds_kernel, dim=num_tris, inputs=[mesh.id, lengths], device=device)
        wp.utils.array_scan(lengths, sums, inclusive=True)
        # Enough threads for the CUDA counters of any tree over these triangles (2n - 1 nodes).
        nodes = 2 * num_tris
        wp.launch(average_kernel, dim=nodes, inputs=[mesh.id, sums], device=device)
        wp.launch(refit_kernel, dim=nodes, inputs=[mesh.id], device=device)
        self.refits += 1
