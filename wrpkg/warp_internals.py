"""The one door to Warp's private modules (`warp._src`), and what wrpkg assumes of them.

APIC's launch packing, Warp's launch entry points, its module table and its native library
are not public API, yet the capture harness must read or hook them: the stale-pointer
check, the step guard, the retargeted launch records and the source-path rewrite all do.
They reach `warp._src` only through this module, so a Warp upgrade has one place to look:
`ASSUMPTIONS` lists every private name wrpkg uses with the parameters it relies on, checked
against Warp CHECKED_WARP_VERSION; `check_assumptions()` (run by
//tests:warp_internals_test) names each one a new Warp breaks.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys

CHECKED_WARP_VERSION = "1.19.0"

# (module under warp._src, dotted name, parameter names the hook relies on or None).
ASSUMPTIONS = (
    ("context", "runtime", None),
    ("context", "user_modules", None),
    ("context", "launch", ("kernel", "dim", "inputs", "outputs", "adj_inputs", "adj_outputs", "device")),
    ("context", "launch_tiled", None),
    ("texture", "Texture", None),
    ("context", "capture_if", None),
    ("context", "capture_while", None),
    ("context", "capture_launch", ("graph", "stream")),
    ("context", "copy", ("dest", "src")),
    ("context", "Launch", None),
    ("context", "_get_apic_capture_for_device", ("device",)),
    ("context", "_normalize_launch_dim", None),
    ("context", "_build_launch_bounds_from_tuple", None),
    ("context", "_get_kernel_cluster_dim", None),
    ("context", "_apic_prepare_cuda_source", None),
    # MathDx modules (wrpkg.mathdx, retarget): Warp's own per-SM build of a module variant.
    (
        "context",
        "Module._compile",
        ("self", "device", "output_dir", "output_name", "output_arch", "use_ptx", "options"),
    ),
    (
        "context",
        "Module._get_compile_output_name",
        ("self", "device", "output_arch", "arch_suffix", "use_ptx"),
    ),
    ("context", "Module._get_meta_name", ("self", "block_dim")),
    ("context", "Module._snapshot_cuda_compile_artifact", ("self", "binary_path", "output_arch", "options")),
    ("context", "Module.get_module_identifier", None),
    ("context", "Module.get_module_hash", ("self", "block_dim")),
    ("context", "Module.resolve_options", None),
    # Code generation of a module loaded from the kernel cache (forward_code).
    ("context", "ModuleBuilder", ("module", "options", "hasher")),
    ("context", "_codegen_lock", None),
    ("types", "array", None),
    ("types", "type_repr", None),
    ("types", "type_size_in_bytes", None),
    # A wp.uint64 parameter holding a live mesh id is packed as a handle (wrpkg.capture.launch_recorder).
    ("types", "uint64", None),
    ("types", "handle", None),
    ("build", "init_kernel_cache", None),
    ("codegen", "_escape_line_directive_filename", None),
    ("codegen", "Adjoint.get_references", ("adj",)),
    # A CPU capture compiles after its step (wrpkg.capture.deferred_compile): Module.load runs but for
    # build_cpu (recorded, run later with the same arguments) and the LLVM calls (LLVM_CALLS).
    ("build", "build_cpu", ("obj_path", "cpp_path")),
    ("context", "Module.load", ("self", "device", "block_dim")),
    ("context", "ModuleExec.get_kernel_hooks", ("self", "kernel")),
    ("apic.capture", "APICapture.build_launch_info", ("self", "kernel", "module_exec")),
    ("apic.capture", "APICapture._hash_to_str", None),
    ("apic.capture", "APICapture._collect_metadata", ("self", "kernel", "module_exec")),
    ("context", "ModuleExec.get_kernel_mangled_name", ("self", "kernel")),
    # A hash grid built in the step (wrpkg.capture.lowering.hash_grid_lowering): its id relocated to an array.
    ("apic.capture", "APICapture.track_array", ("self", "arr")),
    ("apic.capture", "APICapture._make_reloc", ("value_byte_offset", "kind", "region_id", "region_offset")),
    ("types", "HashGrid.build", ("self", "points", "radius", "groups")),
    # A retargeted capture's stand-in streams (wrpkg.capture.device_model): a device scope only.
    ("utils", "ScopedStream.__init__", ("self", "stream", "sync_enter", "sync_exit")),
    ("context", "Stream.record_event", ("self", "event", "external")),
    ("context", "Stream.wait_event", ("self", "event", "external")),
    ("context", "Stream.wait_stream", ("self", "other_stream", "event", "external")),
    (
        "apic.capture",
        "APICapture._pack_param_record",
        ("self", "rec", "arg", "original_value", "packed_value", "value_data_buf", "relocs_buf", "adjoint"),
    ),
)

# Warp's reason for a CUDA module it cannot save with source_fallback=True because it links MathDx
# LTO-IR: wrpkg.mathdx tells a module refused for this reason alone by its exact text.
LINK_INPUTS_REASON = "external link inputs are required (generated source declares LTO-IR or fatbin inputs)"

# Text wrpkg matches in Warp's messages: (module, dotted name, text its source must hold).
TEXTS = (("context", "_apic_prepare_cuda_source", LINK_INPUTS_REASON),)

# Native entry points of Warp's library (runtime.core) that the step guard replaces, and the
# mesh-id lookup the launch recorder asks (APIC's own test for a live wp.Mesh).
NATIVE_CALLS = (
    "wp_apic_is_mesh",
    "wp_apic_cpu_replay_state",
    "wp_apic_cpu_replay_graph",
    "wp_cuda_graph_create_exec",
    "wp_cuda_graph_launch",
)

# Native calls that compute on the host from arrays and write arrays without an APIC record (graph
# coloring: wp.utils.graph_coloring_assign/balance): the step guard refuses them (step_guard).
UNRECORDED_HOST_CALLS = {
    "wp_graph_coloring": "wp.utils.graph_coloring_assign()",
    "wp_balance_coloring": "wp.utils.graph_coloring_balance()",
}

# Warp's LLVM library (runtime.llvm) calls wrpkg.capture.deferred_compile answers while a CPU capture's
# step records, and the APIC calls it makes after (the op stream saved before anything is
# compiled: LaunchRecorder.recorded_operations; the compiled entry points registered).
LLVM_CALLS = ("wp_load_obj", "wp_lookup")
APIC_CALLS = ("wp_apic_state_save", "wp_apic_register_cpu_kernel")


@functools.cache
def private(module: str):
    """`warp._src.<module>`, e.g. private("context"). Cached: a retarget capture asks several times a
    launch, and import_module takes the import lock each time."""
    return importlib.import_module(f"warp._src.{module}")


def loaded_private(module: str):
    """`warp._src.<module>` if something imported it already, else None (importing it would define
    its Warp modules in this process)."""
    return sys.modules.get(f"warp._src.{module}")


def context():
    return private("context")


def types():
    return private("types")


def codegen():
    return private("codegen")


def scoped_stream_class():
    return private("utils").ScopedStream


def apic_capture_class():
    return private("apic.capture").APICapture


def native_library():
    """Warp's loaded native library (ctypes), after wp.init()."""
    return context().runtime.core


def forward_code(kernel) -> list[str]:
    """The C++ lines Warp generated for a kernel's forward pass and, transitively, for the user
    functions (@wp.func) it calls: where its builtins (wp::atomic_add, wp::tile_load, ...) can be
    read. Reads the private Adjoint (`kernel.adj`: its blocks' body_forward and get_references()).
    A module loaded from the kernel cache was never generated in this process, so its code is
    generated here first (Warp's ModuleBuilder, as Module._compile does before compiling): without
    it, every check that reads the code would find nothing in a warm cache."""
    lines = _forward_code_lines(kernel)
    if not lines and not getattr(kernel.adj, "blocks", None):
        _generate_code(kernel.module)
        lines = _forward_code_lines(kernel)
    return lines


def _generate_code(module) -> None:
    """Runs Warp's code generation of `module` (every kernel's Adjoint.build) without compiling."""
    import warp  # noqa: PLC0415

    ctx = context()
    block_dim = next(iter(module.hashers), None)
    if block_dim is None:
        block_dim = 1  # the CPU's; a module not hashed yet is hashed now, as its first load would
        module.get_module_hash(block_dim)
    options = module.resolve_options(warp.config, block_dim=block_dim)
    options = options | {"output_arch": None, "block_dim": block_dim}
    with ctx._codegen_lock:
        ctx.ModuleBuilder(module, options, hasher=module.hashers.get(block_dim), target="cpu")


def _forward_code_lines(kernel) -> list[str]:
    lines: list[str] = []
    seen: set[int] = set()
    pending = [kernel.adj]
    while pending:
        adj = pending.pop()
        if adj is None or id(adj) in seen:
            continue
        seen.add(id(adj))
        for block in getattr(adj, "blocks", None) or ():
            lines += block.body_forward
        _, _, functions = adj.get_references()
        for func in functions:
            overloads = getattr(func, "user_overloads", None) or {}
            pending += [getattr(f, "adj", None) for f in overloads.values()] or [getattr(func, "adj", None)]
    return lines


def apic_collected_kernel(apic, module_exec, kernel_key: str) -> dict | None:
    """The kernel record APIC keeps for `kernel_key` in the module of `module_exec` (its
    `collected_kernels`, keyed by (module hash text, key)), or None before the first launch."""
    module_hash = apic_capture_class()._hash_to_str(module_exec.module_hash)
    return apic.collected_kernels.get((module_hash, kernel_key))


def apic_collect_kernel_as(apic, kernel, module_exec, key: str) -> None:
    """Makes APIC's kernel record for `kernel` in the module of `module_exec` (as its
    `_collect_metadata` makes it: symbol names, shared memory, block_dim) and keeps it under `key`,
    once; the record of the kernel's own key, and the order of the records, stay as they were."""
    module_hash = apic_capture_class()._hash_to_str(module_exec.module_hash)
    entries = apic.collected_kernels
    if (module_hash, key) in entries:
        return
    before = list(entries.items())
    entries.pop((module_hash, kernel.key), None)
    try:
        apic._collect_metadata(kernel, module_exec)
        record = entries.pop((module_hash, kernel.key))
    finally:
        entries.clear()
        entries.update(before)
    record["kernel_key"] = key
    entries[(module_hash, key)] = record


def replay_outputs(graph, names, device) -> dict[str, bytes]:
    """Launches a loaded APIC graph once on `device`, waits for it, and returns each named
    binding's bytes (its whole allocation, of the size the graph records in its private
    `_params`).

    Args:
      graph: what wp.capture_load / capture_load_from_bytes returned.
      names: the bindings to read.
      device: the Warp device the graph was loaded on.
    Returns:
      name -> bytes.
    """
    import warp as wp  # noqa: PLC0415 - Warp is imported lazily

    wp.capture_launch(graph)
    wp.synchronize_device(device)
    outputs = {}
    for name in names:
        buffer = wp.empty(graph._params[name]["size"], dtype=wp.uint8, device=device)
        graph.get_param(name, buffer)
        outputs[name] = buffer.numpy().tobytes()
    return outputs


def _resolve(module: str, dotted: str):
    value = private(module)
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


def check_assumptions() -> list[str]:
    """What the installed Warp breaks of ASSUMPTIONS: one sentence each; empty when all hold.
    The native calls are checked only once Warp's library is loaded (wp.init())."""
    import warp  # noqa: PLC0415 - Warp is imported lazily

    problems = []
    if warp.__version__ != CHECKED_WARP_VERSION:
        problems.append(
            f"warp {warp.__version__} is installed; wrpkg.warp_internals was checked against {CHECKED_WARP_VERSION}"
        )
    for module, dotted, params in ASSUMPTIONS:
        try:
            value = _resolve(module, dotted)
        except (ImportError, AttributeError) as exc:
            problems.append(f"warp._src.{module}.{dotted} is gone ({exc})")
            continue
        if params is None:
            continue
        try:
            names = tuple(inspect.signature(value).parameters)
        except (TypeError, ValueError):
            problems.append(f"warp._src.{module}.{dotted} has no Python signature")
            continue
        if names[: len(params)] != params:
            problems.append(f"warp._src.{module}.{dotted} takes {names}, wrpkg relies on {params} first")
    for module, dotted, text in TEXTS:
        try:
            source = inspect.getsource(_resolve(module, dotted))
        except (ImportError, AttributeError, OSError, TypeError) as exc:
            problems.append(f"warp._src.{module}.{dotted}: its source cannot be read ({exc})")
            continue
        if text not in source:
            problems.append(f"warp._src.{module}.{dotted} no longer says {text!r}")
    runtime = context().runtime
    if runtime is not None:
        problems += [
            f"Warp's native library has no {name}"
            for name in NATIVE_CALLS + APIC_CALLS + tuple(UNRECORDED_HOST_CALLS)
            if not hasattr(runtime.core, name)
        ]
        problems += [
            f"Warp's LLVM library has no {name}" for name in LLVM_CALLS if not hasattr(runtime.llvm, name)
        ]
    return problems
