"""Refuse, while a capture's step records, what the saved graph would not replay as it ran.

APIC saves the operations Warp records. These ordinary patterns run fine in the step and
leave a graph that does something else when it is replayed with other inputs:

- a nested graph (`wp.capture_launch(g)` of a graph captured in build()): on the CPU its
  work runs without an APIC record (Warp prints "kernel launch during capture without
  APICLaunchInfo" and goes on), so the bundle lacks it; on CUDA the capture fails with a
  CUDA error that names no line.
- a host read-back (`x.numpy()`, `x.list()`, `np.asarray(x)`): the value read is the one of
  this run, and whatever Python computes from it is frozen into the graph as a constant. A
  CUDA capture refuses the device-to-host copy; a CPU or retargeted capture would not.
- a wp.Mesh, wp.Bvh or wp.Volume created in the step, or a mesh, BVH or volume updated there
  (a new `mesh.points`, `bvh.rebuild()`, `volume.rebuild()`, and `bvh.refit()` in a CUDA capture),
  or a volume's coordinates written into an array (`volume.get_voxels()`, `get_tiles()`), or a
  mesh given another velocities array (`mesh.velocities = v`):
  Warp builds and refits in native code APIC does not record, and the loaded graph queries the
  mesh as built from its points at load (seen on the CPU: a distance of 2.449 replayed where the
  step computed 2.0). `mesh.refit()` is recorded (wrpkg.capture.lowering.mesh_lowering), and a CPU recording
  records `bvh.refit()` (wrpkg.capture.lowering.bvh_lowering).
- a texture argument (its descriptor holds this process's handles), and host computations in
  native code that APIC does not record (graph coloring: warp_internals.UNRECORDED_HOST_CALLS).
- host memory in a CUDA capture (a `device="cpu"` array in `wp.copy`, or filled, zeroed or
  assigned in the step): APIC records regions of the capture device only.

A StepGuard hooks the Warp calls behind each pattern for the length of the step and
refuses the first use with the file and line of the user's call and what to do instead.
The refusal is also kept, so a step that catches the exception is refused all the same.
It hooks Warp's private native entry points (`runtime.core`) through wrpkg.warp_internals.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from wrpkg import warp_internals
from wrpkg.capture import call_sites
from wrpkg.errors import CaptureError


class StepRefusal(CaptureError):
    """The step does something its saved graph would not replay."""


_WRPKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

# The native calls behind wp.capture_launch (warp_internals.NATIVE_CALLS): a live CPU graph,
# a loaded CPU graph, a CUDA graph (its first launch instantiates it, which the driver refuses
# while the stream captures: CUDA error 900). Hooking them, not wp.capture_launch, also
# catches a step that imported capture_launch under another name before the hooks went in.


def describe_site(location) -> str:
    """ "at models/sim.py:42 (the code there)" for a (file, line), "in step()" for None."""
    return call_sites.describe(call_sites.CallSite(location, None))


@dataclass
class StepGuard:
    """Hooks for one recording. `target` names the capture; `capture_is_cuda` says whether
    host memory is foreign to the capture (a native CUDA capture)."""

    target: str
    capture_is_cuda: bool
    refusals: list[StepRefusal] = field(default_factory=list)
    # Bvh.refit() is recorded by wrpkg.capture.lowering.bvh_lowering (a CPU recording), not refused.
    bvh_refit_lowered: bool = False

    def patches(self) -> list[tuple[object, str, object]]:
        """(owner, attribute, replacement) for LaunchRecorder to install and restore."""
        import warp  # noqa: PLC0415 - Warp is imported lazily

        ctx = warp_internals.context()

        warp_dir = os.path.dirname(os.path.abspath(warp.__file__)) + os.sep
        patches = self._graph_launch_patches(ctx.runtime.core, warp_dir)
        patches += self._read_back_patches(warp, warp_dir)
        patches += self._geometry_update_patches(warp)
        if self.capture_is_cuda:
            patches += self._host_memory_patches(warp, warp_dir)
        return patches

    def check(self) -> None:
        """Raises the first refusal, also when the step caught it."""
        if self.refusals:
            raise self.refusals[0]

    def refuse_at_caller(self, message: str, fix: str) -> StepRefusal:
        """A refusal whose `message` has "{where}" replaced by the script line that called into Warp
        (and the library's line, with the switch that library offers: call_sites.LIBRARY_SWITCHES)."""
        site = call_sites.here()
        switch = call_sites.library_switch(site)
        return self._refuse(
            message.replace("{where}", call_sites.describe(site)), fix + (f"; {switch}" if switch else "")
        )

    def refuse_geometry_update(self, what: str) -> StepRefusal:
        """A mesh or BVH updated in the step by Warp's native code (`what`: "Mesh.refit()", ...)."""
        return self.refuse_at_caller(
            f"step() updates a BVH ({what}) {{where}}. Warp does that in native code that its APIC does not "
            "record: the saved graph would query the mesh or BVH as built at load, not as the step "
            "updated it.",
            fix="refit or rebuild in build() or between replays, not in step(); for geometry that moves "
            "every step, query it with arrays inside the step (for points, a wp.HashGrid built in the step "
            "is recorded, so is mesh.refit() of a mesh without support_winding_number, and a CPU or retargeted "
            "capture records a wp.Bvh's refit()) (NVIDIA/warp#1675 tracks "
            "what APIC cannot record)",
        )

    def refuse_volume_rebuild(self) -> StepRefusal:
        """Volume.rebuild() in the step: native code APIC records on neither device (on the CPU it
        runs once while the step records, on the points as they were before the step's deferred
        launches; a CUDA graph holds its kernels, the saved APIC stream does not)."""
        return self.refuse_at_caller(
            "step() rebuilds a wp.Volume (Volume.rebuild()) {where}. Warp does that in native code that its "
            "APIC does not record: the saved graph would query the volume as it was when the capture was "
            "saved, not as the step rebuilt it (seen on the CPU: every lookup of the moved points missed "
            "where the step found 3).",
            fix="rebuild the volume in build() or between replays, not in step(); for points that move every "
            "step, query them with a wp.HashGrid built in the step (recorded) or a grid of fixed topology "
            "(NVIDIA/warp#1675 tracks what APIC cannot record)",
        )

    def refuse_volume_coordinates(self, what: str) -> StepRefusal:
        """Volume.get_voxels()/get_tiles() in the step: native code writes the array, and APIC records
        nothing of it, so the array holds the capture's coordinates as initial state only."""
        return self.refuse_at_caller(
            f"step() reads a wp.Volume's coordinates into an array ({what}) {{where}}. Warp writes them in "
            "native code that its APIC does not record: the saved graph holds them as the capture's "
            "initial state, and a second replay of one load reads whatever the step left in that array "
            "(seen on the CPU: 3684, then 0, where every step gives 3684; a CUDA capture saves an array "
            "allocated in the step without content).",
            fix=f"call {what} in build() and pass the array to the step: a volume's topology cannot change "
            "inside the step",
        )

    def refuse_texture(self, kernel: str, param: str, texture_type: str) -> StepRefusal:
        """A wp.Texture argument: its descriptor holds process-local handles (a host pointer on the CPU,
        a CUDA texture object on a GPU), saved as the bytes they are."""
        return self.refuse_at_caller(
            f"step() launches '{kernel}' with a {texture_type} as '{param}' {{where}}. A texture is passed "
            "to the kernel as a descriptor holding handles of this process (its data's address on the CPU, "
            "a CUDA texture object on a GPU), which Warp's APIC saves as they are: the saved graph would "
            "sample freed memory in any other process (seen on the CPU: a replay in a fresh process "
            "crashed with SIGSEGV).",
            fix="keep the texels in a wp.array and interpolate them in the kernel, or put 3D data in a "
            "wp.Volume (its id is relocated into the bundle)",
        )

    def refuse_build(self, module_name: str, device_alias: str, exc: Exception) -> StepRefusal:
        """Warp's code generator failed on a module a launch of the step loads (the same words as a
        module of build() that fails to load before the step)."""
        return self._refuse(
            f"Warp could not build module '{module_name}' for {device_alias}: {type(exc).__name__}: {exc}",
            fix="fix the kernel named above (Warp's message gives its file and line)",
        )

    def _refuse(self, message: str, fix: str) -> StepRefusal:
        refusal = StepRefusal(f"{self.target}: {message}", fix=fix)
        self.refusals.append(refusal)
        return refusal

    def _graph_launch_patches(self, core, warp_dir: str):
        guard = self

        def refuse_graph_launch(*_args, **_kwargs):
            where = call_sites.describe(call_sites.here())
            raise guard._refuse(
                f"step() launches a captured graph {where}. APIC does not record the operations of a graph "
                "launched inside a capture, so the bundle would replay without them.",
                fix="call the code that was captured into that graph directly inside step() (the step is "
                "captured as a graph itself), and keep wp.capture_launch out of it",
            )

        def refusing_host_call(what: str):
            def refuse_host_call(*_args, **_kwargs):
                raise guard.refuse_at_caller(
                    f"step() calls {what} {{where}}. Warp computes it on the host in native code that its APIC "
                    "does not record: the saved graph would hold this run's result as initial state, computed "
                    "from the arrays as they were before the step's launches ran, and its return value would "
                    "be a constant of the graph.",
                    fix=f"call {what} in build() (a coloring belongs to the model's set-up), not in step()",
                )

            return refuse_host_call

        return [
            (core, name, refuse_graph_launch) for name in warp_internals.NATIVE_CALLS if hasattr(core, name)
        ] + [
            (core, name, refusing_host_call(what))
            for name, what in warp_internals.UNRECORDED_HOST_CALLS.items()
            if hasattr(core, name)
        ]

    def _read_back_patches(self, warp, warp_dir: str):
        guard = self
        array = warp.array
        # Warp's array core reads arrays for itself (str() of an array, numpy() of a view through a
        # contiguous copy): not a read-back of the step. Warp's library code that reads a result back
        # (wp.utils.array_sum without `out`, runlength_encode's count, warp.fem, sparse matrices'
        # nnz) is one, as is Newton's or the user's.
        core = tuple(os.path.join(warp_dir, "_src", name) for name in ("types.py", "context.py"))

        def refuse_if_users(what: str) -> None:
            caller = sys._getframe(2)
            filename = os.path.abspath(caller.f_code.co_filename)
            if filename.startswith(_WRPKG_DIR) or filename in core:
                return
            in_warp = filename.startswith(warp_dir)
            site = call_sites.of_frame(caller, library_frame=caller if in_warp else None)
            where = call_sites.describe(site)
            fix = (
                "move the read-back out of step(): compute the value in a kernel and pass the array to "
                "the kernels that use it, or read it after the replay"
            )
            if site.library is not None:
                fix = (
                    "the library call named above reads back inside step(): make that call in build() or "
                    "after the replay, or use a form of it that keeps its results on the device (the library's "
                    "capture or graph option, where it has one)"
                )
                switch = call_sites.library_switch(site)
                fix += f"; {switch}" if switch else ""
            raise guard._refuse(
                f"step() reads an array's values on the host ({what}) {where}. The capture records device "
                "operations only: a value computed from this read is frozen into the graph as it was in this "
                "run, and replay with other inputs would be silently wrong (a CUDA capture refuses the "
                "device-to-host copy).",
                fix=fix,
            )

        def reading(original, what: str):
            def method(self, *args, **kwargs):
                refuse_if_users(what)
                return original(self, *args, **kwargs)

            return method

        patches = []
        for cls in (array, getattr(warp, "indexedarray", None)):
            if cls is None:
                continue
            for name in ("numpy", "list"):
                if name in vars(cls):
                    patches.append((cls, name, reading(vars(cls)[name], f"{cls.__name__}.{name}()")))
            interface = vars(cls).get("__array_interface__")
            if isinstance(interface, property):
                # NumPy reads it from C (np.asarray, ufuncs): the nearest Python frame is the caller.
                getter = reading(interface.fget, "NumPy's __array_interface__, e.g. np.asarray(array)")
                patches.append((cls, "__array_interface__", property(getter)))
            # Zero-copy views for other libraries (np.from_dlpack, torch, CuPy, Numba): what they read or
            # write is no operation of Warp's, so APIC records none of it (np.from_dlpack(x)[0] in a CPU
            # step read the bytes of before the step's launches, and the capture saved that constant).
            cuda_interface = vars(cls).get("__cuda_array_interface__")
            if isinstance(cuda_interface, property):
                getter = reading(
                    cuda_interface.fget, "__cuda_array_interface__, a zero-copy view for another library"
                )
                patches.append((cls, "__cuda_array_interface__", property(getter)))
            if "__dlpack__" in vars(cls):
                patches.append(
                    (
                        cls,
                        "__dlpack__",
                        reading(vars(cls)["__dlpack__"], "__dlpack__, e.g. np.from_dlpack(array)"),
                    )
                )
        for name in ("to_dlpack", "to_torch", "to_paddle", "to_jax"):
            exported = getattr(warp, name, None)
            if callable(exported):

                def exporting(*args, _original=exported, _name=name, **kwargs):
                    refuse_if_users(f"wp.{_name}(), a zero-copy view for another library")
                    return _original(*args, **kwargs)

                patches.append((warp, name, exporting))
        return patches

    def _geometry_update_patches(self, warp):
        """Mesh.refit(), a new Mesh.points, Bvh.refit()/rebuild() in the step: Warp does them in native
        code that APIC does not record (a CPU capture runs a mesh refit once, on the points of before
        the step's launches; a CUDA capture's kernels for it are not in the byte stream). The saved
        graph would query the mesh as the load builds it, from its points then: silently not what
        the step did. (A CPU capture records a Bvh refit, and capture_save refuses it: the same
        verdict for every mode here.)"""
        guard = self

        def refuse(what: str) -> None:
            raise guard.refuse_geometry_update(what)

        def updating(what: str):
            def method(self, *args, **kwargs):
                refuse(what)

            return method

        def creating(cls):
            def init(self, *args, **kwargs):
                raise guard.refuse_at_caller(
                    f"step() creates a wp.{cls.__name__} {{where}}. Warp builds it in native code that its APIC "
                    "does not record, from the arrays as they are when step() runs: the saved graph would "
                    "query it as built from the data of the load, not from what the step computed (seen on "
                    "the CPU: a distance of 2.449 replayed where the step gave 2.0).",
                    fix=f"create the wp.{cls.__name__} in build() and pass it to the step; geometry computed by "
                    "the step is queried with arrays (for points, a wp.HashGrid built in the step is recorded)",
                )

            return init

        patches = [(cls, "__init__", creating(cls)) for cls in (warp.Mesh, warp.Bvh, warp.Volume)]
        if "rebuild" in vars(warp.Volume):

            def rebuild_volume(self, *args, **kwargs):
                raise guard.refuse_volume_rebuild()

            patches.append((warp.Volume, "rebuild", rebuild_volume))
        for name in ("get_voxels", "get_tiles"):
            if name in vars(warp.Volume):

                def coordinates(self, *args, _name=name, **kwargs):
                    raise guard.refuse_volume_coordinates(f"Volume.{_name}()")

                patches.append((warp.Volume, name, coordinates))
        # A CPU recording records Bvh.refit() itself (wrpkg.capture.lowering.bvh_lowering), every recording
        # Mesh.refit() (wrpkg.capture.lowering.mesh_lowering).
        bvh_updates = ("rebuild",) if self.bvh_refit_lowered else ("refit", "rebuild")
        for cls, names in ((warp.Bvh, bvh_updates),):
            patches += [
                (cls, name, updating(f"{cls.__name__}.{name}()")) for name in names if name in vars(cls)
            ]
        points = vars(warp.Mesh).get("points")
        if isinstance(points, property) and points.fset is not None:

            def set_points(self, value):
                refuse("assigning Mesh.points, which refits")

            patches.append((warp.Mesh, "points", property(points.fget, set_points)))
        velocities = vars(warp.Mesh).get("velocities")
        if isinstance(velocities, property) and velocities.fset is not None:

            def set_velocities(self, value):
                raise guard.refuse_at_caller(
                    "step() assigns a wp.Mesh's velocities (Mesh.velocities = ...) {where}. Warp points the "
                    "mesh at the new array at once, in native code that its APIC does not record: the saved "
                    "graph's mesh uses the array assigned last for every query of the step, also those "
                    "launched before the assignment (seen on the CPU: a velocity of 5.0 replayed where the "
                    "step gave 1.0).",
                    fix="give the mesh its velocities array once, in build(), and write the new velocities into "
                    "that array inside the step (with a kernel or wp.copy)",
                )

            patches.append((warp.Mesh, "velocities", property(velocities.fget, set_velocities)))
        return patches

    def _host_memory_patches(self, warp, warp_dir: str):
        guard = self
        array = warp.array

        def refuse_host(what: str, arr) -> None:
            where = call_sites.describe(call_sites.here())
            raise guard._refuse(
                f"step() uses host memory in a CUDA capture: {what} of a {arr.device} array {where}. APIC "
                "records regions and copies of the capture device only: the host array would be replayed as "
                "device memory.",
                fix="keep host arrays out of step(): copy results to the host after the replay, and give the "
                "step device arrays only",
            )

        def on_host(arr) -> bool:
            device = getattr(arr, "device", None)
            return device is not None and device.is_cpu

        original_copy = warp.copy

        def copy(dest, src, *args, **kwargs):
            for arr in (dest, src):
                if on_host(arr):
                    refuse_host("wp.copy", arr)
            return original_copy(dest, src, *args, **kwargs)

        patches = [(warp, "copy", copy)]
        ctx = warp_internals.context()

        if getattr(ctx, "copy", None) is original_copy:
            patches.append((ctx, "copy", copy))
        for name in ("zero_", "fill_", "assign"):
            original = getattr(array, name, None)
            if original is None:
                continue

            def method(self, *args, _name=name, _original=original, **kwargs):
                if on_host(self):
                    refuse_host(f"array.{_name}()", self)
                return _original(self, *args, **kwargs)

            patches.append((array, name, method))
        return patches
