"""Refuse captures that would save a live address as a plain number.

APIC relocates only what a kernel declares as a pointer: array arguments and `wp.handle`
ids. A mesh id passed to a `wp.uint64` parameter (or an `arr.ptr` passed as an integer)
is copied into the .wrp verbatim; the replaying process has no object at that address and
dies with SIGSEGV. Warp accepts this silently, so the capture harness records every
launch's argument bytes (`wrpkg.capture.launch_recorder`) and, once the step has run, compares
each 8-byte slot that APIC did not relocate with the ids and data ranges of the Warp
objects alive in the capture.

Warp 1.19's APIC relocates the handles of wp.Mesh only ("the save path only registers
meshes", warp/_src/apic/capture.py). The launch recorder goes further for a wp.Volume id and
the id of a wp.HashGrid built in the step, and on a CPU recording the id of a wp.Bvh read in the
step, each passed as a parameter of its own: it records them as array addresses (the volume's
buffer, the grid's and the BVH's descriptors; wrpkg.capture.lowering.hash_grid_lowering, wrpkg.capture.lowering.bvh_lowering).
Any other wp.Bvh, wp.HashGrid or wp.Volume id is refused, in a relocated `wp.handle` slot too,
and its fix says what does work for that kind of object.

A `wp.uint64` parameter holding exactly a live wp.Mesh id is not refused unless the capture
turns that off: the launch recorder has APIC record it as a `wp.handle` relocation
(`wrpkg.capture.launch_recorder`), and `relocations()` says which, for the capture log and
capture.json (`wrpkg inspect` shows them).
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import struct
from dataclasses import dataclass

from wrpkg import warp_internals
from wrpkg.capture import step_guard
from wrpkg.capture.launch_recorder import LaunchRecorder
from wrpkg.errors import CaptureError

_SLOT = 8
_ARRAY = "wp.array data"

# What works instead, for each kind of object APIC cannot save (a wp.Mesh id works as wp.handle).
_UNSAVABLE = {
    "wp.Bvh": "read bvh.id inside step(), where the launch passes it (a CPU or retargeted capture records a "
    "wp.Bvh whose id the step reads, and its refit(): wrpkg.capture.lowering.bvh_lowering), not in build() or a struct; a GPU "
    "capture cannot: capture on the CPU or retargeted, or build a wp.Mesh of the triangles (its id passed "
    "as wp.handle is saved)",
    "wp.HashGrid": "build the grid inside step() (grid.build(points, radius) there is recorded, and its id "
    "relocated: wrpkg.capture.lowering.hash_grid_lowering), or keep the hash-grid queries out of step()",
    "wp.Volume": "pass the id of a volume on the capture's device, as a wp.uint64 or wp.handle parameter or "
    "struct field (recorded as the address of its buffer), in a forward launch; or keep the volume queries "
    "out of step()",
}


@dataclass
class _LiveObject:
    kind: str  # "wp.Mesh", "wp.array data", ...
    start: int
    end: int  # exclusive; start + 1 for ids
    what: str = ""  # a mesh's size, "wp.Mesh (4 points, 4 triangles)"


def _describe(obj, kind: str) -> str:
    """ "wp.Mesh (4 points, 4 triangles)": what names a mesh in a log, the same in every run."""
    if kind != "wp.Mesh":
        return kind
    try:
        return f"{kind} ({len(obj.points)} points, {obj.indices.size // 3} triangles)"
    except (AttributeError, TypeError):
        return kind


def _live_objects(wp, extra: list) -> list[_LiveObject]:
    """Ids of live meshes, BVHs, hash grids and volumes, and data ranges of live arrays."""
    kinds = [(wp.Mesh, "wp.Mesh"), (wp.Bvh, "wp.Bvh"), (wp.HashGrid, "wp.HashGrid"), (wp.Volume, "wp.Volume")]
    # One isinstance per object of the heap (a Newton program has ~10^5): the kinds are sorted out
    # only for the few that are any of them.
    wanted = (*(cls for cls, _ in kinds), wp.array)
    found: list[_LiveObject] = []
    seen: set[int] = set()

    def consider(obj) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        for cls, kind in kinds:
            if isinstance(obj, cls):
                obj_id = int(getattr(obj, "id", 0) or 0)
                if obj_id:
                    found.append(_LiveObject(kind, obj_id, obj_id + 1, _describe(obj, kind)))
                return
        if getattr(obj, "ptr", None):
            # The whole allocation, on any device: a pointer into the middle of it is just as stale.
            size = int(
                getattr(obj, "capacity", 0) or obj.size * warp_internals.types().type_size_in_bytes(obj.dtype)
            )
            found.append(_LiveObject(_ARRAY, int(obj.ptr), int(obj.ptr) + max(size, 1)))

    for obj in [*extra, *gc.get_objects()]:
        if isinstance(obj, wanted):
            with contextlib.suppress(Exception):  # objects half torn down can raise on attribute access
                consider(obj)
    return found


def check_launches(wp, recorder: LaunchRecorder, extra: list, target: str) -> None:
    """Raises CaptureError for the first launch parameter holding a live object's id or address.

    Names, in `recorder.mesh_id_relocations`, the meshes of wp.uint64 parameters recorded as handles."""
    if not recorder.params:
        return
    live = _live_objects(wp, extra)
    if not live:
        return
    by_id = {obj.start: obj for obj in live if obj.kind != _ARRAY}
    for entry in recorder.mesh_id_relocations.values():
        entry.meshes = [by_id[i].what if i in by_id else "wp.Mesh (deleted)" for i in entry.mesh_ids]
    ranges = sorted((obj for obj in live if obj.kind == _ARRAY), key=lambda o: o.start)
    starts = [r.start for r in ranges]

    def in_array(value: int) -> _LiveObject | None:
        # Allocations do not overlap, so only the last one starting at or below value can hold it.
        i = bisect.bisect_right(starts, value) - 1
        return ranges[i] if i >= 0 and value < ranges[i].end else None

    for packed in recorder.params:
        blob = packed.blob
        for offset in range(0, len(blob) - _SLOT + 1, _SLOT):
            (value,) = struct.unpack_from("<Q", blob, offset)
            if value == 0:
                continue
            if offset in packed.relocated:
                # A relocated handle slot is saved as a mesh: right for a mesh only; a volume's id the
                # recorder relocated to its buffer is an address, saved as one.
                hit = by_id.get(value)
                if hit is None or hit.kind == "wp.Mesh" or value in recorder.relocated_volume_ids:
                    continue
            else:
                hit = by_id.get(value) or in_array(value)
            if hit is None:
                continue
            where = f"parameter '{packed.param}'" + (
                f" (byte {offset} of its value)" if len(blob) > _SLOT else ""
            )
            if packed.site is not None:
                where += f", launched {step_guard.describe_site(packed.site)}"
            side = "adjoint of " if packed.adjoint else ""
            if hit.kind == "wp.Volume":
                raise CaptureError(
                    f"{target}: kernel '{packed.kernel}', {side}{where}, holds the id of a live wp.Volume "
                    f"(0x{value:x}) that the capture could not relocate. It records the id of a volume on the "
                    "capture's device, in a wp.uint64 or wp.handle parameter or struct field of a forward "
                    "launch, as the address of the volume's buffer; this one would be saved verbatim (a crash "
                    "at replay).",
                    fix=_UNSAVABLE[hit.kind],
                )
            if hit.kind in _UNSAVABLE:
                raise CaptureError(
                    f"{target}: kernel '{packed.kernel}', {side}{where}, holds the id of a live {hit.kind} "
                    f"(0x{value:x}). Warp's APIC (1.19) saves and relocates wp.Mesh handles only: a {hit.kind} "
                    "cannot be part of a saved graph, as wp.uint64 (saved verbatim, a crash at replay) or as "
                    "wp.handle (saved as if it were a mesh).",
                    fix=_UNSAVABLE[hit.kind],
                )
            if hit.kind == _ARRAY:
                fix = (
                    f"declare '{packed.param}' of kernel '{packed.kernel}' as a wp.array and pass the array "
                    "itself, not its .ptr"
                )
            else:
                fix = (
                    f"declare '{packed.param}' of kernel '{packed.kernel}' as wp.handle (not wp.uint64) so APIC "
                    f"relocates the {hit.kind} id at load time"
                )
                if hit.kind == "wp.Mesh" and len(blob) == _SLOT and not recorder.relocate_uint64_mesh_ids:
                    fix += (
                        ", or let the capture record it as one: drop relocate_uint64_mesh_ids = False from the "
                        "wrp_artifact target (wrpkg capture without --no-relocate-uint64-mesh-ids)"
                    )
            raise CaptureError(
                f"{target}: kernel '{packed.kernel}', {side}{where}, holds the address of a live {hit.kind} "
                f"(0x{value:x}) as a plain number. APIC saves it verbatim, and the replay would read "
                "memory that does not exist in the loading process (a crash or garbage).",
                fix=fix,
            )


def relocations(recorder: LaunchRecorder) -> list[dict]:
    """The wp.uint64 parameters recorded as wp.handle relocations, for capture.json: kernel,
    parameter, the meshes they held (by size, in first-use order) and how many launches."""
    return [
        {
            "kernel": entry.kernel,
            "parameter": entry.param,
            "meshes": entry.meshes or ["wp.Mesh"] * len(entry.mesh_ids),
            "launches": entry.launches,
        }
        for entry in recorder.mesh_id_relocations.values()
    ]


def _ids_of(meshes: list[str]) -> str:
    if len(meshes) == 1:
        return f"the id of a live {meshes[0]}"
    return f"the ids of live meshes {', '.join(meshes[:-1])} and {meshes[-1]}"


def relocation_note(target: str, relocated: list[dict]) -> str:
    """The capture log's lines for `relocations()`."""
    lines = []
    for r in relocated:
        launches = f"{r['launches']} launch" + ("" if r["launches"] == 1 else "es")
        lines.append(
            f"{target}: note: kernel '{r['kernel']}', parameter '{r['parameter']}' is declared wp.uint64 and held "
            f"{_ids_of(r['meshes'])} ({launches}): recorded as a wp.handle relocation, as if "
            "declared wp.handle (Warp alone saves the id verbatim, a crash at replay; "
            "relocate_uint64_mesh_ids = False turns this off)"
        )
    return "\n".join(lines)
