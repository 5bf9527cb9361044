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
`build(device) -> CaptureSpec`. This module orders the capture and writes its files; running the
script is wrpkg/capture/capture_script.py's, the golden replays wrpkg/capture/golden_replay.py's.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from wrpkg import atomic, mathdx, warp_internals, wrpformat
from wrpkg.capture import (
    build_launches,
    capture_script,
    crash_watch,
    device_branches,
    device_model,
    direct_step,
    golden_caveats,
    golden_replay,
    initial_state,
    kernel_cache,
)
from wrpkg.capture.build_launches import BuildLaunchWatch
from wrpkg.capture.launch_recorder import LaunchRecorder
from wrpkg.capture.lowering import mesh_builds
from wrpkg.capture.stale_pointers import relocation_note, relocations
from wrpkg.errors import CaptureError
from wrpkg.interface import INTERFACE_SCHEMA
from wrpkg.manifest import CAPTURE_INFO_SCHEMA

CAPTURE_MODES = ("gpu", "retarget", "auto")


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


@dataclass(frozen=True)
class CaptureRequest:
    """One capture, as capture() was asked for it (see its Args); `target` names it in messages."""

    script: Path
    device: str
    stem: str
    label: str | None
    target: str
    cache_dir: str | os.PathLike | None
    mode: str
    cuda_arch: int | None
    trace_lines: bool
    relocate_uint64_mesh_ids: bool
    seed_caches: tuple[str | os.PathLike, ...]
    # The GPU a retargeted capture's code is told it runs on (wrpkg.capture.device_model), or None.
    target_device: device_model.TargetDevice | None = None
    direct_step_check: bool = True


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
    direct_step_check: bool = True,
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
      trace_lines: False (retarget mode) records faster but raises retarget_recorder.LinesNotTraced where
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
      direct_step_check: run build() and step() once more without a capture, in a fresh process, and
        refuse the capture where an output differs from the golden replay (wrpkg.capture.direct_step).

    Returns:
      A CaptureResult: the paths written and the interface and provenance recorded.

    Raises:
      CaptureError: the script failed, broke the contract, or made a step the capture refuses.
    """
    script = Path(script)
    out_dir = Path(out_dir)
    target = crash_watch.target_name(label, script)
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

    request = CaptureRequest(
        script=script,
        device=device,
        stem=stem,
        label=label,
        target=target,
        cache_dir=cache_dir,
        mode=mode,
        cuda_arch=cuda_arch,
        trace_lines=trace_lines,
        relocate_uint64_mesh_ids=relocate_uint64_mesh_ids,
        seed_caches=tuple(seed_caches),
        # An unknown name is refused before anything runs.
        target_device=device_model.resolve(device_model_name, target),
        direct_step_check=direct_step_check,
    )
    _check_replaceable(out_dir, target)
    with (
        atomic.staged(
            out_dir,
            CaptureError,
            f"{target}: writing the capture",
            f"{out_dir} was left as it was",
            "run the capture again",
        ) as tmp_dir,
        direct_step.DirectRun() as direct,
    ):
        result = _capture_into(request, tmp_dir, direct)
        atomic.publish_dir(tmp_dir, out_dir)
    result.out_dir = out_dir
    result.wrp_path = out_dir / f"{stem}.wrp"
    result.golden = {name: out_dir / "golden" / f"{name}.bin" for name in result.golden}
    return result


def _capture_into(request: CaptureRequest, work: Path, direct: direct_step.DirectRun) -> CaptureResult:
    import warp as wp  # noqa: PLC0415 - only the tools that need Warp import it

    from wrpkg.capture import retarget, retarget_launches, retarget_recorder, source_paths  # noqa: PLC0415 - imports Warp

    script, stem, label, target = request.script, request.stem, request.label, request.target
    mode, device_name = request.mode, request.device
    if request.direct_step_check:
        # build() and step() run once more without a capture, a stage behind this one, to hold the replay to.
        direct.start(script, kernel_cache.cache_path(work, request.cache_dir))
    cache = kernel_cache.use_kernel_cache(wp, work, request.cache_dir)
    if request.seed_caches:
        crash_watch.phase(
            f"seeding the kernel cache from {len(request.seed_caches)} wrp_kernel_cache folder(s)"
        )
        kernel_cache.seed(request.seed_caches, target)
    if mode == "auto":
        mode = "gpu" if wp.get_cuda_device_count() > 0 else "retarget"
    if mode == "retarget":
        # The script runs on the CPU; retarget.retarget() makes the CUDA capture of it.
        device_name = "cpu"
    device = capture_script.require_device(wp, device_name, target)
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
    commands = (
        retarget_launches.watching_launch_commands() if mode == "retarget" else contextlib.nullcontext()
    )
    # A retargeted capture answers device queries as its target GPU (wrpkg.capture.device_model), or,
    # with no model, records the lines that asked (wrpkg.capture.device_branches).
    target_device = request.target_device
    model = device_model.DeviceModel(target_device, target) if mode == "retarget" and target_device else None
    branches = device_branches.DeviceBranchWatch() if mode == "retarget" and model is None else None
    watcher = model or branches
    asking = watcher.watching() if watcher else contextlib.nullcontext()
    imported_kernels: dict[str, set[str]] = {}
    meshes = mesh_builds.MeshBuildWatch()  # how build() made each wp.Mesh, for its record
    with fresh.installed(), commands, asking, meshes.installed():
        spec, bindings, paths = capture_script.build_spec(
            wp, script, device, target, build_watch, later, imported_kernels
        )
    # The modules build() launched are in the kernel cache now.
    direct.release_build(device.alias, model.name if model is not None else None)
    if model is not None:
        model.check()  # a refusal that build()'s code caught
    if build_watch is not None:
        build_watch.refuse_block_sized_reads(target)  # before the step: nothing is compiled for it yet

    if mode == "retarget":
        recorder = retarget_recorder.RetargetRecorder(
            user_dirs=user_dirs, target=target, trace_lines=request.trace_lines
        )
    else:
        recorder = LaunchRecorder(target=target)
    # A wp.uint64 parameter holding a live wp.Mesh id is recorded as a wp.handle (wrpkg.capture.launch_recorder).
    recorder.relocate_uint64_mesh_ids = request.relocate_uint64_mesh_ids
    recorder.defer_compiles = later is not None
    crash_watch.phase(f"step() under capture on {device.alias}")
    try:
        try:
            with fresh.installed(), watcher.watching() if watcher else contextlib.nullcontext():
                graph = capture_script.record_step(wp, spec, device, script, target, recorder)
            if model is not None:
                model.check()  # a refusal that the step's code caught
        except CaptureError:
            if branches is not None and branches.records():
                print(device_branches.refusal_note(target, branches.records()), file=sys.stderr)
            raise
        crash_watch.phase("checking what the step recorded, then compiling its modules and build()'s")
        with recorder.deferring():  # their code is generated (a broken kernel refused) before any compile
            capture_script.load_modules(wp, later or (), device, target)
        recorder.compile_deferred()
    finally:
        recorder.abandon_deferred()  # a refused step's modules stay uncompiled
    direct.release_step()  # every module the step launches is in the kernel cache now
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
        as_saved = golden_replay.replay_outputs(wp, wrp_path, spec, device, target)
        wrpformat.write_wrp(saved, wrp_path)
    crash_watch.phase(f"golden replay 1/2 of the saved {wrp_path.name}")
    golden_files, golden_records, golden_outputs = golden_replay.replay_golden(
        wp, wrp_path, modules_dir, work / "golden", spec, device, target
    )
    read_unwritten = []
    if unwritten and golden_replay.outputs_differ(wp, spec, as_saved, golden_outputs):
        crash_watch.phase("finding the arrays whose unwritten bytes the step reads")
        read_unwritten = initial_state.culprits(
            saved,
            unwritten,
            lambda variant: golden_replay.outputs_differ(
                wp,
                spec,
                golden_replay.replay_variant(wp, variant, wrp_path, spec, device, target),
                golden_outputs,
            ),
        )
        print(golden_replay.unwritten_note(target, read_unwritten), file=sys.stderr)
    direct_record = None
    if request.direct_step_check:
        crash_watch.phase("comparing the golden replay with step() run without a capture")
        direct_record = direct.check(golden_outputs, spec, bindings, target)

    golden_device = "cuda" if device.is_cuda else "cpu"
    if mode == "retarget":
        # Without --cuda-arch, the device model's SM (sm_90 without a model).
        arch = request.cuda_arch or (model.model.arch if model is not None else retarget.DEFAULT_CUDA_ARCH)
        if model is not None and arch != model.model.arch:
            print(
                f"note: {target}: the code was told it runs on the {model.name} device model "
                f"(sm_{model.model.arch}), and the capture's cubins are compiled for sm_{arch} (cuda_arch): "
                "set cuda_arch to the model's SM for the capture such a GPU makes",
                file=sys.stderr,
            )
        computed = build_watch.computed_state({**spec.inputs, **spec.outputs}, recorder.array_ptrs)
        build_launches.refuse_block_sized(target, computed)
        crash_watch.phase(f"retargeting to sm_{arch}")
        retarget.retarget(saved, modules_dir, recorder, arch)
        meshes.apply(saved, target, for_gpu=True)
        source_paths.canonicalize_sources(saved, modules_dir, paths, target)
        wrpformat.write_wrp(saved, wrp_path)
        info = _retarget_versions(wp, arch)
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
    if direct_record is not None:
        info["direct_step_check"] = direct_record
    relocated = relocations(recorder)
    if relocated:
        info["uint64_mesh_ids_as_handles"] = relocated
        print(relocation_note(target, relocated), file=sys.stderr)
    _write_json(work / "interface.json", interface)
    _write_json(work / "capture.json", info)
    if cache is not None:
        shutil.rmtree(cache, ignore_errors=True)
    return CaptureResult(work, wrp_path, golden_files, interface, info)


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
        "--no-direct-step-check",
        action="store_true",
        help="skip running build() and step() without a capture to hold the golden replay to "
        "(wrpkg.capture.direct_step)",
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
            "wrpkg.capture",
            _argv(args),
            crash_watch.target_name(args.label, Path(args.script)),
            Path(args.out_dir),
            None if args.no_direct_step_check else args.script,
        )
    if crash_watch.in_child():
        crash_watch.start_child()
    crash_watch.phase("starting Warp")
    from wrpkg.capture import retarget_recorder  # noqa: PLC0415 - imports Warp

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
            direct_step_check=not args.no_direct_step_check,
        )
    except retarget_recorder.LinesNotTraced:
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

    # Not __name__: wrpkg.capture's names (capture, run, CaptureResult) are this module's.
    tool_main("wrpkg.capture.tool", "capture")
