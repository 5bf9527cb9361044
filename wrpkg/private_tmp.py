"""A temp folder of the process's own, as $TMPDIR, removed when the process exits.

NVRTC (Warp's CUDA compiles, retargeted captures included) writes an automatic precompiled header of
80-380 MB to `$TMPDIR/__nvrtc_auto_pch_<pid>_<n>` and never removes it, and a compile killed midway
leaves `nvrtc_bundled_headers_*` (25 MB). One CI run of the tests left tens of GB in /tmp and filled
the disk. Warp's PCH option cannot be turned off instead: it is hashed into every module's name, which
a bundle holds. NVRTC fixes the PCH folder at a process's first compile and refuses a later compile
once that folder is gone ("invalid PCH directory"), so the folder is set before anything compiles and
lives as long as the process: the tools take one in `wrpkg.cli.run_tool`, the capture's watching
parent before it starts the child, the test runner before pytest starts."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

# Names the $TMPDIR that a wrpkg process made for itself and removes at its exit: a child (the capture
# the watcher starts, a golden replay) keeps it rather than making one of its own.
OWNED_TMPDIR_ENV = "WRPKG_OWNED_TMPDIR"


def use_private_tmpdir() -> Path:
    """Points $TMPDIR (and `tempfile`) at a new folder under the current temp dir, removed at exit;
    in a child of a process that did so already, keeps that folder. Returns it."""
    current = os.environ.get("TMPDIR")
    if current and os.environ.get(OWNED_TMPDIR_ENV) == current and Path(current).is_dir():
        return Path(current)
    folder = tempfile.mkdtemp(prefix="wrpkg-tmp-")
    # atexit runs last-in first-out: handlers registered after this one, which may still write temp
    # files, run before it.
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    os.environ["TMPDIR"] = folder
    os.environ[OWNED_TMPDIR_ENV] = folder
    tempfile.tempdir = None  # tempfile re-reads $TMPDIR on its next call
    return Path(folder)
