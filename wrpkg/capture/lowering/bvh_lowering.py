"""A `wp.Bvh` queried and refitted in a step, as Warp operations APIC records, and its id relocated.

Warp 1.19's APIC saves no BVH: a BVH's id is the address of a native `wp::BVH` descriptor whose
node buffers no saved graph holds, and `Bvh.refit()` runs in native code (a CPU capture records
it, and `capture_save` then refuses the graph). Newton's cloth self-contact (VBD) refits its
triangle and edge BVHs in every step and queries them in its own kernels. While a CPU step
records (a CPU capture, or the CPU run of a retargeted one), a BVH whose id the step reads is
lowered, once, the first time the step reads `bvh.id` or calls `bvh.refit()`:

1. its node buffers (`node_lowers`, `node_uppers`, `node_parents`, `node_counts`,
   `primitive_indices`, `root`) are copied, as they are when the step starts, into Warp arrays
   that the capture saves as regions; the item bounds (and groups) are the BVH's own arrays;
2. a one-thread kernel writes the `wp::BVH` descriptor into a `wp.array`, with the addresses the
   replay passes it; for the rest of the step `bvh.id` is that array's address, and a launch
   parameter (`wp.uint64` or `wp.handle`) holding it is recorded as a relocation to it;
3. each `bvh.refit()` is one launch per tree level, deepest first, each node updated by Warp's
   own host refit code (`bvh_refit_recursive` in warp/native/bvh.cpp: a leaf's bounds from its
   items with `bounds3::add_bounds`, an inner node's as `std_min`/`std_max` of its children's).
   The tree's shape is fixed by the build, so the levels are read once, from the copied nodes.
   Min and max are exact, so every replay's bounds are the bits Warp's refit gives, on the CPU and
   on any GPU.

A retargeted capture ships the tree the CPU built (SAH), not the LBVH a GPU would build: queries
find the same items, maybe visited in another order; capture.json names such BVHs
(`bvhs_built_on_cpu`). Not lowered, and refused by the stale-pointer check or the step guard: a
BVH on a CUDA device (a GPU capture), an id read before the step (kept in a struct or a launch
command), `Bvh.rebuild()` in the step (a new tree shape each time), and a cuBQL-built BVH.
"""

import ctypes
import functools
import os
import sys
from dataclasses import dataclass

_MODULE = "wrpkg_lowered_bvh"
# sizeof(wp::BVH) is 112 bytes (warp/native/bvh.h); the descriptor array is a little larger.
_HEADER_WORDS = 16
# BvhConstructor.CUBQL (warp/native/bvh.h BVH_CONSTRUCTOR_CUBQL): another node layout.
_CONSTRUCTOR_CUBQL = 3
_WRPKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class NativeBvh(ctypes.Structure):
    """`struct BVH` of warp/native/bvh.h (Warp 1.19), as a CPU BVH's id points to it."""

    _fields_ = [
        ("node_lowers", ctypes.c_void_p),
        ("node_uppers", ctypes.c_void_p),
        ("node_parents", ctypes.c_void_p),
        ("node_counts", ctypes.c_void_p),
        ("primitive_indices", ctypes.c_void_p),
        ("max_depth", ctypes.c_int),
        ("max_nodes", ctypes.c_int),
        ("num_nodes", ctypes.c_int),
        ("num_leaf_nodes", ctypes.c_int),
        ("root", ctypes.c_void_p),
        ("item_lowers", ctypes.c_void_p),
        ("item_uppers", ctypes.c_void_p),
        ("item_groups", ctypes.c_void_p),
        ("num_items", ctypes.c_int),
        ("leaf_size", ctypes.c_int),
        ("constructor_type", ctypes.c_int),
        ("context", ctypes.c_void_p),
    ]


_HEADER_SNIPPET = """
wp::BVH bvh;
bvh.node_lowers = (wp::BVHPackedNodeHalf*)(node_lowers.data);
bvh.node_uppers = (wp::BVHPackedNodeHalf*)(node_uppers.data);
bvh.node_parents = node_parents.data;
bvh.node_counts = node_counts.data;
bvh.primitive_indices = primitive_indices.data;
bvh.max_depth = max_depth;
bvh.max_nodes = max_nodes;
bvh.num_nodes = num_nodes;
bvh.num_leaf_nodes = num_leaf_nodes;
bvh.root = root.data;
bvh.item_lowers = item_lowers.data;
bvh.item_uppers = item_uppers.data;
bvh.item_groups = has_groups ? item_groups.data : nullptr;
bvh.num_items = num_items;
bvh.leaf_size = leaf_size;
bvh.constructor_type = constructor_type;
bvh.context = nullptr;
*(wp::BVH*)(header.data) = bvh;
"""

# bvh_refit_recursive's body (warp/native/bvh.cpp) for one node whose children are done.
_REFIT_SNIPPET = """
wp::BVH& bvh = *(wp::BVH*)(header.data);
const int index = nodes.data[offset + tid];
wp::BVHPackedNodeHalf& lower = bvh.node_lowers[index];
wp::BVHPackedNodeHalf& upper = bvh.node_uppers[index];
if (lower.b) {
    wp::bounds3 bound;
    for (int item_counter = lower.i; item_counter < upper.i; item_counter++) {
        const int item = bvh.primitive_indices[item_counter];
        bound.add_bounds(bvh.item_lowers[item], bvh.item_uppers[item]);
    }
    reinterpret_cast<wp::vec3&>(lower) = bound.lower;
    reinterpret_cast<wp::vec3&>(upper) = bound.upper;
} else {
    const int left_index = lower.i;
    const int right_index = upper.i;
    const wp::vec3& left_lower = reinterpret_cast<const wp::vec3&>(bvh.node_lowers[left_index]);
    const wp::vec3& left_upper = reinterpret_cast<const wp::vec3&>(bvh.node_uppers[left_index]);
    const wp::vec3& right_lower = reinterpret_cast<const wp::vec3&>(bvh.node_lowers[right_index]);
    const wp::vec3& right_upper = reinterpret_cast<const wp::vec3&>(bvh.node_uppers[right_index]);
    wp::vec3 new_lower = wp::std_min(left_lower, right_lower);
    wp::vec3 new_upper = wp::std_max(left_upper, right_upper);
    reinterpret_cast<wp::vec3&>(lower) = new_lower;
    reinterpret_cast<wp::vec3&>(upper) = new_upper;
}
"""


@functools.cache
def _kernels():
    """(write the descriptor, refit one level): one module for every BVH."""
    import warp as wp  # noqa: PLC0415 - Warp is imported lazily

    def write_header(
        header: wp.array(dtype=wp.uint64),
        node_lowers: wp.array(dtype=wp.vec4),
        node_uppers: wp.array(dtype=wp.vec4),
        node_parents: wp.array(dtype=wp.int32),
        node_counts: wp.array(dtype=wp.int32),
        primitive_indices: wp.array(dtype=wp.int32),
        root: wp.array(dtype=wp.int32),
        item_lowers: wp.array(dtype=wp.vec3),
        item_uppers: wp.array(dtype=wp.vec3),
        item_groups: wp.array(dtype=wp.int32),
        max_depth: int,
        max_nodes: int,
        num_nodes: int,
        num_leaf_nodes: int,
        num_items: int,
        leaf_size: int,
        constructor_type: int,
        has_groups: int,
    ): ...

    write_header.__name__ = write_header.__qualname__ = "bvh_write_header"
    write_header_func = wp.func_native(_HEADER_SNIPPET)(write_header)

    def refit_node(
        header: wp.array(dtype=wp.uint64), nodes: wp.array(dtype=wp.int32), offset: int, tid: int
    ): ...

    refit_node.__name__ = refit_node.__qualname__ = "bvh_refit_node"
    refit_node_func = wp.func_native(_REFIT_SNIPPET)(refit_node)

    def header_kernel(
        header: wp.array(dtype=wp.uint64),
        node_lowers: wp.array(dtype=wp.vec4),
        node_uppers: wp.array(dtype=wp.vec4),
        node_parents: wp.array(dtype=wp.int32),
        node_counts: wp.array(dtype=wp.int32),
        primitive_indices: wp.array(dtype=wp.int32),
        root: wp.array(dtype=wp.int32),
        item_lowers: wp.array(dtype=wp.vec3),
        item_uppers: wp.array(dtype=wp.vec3),
        item_groups: wp.array(dtype=wp.int32),
        max_depth: int,
        max_nodes: int,
        num_nodes: int,
        num_leaf_nodes: int,
        num_items: int,
        leaf_size: int,
        constructor_type: int,
        has_groups: int,
    ):
        write_header_func(
            header,
            node_lowers,
            node_uppers,
            node_parents,
            node_counts,
            primitive_indices,
            root,
            item_lowers,
            item_uppers,
            item_groups,
            max_depth,
            max_nodes,
            num_nodes,
            num_leaf_nodes,
            num_items,
            leaf_size,
            constructor_type,
            has_groups,
        )

    def level_kernel(header: wp.array(dtype=wp.uint64), nodes: wp.array(dtype=wp.int32), offset: int):
        refit_node_func(header, nodes, offset, wp.tid())

    kernel = functools.partial(wp.kernel, module=_MODULE, enable_backward=False)
    return kernel(header_kernel, name="bvh_write_header"), kernel(level_kernel, name="bvh_refit_level")


def tree_levels(child_words, leaf_flags, root: int, max_nodes: int) -> list[list[int]] | None:
    """The nodes reachable from `root`, by depth: [[root], [its children], ...]. `child_words[n]` are
    node n's (lower.i, upper.i), `leaf_flags[n]` its lower.b. None when the nodes are no tree (an
    index out of range, a node reached twice)."""
    levels = [[root]]
    seen = {root}
    if not 0 <= root < max_nodes:
        return None
    while True:
        below = []
        for node in levels[-1]:
            if leaf_flags[node]:
                continue
            for child in child_words[node]:
                if not 0 <= child < max_nodes or child in seen:
                    return None
                seen.add(child)
                below.append(child)
        if not below:
            return levels
        levels.append(below)


@dataclass
class _LoweredBvh:
    """The Warp arrays standing in for one BVH's native buffers during the step."""

    header: object
    levels: object  # int32: the nodes of every level, deepest level first
    level_spans: list  # (offset, count) into `levels`, in refit order
    leaf_size: int
    buffers: list  # the copied node buffers (kept alive with the capture)


class BvhLowering:
    """Hooks `wp.Bvh.id` and `wp.Bvh.refit` for one recording of a CPU device."""

    def __init__(self, device, guard):
        self._device = device
        # The recording's wrpkg.capture.step_guard.StepGuard: it words and keeps the refusals.
        self._guard = guard
        self._bvhs: dict[int, _LoweredBvh] = {}  # id(bvh) ->
        self._objects: list = []  # the lowered BVHs, kept alive while their id() keys are used
        self._header_ptrs: dict[int, object] = {}  # descriptor address -> descriptor array

    def header_for(self, value: int):
        """The descriptor array whose address a launch parameter holds, or None."""
        return self._header_ptrs.get(value)

    def descriptions(self) -> list[str]:
        """The lowered BVHs, in the order the step first used them: "wp.Bvh (96 items, leaf_size 1)"."""
        return [
            f"wp.Bvh ({bvh.lowers.shape[0]} items, leaf_size {lowered.leaf_size})"
            for bvh, lowered in self._lowered()
        ]

    def saved_arrays(self) -> list:
        """The arrays the step allocated whose bytes the lowering filled from the host (node buffers,
        refit levels): a CUDA capture keeps their content, where it saves other arrays allocated
        inside the capture by size alone (their content regenerated by the replay)."""
        return [arr for _, lowered in self._lowered() for arr in (*lowered.buffers, lowered.levels)]

    def _lowered(self):
        return [(bvh, self._bvhs[id(bvh)]) for bvh in self._objects]

    def patches(self) -> list[tuple[object, str, object]]:
        import warp as wp  # noqa: PLC0415

        lowering = self
        warp_dir = os.path.dirname(os.path.abspath(wp.__file__)) + os.sep

        def get_id(bvh):
            native = bvh.__dict__.get("id", 0)
            lowered = lowering._bvhs.get(id(bvh))
            if lowered is not None:
                return lowered.header.ptr
            # Warp's own methods (refit, __del__) and wrpkg's checks mean the native descriptor.
            caller = sys._getframe(1).f_code.co_filename
            if not native or caller.startswith((warp_dir, _WRPKG_DIR)) or not lowering._lowerable(bvh):
                return native
            return lowering._lower(bvh).header.ptr

        def set_id(bvh, value):
            bvh.__dict__["id"] = value

        def refit(bvh):
            if not lowering._lowerable(bvh):
                raise lowering._guard.refuse_geometry_update("Bvh.refit()")
            lowering.refit(bvh)

        return [(wp.Bvh, "id", property(get_id, set_id)), (wp.Bvh, "refit", refit)]

    def _lowerable(self, bvh) -> bool:
        return bvh.device == self._device and self._device.is_cpu

    def refit(self, bvh) -> None:
        """Records `bvh.refit()`: one launch per level of the tree, deepest first."""
        import warp as wp  # noqa: PLC0415

        lowered = self._bvhs.get(id(bvh)) or self._lower(bvh)
        _, level_kernel = _kernels()
        for offset, count in lowered.level_spans:
            wp.launch(
                level_kernel, dim=count, inputs=[lowered.header, lowered.levels, offset], device=self._device
            )

    def _lower(self, bvh) -> _LoweredBvh:
        import numpy as np  # noqa: PLC0415
        import warp as wp  # noqa: PLC0415

        native = NativeBvh.from_address(bvh.__dict__["id"])

        def refuse(why: str):
            return self._guard.refuse_at_caller(
                f"step() uses a wp.Bvh {{where}} that wrpkg cannot record: {why}",
                fix="build the BVH with the default constructor (SAH on the CPU) from contiguous wp.vec3 "
                "lowers/uppers arrays, and keep it alive while the step runs",
            )

        if native.constructor_type == _CONSTRUCTOR_CUBQL:
            raise refuse("it was built with constructor='cubql', whose nodes Warp's refit does not update")
        groups = getattr(bvh, "groups", None)
        expected = (
            (native.item_lowers, bvh.lowers.ptr),
            (native.item_uppers, bvh.uppers.ptr),
            (native.item_groups or 0, groups.ptr if groups is not None else 0),
        )
        if any((held or 0) != ptr for held, ptr in expected) or native.num_items != bvh.lowers.shape[0]:
            raise refuse("its native descriptor does not hold the lowers/uppers arrays it was made from")
        max_nodes = native.max_nodes
        if max_nodes <= 0 or not native.node_lowers or not native.root:
            raise refuse("it holds no nodes (an empty BVH)")

        def host_copy(address: int, ctype, count: int):
            return np.ctypeslib.as_array((ctype * count).from_address(address)).copy()

        lowers_words = host_copy(native.node_lowers, ctypes.c_uint32, 4 * max_nodes).reshape(max_nodes, 4)
        uppers_words = host_copy(native.node_uppers, ctypes.c_uint32, 4 * max_nodes).reshape(max_nodes, 4)
        # BVHPackedNodeHalf's fourth word: `unsigned int i : 31; unsigned int b : 1`.
        leaf_flags = (lowers_words[:, 3] >> 31).astype(bool)
        children = np.stack([lowers_words[:, 3] & 0x7FFFFFFF, uppers_words[:, 3] & 0x7FFFFFFF], axis=1)
        root = int(host_copy(native.root, ctypes.c_int32, 1)[0])
        levels = tree_levels(children.tolist(), leaf_flags.tolist(), root, max_nodes)
        if levels is None:
            raise refuse("its nodes do not form a tree")

        device = self._device

        def copied(values, dtype):
            # Filled from the host, not by a Warp operation: the capture saves these bytes as they are.
            arr = wp.empty(values.nbytes // wp.types.type_size_in_bytes(dtype), dtype=dtype, device=device)
            ctypes.memmove(arr.ptr, values.ctypes.data, values.nbytes)
            return arr

        node_parents = host_copy(native.node_parents, ctypes.c_int32, max_nodes)
        node_counts = (
            host_copy(native.node_counts, ctypes.c_int32, max_nodes)
            if native.node_counts
            else np.zeros(max_nodes, dtype=np.int32)
        )
        primitives = host_copy(native.primitive_indices, ctypes.c_int32, max(native.num_items, 1))
        buffers = [
            copied(lowers_words, wp.vec4),
            copied(uppers_words, wp.vec4),
            copied(node_parents, wp.int32),
            copied(node_counts, wp.int32),
            copied(primitives, wp.int32),
            copied(np.array([root], dtype=np.int32), wp.int32),
        ]
        refit_order = list(reversed(levels))
        flat = np.array([node for level in refit_order for node in level], dtype=np.int32)
        spans, offset = [], 0
        for level in refit_order:
            spans.append((offset, len(level)))
            offset += len(level)
        lowered = _LoweredBvh(
            header=wp.zeros(_HEADER_WORDS, dtype=wp.uint64, device=device),
            levels=copied(flat, wp.int32),
            level_spans=spans,
            leaf_size=native.leaf_size,
            buffers=buffers,
        )
        header_kernel, _ = _kernels()
        wp.launch(
            header_kernel,
            dim=1,
            inputs=[
                lowered.header,
                *buffers,
                bvh.lowers,
                bvh.uppers,
                groups,
                native.max_depth,
                max_nodes,
                native.num_nodes,
                native.num_leaf_nodes,
                native.num_items,
                native.leaf_size,
                native.constructor_type,
                1 if groups is not None else 0,
            ],
            device=device,
        )
        self._bvhs[id(bvh)] = lowered
        self._objects.append(bvh)
        self._header_ptrs[lowered.header.ptr] = lowered.header
        return lowered
