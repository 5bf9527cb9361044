"""The hook on Warp while a capture's step records: one install, one restore.

Every capture keeps each launch parameter's packed bytes, as APIC stores them, for the
stale-pointer check (`wrpkg.capture.stale_pointers`), and refuses what the saved graph would not
replay (`wrpkg.capture.step_guard`: nested graphs, host read-backs, host memory in a CUDA capture). The retarget mode's recorder
(`wrpkg.capture.retarget_recorder.RetargetRecorder`) extends this one with hooks on the launch API; a
capture runs one recorder, so Warp is patched and restored in one place.

It reads APICapture's private launch packing (pinned with the Warp version, like
tool.py's region check).

On a CPU capture (`defer_compiles`), the step's modules are compiled after it
(`wrpkg.capture.deferred_compile`): every refusal of the step, the checks of what it recorded
(`check_recorded`, the retarget's) and the stale-pointer check come before anything is compiled
(`compile_deferred`).

A `wp.uint64` kernel parameter that holds exactly the id of a live wp.Mesh (NVIDIA's own mesh
samples pass `mesh.id` so) is packed as if the kernel declared it `wp.handle`
(`relocate_uint64_mesh_ids`, on by default): APIC then records the handle relocation and
registers the mesh, as it does for a `wp.handle` argument, and the saved graph is the one
the same program declaring `wp.handle` saves. Warp itself would save the id verbatim (a crash
at replay). Which parameters were so recorded is in `mesh_id_relocations`.
"""

from __future__ import annotations

import contextlib
import copy
import ctypes
import os
import sys
import tempfile
from dataclasses import dataclass, field

from wrpkg import warp_internals, wrpformat
from wrpkg.capture.deferred_compile import DeferredCompile
from wrpkg.capture.lowering import copy_lowering
from wrpkg.capture.lowering.bvh_lowering import BvhLowering
from wrpkg.capture.lowering.hash_grid_lowering import HashGridLowering
from wrpkg.capture.lowering.mesh_lowering import MeshRefitLowering
from wrpkg.capture.step_guard import StepGuard, StepRefusal
from wrpkg.errors import CaptureError

# (user_dirs, code filename) -> whether the file is the capture script's. A retarget capture asks
# on every Python call its step makes (wrpkg.capture.retarget_recorder's line tracer) and every launch: realpath's
# system calls, there, made the step's Python run 40 times slower.
_USER_FILE: dict[tuple[tuple[str, ...], str], bool] = {}


def is_user_file(user_dirs: tuple[str, ...], filename: str) -> bool:
    """Whether `filename` lies in one of `user_dirs`, in either spelling (Bazel's sandbox reaches the
    script through a symlink). Code made with exec() ("<string>", Warp's generated functions) is no
    file: never the user's, though its relative name would resolve into the working directory."""
    key = (user_dirs, filename)
    known = _USER_FILE.get(key)
    if known is None:
        known = _USER_FILE[key] = not filename.startswith("<") and (
            os.path.abspath(filename).startswith(user_dirs)
            or os.path.realpath(filename).startswith(user_dirs)
        )
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


# Frames of Warp and wrpkg are not the user's: a launch's site is the first frame outside both.
_WRPKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_OWN_FILE: dict[str, bool] = {}


def launch_site(depth: int = 2) -> tuple[str, int] | None:
    """(file, line) of the first frame, from `depth` up, outside Warp and wrpkg: the script line
    that made the launch being recorded. Cheap (one dict lookup a frame), as it runs per launch."""
    frame = sys._getframe(depth)
    while frame is not None:
        filename = frame.f_code.co_filename
        own = _OWN_FILE.get(filename)
        if own is None:
            import warp  # noqa: PLC0415 - Warp is imported lazily

            warp_dir = os.path.dirname(os.path.abspath(warp.__file__)) + os.sep
            own = _OWN_FILE[filename] = os.path.abspath(filename).startswith((warp_dir, _WRPKG_DIR))
        if not own:
            return filename, frame.f_lineno
        frame = frame.f_back
    return None


_ABSENT = object()


@contextlib.contextmanager
def _patched(patches: list[tuple[object, str, object]]):
    """Sets each (owner, attribute, value) for the length of the context, then restores it."""
    # vars() first: a property must come back as the property, not its value. An attribute the
    # owner does not have (wp.Bvh.id is an instance attribute) is removed again.
    saved = [
        (owner, name, vars(owner)[name] if name in vars(owner) else getattr(owner, name, _ABSENT))
        for owner, name, _ in patches
    ]
    try:
        for owner, name, value in patches:
            setattr(owner, name, value)
        yield
    finally:
        for owner, name, value in saved:
            if value is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, value)


@dataclass
class PackedParam:
    kernel: str
    param: str
    adjoint: bool
    blob: bytes
    relocated: frozenset[int]  # byte offsets inside blob that APIC patches at replay
    site: tuple[str, int] | None = None  # (file, line) of the launch (launch_site)


@dataclass
class MeshIdRelocation:
    """A `wp.uint64` parameter recorded as a `wp.handle` relocation because it held a live mesh id."""

    kernel: str
    param: str
    mesh_ids: list[int] = field(default_factory=list)  # in first-use order
    launches: int = 0
    # What each mesh is ("wp.Mesh (4 points, 4 triangles)"), named by the stale-pointer check.
    meshes: list[str] = field(default_factory=list)


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
    # Data addresses of the arrays the step's launches take (wrpkg.capture.build_launches).
    array_ptrs: set[int] = field(default_factory=set)
    # Record a wp.uint64 parameter holding a live wp.Mesh id as a wp.handle relocation (see above).
    relocate_uint64_mesh_ids: bool = True
    # (kernel, parameter) -> what was relocated, in first-use order.
    mesh_id_relocations: dict[tuple[str, str], MeshIdRelocation] = field(default_factory=dict)
    # On a CPU device, compile the step's modules after it (wrpkg.capture.deferred_compile): the caller that
    # sets this calls compile_deferred() once every refusal of the step is decided, before anything
    # uses the graph (capture_save, capture_launch) or a kernel launched in the step.
    defer_compiles: bool = False
    deferred: DeferredCompile | None = None  # set by recording() when it defers
    # Hash grids built in the step (wrpkg.capture.lowering.hash_grid_lowering); kept with their arrays until the
    # recorder goes.
    hash_grids: HashGridLowering | None = None
    # BVHs queried or refitted in a CPU recording's step (wrpkg.capture.lowering.bvh_lowering), kept likewise.
    bvhs: BvhLowering | None = None
    # Mesh.refit() calls of the step (wrpkg.capture.lowering.mesh_lowering), with their scratch arrays.
    mesh_refits: MeshRefitLowering | None = None
    # Live wp.Volume ids -> their NanoVDB buffers as arrays (found once, when a launch first passes
    # a number that may be one); the ids recorded as relocations to them.
    volumes: dict[int, object] | None = None
    relocated_volume_ids: set[int] = field(default_factory=set)

    def volume_buffer(self, value: int):
        """The buffer array of the live wp.Volume whose id is `value`, or None.

        A volume's id is the address of its NanoVDB buffer, which holds offsets only
        (warp/native/volume.cpp, wp_volume_create_host: `id = (uint64_t)volume.buffer`): saved as
        a region of the capture and the id relocated to it, it loads on any device as it is."""
        if self.volumes is None:
            import gc  # noqa: PLC0415

            import warp  # noqa: PLC0415

            self.volumes = {}
            device = getattr(self.capture, "device", None)
            for obj in gc.get_objects():
                # A volume of another device is no region of this capture: left to the stale-pointer check.
                if isinstance(obj, warp.Volume) and getattr(obj, "id", 0) and obj.device == device:
                    self.volumes[int(obj.id)] = obj
        volume = self.volumes.get(value)
        if volume is None:
            return None
        if not isinstance(volume, warp_internals.types().array):
            volume = self.volumes[value] = volume.array()
        self.relocated_volume_ids.add(value)
        return volume

    @contextlib.contextmanager
    def recording(self, device):
        ctx = warp_internals.context()

        self.capture = ctx._get_apic_capture_for_device(device)
        self.guard = StepGuard(self.target, capture_is_cuda=device.is_cuda, bvh_refit_lowered=device.is_cpu)
        # Lowered copies and fills go in first: the guard's hooks wrap them (a host array in a
        # CUDA capture is refused before anything is lowered).
        self.hash_grids = HashGridLowering()
        self.mesh_refits = MeshRefitLowering(self.guard)
        lowering_patches = copy_lowering.patches() + self.hash_grids.patches() + self.mesh_refits.patches()
        if device.is_cpu:
            # The descriptor of a BVH is host memory: a CPU recording can copy it (not a CUDA one).
            self.bvhs = BvhLowering(device, self.guard)
            lowering_patches += self.bvhs.patches()
        try:
            with _patched(lowering_patches):
                patches = self._packing_patches() + self._patches(device) + self.guard.patches()
                if device.is_cpu and self.defer_compiles:
                    # APIC records a CPU launch without running it: its module is compiled after the step.
                    self.deferred = DeferredCompile(self.target)
                    patches += self.deferred.patches() + self._build_error_patches(device)
                with _patched(patches), self._tracing():
                    yield self
        finally:
            self.hash_grids.restore()

    @contextlib.contextmanager
    def deferring(self):
        """Keeps Warp's native compiles deferred (its code generation not) after the step too, until
        compile_deferred(): for build()'s modules no launch of the step loaded."""
        if self.deferred is None:
            yield
            return
        with _patched(self.deferred.patches()):
            yield

    def _build_error_patches(self, device) -> list[tuple[object, str, object]]:
        """A module the step's launch builds (its code generated; compiled after the step) that Warp
        cannot generate is refused as one of build()'s would be."""
        module_class = warp_internals.context().Module
        original = module_class.load
        guard = self.guard

        def load(module, *args, **kwargs):
            try:
                return original(module, *args, **kwargs)
            except StepRefusal:
                raise
            except Exception as exc:  # Warp's code generator on the user's kernels
                raise guard.refuse_build(module.name, device.alias, exc) from exc

        return [(module_class, "load", load)]

    def check_recorded(self) -> None:
        """Refusals a recorder decides from the whole recorded step, before anything is compiled
        (compile_deferred() asks first); none here."""

    def recorded_operations(self) -> list | None:
        """The step's top-level operations as APIC recorded them, parsed, with nothing compiled: APIC's
        state saved to a scratch file before capture_save registers modules and memory (Warp's
        wp_apic_state_save only reads the state). None where Warp refuses to write it (capture_save
        then says why)."""
        core = warp_internals.native_library()
        with tempfile.TemporaryDirectory(prefix="wrpkg-ops-") as folder:
            path = os.path.join(folder, "ops.wrp")
            if not core.wp_apic_state_save(self.capture.apic_state, path.encode("utf-8"), 0, None):
                return None
            return wrpformat.read_wrp(path).operations.ops

    def compile_deferred(self) -> None:
        """Compiles the modules the step's launches deferred (wrpkg.capture.deferred_compile); call it once the
        step's refusals are decided (after capture_end and the stale-pointer check).

        Raises:
          CaptureError: Warp could not build one of them.
        """
        self.check_recorded()
        if self.deferred is None:
            return
        if self.deferred.placeholder_called:
            raise CaptureError(
                f"{self.target}: a kernel ran during the step before its module was compiled "
                "(wrpkg.capture.deferred_compile expects APIC to record CPU launches without running them)",
                fix="capture with a fresh kernel cache of this Warp version, or report it as a wrpkg bug",
            )
        try:
            self.deferred.finish(self.capture.apic_state)
        except Exception as exc:  # Warp's compiler on the user's kernels
            raise CaptureError(
                f"{self.target}: Warp could not build module '{self.deferred.failed_module}' for cpu: "
                f"{type(exc).__name__}: {exc}",
                fix="fix the kernel named above (Warp's message gives its file and line)",
            ) from exc

    def abandon_deferred(self) -> None:
        """Drops what a refused capture left uncompiled; nothing once compile_deferred() ran."""
        if self.deferred is not None:
            self.deferred.abandon()

    def _patches(self, device) -> list[tuple[object, str, object]]:
        """More (owner, attribute, replacement) hooks, for a recorder that needs them."""
        return []

    def _tracing(self):
        """A context active while the step runs, inside the hooks."""
        return contextlib.nullcontext()

    def _key_later_overload(self, apic, kernel, module_exec, info) -> None:
        """Gives a launch of a generic kernel's second (third, ...) overload in the step a kernel
        record of its own. APIC records a kernel by (module, key) and keeps the first entry
        (warp/_src/apic/capture.py, _collect_metadata), so Warp's own capture replays the first
        overload's code for every overload's launch: seen on the CPU, a float64 launch of a kernel
        whose float32 overload ran first left its output unchanged. The later overload's record is
        keyed by its mangled name (`<key>_<hash>`, as its symbols are) and its launches name that key;
        the module's binary holds every overload, so the loader finds each one's own code. A step
        that launches one overload per kernel is saved exactly as Warp saves it."""
        if module_exec is None:
            return
        recorded = warp_internals.apic_collected_kernel(apic, module_exec, kernel.key)
        name = module_exec.get_kernel_mangled_name(kernel)
        if recorded is None or recorded["forward_name"] in (
            f"{name}_cuda_kernel_forward",
            f"{name}_cpu_forward",
        ):
            return
        own = warp_internals.apic_collected_kernel(apic, module_exec, name)
        if name == kernel.key or (own is not None and not own["forward_name"].startswith(f"{name}_c")):
            # strip_hash (one name for every overload), or a kernel of that name in the module.
            raise self.guard.refuse_at_caller(
                f"step() launches a second overload of the generic kernel '{kernel.key}' (module "
                f"'{kernel.module.name}') {{where}}, and its mangled name '{name}' cannot key a record of "
                "its own. Warp's APIC records a kernel by its key within its module, so the saved graph "
                "would run the first overload's code for this launch too.",
                fix=f"give each overload its own kernel (e.g. one @wp.kernel per dtype instead of '{kernel.key}' "
                "with typing.Any), or launch one overload of it per capture",
            )
        warp_internals.apic_collect_kernel_as(apic, kernel, module_exec, name)
        info.kernel_key = name.encode("utf-8")

    def _packing_patches(self) -> list[tuple[object, str, object]]:
        APICapture = warp_internals.apic_capture_class()  # noqa: N806 - Warp's class

        recorder = self
        original_build = APICapture.build_launch_info
        original_pack = APICapture._pack_param_record
        current_kernel: list[str] = []
        # Per launch being packed: the kernel's parameters (codegen Vars) recorded as handles.
        as_handle: list[list] = []
        # Per launch being packed: its script line (launch_site).
        site: list = []
        uint64_t = warp_internals.types().uint64
        handle_t = warp_internals.types().handle
        struct_t = warp_internals.codegen().Struct
        is_mesh = warp_internals.native_library().wp_apic_is_mesh
        texture_module = warp_internals.loaded_private("texture")
        texture_t = texture_module.Texture if texture_module is not None else None

        def struct_id_fields(struct_type, value, base: int):
            """(byte offset in the struct's value, field type, value) of each wp.uint64 and wp.handle
            field of a struct value, nested structs included, as Warp's walker lays them out
            (warp/_src/apic/capture.py, _walk_value_pointers)."""
            if value is None:
                return
            for name, var in struct_type.vars.items():
                offset = base + getattr(struct_type.ctype, name).offset
                field_value = getattr(value, name, None)
                if isinstance(var.type, struct_t):
                    yield from struct_id_fields(var.type, field_value, offset)
                elif (var.type is uint64_t or var.type is handle_t) and field_value:
                    yield offset, var.type, field_value

        def build_launch_info(self, kernel, *args, **kwargs):
            current_kernel.append(str(kernel.key))
            as_handle.append([])
            site.append(launch_site())
            try:
                info = original_build(self, kernel, *args, **kwargs)
            finally:
                current_kernel.pop()
                as_handle.pop()
                site.pop()
            module_exec = args[0] if args else kwargs.get("module_exec")
            recorder._key_later_overload(self, kernel, module_exec, info)
            if recorder.deferred is not None:
                recorder.deferred.note_launch(kernel, module_exec)
            return info

        def live_mesh_id(original_value, packed_value) -> int:
            """The mesh id a uint64 argument holds, as APIC's handle walker reads it; 0 when none."""
            try:
                value = int(original_value)
            except (TypeError, ValueError):
                return 0
            if not value or ctypes.sizeof(packed_value) != 8:
                return 0
            # The bytes the kernel receives must be that id (APIC copies them, then patches them).
            if int.from_bytes(ctypes.string_at(ctypes.addressof(packed_value), 8), "little") != value:
                return 0
            return value if is_mesh(value) else 0

        def relocated_array(arg_type, original_value, packed_value):
            """The array a wp.uint64 or wp.handle value is recorded as the address of: the header of a
            hash grid built in the step, or the buffer of a live wp.Volume; None for others."""
            if arg_type is not uint64_t and arg_type is not handle_t:
                return None
            try:
                value = int(original_value)
            except (TypeError, ValueError):
                return None
            if not value or ctypes.sizeof(packed_value) != 8:
                return None
            for lowering in (recorder.hash_grids, recorder.bvhs):
                header = lowering.header_for(value) if lowering is not None else None
                if header is not None:
                    return header
            return recorder.volume_buffer(value)

        def pack_param_record(
            self, rec, arg, original_value, packed_value, value_data_buf, relocs_buf, adjoint=False
        ):
            if texture_t is not None and isinstance(arg.type, type) and issubclass(arg.type, texture_t):
                kernel = current_kernel[-1] if current_kernel else "?"
                raise recorder.guard.refuse_texture(kernel, str(arg.label), f"wp.{arg.type.__name__}")
            first_reloc = len(relocs_buf)
            ptr = getattr(original_value, "ptr", None)
            if isinstance(ptr, int) and ptr:
                recorder.array_ptrs.add(ptr)
            packed_arg = arg
            relocated_to = relocated_array(arg.type, original_value, packed_value)
            if relocated_to is not None:
                # Packed as the plain number it is, then relocated to that array.
                packed_arg = copy.copy(arg)
                packed_arg.type = uint64_t
            elif arg.type is uint64_t and recorder.relocate_uint64_mesh_ids and as_handle:
                launch = as_handle[-1]
                if adjoint:
                    # As a wp.handle parameter's adjoint record is walked as a handle too.
                    if any(a is arg for a in launch):
                        packed_arg = copy.copy(arg)
                        packed_arg.type = handle_t
                else:
                    mesh_id = live_mesh_id(original_value, packed_value)
                    if mesh_id:
                        launch.append(arg)
                        packed_arg = copy.copy(arg)
                        packed_arg.type = handle_t
                        kernel = current_kernel[-1] if current_kernel else "?"
                        entry = recorder.mesh_id_relocations.setdefault(
                            (kernel, str(arg.label)), MeshIdRelocation(kernel, str(arg.label))
                        )
                        entry.launches += 1
                        if mesh_id not in entry.mesh_ids:
                            entry.mesh_ids.append(mesh_id)
            original_pack(
                self, rec, packed_arg, original_value, packed_value, value_data_buf, relocs_buf, adjoint
            )
            if relocated_to is not None:
                region_id, region_offset = self.track_array(relocated_to)
                relocs_buf.append(
                    self._make_reloc(0, int(wrpformat.RelocKind.DATA_PTR), region_id, region_offset)
                )
                rec.num_relocs += 1
            elif isinstance(arg.type, struct_t) and not adjoint:
                # The same ids in struct fields (warp.fem passes a Nanogrid's volume id so): Warp's
                # walker leaves a wp.uint64 field verbatim and takes a wp.handle field for a mesh.
                for offset, field, value in struct_id_fields(arg.type, original_value, 0):
                    relocated_to = relocated_array(field, value, ctypes.c_uint64(int(value)))
                    if relocated_to is None:
                        continue
                    for i in range(first_reloc, len(relocs_buf)):
                        if int(relocs_buf[i].value_byte_offset) == offset:
                            del relocs_buf[i]  # the mesh-handle relocation of a wp.handle field
                            rec.num_relocs -= 1
                            self.collected_mesh_ids.discard(int(value))
                            break
                    region_id, region_offset = self.track_array(relocated_to)
                    relocs_buf.append(
                        self._make_reloc(offset, int(wrpformat.RelocKind.DATA_PTR), region_id, region_offset)
                    )
                    rec.num_relocs += 1
            start, size = rec.value_offset, rec.value_size
            relocated = frozenset(int(r.value_byte_offset) for r in relocs_buf[first_reloc:])
            recorder.params.append(
                PackedParam(
                    kernel=current_kernel[-1] if current_kernel else "?",
                    param=str(arg.label),
                    adjoint=bool(adjoint),
                    blob=bytes(value_data_buf[start : start + size]),
                    relocated=relocated,
                    site=site[-1] if site else None,
                )
            )

        return [
            (APICapture, "build_launch_info", build_launch_info),
            (APICapture, "_pack_param_record", pack_param_record),
        ]
