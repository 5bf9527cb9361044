"""How each wp.Mesh of a capture was built, written into its mesh record so a load builds the same tree.

Warp 1.19's APIC saves a mesh as its points and triangles, and its loader builds the mesh again
from the record's BVH constructor and leaf size, which its save always sets to SAH with leaf
size 1 (apic.cpp: `rec.bvh_leaf_size = 1`), whatever the program built: a default wp.Mesh has
leaf size 4, and an LBVH tree on a GPU. Another tree finds the same geometry but breaks ties
another way (a query point as close to two triangles, the order mesh_query_aabb visits them):
seen on the CPU, a replay naming face 31 where the step named face 54. So wrpkg writes into each
record what the program built with (for a retargeted capture, what its wp.Mesh builds on a GPU),
and refuses what a load cannot build again:

- a mesh with `groups` (the record has no groups: a grouped query would find other triangles);
- a cuBQL mesh (the loader builds SAH, median or LBVH trees only);
- a mesh whose points, indices or velocities are a view into a larger array (Warp saves them as a
  region apart from that array: the step's writes to it would not reach the replay's mesh);
- a mesh whose points changed between its build and the capture (the load builds its tree from
  the points the capture saved, not from those the program's tree was built from).
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import weakref
from dataclasses import dataclass

from wrpkg import warp_internals
from wrpkg.errors import CaptureError

_FIX_POINTS = (
    "build the wp.Mesh in build() from the points the capture starts with (after any warm-up steps "
    "that move them), so that the tree a load builds is the one the step queries"
)


@dataclass(frozen=True)
class MeshBuild:
    """A wp.Mesh as its constructor resolved it, for the capture's device and for a GPU's."""

    constructor: int  # warp BvhConstructor on the device the program built it on
    gpu_constructor: int  # what the same wp.Mesh(...) call builds on a GPU
    leaf_size: int
    grouped: bool
    points_sha256: bytes  # the points the tree was built from
    views: tuple[str, ...]  # which of points, indices, velocities are views into a larger array


class MeshBuildWatch:
    """Records, while installed, how each wp.Mesh is built (build() and the script's import)."""

    def __init__(self):
        # mesh id -> (the mesh, weakly: an id can be reused once a mesh is gone; how it was built)
        self._built: dict[int, tuple[weakref.ref, MeshBuild]] = {}

    @contextlib.contextmanager
    def installed(self):
        import warp as wp  # noqa: PLC0415 - Warp is imported lazily

        original = wp.Mesh.__init__
        signature = inspect.signature(original)
        watch = self

        def init(mesh, *args, **kwargs):
            original(mesh, *args, **kwargs)
            call = signature.bind(mesh, *args, **kwargs)
            call.apply_defaults()
            watch._built[mesh.id] = (weakref.ref(mesh), _resolve(wp, mesh, call.arguments))

        wp.Mesh.__init__ = init
        try:
            yield self
        finally:
            wp.Mesh.__init__ = original

    def build_of(self, mesh_id: int) -> MeshBuild | None:
        entry = self._built.get(mesh_id)
        if entry is None or entry[0]() is None:
            return None
        return entry[1]

    def apply(self, wrp, target: str, *, for_gpu: bool) -> bool:
        """Writes each mesh record's constructor and leaf size as the program built the mesh (a
        GPU's constructor where `for_gpu` and the program ran on the CPU: a retargeted capture).
        Returns whether a record changed; raises CaptureError for a mesh no load can build again."""
        changed = False
        for record in wrp.metadata.meshes:
            build = self.build_of(record.original_ptr)
            if build is None:
                continue  # made in the step: the step guard words that refusal
            what = f"wp.Mesh ({record.num_points} points, {record.num_tris} triangles)"
            if build.grouped:
                raise CaptureError(
                    f"{target}: the step queries a {what} built with groups: Warp's APIC saves a mesh "
                    "without its groups and its load builds the mesh again without them, so a grouped "
                    "query of the replay would find other triangles",
                    fix="build one wp.Mesh per group (or the mesh without groups) for the step's queries",
                )
            if build.views:
                raise CaptureError(
                    f"{target}: the step queries a {what} whose {' and '.join(build.views)} "
                    f"{'is a view' if len(build.views) == 1 else 'are views'} into a larger array: Warp's APIC "
                    "saves a mesh's arrays as regions of their own, apart from the array the step's kernels "
                    "write, so the replay's mesh would not see what the step writes there",
                    fix="give the wp.Mesh arrays of its own (wp.clone() of the view, or allocate them apart)",
                )
            if build.constructor < 0 or build.gpu_constructor < 0:
                raise CaptureError(
                    f"{target}: the step queries a {what} built with bvh_constructor='cubql': Warp's APIC "
                    "load builds a mesh with SAH, median or LBVH only, another tree than the step queried",
                    fix="build the wp.Mesh with bvh_constructor='lbvh' (or 'sah') for a capture",
                )
            region = wrp.memory.region(record.points_region_id)
            saved = region.initial_data if region is not None else None
            if saved is None or hashlib.sha256(saved).digest() != build.points_sha256:
                raise CaptureError(
                    f"{target}: the points of a {what} the step queries changed between its build and the "
                    "capture: a load builds the mesh's tree from the points the capture saved, another tree "
                    "than the one the step queries (queries could break ties and order hits otherwise)",
                    fix=_FIX_POINTS,
                )
            constructor = build.gpu_constructor if for_gpu else build.constructor
            if (record.bvh_constructor, record.bvh_leaf_size) != (constructor, build.leaf_size):
                record.bvh_constructor = constructor
                record.bvh_leaf_size = build.leaf_size
                changed = True
        return changed


def _resolve(wp, mesh, arguments: dict) -> MeshBuild:
    """The constructor and leaf size as wp.Mesh resolves them (warp/_src/types.py, Mesh.__init__)."""
    BvhConstructor = warp_internals.types().BvhConstructor  # noqa: N806 - not exported by warp 1.19

    asked = arguments.get("bvh_constructor")
    if asked is not None and not isinstance(asked, BvhConstructor):
        asked = BvhConstructor.from_str(asked)
    on_gpu = BvhConstructor.LBVH if asked is None else asked
    here = asked if asked is not None else (BvhConstructor.SAH if mesh.device.is_cpu else BvhConstructor.LBVH)
    if mesh.device.is_cpu and here == BvhConstructor.LBVH:
        here = BvhConstructor.SAH  # Warp's CPU fallback
    leaf = arguments.get("bvh_leaf_size")
    if leaf is None:
        leaf = 0 if here == BvhConstructor.CUBQL else 4
    return MeshBuild(
        constructor=int(here),
        gpu_constructor=int(on_gpu),
        leaf_size=int(leaf),
        grouped=arguments.get("groups") is not None,
        points_sha256=hashlib.sha256(mesh.points.numpy().tobytes()).digest(),
        views=tuple(
            name
            for name in ("points", "indices", "velocities")
            if arguments.get(name) is not None and _is_view(arguments[name])
        ),
    )


def _is_view(arr) -> bool:
    """Whether `arr` covers less than the array it was sliced from (Warp keeps that parent in `_ref`)."""
    parent = getattr(arr, "_ref", None)
    if parent is None or not hasattr(parent, "ptr") or not hasattr(parent, "capacity"):
        return False
    return parent.ptr != arr.ptr or parent.capacity != arr.capacity or _is_view(parent)
