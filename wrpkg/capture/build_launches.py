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
import sys
from dataclasses import dataclass, field

from wrpkg import warp_internals
from wrpkg.capture.launch_recorder import script_line


@dataclass
class BuildLaunch:
    kernel: str
    where: str  # "script.py:42"
    array_ptrs: frozenset[int]


@dataclass
class BuildLaunchWatch:
    """Records, while `watching()` is active, every wp.launch/wp.launch_tiled with its arrays."""

    user_dirs: tuple[str, ...]
    launches: list[BuildLaunch] = field(default_factory=list)

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

            def hooked(kernel, *args, _original=original, **kwargs):
                if kwargs.get("record_cmd"):
                    return _original(kernel, *args, **kwargs)  # a launch command runs nothing until launched
                arrays = [*kwargs.get("inputs", ()), *kwargs.get("outputs", ())]
                arrays += [a for arg in args[1:3] if isinstance(arg, (list, tuple)) for a in arg]
                ptrs = frozenset(int(a.ptr) for a in arrays if isinstance(a, warp.array) and a.ptr)
                watch.launches.append(BuildLaunch(str(kernel.key), watch._where(), ptrs))
                return _original(kernel, *args, **kwargs)

            for owner in (ctx, warp):
                if getattr(owner, name, None) is original:
                    patches.append((owner, name, original, hooked))
        try:
            for owner, name, _original, hooked in patches:
                setattr(owner, name, hooked)
            yield self
        finally:
            for owner, name, original, _hooked in patches:
                setattr(owner, name, original)

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
            found.append(
                {
                    "kernel": launch.kernel,
                    "where": launch.where,
                    "arrays": named,
                    "other_arrays": sum(1 for p in used if p not in names),
                }
            )
        return found


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
