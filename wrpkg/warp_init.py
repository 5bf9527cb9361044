"""Initializing Warp without its CUDA-driver warning on machines that have no driver.

warp.so prints "Warp CUDA warning: Could not find or load the NVIDIA CUDA driver" to
file descriptor 2 whenever libcuda cannot be loaded: on every CPU-only build action and
test. On such a machine that line tells nothing (CPU work needs no driver, CUDA work
fails later with its own clear error), so it is dropped; every other line Warp writes
during initialization is passed through unchanged. With a driver present nothing is
filtered."""

from __future__ import annotations

import ctypes
import os
import sys
import tempfile

NO_DRIVER_WARNING = b"Warp CUDA warning: Could not find or load the NVIDIA CUDA driver."


def cuda_driver_loadable() -> bool:
    """Whether libcuda loads, by the names warp.so tries (libcuda.so, then libcuda.so.1)."""
    for name in ("libcuda.so", "libcuda.so.1"):
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            continue
    return False


def init_warp(wp) -> None:
    """`wp.init()`, minus the no-driver warning when there is no driver to find."""
    if cuda_driver_loadable():
        wp.init()
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            wp.init()
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            kept = [
                line for line in captured.read().splitlines(keepends=True) if NO_DRIVER_WARNING not in line
            ]
            if kept:
                sys.stderr.buffer.write(b"".join(kept))
                sys.stderr.flush()
