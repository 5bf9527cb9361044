"""The hook on Warp while a capture's step records: one install, one restore.

Every capture keeps each launch parameter's packed bytes, as APIC stores them, for the
stale-pointer check (`wrpkg.stale_pointers`), and refuses what the saved graph would not
replay (`wrpkg.step_guard`: nested graphs, host read-backs, host memory in a CUDA capture). The retarget mode's recorder
(`wrpkg.retarget.RetargetRecorder`) extends this one with hooks on the launch API; a
capture runs one recorder, so Warp is patched and restored in one place.

It reads APICapture's private launch packing (pinned with the Warp version, like
capture.py's region check).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field

from wrpkg import warp_internals
from wrpkg.step_guard import StepGuard

# (user_dirs, code filename) -> whether the file is the capture script's. A retarget capture asks
# on every Python call its step makes (wrpkg.retarget's line tracer) and every launch: realpath's
# system calls, there, made the step's Python run 40 times slower.
_USER_FILE: dict[tuple[tuple[str, ...], str], bool] = {}


def is_user_file(user_dirs: tuple[str, ...], filename: str) -> bool:
    """Whether `filename` lies in one of `user_dirs`, in either spelling (Bazel's sandbox reaches the
    script through a symlink)."""
    key = (user_dirs, filename)
    known = _USER_FILE.get(key)
    if known is None:
        known = _USER_FILE[key] = os.path.abspath(filename).startswith(user_dirs) or os.path.realpath(
            filename
        ).startswith(user_dirs)
    return known


def script_line(user_dirs: tuple[str, ...], frame) -> str | None:
    """ "script.py:42" of the first frame, from `frame` outward, whose file is in one of
    `user_dirs`."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if is_user_file(user_dirs, filename):
            return f"{os.path.basename(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return None


@dataclass
class PackedParam:
    kernel: str
    param: str
    adjoint: bool
    blob: bytes
    relocated: frozenset[int]  # byte offsets inside blob that APIC patches at replay


@dataclass
class LaunchRecorder:
    """Records, while `recording(device)` is active, every captured launch's parameter bytes.

    `target` names the capture in errors."""

    target: str
    params: list[PackedParam] = field(default_factory=list)
    # Warp's APICapture of the device being recorded.
    capture: object = None
    # The step's refusals (set by recording()).
    guard: StepGuard | None = None
    # Data addresses of the arrays the step's launches take (wrpkg.build_launches).
    array_ptrs: set[int] = field(default_factory=set)

    @contextlib.contextmanager
    def recording(self, device):
        ctx = warp_internals.context()

        self.capture = ctx._get_apic_capture_for_device(device)
        self.guard = StepGuard(self.target, capture_is_cuda=device.is_cuda)
        patches = self._packing_patches() + self._patches(device) + self.guard.patches()
        # vars() first: a property must come back as the property, not its value.
        saved = [
            (owner, name, vars(owner)[name] if name in vars(owner) else getattr(owner, name))
            for owner, name, _ in patches
        ]
        try:
            for owner, name, value in patches:
                setattr(owner, name, value)
            with self._tracing():
                yield self
        finally:
            for owner, name, value in saved:
                setattr(owner, name, value)

    def _patches(self, device) -> list[tuple[object, str, object]]:
        """More (owner, attribute, replacement) hooks, for a recorder that needs them."""
        return []

    def _tracing(self):
        """A context active while the step runs, inside the hooks."""
        return contextlib.nullcontext()

    def _packing_patches(self) -> list[tuple[object, str, object]]:
        APICapture = warp_internals.apic_capture_class()  # noqa: N806 - Warp's class

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
            ptr = getattr(original_value, "ptr", None)
            if isinstance(ptr, int) and ptr:
                recorder.array_ptrs.add(ptr)
            original_pack(self, rec, arg, original_value, packed_value, value_data_buf, relocs_buf, adjoint)
            start, size = rec.value_offset, rec.value_size
            relocated = frozenset(int(r.value_byte_offset) for r in relocs_buf[first_reloc:])
            recorder.params.append(
                PackedParam(
                    kernel=current_kernel[-1] if current_kernel else "?",
                    param=str(arg.label),
                    adjoint=bool(adjoint),
                    blob=bytes(value_data_buf[start : start + size]),
                    relocated=relocated,
                )
            )

        return [
            (APICapture, "build_launch_info", build_launch_info),
            (APICapture, "_pack_param_record", pack_param_record),
        ]
