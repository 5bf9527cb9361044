"""NVRTC, nvFatbin and cuobjdump from the pinned wheels, through cuda-python.

The hermetic CUDA toolchain of rules_warp: no host CUDA, no nvcc, no driver needed.

- NVRTC is `cuda.bindings.nvrtc`; the shared library is the one cuda-pathfinder finds
  in the `nvidia-cuda-nvrtc` wheel. Which NVRTC that is depends on the venv: 13.4.92 in
  the main one (SASS), 13.0.88 in the PTX compiler's (see toolchains/toolchains.bzl);
  the installed wheel's version must be one of the pinned ones (wrpkg.archs.SUPPORTED_SMS).
  Before first use we check that the file loaded is that wheel's file, that the library's
  embedded build string names the wheel's version too, that nvrtcVersion() and
  nvrtcGetSupportedArchs() agree with it, and that no other libnvrtc is mapped into the
  process (a host /usr/local/cuda must never be picked up).
- nvFatbin is `cuda.bindings.nvfatbin`, checked the same way against `nvidia-nvfatbin`.
- cuobjdump is the executable shipped in `nvidia-cuda-cuobjdump`, located through that
  installed distribution's file list, never through PATH.
"""

from wrpkg.cuda_tools.cuobjdump import FatbinEntry, cuobjdump_path, fatbin_contents, fatbin_entries
from wrpkg.cuda_tools.nvfatbin import pack_fatbin
from wrpkg.cuda_tools.nvrtc import (
    compile_module,
    nvrtc_supported_sms,
    nvrtc_versions,
    ptx_isa_version,
    warp_include_dir,
)
from wrpkg.cuda_tools.pinning import (
    PinnedLibrary,
    nvrtc_cuda_version,
    pinned_nvrtc_version,
)
from wrpkg.cuda_tools.versions import toolchain_library_paths, toolchain_versions

__all__ = [
    "FatbinEntry",
    "PinnedLibrary",
    "compile_module",
    "cuobjdump_path",
    "fatbin_contents",
    "fatbin_entries",
    "nvrtc_cuda_version",
    "nvrtc_supported_sms",
    "nvrtc_versions",
    "pack_fatbin",
    "pinned_nvrtc_version",
    "ptx_isa_version",
    "toolchain_library_paths",
    "toolchain_versions",
    "warp_include_dir",
]
