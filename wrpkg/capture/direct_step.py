"""The direct-step check: the saved graph's replay against step() run once by Warp without a capture.

Warp's APIC records a step's launches, copies and memsets. Whatever else the step does (host code
that writes device memory, a library's host-side build, an object's descriptor changed in place)
happens once, while the capture runs, and is in no replay: the bundle would compute something the
program never does, silently. The step guard refuses the operations known to do this; no such
list is complete. So once the golden values are made, the capture runs the script again the plain
way, in a fresh process: build(), then step() once, with the capture's kernel cache, every
allocation zero-filled (the bytes nobody wrote, as the capture saves them: wrpkg.capture.initial_state)
and, for a retargeted capture, the same device model. An output that differs from the golden
replay beyond its declared tolerance refuses the capture, naming the output.

The child runs beside the capture, a stage behind it. The capture tool's watching parent starts it
with the capture child (wrpkg.capture.direct_step_process.prestart), so its Python, Warp and CUDA
start-up overlaps the capture's; it is told the capture's kernel cache (`cache`), runs build() once
the capture's build() is done (`build`: the modules build() launched are in the kernel cache then)
and step() once the capture has compiled the step's modules (`step`), each a line on its stdin; a
pipe it holds and never writes ends when it has ended, and its results are files in its folder. A
capture run in process (`capture()`, `--in-process`) starts its own.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from wrpkg.capture.direct_step_process import PRESTARTED_ENV, RESULT, spawn
from wrpkg.errors import CaptureError

# The user's opt-out, named in the refusal (wrp_artifact attribute, capture tool flag).
OPT_OUT = "wrp_artifact(direct_step_check = False) (capture tool: --no-direct-step-check)"


class DirectRun:
    """The direct run of one capture: started with it (`start`: adopted from the watching parent, or
    spawned), released a stage behind it (`release_build`, `release_step`), compared with the golden
    replay (`check`); leaving the context ends what it spawned and removes its files."""

    def __init__(self):
        self._stdin = None  # the current run's stdin, the pipe that ends when it ends, and its pid
        self._alive = None
        self._pid: int | None = None
        self.folder: Path | None = None
        self._args: tuple[Path, Path] | None = None
        self._build_line = ""
        self._spawned: list[tuple[subprocess.Popen, Path]] = []

    def __enter__(self) -> DirectRun:
        return self

    def __exit__(self, *exc) -> None:
        if self._alive is not None:
            # A run not waited for (the capture failed or was refused) is ended before the capture's
            # work folder goes: told the kernel cache in it, it would make that folder again.
            with contextlib.suppress(OSError):
                os.kill(self._pid, signal.SIGKILL)
            self._alive.read()  # its end: the process is gone (its parent reaps it)
        for stream in (self._stdin, self._alive):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._stdin = self._alive = None
        for process, folder in self._spawned:
            process.wait()
            shutil.rmtree(folder, ignore_errors=True)

    def start(self, script: Path, kernel_cache: Path) -> None:
        """Takes the run the watching parent started for this capture, or starts one, and tells it
        the kernel cache (the capture's, where Warp will keep what the capture compiles)."""
        self._args = (script, kernel_cache)
        handed = os.environ.pop(PRESTARTED_ENV, None)  # one capture, one run: not for a nested tool
        if handed:
            stdin_fd, alive_fd, pid, folder = handed.split(",", 3)
            self._stdin, self._alive = os.fdopen(int(stdin_fd), "wb"), os.fdopen(int(alive_fd), "rb")
            self._pid, self.folder = int(pid), Path(folder)
        else:
            self._spawn_own()
        self._send(f"cache {kernel_cache}")

    def _spawn_own(self) -> None:
        process, alive, self.folder = spawn(str(self._args[0]))
        self._spawned.append((process, self.folder))
        self._stdin, self._alive, self._pid = process.stdin, os.fdopen(alive, "rb"), process.pid

    def release_build(self, device: str, device_model: str | None) -> None:
        """Lets the child run build(`device`), with code outside Warp told it runs on `device_model`
        (a retargeted capture's, wrpkg.capture.device_model) or not."""
        self._build_line = f"build {device} {device_model or '-'}"
        self._send(self._build_line)

    def release_step(self) -> None:
        self._send("step")

    def _send(self, line: str) -> None:
        if self._stdin is None:
            return
        with contextlib.suppress(OSError):  # a child that has ended is found by _outputs()
            self._stdin.write(f"{line}\n".encode())
            self._stdin.flush()

    def _outputs(self, target: str) -> dict[str, bytes]:
        """Waits for the current run (the end of its alive pipe): its outputs by name, or CaptureError
        (nothing then shows the capture replays what the step does)."""
        self._stdin.close()
        self._alive.read()  # its end: the run has ended
        self._alive.close()
        self._stdin = self._alive = None
        log = (self.folder / "log.txt").read_text(errors="replace").strip()
        result_file = self.folder / RESULT
        result = json.loads(result_file.read_text()) if result_file.exists() else {}
        if "outputs" not in result:
            how = result.get("error") or f"it ended without a result: {log[-2000:] or 'no output'}"
            raise CaptureError(
                f"{target}: the capture is saved, but step() run once without a capture (the check that the "
                f"saved graph computes what the program computes) failed: {how}",
                fix="make build() and step() run the plain way as well as under a capture, or skip the check: "
                + OPT_OUT,
            )
        return {name: (self.folder / file).read_bytes() for name, file in result["outputs"].items()}

    def _run_again(self, target: str) -> dict[str, bytes]:
        """A second direct run, released at once (the kernel cache is complete now)."""
        self._spawn_own()
        self._send(f"cache {self._args[1]}")
        self._send(self._build_line)
        self._send("step")
        return self._outputs(target)

    def check(self, golden_outputs: dict[str, bytes], spec, bindings, target: str) -> dict:
        """Waits for the direct run and compares each output with the golden replay's.

        Where one differs, a second direct run tells a replay that misses what the step did (both
        direct runs agree: CaptureError, naming the output) from a program that differs run to run
        (they disagree too: nothing can confirm the capture, which is then what that run did; a note
        says so). Returns the record for capture.json: the outputs by how they agreed."""
        from wrpkg import warp_internals  # noqa: PLC0415 - the watching parent imports this module lightly
        from wrpkg.golden import as_tolerance, compare  # noqa: PLC0415

        direct = self._outputs(target)
        layouts = {b.name: b.layout for b in bindings}
        dtypes = {name: warp_internals.types().type_repr(arr.dtype) for name, arr in spec.outputs.items()}
        tolerances = {
            name: as_tolerance(spec.tolerances[name]) for name in spec.outputs if name in spec.tolerances
        }
        record = {"bit_exact": [], "within_tolerance": []}
        differing = {}
        for name in sorted(spec.outputs):
            replayed = _view_bytes(golden_outputs[name], layouts[name])
            verdict = compare(replayed, direct[name], tolerances.get(name), dtypes.get(name))
            if verdict.match:
                record["bit_exact" if direct[name] == replayed else "within_tolerance"].append(name)
            else:
                differing[name] = verdict
        if not differing:
            return record
        again = self._run_again(target)
        unsteady = sorted(
            name
            for name in spec.outputs
            if not compare(direct[name], again[name], tolerances.get(name), dtypes.get(name)).match
        )
        if not unsteady:
            name, verdict = next(iter(differing.items()))
            raise CaptureError(
                f"{target}: the saved graph does not compute what step() computes: output '{name}' replayed "
                f"differs from step() run by Warp without a capture ({verdict.detail}; two such runs agree). "
                "Warp's APIC records launches, copies and memsets; something else the step did (host code "
                "that writes device memory or changes an object in place, a library call Warp runs on the "
                "host) happened once, while the capture ran, and is in no replay",
                fix="do that work in build(), or as Warp kernel launches in step(); to skip this check: "
                + OPT_OUT,
            )
        print(
            f"{target}: note: the replay could not be held to the program: build() and step() run twice "
            f"without a capture give different {', '.join(repr(n) for n in unsteady)} (an unseeded random "
            "number, the time, float atomics), so the capture is what its own run did. Make the program "
            "deterministic for the check to hold the replay to it",
            file=sys.stderr,
        )
        record["differs_run_to_run"] = unsteady
        return record


def _view_bytes(whole: bytes, layout: dict) -> bytes:
    """The elements of a binding's array, in order, from its whole allocation's bytes."""
    import numpy as np  # noqa: PLC0415 - the watching parent imports this module lightly

    itemsize = int(layout["dtype_bytes"])
    base = np.frombuffer(whole, dtype=np.uint8)[int(layout["offset"]) :]
    view = np.lib.stride_tricks.as_strided(
        base, shape=[*layout["shape"], itemsize], strides=[*layout["strides"], 1], writeable=False
    )
    return np.ascontiguousarray(view).tobytes()


# --- the child ----------------------------------------------------------------------------------


def _output_bytes(wp, arr) -> bytes:
    """An output array's elements, in order, as the bytes Warp holds (no NumPy dtype conversion)."""
    from wrpkg import warp_internals  # noqa: PLC0415

    host = arr.to("cpu")
    if not host.is_contiguous:
        host = host.contiguous()
    size = host.size * warp_internals.types().type_size_in_bytes(host.dtype)
    return ctypes.string_at(host.ptr, size) if size else b""


class _Abandoned(Exception):
    """The capture ended (refused, or failed) before releasing a stage."""


def _wait_for(stage: str) -> list[str]:
    words = sys.stdin.readline().split()
    if not words or words[0] != stage:
        raise _Abandoned
    return words[1:]


def _run_child(args) -> dict:
    import warp as wp  # noqa: PLC0415 - only the child imports Warp

    from wrpkg.capture import capture_script, device_model, initial_state, kernel_cache  # noqa: PLC0415

    script = Path(args.script).resolve()
    target = script.name
    # Warp and CUDA start now, beside the capture; the kernel cache is the capture's, told when it is made.
    wp.config.quiet = True
    wp.config.kernel_cache_dir = str(Path(args.out) / "start-up-cache")
    wp.init()
    (cache,) = _wait_for("cache")
    kernel_cache.use_kernel_cache(wp, Path(args.out), cache)
    wp.config.quiet = True
    # Imported while the capture runs its build(): a library's import (Newton's) takes seconds.
    module = capture_script.import_script(script, target)
    device_name, model_name = _wait_for("build")
    device = capture_script.require_device(wp, device_name, target)
    model = None
    if model_name != "-":
        model = device_model.DeviceModel(device_model.resolve(model_name, target), target)
    zeroed = initial_state.FreshMemory((), zeros=True)
    with zeroed.installed(), model.watching() if model else contextlib.nullcontext():
        spec, _bindings, _paths = capture_script.build_spec(
            wp, script, device, target, later=[], module=module
        )
        _wait_for("step")
        spec.step()
        wp.synchronize_device(device)
    outputs = {}
    for index, name in enumerate(sorted(spec.outputs)):
        file = f"output{index}.bin"
        (Path(args.out) / file).write_bytes(_output_bytes(wp, spec.outputs[name]))
        outputs[name] = file
    return {"outputs": outputs}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description="build() and step() of a capture script, run once without a capture"
    )
    parser.add_argument("--script", required=True)
    parser.add_argument("--out", required=True, help="a folder for the outputs and " + RESULT)
    parser.add_argument("--alive-fd", type=int, help="held open until this process ends (not written)")
    args = parser.parse_args(argv)
    try:
        result = _run_child(args)
    except _Abandoned:
        os._exit(0)
    except CaptureError as exc:
        result = {"error": str(exc)}
    except Exception as exc:  # the user's code, run the plain way: its error is the result
        result = {"error": f"{type(exc).__name__}: {exc}"}
    Path(args.out, RESULT).write_text(json.dumps(result))
    sys.stdout.flush()
    os._exit(0)  # Warp's teardown is not part of the check (wrpkg.capture.crash_watch.exit_child)


if __name__ == "__main__":
    main()
