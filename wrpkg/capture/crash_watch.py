"""A native crash of a capture becomes a message: which target, in which phase, and where.

A capture runs the user's kernels and Warp's native replay in-process; a bad address there
kills the process with a signal (SIGSEGV), which no Python handler can turn into an error.
So the capture tool runs its work in a child process and watches it: the child says which
phase it is in (`phase()`, a line appended to a file: it survives the crash) and has
faulthandler write the Python stack to a file when a fatal signal arrives; the parent, when
the child dies of a signal, prints one error naming the target, the last phase and that
stack, removes the child's half-written staging directory, and exits 1.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from wrpkg import atomic
from wrpkg.private_tmp import use_private_tmpdir

_CHILD = "WRPKG_CRASH_WATCH_DIR"
# "0" silences the progress lines phase() prints on stderr (`wrpkg capture --quiet`).
PROGRESS = "WRPKG_CAPTURE_PROGRESS"
_START = time.monotonic()
# A phase of the watched capture that lasts longer than this is said again on stderr, every so long
# (WRPKG_CAPTURE_HEARTBEAT_S sets it, for tests).
HEARTBEAT_S = 60.0
HEARTBEAT_ENV = "WRPKG_CAPTURE_HEARTBEAT_S"
# A retarget capture traces the script's lines only when asked (the trace slows every Python call of
# the step about twofold): a child whose refusal needs a line it did not trace exits with RETRY_TRACED,
# and run_watched runs it again with this set (wrpkg.capture.retarget_recorder.LinesNotTraced).
_TRACE_LINES = "WRPKG_TRACE_SCRIPT_LINES"
RETRY_TRACED = 75
# The watched child's crash report, open for the life of the process: faulthandler writes to
# it from the signal handler.
_report = None


def in_child() -> bool:
    """True in the watched process."""
    return bool(os.environ.get(_CHILD))


def trace_lines() -> bool:
    """Whether this capture traces the script's lines: outside a watched child always (nothing would
    run it again), in one only when run again for a refusal's line."""
    return not in_child() or bool(os.environ.get(_TRACE_LINES))


def start_child() -> None:
    """In the watched process: have faulthandler write the stack of a fatal signal to the report."""
    import faulthandler  # noqa: PLC0415

    global _report
    folder = os.environ.get(_CHILD)
    if not folder:
        return
    _report = open(os.path.join(folder, "stack.txt"), "w")  # noqa: SIM115 - see _report
    faulthandler.enable(file=_report, all_threads=False)


def note_for_a_crash(text: str, fix: str) -> None:
    """In the watched process: something a crash report should say from now on, with the fix it
    suggests instead of the generic one (the last note stands)."""
    folder = os.environ.get(_CHILD)
    if folder:
        with open(os.path.join(folder, "note.json"), "w") as f:
            json.dump({"text": text, "fix": fix}, f)


# The tool named on progress lines (wrpkg.capture.kernel_cache sets its own).
tool_name = "capture"


def phase(text: str) -> None:
    """Records what the capture is doing now: for the watching parent (a crash names it) and, unless
    quiet, as a progress line on stderr with the seconds since the process started (a long capture
    says where it is; the lines of a finished one say where its time went)."""
    line = text.replace("\n", " ")
    folder = os.environ.get(_CHILD)
    if folder:
        with open(os.path.join(folder, "phase.txt"), "a") as f:
            f.write(line + "\n")
    if os.environ.get(PROGRESS, "1") != "0":
        print(f"wrpkg {tool_name} [{time.monotonic() - _START:7.1f} s] {line}", file=sys.stderr, flush=True)


def watch_command_line(module: str, argv: list[str]) -> int | None:
    """`python -m module argv...` run as a watched child, from the tool's bare command line: the parent
    parses only what a crash report names and never imports the tool, Warp or NumPy (a second import of
    them cost each capture 0.3-1 s on 2 cores while the parent only waits). None when this process is
    the one to run the tool: the watched child, `--in-process`, or `--help` (the tool's parser answers)."""
    if in_child() or "--in-process" in argv or "-h" in argv or "--help" in argv:
        return None
    parser = argparse.ArgumentParser(add_help=False)
    for flag in ("--script", "--out-dir", "--label"):
        parser.add_argument(flag)
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--no-direct-step-check", action="store_true")
    known, _ = parser.parse_known_args(argv)
    if known.script is None or known.out_dir is None:
        return None  # the tool's parser names what is missing
    if known.quiet:
        os.environ[PROGRESS] = "0"  # this process's lines too ("still ..."); the child inherits it
    direct_step_script = None if known.no_direct_step_check else known.script
    return run_watched(
        module, argv, target_name(known.label, known.script), Path(known.out_dir), direct_step_script
    )


def target_name(label: str | None, script) -> str:
    """How messages name a capture: its Bazel target and script, or the script alone."""
    return f"{label} (capture script {script})" if label else f"capture script {script}"


def exit_child(returncode: int) -> None:
    """Ends the watched child with `returncode` once its work is written, without the interpreter's
    teardown: unloading Warp's native libraries and freeing every object took 0.5-1.5 s a capture
    on 2 cores, for a parent that only waits for the exit status. Every file the capture writes is
    closed by then (written in `with` blocks, published by wrpkg.atomic); atexit handlers still run."""
    sys.stdout.flush()
    sys.stderr.flush()
    atexit._run_exitfuncs()  # noqa: SLF001 - os._exit skips them, and a script may rely on its own
    os._exit(returncode)


def _wait_saying_long_phases(
    command: list[str], env: dict, phases_file: Path, direct_step_script=None
) -> int:
    """Runs the watched child to its end; returns its exit status. While one phase of it lasts longer
    than HEARTBEAT_S (one NVRTC compile of a Newton VBD module took 8 minutes on 2 cores, in silence),
    says so every HEARTBEAT_S on stderr: "still <phase> (<n> s so far)", unless quiet."""
    heartbeat = float(os.environ.get(HEARTBEAT_ENV, HEARTBEAT_S))
    loud = os.environ.get(PROGRESS, "1") != "0"
    with contextlib.ExitStack() as direct:
        fds = ()
        if direct_step_script is not None:
            # The capture's direct-step run starts now, beside the child (wrpkg.capture.direct_step).
            from wrpkg.capture import direct_step_process  # noqa: PLC0415 - only a capture starts one

            handover, fds = direct.enter_context(direct_step_process.prestart(direct_step_script))
            env = dict(env, **handover)
        proc = subprocess.Popen(command, env=env, pass_fds=fds)
        return _wait_for_child(proc, heartbeat, loud, phases_file)


def _wait_for_child(proc: subprocess.Popen, heartbeat: float, loud: bool, phases_file: Path) -> int:
    try:
        # A retried child appends to the same file: its phases start where the first run's ended.
        read = phases_file.stat().st_size if phases_file.exists() else 0
        current, since, said = "", time.monotonic(), 0
        while True:
            try:
                return proc.wait(timeout=min(5.0, heartbeat))
            except subprocess.TimeoutExpired:
                pass
            try:
                with open(phases_file, "rb") as f:
                    f.seek(read)
                    new = f.read()
            except FileNotFoundError:
                new = b""
            now = time.monotonic()
            if b"\n" in new:
                complete = new[: new.rindex(b"\n") + 1]
                read += len(complete)
                current, since, said = complete.decode("utf-8", "replace").splitlines()[-1], now, 0
            elif loud and current and now - since >= heartbeat * (said + 1):
                said += 1
                print(
                    f"wrpkg {tool_name} [{now - _START:7.1f} s] still {current} ({now - since:.0f} s so far)",
                    file=sys.stderr,
                    flush=True,
                )
    except BaseException:
        proc.kill()
        proc.wait()
        raise


def run_watched(module: str, argv: list[str], target: str, out_dir: Path, direct_step_script=None) -> int:
    """Runs `python -m module argv...` as a watched child; returns its exit status, or 1 after
    reporting a crash. With `direct_step_script`, each child gets a direct-step run of that capture
    script started beside it (wrpkg.capture.direct_step_process.prestart)."""
    use_private_tmpdir()  # the child's and its replays' NVRTC files, removed even when the child crashes
    with tempfile.TemporaryDirectory(prefix="wrpkg-crash-watch-") as folder:
        # Warp's code generation walks sets of names in places: under Python's per-process string hash
        # seed a module's generated source (and its binary) changed from one capture to the next. The
        # Bazel action fixes the seed (rules/private/python.bzl); so does the command line.
        env = dict(os.environ, **{_CHILD: folder, "PYTHONHASHSEED": "0"})
        phases_file = Path(folder) / "phase.txt"
        command = [sys.executable, "-m", module, *argv]
        returncode = _wait_saying_long_phases(command, env, phases_file, direct_step_script)
        if returncode == RETRY_TRACED:
            env[_TRACE_LINES] = "1"
            returncode = _wait_saying_long_phases(command, env, phases_file, direct_step_script)
        if returncode >= 0:
            return returncode
        phases = _read(Path(folder) / "phase.txt").splitlines()
        stack = _read(Path(folder) / "stack.txt").strip()
        try:
            note = json.loads(_read(Path(folder) / "note.json") or "null")
        except ValueError:
            note = None
    atomic.remove_abandoned_staging(out_dir)
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    last = phases[-1] if phases else "starting up"
    lines = [
        f"error: {target}: the capture process died of {name} during {last}; nothing was written to {out_dir}.",
    ]
    if stack:
        lines.append("  crash report (Python stack at the signal, innermost last):")
        lines.extend("    " + line for line in stack.splitlines())
    if note:
        lines.append(f"  note: {note['text']}")
    lines.append(f"  fix: {note['fix'] if note else _fix(last)}")
    print("\n".join(lines), file=sys.stderr)
    return 1


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _fix(last_phase: str) -> str:
    if last_phase.startswith("golden replay"):
        return (
            "the saved graph crashed when replayed in a fresh state: a launch parameter probably holds an "
            "address or object id that only the capturing process had (pass arrays as wp.array and mesh ids "
            "as wp.handle); if the step passes only those, report this message with the script"
        )
    return (
        "the crash is in native code the capture script called (see the stack above): run the script's "
        "build() and step() outside the capture to reproduce it, and fix the kernel or call that crashes"
    )
