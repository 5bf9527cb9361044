"""Compile a CPU capture's modules after its step, so every refusal of the step comes first.

Under an APIC capture on the CPU, Warp records a kernel launch and does not run it
(`wp_cpu_launch_kernel` in warp/native/warp.cpp: "During capture ... the kernel is NOT
executed - only recorded"). What a launch needs of the module's binary is its identity, not
its code: the module hash (Warp hashes the module before any compile), the kernel's symbol
name, the path the binary will have, and a non-null entry point handed to the recording (and
registered for an in-process replay of the live graph, which the capture never does). So
while the step records, `DeferredCompile` lets Warp do all of `Module.load` except its native
work:

- Warp's `build_cpu` (warp/_src/build.py: the warp-clang compile, about 2 s for the first module of a
  fresh kernel cache) records its arguments and the generated source instead of compiling;
  Warp's code generation, its hashes, its `.meta` and the source file in the kernel cache
  are all Warp's own;
- `runtime.llvm.wp_load_obj` of a binary not compiled yet remembers the handle instead of
  loading it, and `runtime.llvm.wp_lookup` in such a handle answers a placeholder entry
  point (which, if anything ever called it, would make `finish()` refuse the capture).

Warp therefore creates its ordinary ModuleExec for each module variant the step launches,
and the step's refusals (the step guard's, the launch recorder's, the retarget hooks', the
stale-pointer check after it) are decided with nothing compiled. Then `finish()` runs each
recorded compile with the arguments Warp gave it (the same source, at the same path, with the
same flags: the same object file), loads it under the handle Warp chose, drops the
placeholder hooks Warp cached, and registers the real entry points with the APIC recording.
A module a launch builds again in the step (a generic kernel's new overload) is two recorded
compiles, each of the source of its own state, as two eager compiles would be.

A capture refused in the step calls `abandon()`: the ModuleExecs that were never compiled are
dropped from their modules, so a later load in the same process compiles for real.
"""

from __future__ import annotations

import ctypes
import os
import shutil
from dataclasses import dataclass, field

from wrpkg import warp_internals
from wrpkg.capture import crash_watch


@dataclass
class _Compile:
    """One deferred `build_cpu` call: Warp's arguments, and the source it had written."""

    obj_path: str  # in Warp's per-process build dir, <module dir>_p<pid>_t<tid>/<name>.o
    cpp_path: str  # likewise
    source: bytes
    args: tuple
    kwargs: dict
    # Set when Warp asks to load it (Module.load, right after its _compile).
    binary_path: str = ""
    handle: str = ""
    legacy_linker: object = None


@dataclass
class DeferredCompile:
    """Installs (through `patches()`) for the length of a CPU capture's step; `finish()` compiles."""

    target: str
    compiles: list[_Compile] = field(default_factory=list)
    # Handles of ModuleExecs whose binary is not compiled yet -> their compile.
    pending: dict[str, _Compile] = field(default_factory=dict)
    # (module hash text, kernel key) -> (kernel, ModuleExec): registered with the APIC state with
    # placeholder entry points (wrpkg.capture.launch_recorder notes each launch's).
    launched: dict[tuple[str, str], tuple[object, object]] = field(default_factory=dict)
    placeholder_called: list[str] = field(default_factory=list)
    # The Warp module being compiled, for an error (Warp names a CPU module's handle wp_<name>_<n>).
    failed_module: str = ""
    _placeholder: object = None

    # --- while the step records ----------------------------------------------------------------

    def patches(self) -> list[tuple[object, str, object]]:
        """(owner, attribute, replacement) for LaunchRecorder to install and restore."""
        build = warp_internals.private("build")
        llvm = warp_internals.context().runtime.llvm
        deferred = self
        original_lookup = llvm.wp_lookup
        original_load = llvm.wp_load_obj

        def placeholder(*_args):
            deferred.placeholder_called.append("a kernel")

        # A C function pointer that stays valid for the life of this object (made once: APIC may hold it).
        if self._placeholder is None:
            self._placeholder = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(placeholder)
        placeholder_address = ctypes.cast(self._placeholder, ctypes.c_void_p).value

        def build_cpu(obj_path, cpp_path, *args, **kwargs):
            with open(cpp_path, "rb") as f:
                source = f.read()
            deferred.compiles.append(_Compile(str(obj_path), str(cpp_path), source, args, kwargs))

        def wp_load_obj(binary_path, handle, *rest):
            path = os.fsdecode(binary_path)
            job = None if os.path.exists(path) else deferred._compile_for(path)
            if job is None:
                return original_load(binary_path, handle, *rest)
            job.binary_path = path
            job.handle = os.fsdecode(handle)
            job.legacy_linker = rest[0] if rest else None
            deferred.pending[job.handle] = job
            return 0

        def wp_lookup(handle, symbol):
            if os.fsdecode(handle) in deferred.pending:
                return placeholder_address
            return original_lookup(handle, symbol)

        return [
            (build, "build_cpu", build_cpu),
            (llvm, "wp_load_obj", wp_load_obj),
            (llvm, "wp_lookup", wp_lookup),
        ]

    def _compile_for(self, binary_path: str) -> _Compile | None:
        """The recorded compile whose output Warp moves to `binary_path` (Module._compile renames its
        build dir, `<module dir>_p<pid>_t<tid>`, to the module dir)."""
        module_dir, name = os.path.split(binary_path)
        for job in reversed(self.compiles):
            build_dir, obj_name = os.path.split(job.obj_path)
            if (
                obj_name == name
                and not job.handle
                and build_dir.startswith(os.path.normpath(module_dir) + "_p")
            ):
                return job
        return None

    def note_launch(self, kernel, module_exec) -> None:
        """Called by the launch recorder for each recorded launch."""
        if module_exec is not None and getattr(module_exec, "handle", None) in self.pending:
            key = (warp_internals.apic_capture_class()._hash_to_str(module_exec.module_hash), str(kernel.key))
            self.launched.setdefault(key, (kernel, module_exec))

    # --- after the step ---------------------------------------------------------------------------

    def finish(self, apic_state) -> None:
        """Compiles and loads every deferred module and hands APIC the real entry points (the
        caller refuses the capture first if `placeholder_called`).

        Raises:
          RuntimeError (or Warp's own exception) when a compile fails; the message names the module.
        """
        build = warp_internals.private("build")
        runtime = warp_internals.context().runtime
        # A module no launch of the step used is not in the capture: its code was generated (a kernel
        # Warp cannot generate is refused), its compile is dropped. A library such as Newton brings in
        # ~140 modules and a step launches a few of them.
        launched_handles = {module_exec.handle for _, module_exec in self.launched.values()}
        self._drop_execs(lambda module_exec: module_exec.handle not in launched_handles)
        waiting = self._waiting_execs()
        jobs = [job for job in self.compiles if job.handle and job.handle in launched_handles]
        for number, job in enumerate(jobs, 1):
            # Others were compiled for a load that failed after them, or for no launch: nothing to load.
            self.failed_module = job.handle[len("wp_") :].rpartition("_")[0]
            crash_watch.phase(f"compiling CPU module {number}/{len(jobs)}: {self.failed_module}")
            build_dir = os.path.dirname(job.obj_path)
            os.makedirs(build_dir, exist_ok=True)
            try:
                # The path Warp compiled from names the source in the object (tile code embeds it).
                with open(job.cpp_path, "wb") as f:
                    f.write(job.source)
                build.build_cpu(job.obj_path, job.cpp_path, *job.args, **job.kwargs)
                os.replace(job.obj_path, job.binary_path)
            finally:
                shutil.rmtree(build_dir, ignore_errors=True)
            rest = () if job.legacy_linker is None else (job.legacy_linker,)
            if (
                runtime.llvm.wp_load_obj(job.binary_path.encode("utf-8"), job.handle.encode("utf-8"), *rest)
                != 0
            ):
                raise RuntimeError(f"could not load the compiled CPU module {job.binary_path}")
            del self.pending[job.handle]
        self.compiles.clear()
        for _, module_exec in waiting:
            # Warp cached the placeholder hooks by symbol name: looked up again, now loaded.
            module_exec.kernel_hooks.clear()
        for (module_hash, key), (kernel, module_exec) in self.launched.items():
            hooks = module_exec.get_kernel_hooks(kernel)
            runtime.core.wp_apic_register_cpu_kernel(
                apic_state,
                key.encode("utf-8"),
                module_hash.encode("utf-8"),
                ctypes.cast(hooks.forward, ctypes.c_void_p) if hooks.forward else None,
                ctypes.cast(hooks.backward, ctypes.c_void_p) if hooks.backward else None,
            )
        self.launched.clear()

    def _waiting_execs(self) -> list[tuple[dict, object]]:
        """(its module's execs, ModuleExec) of each ModuleExec whose binary is not compiled yet."""
        waiting = []
        # Every Warp module, Warp's own (wp.utils' kernels) included, is in user_modules.
        for module in list(warp_internals.context().user_modules.values()):
            execs = getattr(module, "execs", None) or {}
            waiting += [(execs, e) for e in execs.values() if getattr(e, "handle", None) in self.pending]
        return waiting

    def abandon(self) -> None:
        """Drops the ModuleExecs never compiled (a refused capture), so nothing runs a placeholder."""
        if not self.pending:
            return
        self._drop_execs(lambda _module_exec: True)
        self.compiles.clear()
        self.launched.clear()

    def _drop_execs(self, which) -> None:
        """Removes the uncompiled ModuleExecs `which` selects from their modules, so a later load in this
        process compiles them for real and nothing runs a placeholder."""
        for execs, module_exec in self._waiting_execs():
            if not which(module_exec):
                continue
            self.pending.pop(module_exec.handle, None)
            module_exec.handle = None  # ModuleExec.__del__ would unload what never loaded
            for key in [k for k, e in execs.items() if e is module_exec]:
                del execs[key]
