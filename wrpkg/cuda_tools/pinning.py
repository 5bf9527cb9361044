"""The pinned CUDA wheels: which library files may load, and proof that they did."""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import mmap
import os
import re
from dataclasses import dataclass
from pathlib import Path

from wrpkg.archs import DEFAULT_TOOLCHAIN, SUPPORTED_SMS
from wrpkg.errors import CompileError
from wrpkg.recipe import cuda_version_number

_NVRTC_DIST = "nvidia-cuda-nvrtc"
# Library -> (wheel distribution that must provide it, pinned version or None for "the
# installed nvidia-cuda-nvrtc, if rules_warp pins it" (pinned_nvrtc_version), whether the
# library embeds NVIDIA's "V<version>" build string: libnvrtc does, libnvfatbin does not,
# so for nvFatbin the wheel's version and nvFatbinVersion()'s major.minor have to do).
# nvFatbin and cuobjdump only pack and inspect: they stay those of the main venv.
_PINNED_LIBS = {
    "nvrtc": (_NVRTC_DIST, None, True),
    "nvfatbin": ("nvidia-nvfatbin", DEFAULT_TOOLCHAIN, False),
}
CUOBJDUMP_DIST = ("nvidia-cuda-cuobjdump", DEFAULT_TOOLCHAIN)
INSTALL_FIX = "install the pinned wheels (toolchains/python/requirements.lock) into this Python environment"


def pinned_distribution(name: str, version: str) -> importlib.metadata.Distribution:
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        raise CompileError(
            f"the pinned CUDA wheel {name}=={version} is not installed", fix=INSTALL_FIX
        ) from None
    if dist.version != version:
        raise CompileError(
            f"{name} {dist.version} is installed, but rules_warp pins {version} "
            "(cubins differ between NVRTC patch releases)",
            fix=INSTALL_FIX,
        )
    return dist


@functools.cache
def pinned_nvrtc_version() -> str:
    """The NVRTC this process compiles with: the installed nvidia-cuda-nvrtc wheel's version,
    which must be one rules_warp pins (13.4.92 for SASS, 13.0.88 for PTX). Read from the
    wheel's metadata, without loading the library."""
    try:
        version = importlib.metadata.version(_NVRTC_DIST)
    except importlib.metadata.PackageNotFoundError:
        raise CompileError(f"the CUDA wheel {_NVRTC_DIST} is not installed", fix=INSTALL_FIX) from None
    if version not in SUPPORTED_SMS:
        raise CompileError(
            f"{_NVRTC_DIST} {version} is installed, but rules_warp pins only NVRTC "
            f"{', '.join(sorted(SUPPORTED_SMS))} (cubins and PTX differ between NVRTC releases)",
            fix="run with a venv made from toolchains/python/requirements.lock or "
            "toolchains/cuda/nvrtc_13_0/requirements.lock; a new NVRTC needs its "
            "nvrtcGetSupportedArchs() list in wrpkg.archs.SUPPORTED_SMS first",
        )
    return version


def nvrtc_cuda_version() -> int:
    """CUDA_VERSION-style number (13000 for 13.0.88) of the pinned NVRTC in use: Warp's
    NVRTC options depend on it (recipe.nvrtc_options' cuda_version)."""
    return cuda_version_number(pinned_nvrtc_version())


def dist_files(dist: importlib.metadata.Distribution, pattern: str) -> list[Path]:
    return [
        Path(os.path.realpath(dist.locate_file(f))) for f in dist.files or () if re.search(pattern, f.name)
    ]


def _mapped_libraries(prefix: str) -> set[Path]:
    """Files named lib<prefix>* mapped into this process (Linux /proc/self/maps)."""
    found = set()
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.rstrip("\n").split(maxsplit=5)[-1]
                if path.startswith("/") and os.path.basename(path).startswith(f"lib{prefix}"):
                    found.add(Path(os.path.realpath(path)))
    except OSError:  # not Linux: the pathfinder/wheel checks still apply
        pass
    return found


def _embedded_build_string(path: Path, version: str) -> bool:
    """Whether the library carries NVIDIA's `release X.Y, VX.Y.Z` string for `version`."""
    needle = f"V{version}".encode()
    with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return data.find(needle) >= 0


def refuse_foreign_copies(name: str, wheel_dir: Path) -> None:
    strangers = {p for p in _mapped_libraries(name) if p.parent != wheel_dir}
    if strangers:
        raise CompileError(
            f"lib{name} files from outside the pinned wheel ({wheel_dir}) are mapped into this "
            f"process: {', '.join(map(str, sorted(strangers)))}",
            fix="keep host CUDA libraries out of LD_LIBRARY_PATH/LD_PRELOAD for rules_warp tools",
        )


@dataclass(frozen=True)
class PinnedLibrary:
    name: str  # "nvrtc"
    distribution: str  # "nvidia-cuda-nvrtc"
    version: str  # "13.4.92", the wheel's version, confirmed by the library's build string
    path: Path  # the file actually loaded


@functools.cache
def load_pinned(name: str) -> PinnedLibrary:
    dist_name, version, has_build_string = _PINNED_LIBS[name]
    version = version or pinned_nvrtc_version()
    dist = pinned_distribution(dist_name, version)
    wheel_files = set(dist_files(dist, rf"^lib{name}\.so"))
    if not wheel_files:
        raise CompileError(f"{dist_name} {version} holds no lib{name}.so", fix=INSTALL_FIX)
    try:
        from cuda import pathfinder
    except ImportError:
        raise CompileError("cuda-pathfinder is not installed", fix=INSTALL_FIX) from None
    try:
        loaded = pathfinder.load_nvidia_dynamic_lib(name)
    except (
        pathfinder.DynamicLibNotFoundError,
        pathfinder.DynamicLibNotAvailableError,
        pathfinder.DynamicLibUnknownError,
        RuntimeError,
        OSError,
    ) as err:
        raise CompileError(f"cuda-pathfinder could not load lib{name}: {err}", fix=INSTALL_FIX) from None
    loaded_path = Path(os.path.realpath(loaded.abs_path))
    if loaded_path not in wheel_files:
        raise CompileError(
            f"lib{name} was loaded from {loaded_path}, not from the pinned {dist_name} wheel "
            f"({', '.join(map(str, sorted(wheel_files)))})",
            fix="run in a process that has not loaded another CUDA toolkit; unset CUDA_HOME/LD_PRELOAD",
        )
    # Anything else named lib<name>* in the process would be a second copy (host CUDA).
    refuse_foreign_copies(name, loaded_path.parent)
    if has_build_string and not _embedded_build_string(loaded_path, version):
        raise CompileError(f"{loaded_path} does not carry the build string V{version}", fix=INSTALL_FIX)
    return PinnedLibrary(name, dist_name, version, loaded_path)
