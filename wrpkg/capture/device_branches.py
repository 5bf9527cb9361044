"""Where a retargeted capture's script or the libraries it calls asked which device they run on.

A retargeted capture runs build() and the step on the CPU. Code that branches on the device
(`if device.is_cuda:` ...) takes its CPU branch there, and a GPU capture of the same script takes
the other: Newton 1.8 launches its narrow phase with block_dim 1 on the CPU and 128 on CUDA
(narrow_phase.py:2797), picks GJK variants and block counts by device. The retargeted bundle is then
a valid CUDA program that runs the CPU branch's choices, not the program a GPU capture saves; no
rule of the op stream can tell. So every place outside Warp and wrpkg that reads `Device.is_cpu`
or `Device.is_cuda` of the capture's CPU device while the script runs is recorded (capture.json
`cpu_device_branches`, and a note naming the lines): where it matters, capture on a GPU.

This is the capture without a device model (`--device-model none`, `device_model = "none"`); by
default a retargeted capture answers such questions as its target GPU instead (device_model.py).
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field

from wrpkg import warp_internals
from wrpkg.capture import call_sites


@dataclass
class DeviceBranchWatch:
    """Records, while `watching()` is active, each line outside Warp and wrpkg that asks a CPU
    device whether it is the CPU or CUDA."""

    # "newton/_src/geometry/narrow_phase.py:2797 (self.block_dim = 1 if device_obj.is_cpu else 128)",
    # in the order first seen.
    sites: dict[tuple[str, int], str] = field(default_factory=dict)
    # Folders whose frames are not asked about: Warp's (it branches on the device for itself,
    # which the retarget handles) and wrpkg's.
    _skipped: tuple[str, ...] = ()

    def _note(self, frame) -> None:
        filename = frame.f_code.co_filename
        if filename.startswith("<") or filename.startswith(self._skipped):
            return
        key = (filename, frame.f_lineno)
        if key not in self.sites:
            self.sites[key] = call_sites.describe_location(key)

    @contextlib.contextmanager
    def watching(self):
        device_class = warp_internals.context().Device
        originals = {name: device_class.__dict__[name] for name in ("is_cpu", "is_cuda")}
        self._skipped = call_sites.own_dirs()
        watch = self

        def watched(original):
            def asked(device):
                answer = original.fget(device)
                if device.ordinal < 0:
                    watch._note(sys._getframe(1))
                return answer

            return property(asked, doc=original.__doc__)

        try:
            for name, original in originals.items():
                setattr(device_class, name, watched(original))
            yield self
        finally:
            for name, original in originals.items():
                setattr(device_class, name, original)

    def records(self) -> list[str]:
        return list(self.sites.values())


def _shown(sites: list[str]) -> list[str]:
    shown = sites[:8] + (
        [f"... and {len(sites) - 8} more (capture.json cpu_device_branches)"] if len(sites) > 8 else []
    )
    return [f"  {site}" for site in shown]


_GPU_FIX = 'capture on a GPU runner (capture_mode = "gpu", bazel build --config=gpu)'


def note(target: str, sites: list[str]) -> str:
    """The capture log's note on the lines that asked for the device."""
    return "\n".join(
        [
            f"note: {target}: this retargeted capture ran on the CPU, and code asked which device it runs on "
            "(Device.is_cpu / is_cuda) at the lines below: where it branches, a GPU capture of the same script "
            "takes the other branch (another block_dim, other kernels), so this bundle is a valid CUDA program "
            f"that may not be byte-identical to a GPU capture. To ship what a GPU capture records, {_GPU_FIX}.",
            *_shown(sites),
        ]
    )


def refusal_note(target: str, sites: list[str]) -> str:
    """The note printed before a refusal of a retargeted step whose code asked for the device: the
    refused operation may be the CPU branch's own (Newton's implicit MPM solver reads its residual
    back to the host on the CPU, and loops with wp.capture_while on CUDA)."""
    return "\n".join(
        [
            f"note: {target}: this retargeted capture runs build() and the step on the CPU, and code asked "
            "which device it runs on (Device.is_cpu / is_cuda) at the lines below: where it branches, a GPU "
            "capture of the same script takes the other branch, which may not do what is refused below. If "
            f"it does not, {_GPU_FIX}.",
            *_shown(sites),
        ]
    )
