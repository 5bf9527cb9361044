"""Retarget a CPU capture to the CUDA `.wrp` Warp would have written on a GPU.

A capture script runs on the CPU under APIC while `LaunchRecorder` watches the Warp launch
API (`wp.launch`, `wp.launch_tiled`): the CPU records do not keep what a CUDA launch needs
(a launch's `block_dim` is recorded as 0, a tiled launch's lane dimension as 1), so the
launch configuration is taken from the calls themselves. `retarget()` then rewrites the
CPU `.wrp` in place of a CUDA capture:

- every Python module becomes one CUDA module per distinct `block_dim` it was launched
  with (as Warp's `Module.load(device, block_dim)` does), hashed by Warp's own
  `ModuleHasher` for that block_dim;
- each such module is generated and compiled by Warp itself (`Module._compile` for the
  target SM, Warp's embedded NVRTC; no GPU needed): the `.cu` and `.cubin` a CUDA capture
  packages, and the `.meta` that gives each kernel's static shared memory;
- module records take their source, digests, fallback reason and compile recipe from
  Warp's own `_apic_prepare_cuda_source` (what `capture_save(source_fallback=True)` runs);
- kernel records get the CUDA entry names and block_dim; launches get the CUDA block_dim,
  grid-stride flag, max_blocks, shared memory and (tiled) lane dimension;
- the header and metadata say CUDA and the target SM.

Memory, meshes, bindings and memsets/fills/copies are recorded identically on both
devices and are kept. Anything whose CUDA form is not known with certainty is refused
with a RetargetError naming the operation and the capture script's line (see REFUSED).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from wrpkg import wrpformat
from wrpkg.errors import CaptureError

# Warp's CUDA default when a launch gives no positive block_dim (context.py
# _resolve_launch_block_dim, and wp_cuda_launch_kernel in warp.cu).
CUDA_DEFAULT_BLOCK_DIM = 256
# The SM a retargeted capture is compiled for when none is named: an H200's, so a
# retargeted capture is byte-identical to one recorded on the GPUs this project checks on.
DEFAULT_CUDA_ARCH = 90

# What the retarget mode refuses, one line each (the README lists them too).
REFUSED = (
    "wp.capture_if / wp.capture_while (conditional graph nodes)",
    "backward launches (wp.launch(..., adjoint=True)) and wp.Tape.backward()",
    "recorded launch commands (wp.launch(..., record_cmd=True), wp.Launch objects)",
    "kernels with cluster_dim > 1",
    "max_blocks with a grid_stride=False kernel (Warp refuses it on CUDA)",
    "modules or kernels with a deterministic mode (CUDA launches them through another path)",
    "modules whose CUDA source cannot be retained (strip_hash, extra CUDA include dirs, LLVM CUDA, "
    "MathDx link inputs)",
    "allocations inside the captured step, host-to-device copies, scans and other operations "
    "that are not kernel launches, memsets, fills or device copies",
)


class RetargetError(CaptureError):
    """A captured operation has no CUDA form known with certainty."""


@dataclass
class LaunchCall:
    """One `wp.launch`/`wp.launch_tiled` call made during the CPU capture."""

    op_index: int  # index of its KERNEL_LAUNCH in the top-level operation stream
    kernel: object  # warp Kernel (the overload, for generic kernels)
    cuda_block_dim: int
    max_blocks: int
    shape: tuple[int, int, int, int]  # the CUDA launch's bounds, as the record stores them
    size: int
    cpu_shape: tuple[int, int, int, int]  # what the CPU record must hold for this call
    cpu_size: int
    where: str  # "script.py:42"


@dataclass
class _LineMark:
    op_count: int
    where: str


@dataclass
class LaunchRecorder:
    """Hooks Warp's launch API and conditional nodes while a CPU capture records.

    `user_dirs`: folders whose frames count as the capture script's (named in errors).
    """

    user_dirs: tuple[str, ...]
    target: str
    calls: list[LaunchCall] = field(default_factory=list)
    lines: list[_LineMark] = field(default_factory=list)
    _tiled_block_dim: list = field(default_factory=list)

    # --- where in the script --------------------------------------------------------------

    def _is_user_file(self, filename: str) -> bool:
        path = os.path.abspath(filename)
        real = os.path.realpath(filename)
        return any(path.startswith(d) or real.startswith(d) for d in self.user_dirs)

    def _where(self) -> str:
        frame = sys._getframe(1)
        while frame is not None:
            if self._is_user_file(frame.f_code.co_filename):
                return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
            frame = frame.f_back
        return "an unknown line (no frame of the capture script on the stack)"

    def where_op(self, index: int) -> str:
        """The script line that was running when top-level operation `index` was recorded."""
        found = "an unknown line"
        for mark in self.lines:
            if mark.op_count <= index:
                found = mark.where
            else:
                break
        return found

    def refuse(self, what: str, where: str, fix: str | None = None) -> RetargetError:
        return RetargetError(
            f"{self.target}: cannot retarget {what} at {where} to CUDA",
            fix=fix
            or 'capture this target on a GPU (capture_mode = "gpu" on a GPU runner), or change the script',
        )

    # --- hooks ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def recording(self, device):
        import warp as wp  # noqa: PLC0415
        import warp._src.context as ctx  # noqa: PLC0415

        capture = ctx._get_apic_capture_for_device(device)
        if capture is None:
            raise CaptureError(f"{self.target}: retarget hooks installed outside an APIC capture")

        original = {
            "launch": ctx.launch,
            "launch_tiled": ctx.launch_tiled,
            "capture_if": ctx.capture_if,
            "capture_while": ctx.capture_while,
        }
        recorder = self

        def launch(
            kernel, dim, inputs=(), outputs=(), adj_inputs=(), adj_outputs=(), device=None, *args, **kw
        ):
            where = recorder._where()
            tiled_block_dim = recorder._tiled_block_dim.pop() if recorder._tiled_block_dim else None
            adjoint = kw.get("adjoint", args[1] if len(args) > 1 else False)
            record_cmd = kw.get("record_cmd", args[3] if len(args) > 3 else False)
            max_blocks = kw.get("max_blocks", args[4] if len(args) > 4 else 0)
            block_dim = kw.get("block_dim", args[5] if len(args) > 5 else None)
            if adjoint:
                raise recorder.refuse(f"the backward launch of kernel '{kernel.key}'", where)
            if record_cmd:
                raise recorder.refuse(
                    f"the recorded launch command (record_cmd=True) of '{kernel.key}'", where
                )
            before = capture.operation_count
            result = original["launch"](
                kernel, dim, inputs, outputs, adj_inputs, adj_outputs, device, *args, **kw
            )
            after = capture.operation_count
            if after == before:
                return result  # an empty launch records nothing, on CUDA as on the CPU
            if after != before + 1:
                raise recorder.refuse(
                    f"the launch of '{kernel.key}' (it recorded {after - before} operations)", where
                )
            if kernel.is_generic:
                kernel = kernel._add_normalized_overload(kernel.infer_argument_types([*inputs, *outputs]))
            requested = tiled_block_dim if tiled_block_dim is not None else block_dim
            cuda_block_dim = CUDA_DEFAULT_BLOCK_DIM if requested is None or requested <= 0 else int(requested)
            recorder._check_kernel(kernel, int(max_blocks or 0), where)
            cpu_dim, _ = ctx._normalize_launch_dim(dim)
            # launch_tiled appended the CPU's lane count (1); CUDA runs block_dim lanes.
            cuda_dim = (*cpu_dim[:-1], cuda_block_dim) if tiled_block_dim is not None else cpu_dim
            cpu_shape, cpu_size = _bounds(cpu_dim, kernel)
            shape, size = _bounds(cuda_dim, kernel)
            recorder.calls.append(
                LaunchCall(
                    before,
                    kernel,
                    cuda_block_dim,
                    int(max_blocks or 0),
                    shape,
                    size,
                    cpu_shape,
                    cpu_size,
                    where,
                )
            )
            return result

        def launch_tiled(*args, **kwargs):
            recorder._tiled_block_dim.append(kwargs.get("block_dim"))
            try:
                return original["launch_tiled"](*args, **kwargs)
            finally:
                recorder._tiled_block_dim.clear()

        def conditional(name):
            def refuse(*args, **kwargs):
                raise recorder.refuse(f"wp.{name}", recorder._where())

            return refuse

        def tracer(frame, event, arg):
            if event == "call":
                return tracer if recorder._is_user_file(frame.f_code.co_filename) else None
            if event == "line":
                where = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
                recorder.lines.append(_LineMark(capture.operation_count, where))
            return tracer

        patches = [
            (ctx, "launch", launch),
            (wp, "launch", launch),
            (ctx, "launch_tiled", launch_tiled),
            (wp, "launch_tiled", launch_tiled),
            (ctx, "capture_if", conditional("capture_if")),
            (wp, "capture_if", conditional("capture_if")),
            (ctx, "capture_while", conditional("capture_while")),
            (wp, "capture_while", conditional("capture_while")),
        ]
        saved = [(obj, name, getattr(obj, name)) for obj, name, _ in patches]
        previous_trace = sys.gettrace()
        try:
            for obj, name, value in patches:
                setattr(obj, name, value)
            sys.settrace(tracer)
            yield self
        finally:
            sys.settrace(previous_trace)
            for obj, name, value in saved:
                setattr(obj, name, value)

    def _check_kernel(self, kernel, max_blocks: int, where: str) -> None:
        import warp._src.context as ctx  # noqa: PLC0415
        from warp import config  # noqa: PLC0415

        if ctx._get_kernel_cluster_dim(kernel) > 1:
            raise self.refuse(f"the launch of '{kernel.key}' (cluster_dim > 1)", where)
        if max_blocks > 0 and not kernel.grid_stride:
            raise self.refuse(f"the launch of '{kernel.key}' with max_blocks and grid_stride=False", where)
        options = kernel.module.options | kernel.options
        mode = options.get("deterministic")
        if mode is not None and mode != config.DeterministicMode.NOT_GUARANTEED:
            raise self.refuse(f"the launch of '{kernel.key}' (deterministic mode {mode})", where)


def _bounds(dim: tuple[int, ...], kernel) -> tuple[tuple[int, int, int, int], int]:
    """The (shape, size) a launch record stores for `dim`: Warp's launch bounds, as
    wp_cpu_launch_kernel / wp_cuda_launch_kernel copy them into the record."""
    import warp._src.context as ctx  # noqa: PLC0415

    bounds = ctx._build_launch_bounds_from_tuple(tuple(dim), kernel.adj.kernel_dim)
    ndim = min(max(kernel.adj.kernel_dim, 1), 4)
    shape = tuple(int(bounds.shape[d]) if d < ndim else 0 for d in range(4))
    return shape, int(bounds.size)


# ---------------------------------------------------------------------------------------
# The rewrite
# ---------------------------------------------------------------------------------------


@dataclass
class _CudaModule:
    module: object
    block_dim: int
    hash: str
    record: wrpformat.ModuleRecord
    smem: dict[str, int]  # entry name -> static shared memory bytes


class _FakeModuleExec:
    """What `_apic_prepare_cuda_source` reads of a ModuleExec: the compile arch."""

    def __init__(self, compile_arch: int):
        self.compile_arch = compile_arch


def _build_cuda_module(
    module, block_dim: int, arch: int, modules_dir: Path, recorder, where: str
) -> _CudaModule:
    """Generates and compiles one CUDA module variant with Warp, as Module.load would on a GPU."""
    import warp as wp  # noqa: PLC0415
    import warp._src.context as ctx  # noqa: PLC0415

    options = module.resolve_options(wp.config, block_dim=block_dim)
    module_hash = module.get_module_hash(block_dim)
    build_dir = Path(tempfile.mkdtemp(prefix="retarget-", dir=modules_dir.parent))
    try:
        module._compile(None, str(build_dir), output_arch=arch, use_ptx=False, options=options)
        binary_name = module._get_compile_output_name(None, arch, "", False, block_dim=block_dim)
        binary_path = build_dir / binary_name
        if not binary_path.is_file():
            raise recorder.refuse(f"module '{module.name}' (Warp wrote no {binary_name})", where)
        artifact = module._snapshot_cuda_compile_artifact(str(binary_path), arch, options)
        try:
            source_name, source_data, source_digest, recipe = ctx._apic_prepare_cuda_source(
                {"cuda_compile_artifact": artifact, "module_exec": _FakeModuleExec(arch)}
            )
        except ValueError as exc:
            raise recorder.refuse(f"module '{module.name}' ({exc})", where) from exc
        meta_path = build_dir / module._get_meta_name(block_dim=block_dim)
        smem = {k[: -len("_smem_bytes")]: int(v) for k, v in json.loads(meta_path.read_text()).items()}
        binary = binary_path.read_bytes()
        (modules_dir / binary_name).write_bytes(binary)
        (modules_dir / source_name).write_bytes(source_data)
    finally:
        shutil.rmtree(build_dir, ignore_errors=True)
    record = wrpformat.ModuleRecord(
        hash=module_hash.hex(),
        name=module.name,
        binary_filename=binary_name,
        target_arch=arch,
        binary_sha256=hashlib.sha256(binary).hexdigest(),
        source_filename=source_name,
        source_sha256=source_digest,
        binary_kind=wrpformat.BinaryKind.CUBIN,
        fallback_reason=wrpformat.FallbackReason.AVAILABLE,
        compile_recipe=bytes(ctypes.string_at(ctypes.addressof(recipe), ctypes.sizeof(recipe))),
    )
    return _CudaModule(module, block_dim, module_hash.hex(), record, smem)


def retarget(
    wrp_path: Path, modules_dir: Path, recorder: LaunchRecorder, arch: int = DEFAULT_CUDA_ARCH
) -> None:
    """Rewrites the CPU capture `wrp_path` (+ `modules_dir`) into the CUDA capture for `arch`."""
    cpu = wrpformat.read_wrp(wrp_path)
    if cpu.is_cuda:
        raise CaptureError(f"{recorder.target}: {wrp_path} is already a CUDA capture")
    calls = {call.op_index: call for call in recorder.calls}
    ops = cpu.operations.ops
    allowed = (wrpformat.KernelLaunch, wrpformat.MemcpyD2D, wrpformat.Memset, wrpformat.Memtile)
    for index, op in enumerate(ops):
        if not isinstance(op, allowed):
            name = wrpformat.op_type_name(int(op.op_type))
            raise recorder.refuse(f"operation {index} ({name})", recorder.where_op(index))
        if isinstance(op, wrpformat.KernelLaunch):
            call = calls.get(index)
            if call is None or call.kernel.key != op.kernel_key:
                raise recorder.refuse(
                    f"operation {index} (launch of '{op.kernel_key}' not made through wp.launch/wp.launch_tiled)",
                    recorder.where_op(index),
                )
            if (tuple(op.shape), op.size) != (call.cpu_shape, call.cpu_size) or not op.is_forward:
                raise recorder.refuse(
                    f"the launch of '{op.kernel_key}' (its CPU record has bounds {tuple(op.shape)}/{op.size}, "
                    f"the call gives {call.cpu_shape}/{call.cpu_size})",
                    call.where,
                )

    # The CPU objects are replaced by the CUDA modules.
    shutil.rmtree(modules_dir, ignore_errors=True)
    modules_dir.mkdir()
    variants: dict[tuple[int, int], _CudaModule] = {}
    kernels: dict[tuple[str, str], wrpformat.KernelRecord] = {}
    for index, op in enumerate(ops):
        if not isinstance(op, wrpformat.KernelLaunch):
            continue
        call = calls[index]
        kernel = call.kernel
        key = (id(kernel.module), call.cuda_block_dim)
        if key not in variants:
            variants[key] = _build_cuda_module(
                kernel.module, call.cuda_block_dim, arch, modules_dir, recorder, call.where
            )
        variant = variants[key]
        hasher = kernel.module.hashers[call.cuda_block_dim]
        mangled = kernel.get_mangled_name(kernel_hash=hasher.kernel_hashes[kernel])
        forward = f"{mangled}_cuda_kernel_forward"
        options = kernel.module.options | kernel.options
        backward = f"{mangled}_cuda_kernel_backward" if options.get("enable_backward", True) else ""
        if forward not in variant.smem:
            raise recorder.refuse(
                f"the launch of '{kernel.key}' (no {forward} in Warp's module metadata)", call.where
            )
        kernels.setdefault(
            (variant.hash, kernel.key),
            wrpformat.KernelRecord(
                key=kernel.key,
                module_hash=variant.hash,
                forward_name=forward,
                backward_name=backward,
                forward_smem_bytes=variant.smem[forward],
                backward_smem_bytes=variant.smem.get(backward, 0) if backward else 0,
                block_dim=call.cuda_block_dim,
            ),
        )
        op.shape = call.shape
        op.size = call.size
        op.dim = call.size
        op.module_hash = variant.hash
        op.block_dim = call.cuda_block_dim
        op.grid_stride = int(kernel.grid_stride)
        op.max_blocks = call.max_blocks
        op.smem_bytes = variant.smem[forward]
        op.cluster_dim = 1

    meta = cpu.metadata
    meta.modules = [v.record for v in variants.values()]
    meta.kernels = list(kernels.values())
    meta.target_arch = arch
    cpu.header.device_type = wrpformat.DeviceType.CUDA
    cpu.header.target_arch = arch
    wrpformat.write_wrp(cpu, wrp_path)
    # The result must be a file Warp's loader accepts.
    wrpformat.read_wrp(wrp_path)


# ---------------------------------------------------------------------------------------
# Comparison with a capture made on a GPU
# ---------------------------------------------------------------------------------------


def compare_captures(a_dir: str | os.PathLike, b_dir: str | os.PathLike, stem: str) -> list[str]:
    """Differences between two raw CUDA captures in canonical form (empty: byte-identical).

    Compares the canonical `.wrp` bytes (wrpkg.wrpformat.canonicalize) and every module file
    (binary and retained source) by name and bytes. Golden outputs are not compared: a
    retargeted capture's come from a CPU replay.
    """
    a_dir, b_dir = Path(a_dir), Path(b_dir)
    problems = []
    wrps = [wrpformat.canonicalize(wrpformat.read_wrp(d / f"{stem}.wrp")) for d in (a_dir, b_dir)]
    a_bytes, b_bytes = (w.to_bytes() for w in wrps)
    if a_bytes != b_bytes:
        first = next((i for i, (x, y) in enumerate(zip(a_bytes, b_bytes, strict=False)) if x != y), None)
        problems.append(
            f"{stem}.wrp: canonical forms differ ({len(a_bytes)} vs {len(b_bytes)} bytes, first difference at "
            f"byte {first if first is not None else min(len(a_bytes), len(b_bytes))})"
        )
    listings = [sorted(os.listdir(d / f"{stem}_modules")) for d in (a_dir, b_dir)]
    if listings[0] != listings[1]:
        problems.append(f"{stem}_modules: files differ: {listings[0]} vs {listings[1]}")
    for name in sorted(set(listings[0]) & set(listings[1])):
        if (a_dir / f"{stem}_modules" / name).read_bytes() != (b_dir / f"{stem}_modules" / name).read_bytes():
            problems.append(f"{stem}_modules/{name}: bytes differ")
    return problems
