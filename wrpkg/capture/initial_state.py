"""A capture's initial state without the build machine's stale bytes.

APIC saves every region a graph uses with its bytes at save time. An array made with `wp.empty`
(Newton's and MuJoCo Warp's scratch buffers, a contact buffer's unused tail) holds whatever the
allocator's last user left there: heap text, generated C++, the venv's paths. Saved as they are,
two captures of one program differ, and the bundle ships bytes of the build machine.

While build() runs, `FreshMemory` fills every allocation Warp's allocators make with a sentinel
word (`SENTINEL`: a quiet NaN as float32, -4151899 as int32) and remembers where each was made.
After the save, `canonicalize` replaces each aligned word of a saved region that still holds
the sentinel (written by nobody) with zeros. Whether that changes what the step computes is
decided by replay, not assumed: the caller replays the file before (sentinel bytes) and after
(zeros); outputs that differ mean the step reads bytes nobody wrote, and `culprits` names the
arrays and where they were allocated, replaying with one region's sentinel words at a time.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from wrpkg import warp_internals, wrpformat
from wrpkg.capture.launch_recorder import is_user_file

SENTINEL = b"\xa5\xa5\xc0\xff"
_SENTINEL_WORD = int.from_bytes(SENTINEL, "little")
# Attribution replays one region at a time; past this many, the note names them together.
MAX_ATTRIBUTION_REPLAYS = 16


@dataclass
class Allocation:
    """One allocation made while FreshMemory was installed."""

    size: int
    user_line: str | None  # "script.py:42": the capture script's line that led to it
    library_line: str | None  # "newton/_src/sim/model.py:310": the first frame outside Warp and wrpkg


@dataclass
class UnwrittenRegion:
    """A saved region with words nobody wrote, and what they were zeroed from."""

    region_id: int
    words: int  # sentinel words replaced by zeros
    sentinel_data: bytes  # the region's initial data as saved (sentinel words in place)
    allocation: Allocation | None
    binding: str | None  # the input/output it backs, when one does
    array: str = ""  # the allocation's array as Warp saw it: "float32[256]"


def _frame_sites(user_dirs: tuple[str, ...], warp_dir: str, own_dir: str) -> tuple[str | None, str | None]:
    frame = sys._getframe(3)
    user_line = library_line = None
    while frame is not None and user_line is None:
        filename = frame.f_code.co_filename
        if is_user_file(user_dirs, filename):
            user_line = f"{os.path.basename(filename)}:{frame.f_lineno}"
        elif library_line is None and not os.path.abspath(filename).startswith((warp_dir, own_dir)):
            library_line = f"{_library_path(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return user_line, library_line


def _library_path(filename: str) -> str:
    """A library file as its package spells it ("newton/_src/sim/model.py"), not the venv's path."""
    parts = os.path.abspath(filename).split(os.sep)
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            return "/".join(parts[len(parts) - parts[::-1].index(marker) :])
    return os.path.basename(filename)


@dataclass
class FreshMemory:
    """Fills what Warp allocates with SENTINEL (with `zeros`: with zeros, as the capture saves bytes
    nobody wrote; wrpkg.capture.direct_step) while `installed()`, and records where."""

    user_dirs: tuple[str, ...]
    allocations: dict[int, Allocation] = field(default_factory=dict)
    zeros: bool = False

    @contextlib.contextmanager
    def installed(self):
        context = warp_internals.context()
        warp_dir = os.path.dirname(os.path.abspath(sys.modules["warp"].__file__)) + os.sep
        own_dir = os.path.dirname(os.path.abspath(__file__)) + os.sep
        pattern_buffer = ctypes.create_string_buffer(SENTINEL, len(SENTINEL))
        pattern = ctypes.cast(pattern_buffer, ctypes.c_void_p)
        fresh = self

        def fill_host(ptr, size):
            # Written from Python, not with Warp's wp_memtile_host, which a CPU capture records as an operation.
            words = 0 if fresh.zeros else size // len(SENTINEL)
            if words:
                np.ctypeslib.as_array((ctypes.c_uint32 * words).from_address(ptr))[:] = _SENTINEL_WORD
            ctypes.memset(ptr + words * len(SENTINEL), 0, size - words * len(SENTINEL))

        def fill_device(allocator, ptr, size):
            if allocator.device.is_capturing:
                return  # allocated inside a capture: a transient region, which Warp saves without bytes
            words = 0 if fresh.zeros else size // len(SENTINEL)
            device = allocator.device
            if words:
                device.memtile(ptr, pattern, len(SENTINEL), words)
            if size > words * len(SENTINEL):
                device.memset(ptr + words * len(SENTINEL), 0, size - words * len(SENTINEL))

        def wrap(cls, fill):
            original = cls.allocate

            def allocate(allocator, size_in_bytes):
                ptr = original(allocator, size_in_bytes)
                if ptr and size_in_bytes:
                    fill(allocator, ptr, size_in_bytes)
                    user_line, library_line = _frame_sites(fresh.user_dirs, warp_dir, own_dir)
                    fresh.allocations[ptr] = Allocation(size_in_bytes, user_line, library_line)
                return ptr

            return (cls, "allocate", allocate)

        patches = [
            wrap(context.CpuDefaultAllocator, lambda _a, ptr, size: fill_host(ptr, size)),
            wrap(context.CpuPinnedAllocator, lambda _a, ptr, size: fill_host(ptr, size)),
            wrap(context.CudaDefaultAllocator, fill_device),
            wrap(context.CudaMempoolAllocator, fill_device),
        ]
        saved = [(owner, name, vars(owner)[name]) for owner, name, _ in patches]
        try:
            for owner, name, value in patches:
                setattr(owner, name, value)
            yield self
        finally:
            for owner, name, value in saved:
                setattr(owner, name, value)

    def canonicalize(
        self, saved: wrpformat.WrpFile, apic_capture, bindings: dict[int, str]
    ) -> list[UnwrittenRegion]:
        """Zeroes, in `saved`, every aligned sentinel word of a region whose allocation this object
        filled. `bindings` maps a region id to the input/output name it backs. Returns what it
        changed, region by region."""
        bases = {
            region_id: (base_ptr, base) for region_id, base_ptr, _, base in apic_capture._regions.values()
        }
        changed = []
        for region in saved.memory.regions:
            data = region.initial_data
            base, array = bases.get(region.region_id, (None, None))
            if not data or base not in self.allocations:
                continue
            whole = len(data) - len(data) % len(SENTINEL)
            words = np.frombuffer(data, dtype="<u4", count=whole // len(SENTINEL))
            unwritten = words == _SENTINEL_WORD
            count = int(unwritten.sum())
            if not count:
                continue
            zeroed = words.copy()
            zeroed[unwritten] = 0
            region.initial_data = zeroed.tobytes() + data[whole:]
            changed.append(
                UnwrittenRegion(
                    region.region_id,
                    count,
                    data,
                    self.allocations[base],
                    bindings.get(region.region_id),
                    _array_text(array),
                )
            )
        return changed


def _array_text(array) -> str:
    dtype = getattr(array, "dtype", None)
    shape = getattr(array, "shape", None)
    if dtype is None or shape is None:
        return ""
    return f"{warp_internals.types().type_repr(dtype)}[{', '.join(str(n) for n in shape)}]"


def culprits(
    saved: wrpformat.WrpFile,
    unwritten: list[UnwrittenRegion],
    differs: Callable[[wrpformat.WrpFile], bool],
) -> list[UnwrittenRegion]:
    """The regions whose unwritten words change the outputs: `differs(file)` replays `file` and says
    whether its outputs differ from the zeroed capture's. One replay a region, restoring its sentinel
    words alone; past MAX_ATTRIBUTION_REPLAYS regions, all of them."""
    if len(unwritten) > MAX_ATTRIBUTION_REPLAYS:
        return list(unwritten)
    found = []
    for candidate in unwritten:
        region = saved.memory.region(candidate.region_id)
        zeroed = region.initial_data
        region.initial_data = candidate.sentinel_data
        try:
            if differs(saved):
                found.append(candidate)
        finally:
            region.initial_data = zeroed
    return found or list(unwritten)


def describe(region: UnwrittenRegion) -> str:
    """ "an array float32[256] (region 3: 1,024 bytes nobody wrote, allocated at sim.py:40 via newton/...:12)"."""
    what = f"binding '{region.binding}'" if region.binding else "an array"
    what += f" {region.array}" if region.array else ""
    alloc = region.allocation
    sites = [site for site in (alloc.user_line, alloc.library_line) if site] if alloc else []
    where = " via ".join(sites) if sites else "an unknown site"
    return f"{what} (region {region.region_id}: {region.words * len(SENTINEL):,} bytes nobody wrote, allocated at {where})"
