"""The target GPU a retargeted capture's script and libraries are told they run on.

A retargeted capture runs build() and the step on Warp's CPU device. Code that branches on the
device (`if device.is_cuda:`, `block_dim = 1 if device.is_cpu else 128`, a block count from
`device.sm_count`, `wp.is_conditional_graph_supported()`) would take its CPU branch there, and
the bundle would not be the program a GPU capture saves (device_branches.py records such lines
when no model is used). With a device model, every question of that kind asked by code outside
Warp and wrpkg (decided by the calling frame's file, as device_branches.py does) about the CPU
device, or of Warp's global device queries, gets the answer the target GPU gives: `is_cuda`
True, `is_cpu` False, its `arch`, `sm_count`, memory, name, memory pools, conditional graphs.
Warp's own code and wrpkg keep seeing the real CPU device: they run the script on it, and the
retarget (retarget.py) handles Warp's own device branches.

Streams and events are stand-ins: `wp.Stream(device)`, `wp.Event(device)`, `wp.get_stream()` and
`Device.stream` give objects with no CUDA handle, whose `record_event`, `wait_event` and
`wait_stream` do nothing (as `wp.synchronize_stream` / `wp.synchronize_event` of them) and whose
launches (`stream=`, `wp.ScopedStream`) run on the CPU in the order the code issues them. That is the order a native capture saves: Warp's APIC keeps one
operation stream per device and records every launch on the device there as it is issued, from
whichever CUDA stream (context.py `_get_apic_capture_for_device`), so the replay serializes a
fork the way the CPU run did. Each stand-in is recorded (device_model_answers).

What cannot be answered honestly on the CPU is refused (DeviceModelRefusal, a CaptureError):
a CUDA context, a CUDA device object, the device's free memory, its UUID or PCI bus id, its
memory pool's state. The refusal is raised where the code asked, and again after build()
or the step if the code caught it (`check()`).

A GPU's occupancy (`wp.get_suggested_block_size`, CUDA's cuOccupancyMaxPotentialBlockSize) is
computed (occupancy.py): the kernel's module is compiled for the model's SM as the retarget compiles
it, and CUDA's occupancy calculator is run on the forward function's registers, shared memory and
launch bounds in that cubin, with the model's per-SM limits (MuJoCo Warp sizes its collision
launches from it).

Every answer is recorded (capture.json `device_model`, `device_model_answers`: what was asked,
the answer and the line that asked, each once). Not modelled: the device's `ordinal`, `alias`
and `str()` (Warp's own identity of the CPU device), and comparisons such as `device == "cuda"`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from dataclasses import dataclass, field

from wrpkg import warp_internals
from wrpkg.capture import call_sites, crash_watch, occupancy
from wrpkg.errors import CaptureError

_MIB = 1 << 20


@dataclass(frozen=True)
class TargetDevice:
    """What a CUDA GPU answers to Warp's device queries (`warp.Device`, CUDA 12/13 drivers)."""

    key: str  # the model's name: --device-model, wrp_artifact's device_model
    name: str  # Device.name: the name CUDA reports (nvidia-smi's)
    arch: int  # Device.arch: 10 * major + minor
    sm_count: int  # Device.sm_count
    total_memory: int  # Device.total_memory, bytes (nvidia-smi's memory.total)
    max_shared_memory_per_block: int  # opt-in shared memory per block, bytes

    @property
    def sm_limits(self) -> occupancy.SmLimits:
        """The per-SM limits CUDA's occupancy calculator reads (those of the model's compute capability)."""
        return occupancy.SM_LIMITS[self.arch]


# The models a retargeted capture can be told it runs on: the SKUs' published SM counts and
# compute capabilities, the name and total memory nvidia-smi reports for them, and the opt-in
# shared memory per block of their arch (sm_80: 163 KiB, sm_89: 99 KiB, sm_90: 227 KiB).
MODELS: dict[str, TargetDevice] = {
    m.key: m
    for m in (
        TargetDevice("h200", "NVIDIA H200", 90, 132, 143771 * _MIB, 232448),
        TargetDevice("h100-sxm", "NVIDIA H100 80GB HBM3", 90, 132, 81559 * _MIB, 232448),
        TargetDevice("h100-pcie", "NVIDIA H100 PCIe", 90, 114, 81559 * _MIB, 232448),
        TargetDevice("l40s", "NVIDIA L40S", 89, 142, 46068 * _MIB, 101376),
        TargetDevice("a100-sxm4-80gb", "NVIDIA A100-SXM4-80GB", 80, 108, 81920 * _MIB, 166912),
    )
}
DEFAULT_MODEL = "h200"
NONE = "none"  # no model: the script runs the CPU branch, which device_branches.py records
CHOICES = (*MODELS, NONE)

_GPU_FIX = 'capture on a GPU runner (capture_mode = "gpu", bazel build --config=gpu)'
_NONE_FIX = 'or run the CPU branch instead (device_model = "none", wrpkg capture --device-model none)'


class DeviceModelRefusal(CaptureError):
    """Code on a device-model branch asked for something a run on the CPU cannot give."""


def resolve(name: str | None, target: str) -> TargetDevice | None:
    """The model named `name` (None: the default), or None for "none"; an unknown name is refused
    listing the known ones."""
    name = DEFAULT_MODEL if name is None else name
    if name == NONE:
        return None
    if name not in MODELS:
        raise CaptureError(
            f"{target}: unknown device model {name!r}",
            fix=f"use one of {', '.join(CHOICES)}",
        )
    return MODELS[name]


# Device attributes answered from the model: Warp sets each on the CPU device's instance
# (Device.__init__); the model puts a data descriptor on the class, which instance lookup
# prefers, reading the instance's own value for Warp's code and for CUDA devices.
def _instance_answers(model: TargetDevice) -> dict:
    return {
        "name": model.name,
        "arch": model.arch,
        "sm_count": model.sm_count,
        "max_shared_memory_per_block": model.max_shared_memory_per_block,
        "is_uva": True,
        "is_primary": True,
        "is_mempool_supported": True,
        "is_mempool_enabled": True,  # warp.config.enable_mempools_at_init's default
        "is_ipc_supported": True,
        "is_cubin_supported": True,
        "is_managed_memory_supported": True,
        "is_concurrent_managed_access_supported": True,
    }


# Device properties answered from the model (Warp computes these on each read).
def _property_answers(model: TargetDevice) -> dict:
    return {
        "is_cpu": False,
        "is_cuda": True,
        "total_memory": model.total_memory,
        "has_context": True,
        "has_stream": True,
    }


# What a run on the CPU cannot answer as the GPU would: the refusal's reason.
_REFUSED_PROPERTIES = {
    "context": "its CUDA context (Device.context): a CUDA context pointer exists only on a GPU",
    "free_memory": "its free memory (Device.free_memory): that depends on what a GPU holds when the program runs",
}
_REFUSED_INSTANCE = {
    "uuid": "its UUID (Device.uuid): it names one physical GPU",
    "pci_bus_id": "its PCI bus id (Device.pci_bus_id): it names one physical GPU",
}


@dataclass
class DeviceModel:
    """While `watching()` is active, answers questions about the CPU device asked from outside
    Warp and wrpkg as `model` would, and records them."""

    model: TargetDevice
    target: str
    # (what was asked, "file:line (code)") -> the answer, in the order first asked.
    answers: dict[tuple[str, str], object] = field(default_factory=dict)
    # The first refusal, raised again by check() if the code that asked caught it.
    refused: DeviceModelRefusal | None = None
    _skipped: tuple[str, ...] = ()
    _decided: dict = field(default_factory=dict)  # file name -> outside Warp and wrpkg

    @property
    def name(self) -> str:
        return self.model.key

    def _outside(self, frame) -> bool:
        """Whether `frame` runs code outside Warp and wrpkg (its file; "<string>" and the like: code
        Warp or a library made with exec(), not asked about). Decided once per file: Warp's launch
        path reads the device's attributes many times per launch."""
        filename = frame.f_code.co_filename
        outside = self._decided.get(filename)
        if outside is None:
            outside = not (filename.startswith("<") or os.path.abspath(filename).startswith(self._skipped))
            self._decided[filename] = outside
        return outside

    def _answer(self, frame, asked: str, answer):
        key = (asked, call_sites.describe_location((frame.f_code.co_filename, frame.f_lineno)))
        if not self.answers:
            # Code told it runs on a GPU may then launch a kernel written for a GPU's thread block on
            # the CPU (Newton's Kamino PGS kernels at block_dim 32-256 crash there): a crash names this.
            crash_watch.note_for_a_crash(
                f"this retargeted capture answers device queries as the {self.name} device model "
                f"({self.model.name}), first for {asked} at {key[1]}: code that then takes its GPU branch "
                "(a block_dim for a GPU's thread block, shared scratch per block) runs that branch on the CPU, "
                "where a kernel written for a GPU block can crash",
                f"{_NONE_FIX.removeprefix('or ')}; {_GPU_FIX}",
            )
        self.answers.setdefault(key, answer)
        return answer

    def _refuse(self, frame, asked: str, reason: str):
        where = call_sites.describe_location((frame.f_code.co_filename, frame.f_lineno))
        error = DeviceModelRefusal(
            f"{self.target}: {where} asked the CPU device of this retargeted capture for {reason}. "
            f"The capture answers device queries as the {self.name} device model ({self.model.name}, "
            f"sm_{self.model.arch}), so this code takes its CUDA branch, and {asked} cannot be given honestly "
            "by a run on the CPU",
            fix=f"{_GPU_FIX}, {_NONE_FIX}",
        )
        if self.refused is None:
            self.refused = error
        raise error

    def _occupancy(self, frame, asked: str, kernel) -> tuple[int, int]:
        where = call_sites.describe_location((frame.f_code.co_filename, frame.f_lineno))
        if kernel.is_generic:  # as Warp raises on a GPU
            raise RuntimeError(
                f"get_suggested_block_size() requires a concrete overload of generic kernel '{kernel.key}'; "
                "create one with wp.overload() and pass the returned kernel"
            )
        target = self.model
        try:
            suggestion = occupancy.suggested_block_size(
                kernel, target.sm_limits, target.sm_count, target.arch, f"{self.target}: {where}"
            )
        except occupancy.CubinError as exc:
            error = DeviceModelRefusal(exc.message, fix=exc.fix or f"{_GPU_FIX}, {_NONE_FIX}")
            self.refused = self.refused or error
            raise error from None
        if suggestion.block_size == 0:  # the driver fails the query, and Warp raises
            raise RuntimeError(
                f"CUDA occupancy query failed for kernel '{kernel.key}' on the {self.name} device model: no block "
                f"fits an sm_{target.arch} SM {suggestion.describe(target.arch)}"
            )
        self._answer(frame, asked, suggestion.describe(target.arch))
        return suggestion.block_size, suggestion.min_grid_size

    def check(self) -> None:
        """Raises the first refusal again, if the code that asked caught it."""
        if self.refused is not None:
            raise self.refused

    @contextlib.contextmanager
    def watching(self):
        ctx = warp_internals.context()
        import warp  # noqa: PLC0415 - Warp is imported lazily

        device_class = ctx.Device
        self._skipped = call_sites.own_dirs()
        self._decided.clear()
        model = self
        # A library that imported a modelled function while a model was active (`from warp import
        # is_conditional_graph_supported`) keeps the wrapper: it asks whichever model is active now.
        active = _ACTIVE
        saved_class = {}
        saved_warp = {}

        def install_class(cls, name, value):
            saved_class.setdefault((cls, name), cls.__dict__.get(name, _MISSING))
            setattr(cls, name, value)

        def modelled_property(name, original, answer):
            def get(device):
                if device.ordinal < 0:
                    frame = sys._getframe(1)
                    if model._outside(frame):
                        return model._answer(frame, f"Device.{name}", answer)
                return original.fget(device)

            return property(get, original.fset, doc=original.__doc__)

        def refused_property(name, original, reason):
            def get(device):
                if device.ordinal < 0:
                    frame = sys._getframe(1)
                    if model._outside(frame):
                        model._refuse(frame, f"Device.{name}", reason)
                return original.fget(device)

            return property(get, original.fset, doc=original.__doc__)

        def instance_property(name, answer, reason=None):
            def get(device):
                if device.ordinal < 0:
                    frame = sys._getframe(1)
                    if model._outside(frame):
                        if reason is not None:
                            model._refuse(frame, f"Device.{name}", reason)
                        return model._answer(frame, f"Device.{name}", answer)
                try:
                    return device.__dict__[name]
                except KeyError:
                    raise AttributeError(name) from None

            def set_(device, value):
                device.__dict__[name] = value

            return property(get, set_)

        def intercepted(name, handle):
            """warp.NAME called from outside Warp and wrpkg while the model is active:
            handle(model, frame, *args, **kwargs) answers (or raises a refusal), or returns _ASK_WARP
            to call Warp's own function."""
            original = getattr(warp, name)

            @functools.wraps(original)
            def wrapper(*args, **kwargs):
                current = active[0]
                frame = sys._getframe(1)
                if current is not None and current._outside(frame):
                    answer = handle(current, frame, *args, **kwargs)
                    if answer is not _ASK_WARP:
                        return answer
                return original(*args, **kwargs)

            saved_warp[name] = original
            setattr(warp, name, wrapper)

        def modelled_function(name, answer_for):
            """answer_for(frame, *args) gives the model's answer (recorded), or _ASK_WARP."""

            def handle(model, frame, *args, **kwargs):
                answer = answer_for(frame, *args, **kwargs)
                return answer if answer is _ASK_WARP else model._answer(frame, f"wp.{name}()", answer)

            intercepted(name, handle)

        def is_stand_in(obj) -> bool:
            return getattr(obj, "_wrpkg_stand_in", False)

        def stand_in(obj, device, **attributes):
            obj.device = device
            obj._wrpkg_stand_in = True
            for name, value in attributes.items():
                setattr(obj, name, value)
            return obj

        main_streams = {}

        def main_stream(device):
            """The stand-in for the device's current stream: one per device, as a GPU has."""
            cpu = ctx.runtime.get_device(device)
            if cpu.ordinal not in main_streams:
                main_streams[cpu.ordinal] = stand_in(ctx.Stream.__new__(ctx.Stream), cpu, cuda_stream=None)
            return main_streams[cpu.ordinal]

        def stand_in_init(cls, what, **attributes):
            original = cls.__init__

            @functools.wraps(original)
            def init(obj, device=None, *args, **kwargs):
                frame = sys._getframe(1)
                if model._outside(frame) and on_cpu(device):
                    model._answer(frame, f"wp.{cls.__name__}()", f"{what} {STAND_IN}")
                    stand_in(obj, ctx.runtime.get_device(device), **attributes)
                    return
                original(obj, device, *args, **kwargs)

            install_class(cls, "__init__", init)

        def stand_in_method(cls, name, result):
            """cls.NAME on a stand-in does nothing and returns result(obj, *args, **kwargs)."""
            original = getattr(cls, name)

            @functools.wraps(original)
            def method(obj, *args, **kwargs):
                if is_stand_in(obj):
                    return result(obj, *args, **kwargs)
                return original(obj, *args, **kwargs)

            install_class(cls, name, method)

        def recorded_event(stream, event=None, *args, **kwargs):
            if event is None:
                event = stand_in(
                    ctx.Event.__new__(ctx.Event), stream.device, cuda_event=None, enable_timing=False
                )
            return event

        def scoped_stand_in(scope_class):
            """wp.ScopedStream of a stand-in: the device scope only (Warp's would set the CPU's stream)."""
            enter, exit_ = scope_class.__enter__, scope_class.__exit__

            def scoped_enter(scope):
                if is_stand_in(scope.stream):
                    scope.device_scope.__enter__()
                    return scope.stream
                return enter(scope)

            def scoped_exit(scope, *exc):
                if is_stand_in(scope.stream):
                    return scope.device_scope.__exit__(*exc)
                return exit_(scope, *exc)

            install_class(scope_class, "__enter__", scoped_enter)
            install_class(scope_class, "__exit__", scoped_exit)

        def suggested_block_size(model, frame, kernel, device=None, *args, **kwargs):
            """The occupancy the model's GPU gives (occupancy.py); Warp's own on a CUDA device, and
            Warp's TypeError for what is no kernel."""
            if not on_cpu(device) or not isinstance(kernel, ctx.Kernel):
                return _ASK_WARP
            return model._occupancy(frame, f"wp.get_suggested_block_size({kernel.key})", kernel)

        def on_cpu(device) -> bool:
            try:
                return ctx.runtime.get_device(device).ordinal < 0
            except Exception:  # noqa: BLE001 - Warp's own call says what is wrong with the argument
                return False

        def device_answer(answer):
            def answer_for(frame, device=None, *args, **kwargs):
                return answer if on_cpu(device) else _ASK_WARP

            return answer_for

        def refused_function(name, reason, applies):
            def handle(model, frame, *args, **kwargs):
                if applies(*args, **kwargs):
                    model._refuse(frame, f"wp.{name}()", reason)
                return _ASK_WARP

            intercepted(name, handle)

        def refused_init(cls, reason):
            original = cls.__init__

            @functools.wraps(original)
            def init(obj, device=None, *args, **kwargs):
                frame = sys._getframe(1)
                if model._outside(frame) and on_cpu(device):
                    model._refuse(frame, f"wp.{cls.__name__}()", reason)
                return original(obj, device, *args, **kwargs)

            install_class(cls, "__init__", init)

        def cuda_ident(ident=None, *args, **kwargs) -> bool:
            return isinstance(ident, str) and ident.startswith("cuda")

        try:
            for name, answer in _property_answers(self.model).items():
                install_class(
                    device_class, name, modelled_property(name, device_class.__dict__[name], answer)
                )
            stream_property = device_class.__dict__["stream"]

            def current_stream(device):
                if device.ordinal < 0:
                    frame = sys._getframe(1)
                    if model._outside(frame):
                        model._answer(frame, "Device.stream", f"the current stream {STAND_IN}")
                        return main_stream(device)
                return stream_property.fget(device)

            install_class(device_class, "stream", property(current_stream, stream_property.fset))
            original_get_allocator = device_class.get_allocator

            def get_allocator(device, pinned=False):
                # Code on the CUDA branch asks for pinned host memory (pinned=True: its read-back
                # buffers); pinning needs a CUDA driver, which the CPU run has none of. Ordinary host
                # memory holds the same bytes.
                if pinned and device.ordinal < 0:
                    frame = sys._getframe(1)
                    while frame is not None and not model._outside(frame):
                        frame = frame.f_back
                    if frame is not None:
                        model._answer(frame, "pinned host memory", PINNED_AS_PAGEABLE)
                    return original_get_allocator(device, False)
                return original_get_allocator(device, pinned)

            install_class(device_class, "get_allocator", get_allocator)
            for name, reason in _REFUSED_PROPERTIES.items():
                install_class(device_class, name, refused_property(name, device_class.__dict__[name], reason))
            for name, answer in _instance_answers(self.model).items():
                install_class(device_class, name, instance_property(name, answer))
            for name, reason in _REFUSED_INSTANCE.items():
                install_class(device_class, name, instance_property(name, None, reason))
            modelled_function("is_cuda_available", lambda frame: True)
            modelled_function("get_cuda_device_count", lambda frame: 1)
            modelled_function("is_conditional_graph_supported", lambda frame: True)
            modelled_function("is_mempool_supported", device_answer(True))
            modelled_function("is_mempool_enabled", device_answer(True))
            # Enabling the pool the model says is enabled: nothing to do (the CPU allocates as before).
            modelled_function(
                "set_mempool_enabled",
                lambda frame, device=None, enable=True, *a, **k: (
                    bool(enable) if on_cpu(device) else _ASK_WARP
                ),
            )
            pool = "the state of its CUDA memory pool (wp.{}): it exists only on a GPU, and changes as the program runs"
            for name in (
                "get_mempool_release_threshold",
                "set_mempool_release_threshold",
                "get_mempool_used_mem_current",
                "get_mempool_used_mem_high",
            ):
                refused_function(name, pool.format(name), lambda device=None, *a, **k: on_cpu(device))
            no_device = "a CUDA device object: the capture runs on the CPU, where Warp has none"
            refused_function("get_cuda_device", no_device, lambda *a, **k: True)
            refused_function("get_cuda_devices", no_device, lambda *a, **k: True)
            refused_function("get_device", no_device, cuda_ident)

            def current_stand_in(model, frame, device=None):
                if not on_cpu(device):
                    return _ASK_WARP
                model._answer(frame, "wp.get_stream()", f"the current stream {STAND_IN}")
                return main_stream(device)

            intercepted("get_stream", current_stand_in)
            intercepted("get_suggested_block_size", suggested_block_size)
            stand_in_init(ctx.Stream, "a stream", cuda_stream=None)
            stand_in_init(ctx.Event, "an event", cuda_event=None, enable_timing=False)
            stand_in_method(ctx.Stream, "record_event", recorded_event)
            stand_in_method(ctx.Stream, "wait_event", lambda stream, *a, **k: None)
            stand_in_method(ctx.Stream, "wait_stream", lambda stream, *a, **k: None)
            scoped_stand_in(warp_internals.scoped_stream_class())
            # The CPU runs each launch to its end: waiting on a stand-in is done at once.
            for name in ("synchronize_stream", "synchronize_event"):
                original_sync = getattr(warp, name)

                def synchronize(target=None, *args, _original=original_sync, **kwargs):
                    if is_stand_in(target):
                        return None
                    return _original(target, *args, **kwargs)

                saved_warp[name] = original_sync
                setattr(warp, name, functools.wraps(original_sync)(synchronize))
            active[0] = self
            yield self
        finally:
            active[0] = None
            for (cls, name), original in saved_class.items():
                if original is _MISSING:
                    delattr(cls, name)
                else:
                    setattr(cls, name, original)
            for name, original in saved_warp.items():
                setattr(warp, name, original)

    def records(self) -> list[dict]:
        """capture.json `device_model_answers`: each question, its answer and the line that asked."""
        return [
            {"asked": asked, "answer": answer, "where": where}
            for (asked, where), answer in self.answers.items()
        ]


_MISSING = object()
_ASK_WARP = object()
# How a pinned host allocation of the CUDA branch is answered (device_model_answers).
PINNED_AS_PAGEABLE = "ordinary host memory (the CPU run has no CUDA driver to pin with; the same bytes)"
# How a stand-in stream or event is named (device_model_answers, the note).
STAND_IN = "(a stand-in: the capture records its work in issue order, as a native capture does)"
_ACTIVE: list[DeviceModel | None] = [None]  # the model whose watching() is active


def note(target: str, model: DeviceModel) -> str:
    """The capture log's note on the questions answered from the model."""
    records = model.records()
    shown = [f"  {r['where']}: {r['asked']} -> {r['answer']!r}" for r in records[:8]]
    if len(records) > 8:
        shown.append(f"  ... and {len(records) - 8} more (capture.json device_model_answers)")
    if any(r["asked"].startswith("wp.get_suggested_block_size(") for r in records):
        shown.append(
            f"  wp.get_suggested_block_size() was computed for sm_{model.model.arch} with CUDA's occupancy "
            "calculator from the kernel's cubin (its registers, shared memory and launch bounds) and the "
            "model's per-SM limits, with the default shared memory carveout, as the GPU's driver answers"
        )
    return "\n".join(
        [
            f"note: {target}: this retargeted capture ran on the CPU, and code asked which device it runs on: "
            f"it was answered as the {model.name} device model ({model.model.name}, sm_{model.model.arch}, "
            f"{model.model.sm_count} SMs), so it took the branch a GPU capture takes (--device-model none: "
            "the CPU's answers)",
            *shown,
        ]
    )
