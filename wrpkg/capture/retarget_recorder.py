"""RetargetRecorder: the launch recorder of a retargeted capture (wrpkg.capture.retarget). It watches
the Warp launch API while the script's step runs on the CPU, and records per launch what the CUDA
launch would be (LaunchCall), the warp.utils operations (BuiltinCall) and the library code behind
each operation, and refuses what has no CUDA form known with certainty (RetargetError).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import types
from dataclasses import dataclass, field

from wrpkg import warp_internals, wrpformat
from wrpkg.capture import call_sites
from wrpkg.capture.launch_recorder import LaunchRecorder, is_user_file, script_line
from wrpkg.capture.retarget_launches import (
    COMMAND_TAG,
    cuda_launch_block_dim,
    tag_command,
    tape_forward_launch,
    tape_patch,
    watched_launch,
)
from wrpkg.errors import CaptureError

# Warp's built-in array operations (warp.utils). APIC records each as one operation holding its
# arrays' regions and sizes, the same record on both devices (apic_types.h; the CUDA loader calls
# the CUB entry point, which sizes its temporary storage at load): they are kept as recorded.
BUILTIN_ARRAY_OPS = (
    "radix_sort_pairs",
    "segmented_sort_pairs",
    "array_scan",
    "runlength_encode",
    "array_sum",
    "array_inner",
)
BUILTIN_OP_TYPES = frozenset(
    {
        wrpformat.OpType.SCAN,
        wrpformat.OpType.REDUCTION,
        wrpformat.OpType.SEGMENTED_SORT,
        wrpformat.OpType.RADIX_SORT,
        wrpformat.OpType.RUNLENGTH_ENCODE,
    }
)


class RetargetError(CaptureError):
    """A captured operation has no CUDA form known with certainty."""


class LinesNotTraced(CaptureError):
    """A refusal names the script line of an operation no launch made, which only a capture that traced
    the script's lines knows (RetargetRecorder.trace_lines): run it again with tracing."""


def _imported_by_name(patches: list[tuple[object, str, object]]) -> list[tuple[object, str, object]]:
    """The same replacements for every other loaded module that holds one of the patched functions
    under a name of its own (warp.fem's integrate imports bsr_set_from_triplets by name, a
    library may `from warp.sparse import bsr_mv`): a call through that name would record
    its operations with no library line, and a script's `from warp import launch` would not be watched."""
    originals = {id(getattr(owner, name)): (name, replacement) for owner, name, replacement in patches}
    patched = {(id(owner), name) for owner, name, _ in patches}
    extra = []
    for module in list(sys.modules.values()):
        try:
            names = vars(module)
        except TypeError:  # a module object without a __dict__
            continue
        for attr, value in list(names.items()):
            found = originals.get(id(value))
            # A module imported while build() ran took the hook of that moment (build_launches,
            # retarget_launches), which wraps the function with functools.wraps. Plain functions only,
            # a few levels: a unittest.mock object answers every attribute with a new mock.
            for _ in range(4):
                if found is not None or not isinstance(value, types.FunctionType):
                    break
                value = vars(value).get("__wrapped__")
                found = originals.get(id(value)) if value is not None else None
            if found is not None and (id(module), attr) not in patched:
                extra.append((module, attr, found[1]))
    return extra


def is_record_of(record_key: str, kernel) -> bool:
    """Whether a launch record's kernel key names `kernel`: its key, or, for a generic kernel's later
    overload in the step, its mangled name `<key>_<8 hex digits>` (launch_recorder._key_later_overload)."""
    return (
        record_key == kernel.key
        or re.fullmatch(re.escape(kernel.key) + "_[0-9a-f]{8}", record_key) is not None
    )


@dataclass
class LaunchCall:
    """One `wp.launch`/`wp.launch_tiled` call made during the CPU capture."""

    # Where its KERNEL_LAUNCH lies: (index,) in the top-level operation stream, or the path through
    # conditional nodes, e.g. (3, "a", 0): the first operation of branch a of top-level operation 3.
    path: tuple
    kernel: object  # warp Kernel (the overload, for generic kernels)
    cuda_block_dim: int
    max_blocks: int
    shape: tuple[int, int, int, int]  # the CUDA launch's bounds, as the record stores them
    size: int
    cpu_shape: tuple[int, int, int, int]  # what the CPU record must hold for this call
    cpu_size: int
    where: str  # "script.py:42"
    adjoint: bool = False  # a backward launch (adjoint=True, wp.Tape.backward())


@dataclass
class BuiltinCall:
    """One call of a warp.utils array operation (BUILTIN_ARRAY_OPS) made during the CPU capture."""

    name: str  # "array_sum"
    dtype: str  # its first array's scalar type, "float32"
    where: str  # "at models/x.py:12 (...), inside newton/...:823 (...)" (call_sites.describe)


@dataclass
class LibrarySite:
    """Top-level operations [start, end) were recorded by a Warp library call made at `library`."""

    start: int
    end: int
    library: str  # "newton/_src/geometry/broad_phase_sap.py:823 (...)" (call_sites.describe_location)


@dataclass
class _LineMark:
    op_count: int
    where: str


@dataclass
class RetargetRecorder(LaunchRecorder):
    """The capture's recorder with hooks on Warp's launch API and conditional nodes, for a
    CPU capture that is retargeted.

    `user_dirs`: folders whose frames count as the capture script's (named in errors).
    """

    user_dirs: tuple[str, ...] = ()
    # Trace the script's lines as operations are recorded (for where_op): a trace function slows every
    # Python call of the step about twofold, so a watched capture runs without it, and again with it
    # only when a refusal needs a line (wrpkg.capture.crash_watch.RETRY_TRACED).
    trace_lines: bool = True
    calls: list[LaunchCall] = field(default_factory=list)
    lines: list[_LineMark] = field(default_factory=list)
    _tiled_block_dim: list = field(default_factory=list)
    # Arrays allocated on the capture device while recording (kept alive, so their ids stay
    # unique): on CUDA their regions are graph-scoped and saved without content.
    allocated: list = field(default_factory=list)
    # Launches that raised while recording, (kernel key, line).
    raised: list = field(default_factory=list)
    # The conditional branches being recorded, innermost last: (path prefix, the operation count at
    # which the branch began). APIC records a branch's operations into the main stream and moves them
    # into the conditional when it ends, so an operation's index in its branch is counted from there.
    _branches: list = field(default_factory=list)
    builtin_calls: list[BuiltinCall] = field(default_factory=list)
    # The library lines that called warp.utils and warp.sparse operations in the step (Newton's SAP
    # broad phase sorts), named beside the script's line where an operation they recorded is refused.
    library_sites: list[LibrarySite] = field(default_factory=list)
    _library_depth: int = 0

    def op_path(self, count: int) -> tuple:
        """The path an operation recorded at operation count `count` will have."""
        prefix, base = self._branches[-1] if self._branches else ((), 0)
        return (*prefix, count - base)

    # --- where in the script --------------------------------------------------------------

    def _is_user_file(self, filename: str) -> bool:
        return is_user_file(self.user_dirs, filename)

    def _where(self) -> str:
        return script_line(self.user_dirs, sys._getframe(1)) or (
            "an unknown line (no frame of the capture script on the stack)"
        )

    def where_op(self, index: int) -> str:
        """The script line that was running when top-level operation `index` was recorded."""
        if not self.trace_lines:
            raise LinesNotTraced(
                f"{self.target}: operation {index} is refused; its line needs a traced capture"
            )
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

    def _patches(self, device) -> list[tuple[object, str, object]]:
        import warp as wp  # noqa: PLC0415

        ctx = warp_internals.context()

        capture = self.capture
        if capture is None:
            raise CaptureError(f"{self.target}: retarget hooks installed outside an APIC capture")
        wptypes = warp_internals.types()

        original = {
            "launch": ctx.launch,
            "launch_tiled": ctx.launch_tiled,
            "capture_if": ctx.capture_if,
            "capture_while": ctx.capture_while,
            "command": ctx.Launch.launch,
        }
        recorder = self

        def launch(
            kernel, dim, inputs=(), outputs=(), adj_inputs=(), adj_outputs=(), device=None, *args, **kw
        ):
            where = recorder._where()
            tiled_block_dim = recorder._tiled_block_dim.pop() if recorder._tiled_block_dim else None
            adjoint = bool(kw.get("adjoint", args[1] if len(args) > 1 else False))
            record_cmd = kw.get("record_cmd", args[3] if len(args) > 3 else False)
            max_blocks = kw.get("max_blocks", args[4] if len(args) > 4 else 0)
            block_dim = kw.get("block_dim", args[5] if len(args) > 5 else None)
            if record_cmd:
                # A launch command records nothing until its launch() (launch_command below).
                command = original["launch"](
                    kernel, dim, inputs, outputs, adj_inputs, adj_outputs, device, *args, **kw
                )
                tag_command(command, tiled_block_dim, block_dim)
                return command
            cuda_block_dim, tiled = (
                cuda_launch_block_dim(tiled_block_dim, block_dim),
                tiled_block_dim is not None,
            )
            if adjoint and isinstance(block_dim, ctx._ResolvedBlockDim):
                # Tape.backward() replaying a forward launch with the CPU's block_dim: CUDA replays the
                # forward launch's.
                forward = tape_forward_launch(kernel, inputs, outputs)
                if forward is None:
                    raise recorder.refuse(
                        f"the backward launch of '{kernel.key}' that wp.Tape.backward() replays: its forward "
                        "launch was recorded on the tape where rules_warp did not watch (before build() ran), or "
                        "two forward launches with the same argument lists asked for different CUDA launches, "
                        "so its CUDA block_dim is unknown",
                        where,
                        fix="record the tape (with wp.Tape(): ...) in build() or in step()",
                    )
                cuda_block_dim, tiled = forward
            before = capture.operation_count
            try:
                with watched_launch(cuda_block_dim, tiled):
                    result = original["launch"](
                        kernel, dim, inputs, outputs, adj_inputs, adj_outputs, device, *args, **kw
                    )
            except Exception:
                recorder.raised.append((kernel.key, where))
                raise
            if kernel.is_generic and capture.operation_count != before:
                kernel = kernel._add_normalized_overload(kernel.infer_argument_types([*inputs, *outputs]))
            cpu_dim, _ = ctx._normalize_launch_dim(dim)
            recorder._note_launch(
                kernel,
                cpu_dim,
                cuda_block_dim,
                tiled,
                int(max_blocks or 0),
                adjoint,
                before,
                where,
            )
            return result

        def launch_tiled(*args, **kwargs):
            recorder._tiled_block_dim.append(kwargs.get("block_dim"))
            try:
                return original["launch_tiled"](*args, **kwargs)
            finally:
                recorder._tiled_block_dim.clear()

        def launch_command(command, stream=None):
            where = recorder._where()
            requested = getattr(command, COMMAND_TAG, None)
            if requested is None:
                raise recorder.refuse(
                    f"the launch command (wp.Launch) of '{command.kernel.key}', made where rules_warp did not "
                    "watch (before build() ran), so its CUDA block_dim is unknown",
                    where,
                    fix="make the command (wp.launch(..., record_cmd=True)) in build() or in step(), or launch "
                    "the kernel with wp.launch in step()",
                )
            cuda_block_dim, tiled = requested
            before = capture.operation_count
            try:
                result = original["command"](command, stream)
            except Exception:
                recorder.raised.append((command.kernel.key, where))
                raise
            cpu_dim = tuple(int(n) for n in command.bounds.shape)
            recorder._note_launch(
                command.kernel,
                cpu_dim,
                cuda_block_dim,
                tiled,
                int(command.max_blocks or 0),
                bool(command.adjoint),
                before,
                where,
            )
            return result

        init_new = wptypes.array._init_new

        def allocating_init_new(arr, dtype, shape, strides, alloc_device, pinned):
            result = init_new(arr, dtype, shape, strides, alloc_device, pinned)
            if arr.device == device:
                recorder.allocated.append(arr)
            return result

        def branch(body, path: tuple):
            # A Graph body is Warp's to refuse under APIC ("not yet implemented"); a callable's operations
            # are counted in its own branch.
            if body is None or not callable(body):
                return body

            def recorded(**kwargs):
                recorder._branches.append((path, capture.operation_count))
                try:
                    return body(**kwargs)
                finally:
                    recorder._branches.pop()

            return recorded

        def capture_if(condition, on_true=None, on_false=None, stream=None, **kwargs):
            at = recorder.op_path(capture.operation_count)
            return original["capture_if"](
                condition, branch(on_true, (*at, "a")), branch(on_false, (*at, "b")), stream, **kwargs
            )

        def capture_while(condition, while_body, stream=None, **kwargs):
            at = recorder.op_path(capture.operation_count)
            return original["capture_while"](condition, branch(while_body, (*at, "a")), stream, **kwargs)

        def library_op(name, original_op):
            """A Warp library call that records operations other than launches: the library line that
            made it is kept for every operation it records (LibrarySite), and warp.utils calls are noted
            (BuiltinCall)."""

            def noted(*args, **kwargs):
                if recorder._library_depth:
                    return original_op(*args, **kwargs)
                site = call_sites.here()
                if name in BUILTIN_ARRAY_OPS:
                    first = args[0] if args else next(iter(kwargs.values()), None)
                    dtype = getattr(getattr(first, "dtype", None), "__name__", "?")
                    recorder.builtin_calls.append(BuiltinCall(name, dtype, call_sites.describe(site)))
                start = capture.operation_count
                recorder._library_depth += 1
                try:
                    return original_op(*args, **kwargs)
                finally:
                    recorder._library_depth -= 1
                    if site.library is not None and not recorder._branches:
                        recorder.library_sites.append(
                            LibrarySite(
                                start, capture.operation_count, call_sites.describe_location(site.library)
                            )
                        )

            return noted

        utils = [module for module in (getattr(wp, "utils", None), warp_internals.private("utils")) if module]
        # warp.sparse only where the script imported it: importing it here would add its modules to
        # those the capture generates after the step.
        sparse = [
            module
            for module in (sys.modules.get("warp.sparse"), warp_internals.loaded_private("sparse"))
            if module
        ]
        # Python functions only: a @wp.func (bsr_row_index) is Warp's to resolve in kernels, not a call
        # to watch.
        builtin_ops = [
            (module, name, library_op(name, getattr(module, name)))
            for module, names in [(m, BUILTIN_ARRAY_OPS) for m in utils]
            + [(m, [n for n in dir(m) if n.startswith("bsr_")]) for m in sparse]
            for name in names
            if isinstance(getattr(module, name, None), types.FunctionType)
        ]
        entry_points = [
            (ctx, "launch", launch),
            (wp, "launch", launch),
            (ctx, "launch_tiled", launch_tiled),
            (wp, "launch_tiled", launch_tiled),
            (ctx, "capture_if", capture_if),
            (wp, "capture_if", capture_if),
            (ctx, "capture_while", capture_while),
            (wp, "capture_while", capture_while),
        ]
        # A script's `from warp import launch` is watched too (else its launches are refused as not
        # made through wp.launch).
        return (
            builtin_ops
            + entry_points
            + _imported_by_name(builtin_ops + entry_points)
            + [
                (wptypes.array, "_init_new", allocating_init_new),
                (ctx.Launch, "launch", launch_command),
                tape_patch(wp),
            ]
        )

    @contextlib.contextmanager
    def _tracing(self):
        """Marks which script line is running as operations are recorded (`where_op`)."""
        if not self.trace_lines:
            yield
            return
        recorder = self
        capture = self.capture

        def tracer(frame, event, arg):
            if event == "call":
                return tracer if recorder._is_user_file(frame.f_code.co_filename) else None
            if event == "line":
                where = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
                recorder.lines.append(_LineMark(capture.operation_count, where))
            return tracer

        previous_trace = sys.gettrace()
        # sys.settrace reaches only frames entered from now on: the script's frames already
        # running (a capture begun inside the function that issues the step) are traced too.
        running = []
        frame = sys._getframe(1)
        while frame is not None:
            if self._is_user_file(frame.f_code.co_filename):
                running.append((frame, frame.f_trace))
            frame = frame.f_back
        try:
            sys.settrace(tracer)
            for frame, _ in running:
                frame.f_trace = tracer
            yield
        finally:
            sys.settrace(previous_trace)
            for frame, trace in running:
                frame.f_trace = trace

    def check_recorded(self) -> None:
        """check_operations() on the op stream as recorded, before anything is compiled (retarget()
        checks the saved capture again)."""
        ops = self.recorded_operations()
        if ops is not None:
            check_operations(ops, self)

    def transient_region_ids(self) -> set[int]:
        """Regions whose base array was allocated during the capture: Warp saves them on
        CUDA by size alone (APICapture._transient_regions; their content is regenerated by
        the replayed operations), where the CPU saves a snapshot."""
        if self.capture is None:
            return set()
        allocated = {id(arr) for arr in self.allocated}
        # Filled from the host by a lowering (wrpkg.capture.lowering.bvh_lowering): their bytes are initial state.
        allocated -= {id(arr) for arr in (self.bvhs.saved_arrays() if self.bvhs is not None else [])}
        return {rid for rid, _, _, base in self.capture._regions.values() if id(base) in allocated}

    def _note_launch(
        self,
        kernel,
        cpu_dim: tuple,
        cuda_block_dim: int,
        tiled: bool,
        max_blocks: int,
        adjoint: bool,
        before: int,
        where: str,
    ) -> None:
        """Records the LaunchCall of a launch that recorded its operation at count `before` (a
        wp.launch, a launch_tiled's, or a launch command's)."""
        after = self.capture.operation_count
        if after == before:
            return  # an empty launch records nothing, on CUDA as on the CPU
        if after != before + 1:
            raise self.refuse(
                f"the launch of '{kernel.key}' (it recorded {after - before} operations)", where
            )
        self._check_kernel(kernel, max_blocks, where)
        # launch_tiled appended the CPU's lane count (1); CUDA runs block_dim lanes.
        cuda_dim = (*cpu_dim[:-1], cuda_block_dim) if tiled else cpu_dim
        cpu_shape, cpu_size = _bounds(cpu_dim, kernel)
        shape, size = (cpu_shape, cpu_size) if cuda_dim == cpu_dim else _bounds(cuda_dim, kernel)
        self.calls.append(
            LaunchCall(
                self.op_path(before),
                kernel,
                cuda_block_dim,
                max_blocks,
                shape,
                size,
                cpu_shape,
                cpu_size,
                where,
                adjoint,
            )
        )

    def _check_kernel(self, kernel, max_blocks: int, where: str) -> None:
        ctx = warp_internals.context()
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
    ctx = warp_internals.context()

    bounds = ctx._build_launch_bounds_from_tuple(tuple(dim), kernel.adj.kernel_dim)
    ndim = min(max(kernel.adj.kernel_dim, 1), 4)
    shape = tuple(int(bounds.shape[d]) if d < ndim else 0 for d in range(4))
    return shape, int(bounds.size)


# ---------------------------------------------------------------------------------------
# The rewrite
# ---------------------------------------------------------------------------------------


def launch_ops(ops: list, prefix: tuple = ()):
    """(path, op) of every kernel launch in `ops`, inside conditional branches too (LaunchCall.path)."""
    for index, op in enumerate(ops):
        path = (*prefix, index)
        if isinstance(op, wrpformat.KernelLaunch):
            yield path, op
        elif isinstance(op, wrpformat.Conditional):
            yield from launch_ops(op.branch_a.ops, (*path, "a"))
            yield from launch_ops(op.branch_b.ops, (*path, "b"))


def _refuse_other_ops(ops: list, recorder: RetargetRecorder, top: int | None = None) -> None:
    """Refuses operations that are neither launches, device copies, memsets, fills nor conditionals
    (whose branches are checked the same way); `top` is the top-level operation a branch belongs to."""
    allowed = (wrpformat.KernelLaunch, wrpformat.MemcpyD2D, wrpformat.Memset, wrpformat.Memtile)
    for index, op in enumerate(ops):
        if op.op_type in BUILTIN_OP_TYPES:
            continue
        at = index if top is None else top
        if isinstance(op, wrpformat.Conditional):
            _refuse_other_ops(op.branch_a.ops, recorder, at)
            _refuse_other_ops(op.branch_b.ops, recorder, at)
        elif not isinstance(op, allowed):
            name = wrpformat.op_type_name(int(op.op_type))
            inside = "" if top is None else f" inside the conditional node of operation {top}"
            where = recorder.where_op(at)
            library = next((s.library for s in recorder.library_sites if s.start <= at < s.end), None)
            if library:
                where += f", inside {library}"
            raise recorder.refuse(f"operation {index} ({name}){inside}", where)


def check_operations(ops: list, recorder: RetargetRecorder) -> dict[tuple, LaunchCall]:
    """Refuses what has no CUDA form known with certainty among the CPU capture's operations `ops`
    (a parsed .wrp's top-level stream, or the op stream before anything is compiled:
    RetargetRecorder.check_recorded), conditional branches included; returns the launch calls by
    operation path (LaunchCall.path).

    Raises:
      RetargetError: naming the operation and the script line.
    """
    calls = {call.path: call for call in recorder.calls}
    if recorder.raised:
        key, where = recorder.raised[0]
        raise recorder.refuse(
            f"the capture in which the launch of '{key}' raised (on CUDA, Warp records the kernel's module "
            "before the launch fails)",
            where,
        )
    _refuse_other_ops(ops, recorder)
    module_states: dict[int, tuple[str, LaunchCall]] = {}  # Python module -> its first CPU module hash
    for path, op in launch_ops(ops):
        call = calls.get(path)
        if call is None or not is_record_of(op.kernel_key, call.kernel):
            raise recorder.refuse(
                f"operation {_path_text(path)} (launch of '{op.kernel_key}' not made through "
                "wp.launch/wp.launch_tiled)",
                recorder.where_op(path[0]),
            )
        if (tuple(op.shape), op.size) != (call.cpu_shape, call.cpu_size) or bool(
            op.is_forward
        ) == call.adjoint:
            raise recorder.refuse(
                f"the launch of '{op.kernel_key}' (its CPU record has bounds {tuple(op.shape)}/{op.size}, "
                f"the call gives {call.cpu_shape}/{call.cpu_size})",
                call.where,
            )
        # A module whose content changed during the step (a generic kernel's overload, or a
        # kernel, first built by a launch of the step) is two modules on the GPU, one per state;
        # its CUDA modules are generated below from its final state only, so the launches made
        # before the change would run code of another module: a silently wrong bundle.
        first = module_states.setdefault(id(call.kernel.module), (op.module_hash, call))
        if first[0] != op.module_hash:
            raise recorder.refuse(
                f"the launch of '{op.kernel_key}' (Warp module '{call.kernel.module.name}' changed during "
                f"step(): it was built again after the launch of '{first[1].kernel.key}' at {first[1].where}, "
                "e.g. for a generic kernel's new overload, and a GPU would run the two launches from two "
                "modules)",
                call.where,
                fix="make the module complete before the capture: launch each overload of a generic "
                "kernel (and each kernel) once in build(), or declare its overloads with wp.overload; "
                'or capture on a GPU (capture_mode = "gpu")',
            )
    return calls


def _path_text(path: tuple) -> str:
    """(3, "a", 0) -> "3a0": an operation's place, conditional branches included."""
    return "".join(str(part) for part in path)
