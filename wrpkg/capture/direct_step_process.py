"""The process of a direct-step run (wrpkg.capture.direct_step): started by the capture tool's watching
parent beside the capture child (`prestart`), or by the capture itself (`spawn`). Apart from the rest
of the check so that the watching parent, which imports neither Warp nor NumPy, can start it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# The run's result file in its folder: {"outputs": {name: file}} beside the files, or {"error": text}.
RESULT = "direct.json"
# How the watching parent hands a prestarted run to the capture child:
# "<stdin fd>,<alive fd>,<pid>,<folder>" (the alive pipe ends when the run has ended).
PRESTARTED_ENV = "WRPKG_DIRECT_STEP_PRESTARTED"


def spawn(script: str) -> tuple[subprocess.Popen, int, Path]:
    """Starts a direct run of `script` in a fresh process. Returns it, the read end of a pipe that
    ends when it ends (it holds the write end and writes nothing), and its folder (its output in
    log.txt: a pipe nobody reads until the end would stall a talkative script)."""
    folder = Path(tempfile.mkdtemp(prefix="direct-step."))
    alive_read, alive_write = os.pipe()
    cmd = [sys.executable, "-m", "wrpkg.capture.direct_step", "--script", str(script), "--out", str(folder)]
    cmd += ["--alive-fd", str(alive_write)]
    # The capture's hash seed: Warp's codegen walks sets, and a module's code (its cache entry) follows it.
    env = dict(os.environ, PYTHONHASHSEED="0")
    # Not a watched capture child: its phases are not the capture's (wrpkg.capture.crash_watch).
    for name in [name for name in env if name.startswith("WRPKG_")]:
        del env[name]
    try:
        with open(folder / "log.txt", "wb") as log:
            process = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                pass_fds=(alive_write,),
            )
    finally:
        os.close(alive_write)
    return process, alive_read, folder


def end(process: subprocess.Popen, folder: Path) -> None:
    if process.poll() is None:
        process.kill()
        process.wait()
    shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def prestart(script: str):
    """In the watching parent: a direct run started now, for the capture child about to start.
    Yields (the environment entry that hands it over, the file descriptors the child must inherit);
    ends it, and removes its files, when the capture child has ended."""
    process, alive, folder = spawn(script)
    fds = (process.stdin.fileno(), alive)
    try:
        yield {PRESTARTED_ENV: f"{fds[0]},{fds[1]},{process.pid},{folder}"}, fds
    finally:
        os.close(alive)
        end(process, folder)
