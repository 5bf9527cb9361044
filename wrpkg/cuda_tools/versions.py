"""The toolchain in use, for manifests and diagnostics."""

from __future__ import annotations

import functools

from wrpkg.cuda_tools.cuobjdump import cuobjdump_path
from wrpkg.cuda_tools.nvfatbin import load_nvfatbin
from wrpkg.cuda_tools.nvrtc import nvrtc_versions
from wrpkg.cuda_tools.pinning import CUOBJDUMP_DIST, load_pinned


@functools.cache
def toolchain_library_paths() -> dict[str, str]:
    """Absolute paths of the files in use (machine-specific: keep out of build outputs)."""
    return {
        "nvrtc": str(load_pinned("nvrtc").path),
        "nvfatbin": str(load_pinned("nvfatbin").path),
        "cuobjdump": str(cuobjdump_path()),
    }


@functools.cache
def toolchain_versions() -> dict:
    """Versions of the whole pinned toolchain (NVRTC, nvFatbin, cuobjdump), for manifests (no paths)."""
    nvfatbin = load_nvfatbin()
    nvfatbin_api = nvfatbin.version()
    return {
        **nvrtc_versions(),
        "nvfatbin": load_pinned("nvfatbin").version,
        "nvfatbin_api": f"{nvfatbin_api[0]}.{nvfatbin_api[1]}",
        "cuobjdump": CUOBJDUMP_DIST[1],
    }
