"""Run a capture script: capture its step with APIC, save the graph, and record golden outputs.

    python -m wrpkg.capture --script models/sim.py --device cpu --out-dir RAW --stem sim \\
        [--mode gpu|retarget|auto] [--cuda-arch 90] [--label //models:sim_wrp] [--cache-dir DIR]

`--device cuda` captures on a CUDA GPU (`--mode gpu`, the default), or runs the script on
the CPU and writes the CUDA capture Warp would have written on an sm_<cuda-arch> GPU
(`--mode retarget`, wrpkg/capture/retarget.py; no GPU needed), or the first when this machine has
a CUDA GPU and the second otherwise (`--mode auto`).

writes, atomically (all of it or nothing):

    RAW/sim.wrp              Warp's capture_save output (raw, not canonical)
    RAW/sim_modules/         the module binaries (+ generated .cu sources on CUDA)
    RAW/golden/<name>.bin    every output's bytes after one replay of the saved graph
    RAW/interface.json       bindings (name, direction, dtype, shape, strides, offset), golden
                             files, tolerances, golden_device
    RAW/capture.json         provenance: Warp version, device name, SM, driver, CUDA toolkit, mode

The capture-script contract is in docs/capture-script.md: the script defines
`build(device) -> CaptureSpec`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wrpkg import atomic, mathdx, warp_internals, wrpformat
from wrpkg.capture import (
    build_launches,
    call_sites,
    crash_watch,
    device_branches,
    device_model,
    golden_caveats,
    initial_state,
    kernel_cache,
)
from wrpkg.capture.build_launches import BuildLaunchWatch
from wrpkg.capture.launch_recorder import LaunchRecorder
from wrpkg.capture.lowering import mesh_builds
from wrpkg.capture.stale_pointers import check_launches, relocation_note, relocations
from wrpkg.capture.step_guard import StepRefusal
from wrpkg.errors import CaptureError
from wrpkg.golden import as_tolerance, first_disagreement
from wrpkg.interface import INTERFACE_SCHEMA
from wrpkg.manifest import CAPTURE_INFO_SCHEMA

CAPTURE_MODES = ("gpu", "retarget", "auto")


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


@dataclass
class CaptureResult:
    """What a capture wrote (`run_capture`).

    Attributes:
      out_dir: the raw capture directory.
      wrp_path: the saved `.wrp` in it, `<out_dir>/<stem>.wrp`.
      golden: output name -> its golden file, `<out_dir>/golden/<name>.bin`.
      interface: interface.json's data: bindings, golden files, tolerances, golden_device.
      info: capture.json's data: provenance (Warp version, device, SM, driver, mode).
    """

    out_dir: Path
    wrp_path: Path
    golden: dict[str, Path]
    interface: dict
    info: dict


def _target_name(label: str | None, script: Path) -> str:
    return f"{label} (capture script {script})" if label else f"capture script {script}"


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


def _require_device(wp, device: str, target: str):
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


def _versions(wp, device) -> dict:
    runtime = warp_internals.context().runtime

    def dotted(version):
        return None if version is None else ".".join(str(part) for part in version)

    return {
        "schema": CAPTURE_INFO_SCHEMA,
        "warp_version": wp.config.version,
        "device": "cuda" if device.is_cuda else "cpu",
        "device_name": device.name,
        "sm": device.arch if device.is_cuda else None,
        "driver_version": dotted(runtime.driver_version) if device.is_cuda else None,
        "cuda_toolkit_version": dotted(runtime.toolkit_version) if device.is_cuda else None,
    }


def _retarget_versions(wp, arch: int) -> dict:
    """Provenance of a retargeted capture: no GPU ran it; Warp's own NVRTC compiled it."""
    toolkit = warp_internals.context().runtime.toolkit_version
    return {
        "schema": CAPTURE_INFO_SCHEMA,
        "warp_version": wp.config.version,
        "device": "cuda",
        "device_name": f"none (retargeted from a CPU capture to sm_{arch})",
        "sm": arch,
        "driver_version": None,
        "cuda_toolkit_version": None if toolkit is None else ".".join(str(part) for part in toolkit),
        "mode": "retarget",
    }


def _write_json(path: Path, obj: dict) -> None:
    path.write_text(json.dumps(obj, sort_keys=True, indent=1) + "\n", encoding="utf-8")


def _check_replaceable(out_dir: Path, target: str) -> None:
    """Bazel pre-creates a tree artifact's dir empty, so an empty out_dir (or a previous
    capture) may be replaced; anything else is refused before any work is done."""
    if out_dir.is_dir() and not out_dir.is_symlink():
        entries = set(os.listdir(out_dir))
        if not entries or "capture.json" in entries:
            return
    elif not out_dir.exists() and not out_dir.is_symlink():
        return
    raise CaptureError(
        f"{target}: {out_dir} exists and is not an earlier capture output; refusing to replace it",
        fix="pass an empty or new --out-dir",
    )


def capture(
    script: str | os.PathLike,
    device: str,
    out_dir: str | os.PathLike,
    stem: str,
    label: str | None = None,
    cache_dir: str | os.PathLike | None = None,
    mode: str = "gpu",
    cuda_arch: int | None = None,
    trace_lines: bool = True,
    relocate_uint64_mesh_ids: bool = True,
    seed_caches: list[str | os.PathLike] = (),
    device_model_name: str | None = None,
) -> CaptureResult:
    """Runs the capture script and writes the raw capture directory (see the module doc).

    What `wrp_artifact`'s capture action runs (`python -m wrpkg.capture`), from Python.

    Args:
      script: the capture script (docs/capture-script.md).
      device: "cpu", "cuda" or "cuda:N".
      out_dir: the raw capture directory to write; replaced as a whole, or left as it was.
      stem: the `.wrp` file's name without `.wrp`.
      label: the Bazel target, named in errors and in capture.json.
      cache_dir: Warp's kernel cache; default: a fresh one inside the capture's work directory.
      mode: for a CUDA device, "gpu" (capture on the GPU), "retarget" (on the CPU, written as
        the CUDA capture; no GPU) or "auto" (the first when this machine has a CUDA GPU).
      cuda_arch: the SM a retargeted capture compiles its cubins for (default: the device model's
        SM; 90 without a model).
      trace_lines: False (retarget mode) records faster but raises retarget.LinesNotTraced where
        a refusal would name the script line of an operation that is no launch (run() runs it
        again).
      relocate_uint64_mesh_ids: record a `wp.uint64` launch parameter that holds exactly a
        live mesh id as a `wp.handle` relocation, as Warp saves a handle; False refuses it
        (`--no-relocate-uint64-mesh-ids`).
      seed_caches: kernel caches made by `wrpkg.capture.kernel_cache` (read only) that the capture's own
        cache starts from, so it compiles only what they lack; no effect on what it writes.
      device_model_name: for a retargeted capture, the GPU that code outside Warp and wrpkg is told
        it runs on (wrpkg.capture.device_model.MODELS; None: "h200"), or "none": the CPU's answers,
        the lines that asked recorded (wrpkg.capture.device_branches). Ignored for a GPU capture.

    Returns:
      A CaptureResult: the paths written and the interface and provenance recorded.

    Raises:
      CaptureError: the script failed, broke the contract, or made a step the capture refuses.
    """
    script = Path(script)
    out_dir = Path(out_dir)
    target = _target_name(label, script)
    if not script.is_file():
        raise CaptureError(f"{target}: capture script not found")
    if not stem or "/" in stem or stem.startswith("."):
        raise CaptureError(f"{target}: --stem must be a plain file stem, got {stem!r}")
    if mode not in CAPTURE_MODES:
        raise CaptureError(
            f"{target}: unknown capture mode {mode!r}", fix=f"use one of {', '.join(CAPTURE_MODES)}"
        )
    if mode != "gpu" and not (device == "cuda" or device.startswith("cuda:")):
        raise CaptureError(
            f"{target}: capture mode {mode!r} makes a CUDA capture, but the device is {device!r}",
            fix='use mode "gpu" (the default) for a CPU capture',
        )

    model = device_model.resolve(device_model_name, target)  # an unknown name is refused before anything runs
    _check_replaceable(out_dir, target)
    with atomic.staged(
        out_dir,
        CaptureError,
        f"{target}: writing the capture",
        f"{out_dir} was left as it was",
        "run the capture again",
    ) as tmp_dir:
        result = _capture_into(
            script,
            device,
            tmp_dir,
            stem,
            label,
            cache_dir,
            target,
            mode,
            cuda_arch,
            trace_lines,
            relocate_uint64_mesh_ids,
            seed_caches,
            model,
        )
        atomic.publish_dir(tmp_dir, out_dir)
    result.out_dir = out_dir
    result.wrp_path = out_dir / f"{stem}.wrp"
    result.golden = {name: out_dir / "golden" / f"{name}.bin" for name in result.golden}
    return result


def _capture_into(
    script,
    device_name,
    work,
    stem,
    label,
    cache_dir,
    target,
    mode,
    cuda_arch,
    trace_lines,
    relocate_uint64_mesh_ids=True,
    seed_caches=(),
    target_device=None,
) -> CaptureResult:
    import warp as wp  # noqa: PLC0415 - only the tools that need Warp import it

    from wrpkg.capture import retarget, source_paths  # noqa: PLC0415 - imports Warp

    cache = kernel_cache.use_kernel_cache(wp, work, cache_dir)
    if seed_caches:
        crash_watch.phase(f"seeding the kernel cache from {len(seed_caches)} wrp_kernel_cache folder(s)")
        kernel_cache.seed(seed_caches, target)
    if mode == "auto":
        mode = "gpu" if wp.get_cuda_device_count() > 0 else "retarget"
    if mode == "retarget":
        # The script runs on the CPU; retarget.retarget() makes the CUDA capture of it.
        device_name = "cpu"
    device = _require_device(wp, device_name, target)
    crash_watch.phase(f"importing {script.name} and its build({device.alias!r})")
    user_dirs = tuple(
        sorted({os.path.abspath(script.parent) + os.sep, os.path.realpath(script.parent) + os.sep})
    )
    build_watch = BuildLaunchWatch(user_dirs) if mode == "retarget" else None
    # Absolute source path -> its stable form (wrpkg.capture.source_paths): this capture's own map, added to
    # at each relocation (before and after build(), after the step), read by canonicalize_sources.
    # A CPU capture compiles its modules after the step, once its refusals are decided.
    later = [] if device.is_cpu else None
    # What build() and the step allocate is filled with a sentinel, so bytes nobody wrote are found.
    fresh = initial_state.FreshMemory(user_dirs)
    commands = retarget.watching_launch_commands() if mode == "retarget" else contextlib.nullcontext()
    # A retargeted capture answers device queries as its target GPU (wrpkg.capture.device_model), or,
    # with no model, records the lines that asked (wrpkg.capture.device_branches).
    model = device_model.DeviceModel(target_device, target) if mode == "retarget" and target_device else None
    branches = device_branches.DeviceBranchWatch() if mode == "retarget" and model is None else None
    watcher = model or branches
    asking = watcher.watching() if watcher else contextlib.nullcontext()
    imported_kernels: dict[str, set[str]] = {}
    meshes = mesh_builds.MeshBuildWatch()  # how build() made each wp.Mesh, for its record
    with fresh.installed(), commands, asking, meshes.installed():
        spec, bindings, paths = _build_spec(wp, script, device, target, build_watch, later, imported_kernels)
    if model is not None:
        model.check()  # a refusal that build()'s code caught

    if mode == "retarget":
        recorder = retarget.RetargetRecorder(user_dirs=user_dirs, target=target, trace_lines=trace_lines)
    else:
        recorder = LaunchRecorder(target=target)
    # A wp.uint64 parameter holding a live wp.Mesh id is recorded as a wp.handle (wrpkg.capture.launch_recorder).
    recorder.relocate_uint64_mesh_ids = relocate_uint64_mesh_ids
    recorder.defer_compiles = later is not None
    crash_watch.phase(f"step() under capture on {device.alias}")
    try:
        try:
            with fresh.installed(), watcher.watching() if watcher else contextlib.nullcontext():
                graph = _record_step(wp, spec, device, script, target, recorder)
            if model is not None:
                model.check()  # a refusal that the step's code caught
        except CaptureError:
            if branches is not None and branches.records():
                print(device_branches.refusal_note(target, branches.records()), file=sys.stderr)
            raise
        crash_watch.phase("checking what the step recorded, then compiling its modules and build()'s")
        with recorder.deferring():  # their code is generated (a broken kernel refused) before any compile
            _load_modules(wp, later or (), device, target)
        recorder.compile_deferred()
    finally:
        recorder.abandon_deferred()  # a refused step's modules stay uncompiled
    crash_watch.phase("wp.capture_save")
    saved = None  # the capture's .wrp, parsed: once, and each stage below changes that record
    try:
        if device.is_cuda:
            # source_fallback=True, except that MathDx modules keep their linked cubin (wrpkg.mathdx):
            # those records are completed in the parsed .wrp it returns, not in Warp's file.
            saved = mathdx.save_graph(wp, graph, work / stem, spec.inputs, spec.outputs)
        else:
            wp.capture_save(graph, str(work / stem), inputs=spec.inputs, outputs=spec.outputs)
    except RuntimeError as exc:
        raise CaptureError(f"{target}: wp.capture_save failed: {exc}") from exc
    del graph
    # Functions the step made (a generic kernel's overload, built by a launch) name absolute paths.
    source_paths.relocate(wp, script.parent, paths)

    wrp_path = work / f"{stem}.wrp"
    modules_dir = work / f"{stem}_modules"
    # Warp's file is the capture until a stage below changes the record; it is then written once,
    # before anything reads the file again: the golden replay (gpu and cpu mode), which loads the
    # capture as a user would, or, for a retarget, once the CUDA capture is complete (its replay is
    # of the CPU capture, Warp's file). Without modules there is nothing to canonicalize.
    warp_file_is_current = saved is None
    if saved is None:
        saved = wrpformat.read_wrp(wrp_path)
    # A load builds each mesh's tree as the program built it (a retargeted capture's replay here is
    # on the CPU; its CUDA record gets a GPU's tree below).
    if meshes.apply(saved, target, for_gpu=False):
        warp_file_is_current = False
        if mode == "retarget":
            wrpformat.write_wrp(saved, wrp_path)
    # A retargeted capture's CPU modules are replaced by its CUDA modules (checked below): their
    # objects may name the build directory (CPU tile code, e.g. tile_matmul's scalar path, embeds it).
    if mode != "retarget":
        if modules_dir.exists() and source_paths.canonicalize_sources(saved, modules_dir, paths, target):
            warp_file_is_current = False
        if not warp_file_is_current:
            wrpformat.write_wrp(saved, wrp_path)
    # Bytes nobody wrote are saved as zeros; the outputs of a replay from the bytes as they were decide
    # whether the step read them (wrpkg.capture.initial_state).
    region_bindings = {b.region_id: b.name for b in saved.metadata.bindings}
    unwritten = fresh.canonicalize(saved, recorder.capture, region_bindings)
    if unwritten:
        crash_watch.phase(f"replay of the saved {wrp_path.name} before zeroing the bytes nobody wrote")
        as_saved = _replay_outputs(wp, wrp_path, spec, device, target)
        wrpformat.write_wrp(saved, wrp_path)
    crash_watch.phase(f"golden replay 1/2 of the saved {wrp_path.name}")
    golden_files, golden_records, golden_outputs = _replay_golden(
        wp, wrp_path, modules_dir, work / "golden", spec, device, target
    )
    read_unwritten = []
    if unwritten and _outputs_differ(wp, spec, as_saved, golden_outputs):
        crash_watch.phase("finding the arrays whose unwritten bytes the step reads")
        read_unwritten = initial_state.culprits(
            saved,
            unwritten,
            lambda variant: _outputs_differ(
                wp, spec, _replay_variant(wp, variant, wrp_path, spec, device, target), golden_outputs
            ),
        )
        print(_unwritten_note(target, read_unwritten), file=sys.stderr)

    golden_device = "cuda" if device.is_cuda else "cpu"
    if mode == "retarget":
        # Without --cuda-arch, the device model's SM (sm_90 without a model).
        arch = cuda_arch or (model.model.arch if model is not None else retarget.DEFAULT_CUDA_ARCH)
        if model is not None and arch != model.model.arch:
            print(
                f"note: {target}: the code was told it runs on the {model.name} device model "
                f"(sm_{model.model.arch}), and the capture's cubins are compiled for sm_{arch} (cuda_arch): "
                "set cuda_arch to the model's SM for the capture such a GPU makes",
                file=sys.stderr,
            )
        crash_watch.phase(f"retargeting to sm_{arch}")
        retarget.retarget(saved, modules_dir, recorder, arch)
        meshes.apply(saved, target, for_gpu=True)
        source_paths.canonicalize_sources(saved, modules_dir, paths, target)
        wrpformat.write_wrp(saved, wrp_path)
        info = _retarget_versions(wp, arch)
        computed = build_watch.computed_state({**spec.inputs, **spec.outputs}, recorder.array_ptrs)
        if computed:
            info["initial_state_from_build_kernels"] = computed
            print(build_launches.note(target, computed), file=sys.stderr)
        caveats = golden_caveats.launch_caveats(recorder.calls) + golden_caveats.operation_caveats(
            recorder.builtin_calls
        )
        if caveats:
            info["cpu_golden_caveats"] = caveats
            print(golden_caveats.note(target, caveats), file=sys.stderr)
        volumes = [
            f"wp.Volume ({recorder.volumes[i].size} bytes)" for i in sorted(recorder.relocated_volume_ids)
        ]
        if volumes:
            # Warp builds a NanoVDB buffer on the CPU with a few header bytes laid out unlike a GPU's
            # build (seen on an H100: 3 bytes of 300 kB; the samples are the same).
            info["volume_buffers_built_on_cpu"] = volumes
            print(
                f"{target}: note: {len(volumes)} wp.Volume buffer(s) saved as built on the CPU ("
                + ", ".join(volumes)
                + "): a GPU builds a few header bytes differently (the same samples), so this bundle may "
                "differ from a native capture; load the volume from a .nvdb file to make them identical",
                file=sys.stderr,
            )
        bvhs = recorder.bvhs.descriptions() if recorder.bvhs is not None else []
        if bvhs:
            # A GPU builds an LBVH where the CPU builds with SAH: the same items found, maybe in
            # another order.
            info["bvhs_built_on_cpu"] = bvhs
            print(
                f"{target}: note: {len(bvhs)} wp.Bvh tree(s) saved as the CPU built them ("
                + ", ".join(bvhs)
                + "; refits are recorded): the bundle carries this tree to every GPU, where the program run "
                "there builds an LBVH, so its queries may visit items in another order than the program's own "
                "GPU run",
                file=sys.stderr,
            )
        info["device_model"] = model.name if model is not None else device_model.NONE
        if model is not None and model.answers:
            info["device_model_answers"] = model.records()
            print(device_model.note(target, model), file=sys.stderr)
        if branches is not None and branches.sites:
            info["cpu_device_branches"] = branches.records()
            print(device_branches.note(target, info["cpu_device_branches"]), file=sys.stderr)
    else:
        info = _versions(wp, device)
    interface = {
        "schema": INTERFACE_SCHEMA,
        "stem": stem,
        "device": info["device"],
        "golden_device": golden_device,
        "bindings": [{"name": b.name, "direction": b.direction, **b.layout} for b in bindings],
        "golden": golden_records,
    }
    if label:
        info["label"] = label
    cuda_capture = device.is_cuda or mode == "retarget"
    linked_modules = (
        sorted(m.name for m in saved.metadata.modules if mathdx.is_linked(m))
        if saved is not None and cuda_capture
        else []
    )
    if linked_modules:
        info["mathdx_linked_modules"] = linked_modules
        _note_linked_kernels_made_later(target, saved, imported_kernels)
    if unwritten:
        info["zeroed_unwritten_bytes"] = sum(r.words for r in unwritten) * len(initial_state.SENTINEL)
    if read_unwritten:
        info["step_reads_unwritten"] = [initial_state.describe(r) for r in read_unwritten]
    relocated = relocations(recorder)
    if relocated:
        info["uint64_mesh_ids_as_handles"] = relocated
        print(relocation_note(target, relocated), file=sys.stderr)
    _write_json(work / "interface.json", interface)
    _write_json(work / "capture.json", info)
    if cache is not None:
        shutil.rmtree(cache, ignore_errors=True)
    return CaptureResult(work, wrp_path, golden_files, interface, info)


def _build_spec(wp, script: Path, device, target: str, build_watch=None, later=None, imported_kernels=None):
    """Runs the script's build(device) and loads the Warp modules it brought in that are not an
    installed library's (the script's own and its siblings'), so their compile errors come first; or,
    given a list `later` (a CPU capture, whose step compiles nothing: wrpkg.capture.deferred_compile), adds
    their names to it.
    Fills `imported_kernels` (when given) with each Warp module's kernel keys once the script is
    imported, before build() runs: what the per-SM compile of a MathDx module will find.
    Returns the CaptureSpec, its bindings and the source paths relocated so far
    (`source_paths.relocate`)."""
    modules_before = set(warp_internals.context().user_modules)
    from wrpkg.capture import source_paths  # noqa: PLC0415 - imports Warp

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
        _load_modules(wp, own, device, target)
    else:
        later += own
    return spec, bindings, paths


def _is_installed_module(module, script: Path) -> bool:
    """Whether Warp module `module` is an installed library's: every file it comes from is
    (call_sites.module_source_files, call_sites.is_installed)."""
    files = call_sites.module_source_files(module)
    return bool(files) and all(call_sites.is_installed(path, (str(script.parent),)) for path in files)


def _load_modules(wp, names, device, target: str) -> None:
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


def _record_step(wp, spec, device, script: Path, target: str, recorder):
    """Captures one spec.step() under APIC and checks what it recorded."""
    from wrpkg.capture import retarget  # noqa: PLC0415 - imports Warp

    wp.capture_begin(device=device, apic=True)
    try:
        with recorder.recording(device):
            spec.step()
    except (retarget.RetargetError, StepRefusal, device_model.DeviceModelRefusal):
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


def _replay_golden(wp, wrp_path: Path, modules_dir: Path, golden_dir: Path, spec, device, target: str):
    """Golden values: load the saved file as a user would and replay it from its saved initial
    state, twice, each from a fresh load. An output the two replays disagree on (atomics,
    order across blocks) has no golden value to hold a replay to: it is refused unless it
    declares a tolerance the two replays meet. Files Warp may add while loading (a
    guest-compile cache) are not part of the capture: they are removed. Returns the golden
    files by name and their records."""
    saved_module_files = set(os.listdir(modules_dir)) if modules_dir.exists() else set()
    first = _replay_outputs(wp, wrp_path, spec, device, target)
    crash_watch.phase(f"golden replay 2/2 of the saved {wrp_path.name}")
    second = _replay_outputs(wp, wrp_path, spec, device, target)
    tolerances = {
        name: as_tolerance(spec.tolerances[name]) for name in spec.outputs if name in spec.tolerances
    }
    dtypes = {name: warp_internals.types().type_repr(arr.dtype) for name, arr in spec.outputs.items()}
    disagreement = first_disagreement(first, second, tolerances, dtypes)
    if disagreement is not None:
        name, verdict = disagreement
        declared = tolerances.get(name)
        raise CaptureError(
            f"{target}: output '{name}' differs between two replays of the saved graph on {device.alias} "
            f"({verdict.detail}): the step is not deterministic on this device (float atomics, or an order "
            "that depends on scheduling), so no golden value can hold a replay to it"
            + (
                f"; its declared tolerance (atol {declared.atol}, rtol {declared.rtol}) is too tight"
                if declared
                else ""
            ),
            fix=f"declare a tolerance for '{name}' in the CaptureSpec (tolerances={{'{name}': Tolerance(atol=..., "
            "rtol=...)}}) that covers the run-to-run spread, or make the step deterministic",
        )
    golden_dir.mkdir()
    golden_files = {}
    golden_records = []
    for name in sorted(spec.outputs):
        data = first[name]
        path = golden_dir / f"{name}.bin"
        path.write_bytes(data)
        golden_files[name] = path
        tol = tolerances.get(name)
        golden_records.append(
            {
                "name": name,
                "file": f"golden/{name}.bin",
                "bytes": len(data),
                "atol": None if tol is None else tol.atol,
                "rtol": None if tol is None else tol.rtol,
            }
        )
    if modules_dir.exists():
        for extra in set(os.listdir(modules_dir)) - saved_module_files:
            extra_path = modules_dir / extra
            if extra_path.is_dir():
                shutil.rmtree(extra_path)
            else:
                extra_path.unlink()
    return golden_files, golden_records, first


def _outputs_differ(wp, spec, outputs: dict[str, bytes], golden: dict[str, bytes]) -> bool:
    """Whether `outputs` and the golden replay's differ by more than the declared tolerances."""
    tolerances = {
        name: as_tolerance(spec.tolerances[name]) for name in spec.outputs if name in spec.tolerances
    }
    dtypes = {name: warp_internals.types().type_repr(arr.dtype) for name, arr in spec.outputs.items()}
    return first_disagreement(outputs, golden, tolerances, dtypes) is not None


def _replay_variant(wp, variant, wrp_path: Path, spec, device, target: str) -> dict[str, bytes]:
    """Outputs of one replay of `variant` (a changed copy of the capture), saved beside it."""
    folder = wrp_path.parent / ".variant"
    folder.mkdir()
    try:
        path = folder / wrp_path.name
        wrpformat.write_wrp(variant, path)
        modules = wrp_path.with_name(f"{wrp_path.stem}_modules")
        if modules.exists():
            (folder / modules.name).symlink_to(modules.resolve(), target_is_directory=True)
        return _replay_outputs(wp, path, spec, device, target)
    finally:
        shutil.rmtree(folder)


def _note_linked_kernels_made_later(target: str, saved, imported_kernels: dict[str, set[str]]) -> None:
    """Says, at the capture, what the per-SM compile would find only later: a MathDx module whose
    kernels the script makes while it runs (NVIDIA's example_tile_block_cholesky, MuJoCo Warp) cannot
    be rebuilt per SM from an import, so only the capture's own SM can be served (wrpkg.build.compile)."""
    for record in saved.metadata.modules:
        if not mathdx.is_linked(record):
            continue
        launched = {k.key for k in saved.metadata.kernels if k.module_hash == record.hash}
        later = sorted(launched - imported_kernels.get(record.name, set()))
        if later:
            print(
                f"{target}: note: module {record.name} links MathDx LTO-IR, which is built per SM from the "
                f"script as imported, and its kernel(s) {', '.join(repr(k) for k in later)} are made while the "
                f"script runs, not at import: the bundle can serve only this capture's sm_{record.target_arch} "
                f"(its cubin). List only sm_{record.target_arch} in archs, or define the kernel(s) at import "
                "(at module level, not in a function build() calls)",
                file=sys.stderr,
            )


def _unwritten_note(target: str, regions) -> str:
    return (
        f"{target}: note: step() reads bytes that nothing wrote before it (allocated with wp.empty or "
        "its like, and left as they were): the capture saves them as zeros, and its golden values are "
        "what a replay from zeros computes, while the program run directly reads whatever memory "
        "held. The arrays: "
        + "; ".join(initial_state.describe(r) for r in regions)
        + ". To make the program itself deterministic, allocate them with wp.zeros or write them in build()."
    )


def _replay_outputs(wp, wrp_path: Path, spec, device, target: str) -> dict[str, bytes]:
    """One fresh load and replay of the saved graph: each output's bytes."""
    try:
        loaded = wp.capture_load(str(wrp_path), device=device)
        return warp_internals.replay_outputs(loaded, sorted(spec.outputs), device)
    except RuntimeError as exc:
        raise CaptureError(f"{target}: the saved graph does not load or replay: {exc}") from exc


def configure_parser(parser) -> None:
    parser.add_argument("--script", required=True, help="the capture script (defines build(device))")
    parser.add_argument("--device", required=True, help='"cpu" or "cuda" (or "cuda:N")')
    parser.add_argument("--out-dir", required=True, help="the raw capture directory to write")
    parser.add_argument("--stem", required=True, help="file stem of the .wrp and its _modules dir")
    parser.add_argument("--label", default=None, help="the Bazel target, named in errors")
    parser.add_argument("--cache-dir", default=None, help="Warp kernel cache (default: a temp dir)")
    parser.add_argument(
        "--seed-cache",
        action="append",
        default=None,
        help="a kernel cache made by wrpkg.capture.kernel_cache that the capture's own starts from (repeatable)",
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no progress lines on stderr (each phase, with seconds since start)",
    )
    parser.add_argument(
        "--mode",
        default="gpu",
        choices=CAPTURE_MODES,
        help="for --device cuda: gpu (capture on the GPU), retarget (run on the CPU, write the CUDA capture), "
        "auto (gpu when this machine has one, else retarget)",
    )
    parser.add_argument(
        "--cuda-arch",
        type=int,
        default=None,
        help="SM of a retargeted capture's module binaries (default: the device model's, 90 without one)",
    )
    parser.add_argument(
        "--device-model",
        default=None,
        metavar="NAME|none",
        help="for --mode retarget: the GPU that code outside Warp and wrpkg is told it runs on ("
        + ", ".join(device_model.MODELS)
        + f"; default {device_model.DEFAULT_MODEL}), or none: the CPU's answers (the lines that asked are recorded)",
    )
    parser.add_argument(
        "--no-relocate-uint64-mesh-ids",
        action="store_true",
        help="refuse a wp.uint64 kernel parameter that holds a live wp.Mesh id, as Warp's APIC would save it "
        "verbatim, instead of recording it as a wp.handle relocation (the default)",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run the capture in this process, not in a watched child (for a debugger or in-process "
        "fault injection; a native crash then ends the process with its signal and no report)",
    )


def run(args) -> int:
    if args.quiet:
        os.environ[crash_watch.PROGRESS] = "0"  # the watched child inherits it
    if not crash_watch.in_child() and not args.in_process:
        # The capture itself runs in a watched child: a native crash becomes a message.
        return crash_watch.run_watched(
            "wrpkg.capture", _argv(args), _target_name(args.label, Path(args.script)), Path(args.out_dir)
        )
    if crash_watch.in_child():
        crash_watch.start_child()
    crash_watch.phase("starting Warp")
    from wrpkg.capture import retarget  # noqa: PLC0415 - imports Warp

    try:
        result = capture(
            args.script,
            args.device,
            args.out_dir,
            args.stem,
            args.label,
            args.cache_dir,
            mode=args.mode,
            cuda_arch=args.cuda_arch,
            trace_lines=crash_watch.trace_lines(),
            relocate_uint64_mesh_ids=not args.no_relocate_uint64_mesh_ids,
            seed_caches=args.seed_cache or (),
            device_model_name=args.device_model,
        )
    except retarget.LinesNotTraced:
        return crash_watch.RETRY_TRACED  # the watching parent runs it again, tracing
    outputs = ", ".join(sorted(result.golden))
    print(f"captured {result.wrp_path} ({result.info['device']}); golden outputs: {outputs}")
    return 0


def _argv(args) -> list[str]:
    """The command line that configure_parser() parses back into `args`: every option, so a
    flag added to the parser reaches the watched child without a list here to keep up."""
    argv = []
    for dest, value in vars(args).items():
        if value is None or value is False:
            continue
        flag = "--" + dest.replace("_", "-")
        if value is True:
            argv.append(flag)
        else:
            for item in value if isinstance(value, list) else [value]:
                argv += [flag, str(item)]
    return argv


if __name__ == "__main__":
    from wrpkg.cli import tool_main

    # Not __name__: scripts import CaptureSpec from wrpkg.capture, which is this module's.
    tool_main("wrpkg.capture.tool", "capture")
