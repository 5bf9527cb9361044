"""MathDx tile modules: CUDA modules that Warp links with LTO-IR inputs (issue 25).

`wp.tile_matmul`, `wp.tile_fft`/`wp.tile_ifft`, `wp.tile_cholesky` and the solvers are
compiled by Warp with libmathdx into LTO-IR for one SM (warp/_src/build.py build_lto_dot,
build_lto_fft, build_lto_solver) and linked into the module's cubin with nvJitLink. The
generated `.cu` alone cannot rebuild such a module (it declares the LTO functions; their
code is not in it, and their names carry the SM), so Warp 1.19's
`capture_save(..., source_fallback=True)` refuses the whole graph ("external link inputs
are required"), and its loader could not compile such a module anyway.

What wrpkg does instead:

- capture (GPU and retarget alike, `save_graph`/`prepare_cuda_module`): every module whose
  source Warp would retain keeps it, exactly as `source_fallback=True` writes it; a module
  Warp refuses *only* for its link inputs keeps its linked cubin as Warp built it, with its
  digest, its compile recipe and the fallback reason `LINK_INPUTS` (no source: no load-time
  compile, no PTX). Any other refusal is Warp's own.
- per-SM compile (wrpkg.build.compile): such a module is rebuilt for each SM by Warp
  itself (`Module._compile` for that SM: codegen, libmathdx LTO-IR, NVRTC, nvJitLink; no GPU)
  from the capture script, which the compile action imports as the capture did; the module
  hash must be the recorded one and each kernel's shared memory the recorded launches' size.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from wrpkg import warp_internals, wrpformat
from wrpkg.recipe import CompileRecipe

# Warp 1.19's reason (context.py _apic_prepare_cuda_source) for a module that links LTO-IR or fatbin inputs.
LINK_INPUTS_REASON = warp_internals.LINK_INPUTS_REASON
# What the manifest, `wrpkg inspect` and compile.json say of such a module's missing PTX and source.
NO_PTX_NOTE = "MathDx link inputs (LTO-IR): linked cubin per SM only, no PTX, no source fallback"


@dataclass
class PreparedModule:
    """What `capture_save(source_fallback=True)` would record for one CUDA module, or, for a
    module Warp refuses only for its link inputs, the record of its linked cubin."""

    source_filename: str  # "" for a linked module
    source_data: bytes | None
    source_sha256: str
    recipe: bytes  # the 16-byte compile recipe
    link_inputs: bool


def _recipe_from_artifact(info: dict) -> bytes:
    """Warp's compile recipe of a module (as _apic_prepare_cuda_source builds it), from the
    artifact its ModuleExec retained at load."""
    artifact = info["cuda_compile_artifact"]
    recipe = artifact["recipe"]
    return CompileRecipe(
        debug=bool(recipe["debug"]),
        optimization_level=int(recipe["optimization_level"]),
        verify_fp=bool(recipe["verify_fp"]),
        fast_math=bool(recipe["fast_math"]),
        fuse_fp=bool(recipe["fuse_fp"]),
        lineinfo=bool(recipe["lineinfo"]),
        arch_suffix=artifact.get("arch_suffix") or "",
    ).to_bytes()


def prepare_cuda_module(info: dict) -> PreparedModule:
    """Warp's own `_apic_prepare_cuda_source(info)`; a module it refuses for its link inputs
    alone becomes a linked module. Raises ValueError (Warp's reasons) for any other refusal."""
    import ctypes  # noqa: PLC0415

    ctx = warp_internals.context()
    try:
        name, data, digest, recipe = ctx._apic_prepare_cuda_source(info)
    except ValueError as exc:
        if str(exc) != LINK_INPUTS_REASON:
            raise
        return PreparedModule("", None, "", _recipe_from_artifact(info), True)
    recipe_bytes = bytes(ctypes.string_at(ctypes.addressof(recipe), ctypes.sizeof(recipe)))
    return PreparedModule(name, data, digest, recipe_bytes, False)


def module_record(
    prepared: PreparedModule, *, module_hash: str, name: str, binary_filename: str, arch: int, binary: bytes
) -> wrpformat.ModuleRecord:
    """The module record `capture_save(source_fallback=True)` writes, or a linked module's."""
    kind = wrpformat.BinaryKind.PTX if binary_filename.endswith(".ptx") else wrpformat.BinaryKind.CUBIN
    return wrpformat.ModuleRecord(
        hash=module_hash,
        name=name,
        binary_filename=binary_filename,
        target_arch=arch,
        binary_sha256=hashlib.sha256(binary).hexdigest(),
        source_filename=prepared.source_filename,
        source_sha256=prepared.source_sha256,
        binary_kind=kind,
        fallback_reason=(
            wrpformat.FallbackReason.LINK_INPUTS
            if prepared.link_inputs
            else wrpformat.FallbackReason.AVAILABLE
        ),
        compile_recipe=prepared.recipe,
    )


def save_graph(wp, graph, path: Path, inputs: dict, outputs: dict) -> wrpformat.WrpFile | None:
    """`wp.capture_save(graph, path, inputs, outputs, source_fallback=True)` on CUDA, except for
    modules Warp refuses only for their MathDx link inputs (see the module doc): the graph is
    then saved binary-only by Warp and each module record completed as described, in the parsed
    `.wrp` it returns (writing it is the caller's; the linked modules: `is_linked`). Returns None
    when Warp's own save was used (the file on disk is then the whole capture)."""
    capture = graph._apic_capture
    prepared: dict[str, PreparedModule] = {}
    refused: list[str] = []
    for module_hash, info in (capture.collected_modules if capture is not None else {}).items():
        try:
            prepared[module_hash] = prepare_cuda_module(info)
        except ValueError:
            refused.append(info["module_name"])
    if refused or not any(p.link_inputs for p in prepared.values()):
        # Warp's own save, which reports every refused module's reasons (the kernels: below).
        try:
            wp.capture_save(graph, str(path), inputs=inputs, outputs=outputs, source_fallback=True)
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}\n{kernel_places(sorted(set(refused)))}") from exc
        return None
    wp.capture_save(graph, str(path), inputs=inputs, outputs=outputs, source_fallback=False)
    wrp_path = path.with_name(path.name + ".wrp")
    modules_dir = path.with_name(path.name + "_modules")
    wrp = wrpformat.read_wrp(wrp_path)
    records = []
    for record in wrp.metadata.modules:
        module = prepared[record.hash]
        binary = (modules_dir / record.binary_filename).read_bytes()
        if module.source_data is not None:
            (modules_dir / module.source_filename).write_bytes(module.source_data)
        records.append(
            module_record(
                module,
                module_hash=record.hash,
                name=record.name,
                binary_filename=record.binary_filename,
                arch=record.target_arch,
                binary=binary,
            )
        )
    wrp.metadata.modules = records
    return wrp


def is_linked(record: wrpformat.ModuleRecord) -> bool:
    return record.fallback_reason == wrpformat.FallbackReason.LINK_INPUTS and not record.source_filename


def kernel_places(module_names: list[str]) -> str:
    """ "module 'm': kernel 'k' (m.py:12), ..." for Warp modules by name: where their kernels are defined."""
    import os  # noqa: PLC0415

    modules = warp_internals.context().user_modules
    lines = []
    for name in module_names:
        module = modules.get(name)
        kernels = sorted(getattr(module, "kernels", {}).values(), key=lambda k: str(k.key)) if module else []
        places = [
            f"kernel '{k.key}' ({os.path.basename(str(k.adj.filename))}:{k.adj.fun_lineno})"
            for k in kernels
            if getattr(k, "adj", None) is not None
        ]
        lines.append(f"module '{name}': {', '.join(places) or 'no kernels found'}")
    return "\n".join(lines)
