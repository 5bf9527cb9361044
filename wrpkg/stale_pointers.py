"""Refuse captures that would save a live address as a plain number.

APIC relocates only what a kernel declares as a pointer: array arguments and `wp.handle`
ids. A mesh id passed to a `wp.uint64` parameter (or an `arr.ptr` passed as an integer)
is copied into the .wrp verbatim; the replaying process has no object at that address and
dies with SIGSEGV. Warp accepts this silently, so the capture harness records every
launch's argument bytes and, once the step has run, compares each 8-byte slot that APIC did
not relocate with the ids and data ranges of the Warp objects alive in the capture.

It reads APICapture's private launch packing (pinned with the Warp version, like
capture.py's region check).
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import struct
from dataclasses import dataclass

from wrpkg.errors import CaptureError

_SLOT = 8
_ARRAY = "wp.array data"


@dataclass
class _PackedParam:
    kernel: str
    param: str
    adjoint: bool
    blob: bytes
    relocated: frozenset[int]  # byte offsets inside blob that APIC patches at replay


@dataclass
class _LiveObject:
    kind: str  # "wp.Mesh", "wp.array data", ...
    start: int
    end: int  # exclusive; start + 1 for ids


class LaunchRecorder:
    """Context manager: while active, every captured launch's parameter bytes are kept."""

    def __init__(self) -> None:
        self.params: list[_PackedParam] = []
        self._patched = []

    def __enter__(self) -> LaunchRecorder:
        from warp._src.apic.capture import APICapture  # noqa: PLC0415 - Warp is imported lazily

        recorder = self
        original_build = APICapture.build_launch_info
        original_pack = APICapture._pack_param_record
        current_kernel: list[str] = []

        def build_launch_info(self, kernel, *args, **kwargs):
            current_kernel.append(str(kernel.key))
            try:
                return original_build(self, kernel, *args, **kwargs)
            finally:
                current_kernel.pop()

        def pack_param_record(
            self, rec, arg, original_value, packed_value, value_data_buf, relocs_buf, adjoint=False
        ):
            first_reloc = len(relocs_buf)
            original_pack(self, rec, arg, original_value, packed_value, value_data_buf, relocs_buf, adjoint)
            start, size = rec.value_offset, rec.value_size
            relocated = frozenset(int(r.value_byte_offset) for r in relocs_buf[first_reloc:])
            recorder.params.append(
                _PackedParam(
                    kernel=current_kernel[-1] if current_kernel else "?",
                    param=str(arg.label),
                    adjoint=bool(adjoint),
                    blob=bytes(value_data_buf[start : start + size]),
                    relocated=relocated,
                )
            )

        APICapture.build_launch_info = build_launch_info
        APICapture._pack_param_record = pack_param_record
        self._patched = [
            (APICapture, "build_launch_info", original_build),
            (APICapture, "_pack_param_record", original_pack),
        ]
        return self

    def __exit__(self, *exc) -> None:
        for owner, name, original in self._patched:
            setattr(owner, name, original)
        self._patched = []


def _live_objects(wp, extra: list) -> list[_LiveObject]:
    """Ids of live meshes, BVHs, hash grids and volumes, and data ranges of live arrays."""
    kinds = [(wp.Mesh, "wp.Mesh"), (wp.Bvh, "wp.Bvh"), (wp.HashGrid, "wp.HashGrid"), (wp.Volume, "wp.Volume")]
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
                    found.append(_LiveObject(kind, obj_id, obj_id + 1))
                return
        if isinstance(obj, wp.array) and getattr(obj, "ptr", None):
            # The whole allocation, on any device: a pointer into the middle of it is just as stale.
            size = int(getattr(obj, "capacity", 0) or obj.size * wp._src.types.type_size_in_bytes(obj.dtype))
            found.append(_LiveObject(_ARRAY, int(obj.ptr), int(obj.ptr) + max(size, 1)))

    for obj in extra:
        consider(obj)
    for obj in gc.get_objects():
        with contextlib.suppress(Exception):  # objects half torn down can raise on attribute access
            consider(obj)
    return found


def check_launches(wp, recorder: LaunchRecorder, extra: list, target: str) -> None:
    """Raises CaptureError for the first launch parameter holding a live object's id or address."""
    if not recorder.params:
        return
    live = _live_objects(wp, extra)
    if not live:
        return
    by_id = {obj.start: obj for obj in live if obj.kind != _ARRAY}
    ranges = sorted((obj for obj in live if obj.kind == _ARRAY), key=lambda o: o.start)
    starts = [r.start for r in ranges]

    def in_array(value: int) -> _LiveObject | None:
        # Allocations do not overlap, so only the last one starting at or below value can hold it.
        i = bisect.bisect_right(starts, value) - 1
        return ranges[i] if i >= 0 and value < ranges[i].end else None

    for packed in recorder.params:
        blob = packed.blob
        for offset in range(0, len(blob) - _SLOT + 1, _SLOT):
            if offset in packed.relocated:
                continue
            (value,) = struct.unpack_from("<Q", blob, offset)
            if value == 0:
                continue
            hit = by_id.get(value) or in_array(value)
            if hit is None:
                continue
            where = f"parameter '{packed.param}'" + (
                f" (byte {offset} of its value)" if len(blob) > _SLOT else ""
            )
            side = "adjoint of " if packed.adjoint else ""
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
            raise CaptureError(
                f"{target}: kernel '{packed.kernel}', {side}{where}, holds the address of a live {hit.kind} "
                f"(0x{value:x}) as a plain number. APIC saves it verbatim, and the replay would read "
                "memory that does not exist in the loading process (a crash or garbage).",
                fix=fix,
            )
