"""The capture script's side of a capture: its contract (CaptureSpec), importing it, running its
build(device) and checking what that returns, and recording its step under APIC.

The capture tool (wrpkg/capture/tool.py) orders these and saves what they record; the compile
stage (wrpkg/build/compile.py) imports a script the way the capture did with import_script.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wrpkg import warp_internals
from wrpkg.capture import call_sites, device_model
from wrpkg.capture.stale_pointers import check_launches
from wrpkg.capture.step_guard import StepRefusal
from wrpkg.errors import CaptureError
from wrpkg.golden import as_tolerance


@dataclass
class CaptureSpec:
    """What a capture script's `build(device)` returns (docs/capture-script.md).

    Args:
      inputs: names -> `wp.array`s, the graph's inputs. A name may also be in `outputs` (an
        in-place array); each name binds the array's whole base allocation (Warp's
        capture_save rule).
      outputs: names -> `wp.array`s, the graph's outputs; their replayed bytes become the
        golden values.
      step: issues the Warp operations of one captured graph (launches, memsets, copies).
      tolerances: output name -> wrpkg.golden.Tolerance(atol=..., rtol=...), for float32 outputs
        that are not bit-exact across replays (float atomics on CUDA): a replay passes where
        |replay - golden| <= atol + rtol * |golden| (numpy.isclose). A bare number is rtol
        alone. Outputs not listed must match bit for bit.
      keep_alive: objects (meshes, ...) that must live until the graph is saved.
    """

    inputs: dict[str, Any]
    outputs: dict[str, Any]
    step: Callable[[], None]
    tolerances: dict[str, float] = field(default_factory=dict)
    keep_alive: list[Any] = field(default_factory=list)


@dataclass
class Binding:
    name: str
    direction: str  # "in" | "out" | "inout"
    layout: dict = field(default_factory=dict)  # array_layout() of the named array


def array_layout(wp, arr) -> dict:
    """The named array as a deployed program must address it inside its binding.

    A binding holds the array's whole base allocation (wp.capture_save binds that), so a
    view is located by its byte offset into it; strides are in bytes, as Warp keeps them.
    `dtype` is Warp's own type name ("float32", "vec3f", "<module>.<Struct>"), and
    `dtype_bytes` its size, so a reader needs no table of Warp's types.
    """
    base = arr
    # Warp's own walk to the base allocation (warp/_src/apic/capture.py, _find_base).
    while getattr(base, "_ref", None) is not None and hasattr(base._ref, "ptr"):
        base = base._ref
    base_ptr = base._storage_base_ptr if base._storage_base_ptr is not None else base.ptr
    offset = 0 if arr.ptr is None or base_ptr is None else arr.ptr - base_ptr
    return {
        "dtype": warp_internals.types().type_repr(arr.dtype),
        "dtype_bytes": warp_internals.types().type_size_in_bytes(arr.dtype),
        "shape": [int(n) for n in arr.shape],
        "strides": [int(n) for n in arr.strides],
        "offset": int(offset),
    }


def _in_script_dir(script: Path) -> Callable[[str], bool]:
    # Bazel's sandbox reaches the script through a symlink: accept either spelling.
    script_dirs = tuple({os.path.abspath(script.parent) + os.sep, os.path.realpath(script.parent) + os.sep})

    def in_script_dir(filename: str) -> bool:
        return os.path.abspath(filename).startswith(script_dirs) or os.path.realpath(filename).startswith(
            script_dirs
        )

    return in_script_dir


def _script_traceback(exc: BaseException, script: Path) -> str:
    """The traceback from the first frame inside the capture script's folder on.

    Frames of the harness itself say nothing useful to the script's author, so they are cut;
    a SyntaxError (no frame in the script) keeps its own location lines.
    """
    in_script_dir = _in_script_dir(script)
    tb = exc.__traceback__
    while tb is not None and not in_script_dir(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    if tb is None:
        return "".join(traceback.format_exception_only(type(exc), exc))
    return "".join(traceback.format_exception(type(exc), exc, tb))


def import_script(script: Path, target: str):
    """Imports the script under its file stem, with its folder first on sys.path.

    That is how `python script.py` resolves the script's own sibling imports; the stable
    module name matters because Warp names modules (and their binaries) after it.
    """
    module_name = script.stem
    if module_name in sys.modules:
        raise CaptureError(
            f"{target}: a Python module named '{module_name}' is already imported in the harness",
            fix="rename the capture script so its file name does not shadow an installed module",
        )
    spec = importlib.util.spec_from_file_location(module_name, script)
    if spec is None or spec.loader is None:
        raise CaptureError(f"{target}: cannot import {script} as a Python file")
    module = importlib.util.module_from_spec(spec)
    # Not resolved: in Bazel's sandbox, sibling modules must come from the declared inputs
    # next to the (symlinked) script, never from the source tree behind the symlink.
    sys.path.insert(0, os.path.abspath(script.parent))
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except device_model.DeviceModelRefusal:
        sys.modules.pop(module_name, None)
        raise
    except Exception as exc:  # the user's code: any exception is a capture failure
        sys.modules.pop(module_name, None)
        raise CaptureError(
            f"{target}: importing the capture script raised {type(exc).__name__}:\n"
            f"{_script_traceback(exc, script)}",
            fix="fix the error in the capture script",
        ) from exc
    if not callable(getattr(module, "build", None)):
        raise CaptureError(
            f"{target}: the capture script defines no function `build(device) -> CaptureSpec`",
            fix="see docs/capture-script.md for the capture-script contract",
        )
    return module


def require_device(wp, device: str, target: str):
    if device == "cpu":
        return wp.get_device("cpu")
    if device == "cuda" or device.startswith("cuda:"):
        if wp.get_cuda_device_count() == 0:
            raise CaptureError(
                f"{target}: this target captures on a CUDA device, but this machine has no CUDA device",
                fix=(
                    "build it on a GPU runner (`bazel build --config=gpu ...` on a machine with a CUDA GPU), "
                    'or set `capture_mode = "retarget"` (or "auto") on the wrp_artifact target to capture on the '
                    "CPU and retarget to CUDA"
                ),
            )
        return wp.get_device(device)
    raise CaptureError(f"{target}: unknown device '{device}'", fix='use device "cpu" or "cuda"')


# A binding names its golden file, golden/<name>.bin: one path component, well under a file system's 255.
MAX_BINDING_NAME_BYTES = 200


def _is_plain_binding_name(name) -> bool:
    return (
        isinstance(name, str)
        and bool(name)
        and name.isprintable()
        and not any(c in name for c in "/\\")
        and not name.startswith(".")
        and len(name.encode("utf-8", "surrogatepass")) <= MAX_BINDING_NAME_BYTES
    )


def _check_spec(wp, spec: Any, device, target: str) -> list[Binding]:
    if not isinstance(spec, CaptureSpec):
        raise CaptureError(
            f"{target}: build(device) returned {type(spec).__name__}, not wrpkg.capture.CaptureSpec",
            fix="return CaptureSpec(inputs=..., outputs=..., step=...) from build()",
        )
    if not callable(spec.step):
        raise CaptureError(f"{target}: CaptureSpec.step is not callable")
    if not spec.outputs:
        raise CaptureError(
            f"{target}: CaptureSpec.outputs is empty",
            fix="name at least one output array; its replayed bytes become the golden values",
        )
    for kind, arrays in (("input", spec.inputs), ("output", spec.outputs)):
        if not isinstance(arrays, dict):
            raise CaptureError(f"{target}: CaptureSpec.{kind}s must be a dict of name -> wp.array")
        for name, arr in arrays.items():
            if not _is_plain_binding_name(name):
                # Refused here, not by pack after every compile: the name becomes golden/<name>.bin.
                raise CaptureError(
                    f"{target}: {kind} name {name!r} must be a non-empty plain name: printable, without '/' or "
                    f"'\\', not starting with '.', at most {MAX_BINDING_NAME_BYTES} bytes in UTF-8",
                    fix="rename the binding in the CaptureSpec",
                )
            if not isinstance(arr, wp.array):
                raise CaptureError(
                    f"{target}: {kind} '{name}' is {type(arr).__name__}, not a wp.array",
                    fix=f"bind a wp.array under the name '{name}'",
                )
            if arr.device != device:
                raise CaptureError(
                    f"{target}: {kind} '{name}' lives on {arr.device}, the capture runs on {device}",
                    fix="allocate every array on the device passed to build(device)",
                )
    bindings = []
    for name in sorted(set(spec.inputs) | set(spec.outputs)):
        if name in spec.inputs and name in spec.outputs:
            if spec.inputs[name] is not spec.outputs[name]:
                raise CaptureError(
                    f"{target}: '{name}' names one array as input and another as output",
                    fix="use one name per array; a name in both inputs and outputs is one in-place array",
                )
            bindings.append(Binding(name, "inout", array_layout(wp, spec.inputs[name])))
        else:
            arr = spec.inputs[name] if name in spec.inputs else spec.outputs[name]
            bindings.append(Binding(name, "in" if name in spec.inputs else "out", array_layout(wp, arr)))
    for name, tol in spec.tolerances.items():
        if name not in spec.outputs:
            raise CaptureError(
                f"{target}: tolerance given for '{name}', which is not an output",
                fix=f"tolerances keys must be output names: {sorted(spec.outputs)}",
            )
        try:
            as_tolerance(tol)
        except ValueError as exc:
            raise CaptureError(
                f"{target}: tolerance for '{name}': {exc}",
                fix="give wrpkg.golden.Tolerance(atol=..., rtol=...) or a bare relative tolerance in (0, 1)",
            ) from exc
    return bindings


def _check_bindings_captured(graph, spec: CaptureSpec, target: str) -> None:
    """Every bound array must be memory the captured operations use.

    Warp's capture_save would silently register an unused array as a new region; a binding
    the graph never touches is almost always a script bug (a stale or copied array).
    This reads APICapture's region table (private, but pinned with the Warp version).
    """
    apic = graph._apic_capture
    for kind, arrays in (("input", spec.inputs), ("output", spec.outputs)):
        for name, arr in arrays.items():
            base, base_ptr, _, _ = apic._find_base(arr)
            if apic._region_key(base, base_ptr) not in apic._regions:
                raise CaptureError(
                    f"{target}: {kind} '{name}' is not used by any operation of the captured step",
                    fix=f"bind an array that step() reads or writes, or drop '{name}' from the {kind}s",
                )


def build_spec(
    wp, script: Path, device, target: str, build_watch=None, later=None, imported_kernels=None, module=None
):
    """Runs the script's build(device) and loads the Warp modules it brought in that are not an
    installed library's (the script's own and its siblings'), so their compile errors come first; or,
    given a list `later` (a CPU capture, whose step compiles nothing: wrpkg.capture.deferred_compile), adds
    their names to it.
    Fills `imported_kernels` (when given) with each Warp module's kernel keys once the script is
    imported, before build() runs: what the per-SM compile of a MathDx module will find.
    Returns the CaptureSpec, its bindings and the source paths relocated so far
    (`source_paths.relocate`). `module`: the script, when it is imported already."""
    modules_before = set(warp_internals.context().user_modules)
    from wrpkg.capture import source_paths  # noqa: PLC0415 - imports Warp

    if module is None:
        module = import_script(script, target)
    if imported_kernels is not None:
        for name, imported in warp_internals.context().user_modules.items():
            imported_kernels[name] = set(imported.kernels)
    # Before any code is generated, so Warp writes machine-independent source paths itself.
    paths = source_paths.relocate(wp, script.parent)
    try:
        with build_watch.watching() if build_watch else contextlib.nullcontext():
            spec = module.build(device.alias)
    except device_model.DeviceModelRefusal:
        raise
    except Exception as exc:  # the user's code
        raise CaptureError(
            f"{target}: build({device.alias!r}) raised {type(exc).__name__}:\n{_script_traceback(exc, script)}",
            fix="fix the error in the capture script",
        ) from exc
    bindings = _check_spec(wp, spec, device, target)
    # Again for the modules build() imported.
    source_paths.relocate(wp, script.parent, paths)
    names = sorted(set(warp_internals.context().user_modules) - modules_before)
    # An installed library's modules (Newton brings in ~140, a step launches a few) are built only where
    # the step launches them: on CUDA by Warp during the capture (drivers of CUDA 12.3 on load modules
    # during a graph capture; older ones make Warp load them all at capture_begin); on the CPU, compiled
    # after the step. The script's own are built even when unused, so a broken kernel is refused first.
    modules = warp_internals.context().user_modules
    own = [name for name in names if not _is_installed_module(modules[name], script)]
    if later is None:
        load_modules(wp, own, device, target)
    else:
        later += own
    return spec, bindings, paths


def _is_installed_module(module, script: Path) -> bool:
    """Whether Warp module `module` is an installed library's: every file it comes from is
    (call_sites.module_source_files, call_sites.is_installed)."""
    files = call_sites.module_source_files(module)
    return bool(files) and all(call_sites.is_installed(path, (str(script.parent),)) for path in files)


def load_modules(wp, names, device, target: str) -> None:
    for name in names:
        try:
            wp.load_module(name, device=device)
        except Exception as exc:  # Warp's code generator or compiler on the user's kernels
            if device.is_cuda and "block_dim" in str(exc):
                # Loaded here with the default block_dim, which e.g. wp.tile_fft of a small tile refuses:
                # the launch loads the variant of its own block_dim (on demand, also during a CUDA capture).
                continue
            raise CaptureError(
                f"{target}: Warp could not build module '{name}' for {device.alias}: {type(exc).__name__}: {exc}",
                fix="fix the kernel named above (Warp's message gives its file and line)",
            ) from exc


def record_step(wp, spec, device, script: Path, target: str, recorder):
    """Captures one spec.step() under APIC and checks what it recorded."""
    from wrpkg.capture import retarget_recorder  # noqa: PLC0415 - imports Warp

    wp.capture_begin(device=device, apic=True)
    try:
        with recorder.recording(device):
            spec.step()
    except (retarget_recorder.RetargetError, StepRefusal, device_model.DeviceModelRefusal):
        with contextlib.suppress(Exception):
            wp.capture_end(device=device)
        raise
    except Exception as exc:  # the user's code
        # End the half-recorded capture so Warp's state is clean; its own error is secondary.
        with contextlib.suppress(Exception):
            wp.capture_end(device=device)
        # A refusal the step caught (and then failed otherwise) is the error to report.
        recorder.guard.check()
        if isinstance(exc, NotImplementedError) and str(exc).startswith("APIC"):
            # Warp's own refusal: the script is not wrong, APIC cannot record this yet.
            raise CaptureError(
                f"{target}: step() does what Warp's APIC cannot record yet, "
                f"{call_sites.describe(call_sites.of_exception(exc))}: {exc}",
                fix="do that another way, as Warp's message says, or outside step() "
                "(NVIDIA/warp#1675 tracks what APIC cannot record)",
            ) from exc
        raise CaptureError(
            f"{target}: step() raised {type(exc).__name__} during capture:\n{_script_traceback(exc, script)}",
            fix="fix the error in the capture script",
        ) from exc
    if recorder.guard.refusals:
        with contextlib.suppress(Exception):
            wp.capture_end(device=device)
        recorder.guard.check()
    graph = wp.capture_end(device=device)
    _check_bindings_captured(graph, spec, target)
    check_launches(wp, recorder, [*spec.inputs.values(), *spec.outputs.values(), *spec.keep_alive], target)
    return graph
