"""Which parts of a retargeted capture's initial state were computed by kernels in build().

The bytes every array holds when the step is captured are saved as the graph's starting
state. When build() computes them with Warp kernels, a retargeted capture saves what the
CPU computed; a GPU computes the same floats with other rounding in the last bits (fused
multiply-adds, fast math), so the retargeted bundle is then not byte-identical to a native
capture of the same program, although both are correct. That is not an error, but it is a
difference a user comparing bundles must be able to explain: the capture says which arrays
and which launches, in its log and in capture.json (`initial_state_from_build_kernels`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from dataclasses import dataclass, field

from wrpkg import warp_internals
from wrpkg.capture import call_sites, golden_caveats, retarget_launches
from wrpkg.capture.launch_recorder import script_line
from wrpkg.errors import CaptureError


@dataclass
class BuildLaunch:
    kernel: str
    where: str  # "script.py:42"
    array_ptrs: frozenset[int]
    cuda_block_dim: int  # the block size a GPU launches it with
    # What in its code computes with the block size (golden_caveats.block_sized_code), when that is > 1.
    block_sized: tuple[str, ...] = ()


@dataclass
class BlockSizedRead:
    """A host read in build() of an array that a block-sized build() launch wrote."""

    launch: BuildLaunch
    what: str  # "array.numpy()"
    where: str  # the reading line (and the library's)


def written_arrays(kernel, args: list) -> list:
    """The arguments of a launch (in the kernel's parameter order) that the kernel's code may write
    (golden_caveats.written_parameters)."""
    written = golden_caveats.written_parameters(kernel)
    return [value for param, value in zip(kernel.adj.args, args, strict=False) if param.label in written]


@dataclass
class BuildLaunchWatch:
    """Records, while `watching()` is active, every wp.launch/wp.launch_tiled with its arrays, and the
    host reads of what block-sized launches wrote."""

    user_dirs: tuple[str, ...]
    launches: list[BuildLaunch] = field(default_factory=list)
    block_sized: dict = field(default_factory=dict)  # kernel -> its block-sized code
    # Data address -> the block-sized launch that last wrote it.
    block_sized_writes: dict = field(default_factory=dict)
    block_sized_reads: list[BlockSizedRead] = field(default_factory=list)

    def _where(self) -> str:
        return script_line(self.user_dirs, sys._getframe(2)) or "a module the script imports"

    @contextlib.contextmanager
    def watching(self):
        import warp  # noqa: PLC0415 - Warp is imported lazily

        ctx = warp_internals.context()

        watch = self
        patches = []
        for name in ("launch", "launch_tiled"):
            original = getattr(ctx, name)

            @functools.wraps(
                original
            )  # __wrapped__: a module importing it by name is found (retarget_recorder)
            def hooked(kernel, *args, _original=original, **kwargs):
                if kwargs.get("record_cmd"):
                    return _original(kernel, *args, **kwargs)  # a launch command runs nothing until launched
                # The kernel's parameters in order: inputs, then outputs (each by keyword or position).
                inputs = kwargs.get("inputs", args[1] if len(args) > 1 else ())
                outputs = kwargs.get("outputs", args[2] if len(args) > 2 else ())
                arrays = [*(inputs or ()), *(outputs or ())]
                ptrs = frozenset(int(a.ptr) for a in arrays if isinstance(a, warp.array) and a.ptr)
                block_dim = retarget_launches.cuda_launch_block_dim(None, kwargs.get("block_dim"))
                launch = BuildLaunch(str(kernel.key), watch._where(), ptrs, block_dim)
                watch.launches.append(launch)
                result = _original(kernel, *args, **kwargs)
                if block_dim > 1:  # the launch built the kernel's module for the CPU
                    if kernel not in watch.block_sized:  # read once: build() may launch it thousands of times
                        watch.block_sized[kernel] = tuple(golden_caveats.block_sized_code(kernel))
                    launch.block_sized = watch.block_sized[kernel]
                for a in written_arrays(kernel, arrays) if launch.block_sized else ():
                    if isinstance(a, warp.array) and a.ptr:
                        watch.block_sized_writes[int(a.ptr)] = launch
                return result

            for owner in (ctx, warp):
                if getattr(owner, name, None) is original:
                    patches.append((owner, name, original, hooked))
        patches += self._host_read_patches(warp)
        try:
            for owner, name, _original, hooked in patches:
                setattr(owner, name, hooked)
            yield self
        finally:
            for owner, name, original, _hooked in patches:
                setattr(owner, name, original)

    def _host_read_patches(self, warp) -> list:
        """array.numpy(), array.list() and NumPy's __array_interface__, noting a read of an array that a
        block-sized launch wrote: the value build() reads is the CPU's one-thread block's, and what it
        decides from it (a size, a grid resolution) is saved, not what a GPU would decide."""
        watch = self
        patches = []

        # Warp's array core reads arrays for itself (str() of an array), and so does wrpkg: not build()'s
        # reads. Warp's library code (warp.fem, warp.sparse) reading a result is one, as in the step guard.
        warp_dir, wrpkg_dir = call_sites.own_dirs()
        own = (wrpkg_dir, *(os.path.join(warp_dir, "_src", name) for name in ("types.py", "context.py")))

        def reading(original, what: str):
            def method(array, *args, **kwargs):
                launch = (
                    watch.block_sized_writes.get(int(array.ptr or 0)) if watch.block_sized_writes else None
                )
                caller = sys._getframe(1)
                filename = os.path.abspath(caller.f_code.co_filename)
                if (
                    launch is not None
                    and not filename.startswith(own)
                    and not any(r.launch is launch for r in watch.block_sized_reads)
                ):
                    in_warp = filename.startswith(warp_dir)
                    where = call_sites.describe(
                        call_sites.of_frame(caller, library_frame=caller if in_warp else None)
                    )
                    watch.block_sized_reads.append(BlockSizedRead(launch, what, where))
                return original(array, *args, **kwargs)

            return method

        for name in ("numpy", "list"):
            original = vars(warp.array).get(name)
            if original is not None:
                patches.append((warp.array, name, original, reading(original, f"array.{name}()")))
        interface = vars(warp.array).get("__array_interface__")
        if isinstance(interface, property):
            getter = reading(interface.fget, "NumPy's __array_interface__, e.g. np.asarray(array)")
            patches.append((warp.array, "__array_interface__", interface, property(getter)))
        return patches

    def refuse_block_sized_reads(self, target: str) -> None:
        """Refuses a build() that read on the host what a block-sized launch wrote (see _host_read_patches)."""
        if not self.block_sized_reads:
            return
        read = self.block_sized_reads[0]
        launch = read.launch
        raise CaptureError(
            f"{target}: build() reads on the host ({read.what}) {read.where} an array that kernel "
            f"'{launch.kernel}' wrote at {launch.where}, launched with block_dim {launch.cuda_block_dim} on a "
            f"GPU, whose code uses {' and '.join(launch.block_sized)}: the CPU runs each block as one thread, "
            "so the value read is not what a GPU computes, and what build() decided from it is saved",
            fix="compute that value on the host (NumPy) in build(), or capture on a GPU "
            '(capture_mode = "gpu")',
        )

    def computed_state(self, named_arrays: dict, step_ptrs: set[int]) -> list[dict]:
        """For each build() launch whose arrays the step uses: the kernel, its line, and the
        names of those arrays (spec bindings by name, others counted)."""
        names = {}
        for name, arr in sorted(named_arrays.items()):
            ptr = int(getattr(arr, "ptr", 0) or 0)
            if ptr:
                names.setdefault(ptr, name)
        found = []
        for launch in self.launches:
            used = sorted(launch.array_ptrs & (step_ptrs | set(names)))
            if not used:
                continue
            named = sorted({names[p] for p in used if p in names})
            record = {
                "kernel": launch.kernel,
                "where": launch.where,
                "arrays": named,
                "other_arrays": sum(1 for p in used if p not in names),
            }
            if launch.block_sized:
                record["block_sized"] = {"block_dim": launch.cuda_block_dim, "code": list(launch.block_sized)}
            found.append(record)
        return found


def refuse_block_sized(target: str, computed: list[dict]) -> None:
    """Refuses initial state that build() computed with code whose values depend on the block size:
    the CPU runs each block as one thread, so the bytes it saved are not what a GPU computes (Newton's
    implicit MPM sizes its grid from such a reduction in build()), and no golden can tell."""
    for item in computed:
        if "block_sized" in item:
            what = ", ".join(item["arrays"]) or f"{item['other_arrays']} array(s)"
            raise CaptureError(
                f"{target}: build() launches kernel '{item['kernel']}' at {item['where']} with block_dim "
                f"{item['block_sized']['block_dim']} on a GPU, and its code uses "
                f"{' and '.join(item['block_sized']['code'])}: the CPU runs each block as one thread, so "
                f"what it left in {what} (the step's initial state) is not what a GPU computes",
                fix="compute that state on the host (NumPy) in build(), or make that launch in step() "
                '(its CUDA launch is recorded), or capture on a GPU (capture_mode = "gpu")',
            )


# The note names at most this many (kernel, line, arrays) groups and arrays of each; capture.json has them all.
NOTE_GROUPS = 8
NOTE_ARRAYS = 6


def _grouped(computed: list[dict]) -> list[tuple[dict, int]]:
    """Each distinct record of `computed`, in the order first seen, with how many launches made it: a
    build() that launches one kernel in a loop (NVIDIA's examples: 100 times) is one group."""
    counts: dict[str, tuple[dict, int]] = {}
    for item in computed:
        key = repr((item["kernel"], item["where"], item["arrays"], item["other_arrays"]))
        first, count = counts.get(key, (item, 0))
        counts[key] = (first, count + 1)
    return list(counts.values())


def note(target: str, computed: list[dict]) -> str:
    """The capture log's lines about `computed` (from computed_state): a first line, then one line per
    distinct kernel launch site with its launch count, at most NOTE_GROUPS of them."""
    groups = _grouped(computed)
    lines = [
        f"note: {target}: part of the saved initial state was computed in build() on the CPU (below): a GPU "
        "rounds such floats differently in the last bits, so this retargeted bundle may differ from a native "
        "capture's bytes (both replay correctly). To make them byte-identical, compute initial state on the "
        "host (NumPy) in build()."
    ]
    for item, count in groups[:NOTE_GROUPS]:
        arrays = item["arrays"][:NOTE_ARRAYS]
        what = ", ".join(arrays) or "no bound array"
        if len(item["arrays"]) > NOTE_ARRAYS:
            what += f" and {len(item['arrays']) - NOTE_ARRAYS} more"
        if item["other_arrays"]:
            what += f" and {item['other_arrays']} other array(s) the step uses"
        launches = f"{count} launch" + ("" if count == 1 else "es")
        lines.append(f"  kernel '{item['kernel']}' at {item['where']} ({launches}): {what}")
    if len(groups) > NOTE_GROUPS:
        lines.append(
            f"  ... and {len(groups) - NOTE_GROUPS} more launch sites (capture.json initial_state_from_build_kernels)"
        )
    return "\n".join(lines)
