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

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import mmap
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from wrpkg import WARP_VERSION
from wrpkg.archs import DEFAULT_TOOLCHAIN, SUPPORTED_SMS, Arch, parse_arch
from wrpkg.errors import CompileError
from wrpkg.recipe import CompileRecipe, cuda_version_number

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
_CUOBJDUMP_DIST = ("nvidia-cuda-cuobjdump", DEFAULT_TOOLCHAIN)
_INSTALL_FIX = "install the pinned wheels (toolchains/python/requirements.lock) into this Python environment"


def _distribution(name: str, version: str) -> importlib.metadata.Distribution:
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        raise CompileError(
            f"the pinned CUDA wheel {name}=={version} is not installed", fix=_INSTALL_FIX
        ) from None
    if dist.version != version:
        raise CompileError(
            f"{name} {dist.version} is installed, but rules_warp pins {version} "
            "(cubins differ between NVRTC patch releases)",
            fix=_INSTALL_FIX,
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
        raise CompileError(f"the CUDA wheel {_NVRTC_DIST} is not installed", fix=_INSTALL_FIX) from None
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


def _dist_files(dist: importlib.metadata.Distribution, pattern: str) -> list[Path]:
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


def _refuse_foreign_copies(name: str, wheel_dir: Path) -> None:
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
def _load_pinned(name: str) -> PinnedLibrary:
    dist_name, version, has_build_string = _PINNED_LIBS[name]
    version = version or pinned_nvrtc_version()
    dist = _distribution(dist_name, version)
    wheel_files = set(_dist_files(dist, rf"^lib{name}\.so"))
    if not wheel_files:
        raise CompileError(f"{dist_name} {version} holds no lib{name}.so", fix=_INSTALL_FIX)
    try:
        from cuda import pathfinder
    except ImportError:
        raise CompileError("cuda-pathfinder is not installed", fix=_INSTALL_FIX) from None
    try:
        loaded = pathfinder.load_nvidia_dynamic_lib(name)
    except (
        pathfinder.DynamicLibNotFoundError,
        pathfinder.DynamicLibNotAvailableError,
        pathfinder.DynamicLibUnknownError,
        RuntimeError,
        OSError,
    ) as err:
        raise CompileError(f"cuda-pathfinder could not load lib{name}: {err}", fix=_INSTALL_FIX) from None
    loaded_path = Path(os.path.realpath(loaded.abs_path))
    if loaded_path not in wheel_files:
        raise CompileError(
            f"lib{name} was loaded from {loaded_path}, not from the pinned {dist_name} wheel "
            f"({', '.join(map(str, sorted(wheel_files)))})",
            fix="run in a process that has not loaded another CUDA toolkit; unset CUDA_HOME/LD_PRELOAD",
        )
    # Anything else named lib<name>* in the process would be a second copy (host CUDA).
    _refuse_foreign_copies(name, loaded_path.parent)
    if has_build_string and not _embedded_build_string(loaded_path, version):
        raise CompileError(f"{loaded_path} does not carry the build string V{version}", fix=_INSTALL_FIX)
    return PinnedLibrary(name, dist_name, version, loaded_path)


@functools.cache
def _nvrtc():
    library = _load_pinned("nvrtc")
    from cuda.bindings import nvrtc

    api = _check(nvrtc, nvrtc.nvrtcVersion(), "nvrtcVersion")
    if ".".join(map(str, api)) != ".".join(library.version.split(".")[:2]):
        raise CompileError(
            f"{library.path} reports NVRTC {api}, expected {library.version}", fix=_INSTALL_FIX
        )
    # The bindings load through cuda-pathfinder's cache, i.e. the file checked above; make
    # sure no other copy came along with them.
    _refuse_foreign_copies("nvrtc", library.path.parent)
    return nvrtc


@functools.cache
def _nvfatbin():
    library = _load_pinned("nvfatbin")
    from cuda.bindings import nvfatbin

    api = nvfatbin.version()
    if ".".join(map(str, api)) != ".".join(library.version.split(".")[:2]):
        raise CompileError(
            f"{library.path} reports nvFatbin {api}, expected {library.version}", fix=_INSTALL_FIX
        )
    return nvfatbin


def _check(nvrtc, result_tuple, what: str):
    """Unpacks a cuda.bindings.nvrtc (err, *values) tuple; raises CompileError on failure."""
    err, *values = result_tuple
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CompileError(f"{what} failed: {_nvrtc_error_string(nvrtc, err)}")
    return values[0] if len(values) == 1 else values


def _nvrtc_error_string(nvrtc, err) -> str:
    _, text = nvrtc.nvrtcGetErrorString(err)
    return text.decode() if isinstance(text, bytes) else str(text)


@functools.cache
def toolchain_library_paths() -> dict[str, str]:
    """Absolute paths of the files in use (machine-specific: keep out of build outputs)."""
    return {
        "nvrtc": str(_load_pinned("nvrtc").path),
        "nvfatbin": str(_load_pinned("nvfatbin").path),
        "cuobjdump": str(cuobjdump_path()),
    }


@functools.cache
def nvrtc_versions() -> dict:
    """The NVRTC in use, for compile.json (no paths): what a compile action needs and records."""
    version = pinned_nvrtc_version()
    nvrtc = _nvrtc()
    nvrtc_api = _check(nvrtc, nvrtc.nvrtcVersion(), "nvrtcVersion")
    supported = sorted(_check(nvrtc, nvrtc.nvrtcGetSupportedArchs(), "nvrtcGetSupportedArchs"))
    if tuple(supported) != SUPPORTED_SMS[version]:
        raise CompileError(
            f"NVRTC {version} reports supported SMs {supported}, but wrpkg.archs lists "
            f"{list(SUPPORTED_SMS[version])} for it",
            fix="correct wrpkg.archs.SUPPORTED_SMS (and toolchains/toolchains.bzl) from nvrtcGetSupportedArchs()",
        )
    return {
        "toolchain": version,
        "nvrtc": _load_pinned("nvrtc").version,
        "nvrtc_api": f"{nvrtc_api[0]}.{nvrtc_api[1]}",
        "supported_sms": supported,
    }


@functools.cache
def toolchain_versions() -> dict:
    """Versions of the whole pinned toolchain (NVRTC, nvFatbin, cuobjdump), for manifests (no paths)."""
    nvfatbin = _nvfatbin()
    nvfatbin_api = nvfatbin.version()
    return {
        **nvrtc_versions(),
        "nvfatbin": _load_pinned("nvfatbin").version,
        "nvfatbin_api": f"{nvfatbin_api[0]}.{nvfatbin_api[1]}",
        "cuobjdump": _CUOBJDUMP_DIST[1],
    }


def nvrtc_supported_sms() -> list[int]:
    """Live nvrtcGetSupportedArchs() of the loaded NVRTC."""
    nvrtc = _nvrtc()
    return sorted(_check(nvrtc, nvrtc.nvrtcGetSupportedArchs(), "nvrtcGetSupportedArchs"))


@functools.cache
def warp_include_dir() -> str:
    """warp/native of the installed warp-lang (its headers are part of every module's source).

    Found without importing Warp (which would load its 300 MB native library).
    """
    _warp_distribution()  # the headers must be the pinned Warp's
    spec = importlib.util.find_spec("warp")
    if spec is None or not spec.submodule_search_locations:
        raise CompileError("the warp package cannot be found", fix=f"install warp-lang=={WARP_VERSION}")
    native = Path(next(iter(spec.submodule_search_locations))) / "native"
    if not (native / "builtin.h").is_file():
        raise CompileError(
            f"{native} holds no Warp headers (builtin.h)", fix=f"reinstall warp-lang=={WARP_VERSION}"
        )
    return str(native)


def _warp_distribution():
    try:
        dist = importlib.metadata.distribution("warp-lang")
    except importlib.metadata.PackageNotFoundError:
        raise CompileError("warp-lang is not installed", fix=f"install warp-lang=={WARP_VERSION}") from None
    if dist.version != WARP_VERSION:
        raise CompileError(
            f"warp-lang {dist.version} is installed, but the recipes are Warp {WARP_VERSION}'s",
            fix=f"install warp-lang=={WARP_VERSION}",
        )
    return dist


def _compile(
    source: bytes,
    recipe: CompileRecipe,
    arch: Arch | str,
    want_ptx: bool,
    *,
    module: str,
    program_name: str,
    include_dir: str | None,
) -> bytes:
    arch = parse_arch(arch)
    if arch.is_ptx != want_ptx:
        raise CompileError(
            f"module {module}: {arch.name} is {'a PTX' if arch.is_ptx else 'a SASS'} target",
            fix=f"use {'compile_ptx' if arch.is_ptx else 'compile_cubin'} or {arch.as_ptx().name if want_ptx else arch.as_sass().name}",
        )
    options = recipe.nvrtc_options(
        arch, include_dir or warp_include_dir(), cuda_version=nvrtc_cuda_version(), module=module
    )
    target = recipe.target_arch(arch, module=module)
    nvrtc = _nvrtc()
    program = _check(
        nvrtc, nvrtc.nvrtcCreateProgram(bytes(source), program_name.encode(), 0, [], []), "nvrtcCreateProgram"
    )
    try:
        (result,) = nvrtc.nvrtcCompileProgram(program, len(options), options)
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            log_size = _check(nvrtc, nvrtc.nvrtcGetProgramLogSize(program), "nvrtcGetProgramLogSize")
            log = b" " * log_size
            _check(nvrtc, nvrtc.nvrtcGetProgramLog(program, log), "nvrtcGetProgramLog")
            raise CompileError(
                f"NVRTC {nvrtc_versions()['nvrtc']} failed to compile module {module} "
                f"({program_name}) for {target.name}: {_nvrtc_error_string(nvrtc, result)}\n"
                f"{log.rstrip(b' ').rstrip(bytes(1)).decode(errors='replace')}",
                fix="the retained .cu or its recipe does not compile with the pinned NVRTC; re-capture it",
            )
        _verify_builtins_once()
        if want_ptx:
            size = _check(nvrtc, nvrtc.nvrtcGetPTXSize(program), "nvrtcGetPTXSize")
            out = b" " * size
            _check(nvrtc, nvrtc.nvrtcGetPTX(program, out), "nvrtcGetPTX")
        else:
            size = _check(nvrtc, nvrtc.nvrtcGetCUBINSize(program), "nvrtcGetCUBINSize")
            out = b" " * size
            _check(nvrtc, nvrtc.nvrtcGetCUBIN(program, out), "nvrtcGetCUBIN")
    finally:
        nvrtc.nvrtcDestroyProgram(program)
    return out


@functools.cache
def _verify_builtins_once() -> None:
    """libnvrtc dlopens libnvrtc-builtins at its first compile: it must come from the wheel too."""
    _refuse_foreign_copies("nvrtc", _load_pinned("nvrtc").path.parent)


def compile_cubin(
    source: bytes,
    recipe: CompileRecipe,
    arch: Arch | str,
    *,
    module: str = "<module>",
    program_name: str = "module.cu",
    include_dir: str | None = None,
) -> bytes:
    """SASS for one SM, exactly as Warp 1.19.0 would build it from `source` and `recipe`
    (with NVRTC 13.4.92, Warp's own; another pinned NVRTC gives its own cubins).

    `program_name` must be Warp's (`recipe.nvrtc_program_name(source_filename)`) for the
    bytes to equal Warp's cubin: NVRTC embeds it.
    """
    return _compile(
        source, recipe, arch, False, module=module, program_name=program_name, include_dir=include_dir
    )


def compile_ptx(
    source: bytes,
    recipe: CompileRecipe,
    arch: Arch | str,
    *,
    module: str = "<module>",
    program_name: str = "module.cu",
    include_dir: str | None = None,
) -> bytes:
    """PTX for a virtual architecture (`compute_75`), NUL-terminated as NVRTC returns it and
    as Warp writes and loads its `.ptx` files. Its ISA (`.version`) is the loaded NVRTC's:
    9.0 for 13.0.88, 9.4 for 13.4.92; only drivers at least that new can JIT it."""
    return _compile(
        source, recipe, arch, True, module=module, program_name=program_name, include_dir=include_dir
    )


def ptx_isa_version(ptx: bytes) -> str | None:
    """The `.version X.Y` of a PTX text: a driver must know this ISA to JIT it."""
    match = re.search(rb"^\s*\.version\s+([0-9]+\.[0-9]+)", ptx, re.MULTILINE)
    return match.group(1).decode() if match else None


def pack_fatbin(
    cubins: dict[Arch | str, bytes],
    ptx: tuple[Arch | str, bytes] | None = None,
    *,
    module: str = "<module>",
) -> bytes:
    """One fatbin holding every cubin (sorted by SM, for determinism) and optionally PTX.

    nvFatbin's defaults are kept: PTX is compressed, SASS is not. Each entry's identifier
    is its arch name, which cuobjdump shows.
    """
    entries = []
    for key, code in cubins.items():
        arch = parse_arch(key)
        if arch.is_ptx:
            raise CompileError(f"module {module}: {arch.name} given as a cubin", fix="pass PTX through `ptx`")
        if not code:
            raise CompileError(f"module {module}: the {arch.name} cubin is empty")
        entries.append((arch, bytes(code)))
    if len({a.name for a, _ in entries}) != len(entries):
        raise CompileError(f"module {module}: the same SM is given twice")
    entries.sort(key=lambda entry: (entry[0].sm, entry[0].suffix))
    ptx_entry = None
    if ptx is not None:
        ptx_arch, ptx_code = parse_arch(ptx[0]), bytes(ptx[1])
        if not ptx_arch.is_ptx:
            raise CompileError(f"module {module}: {ptx_arch.name} given as PTX", fix="name it compute_<N>")
        if not ptx_code:
            raise CompileError(f"module {module}: the {ptx_arch.name} PTX is empty")
        ptx_entry = (ptx_arch, ptx_code)
    if not entries and ptx_entry is None:
        raise CompileError(f"module {module}: nothing to pack into a fatbin")

    nvfatbin = _nvfatbin()
    try:
        handle = nvfatbin.create([], 0)
    except nvfatbin.nvFatbinError as err:
        raise CompileError(f"module {module}: nvFatbinCreate failed: {err}") from None
    try:
        for arch, code in entries:
            nvfatbin.add_cubin(handle, code, len(code), arch.fatbin_arch, arch.name)
        if ptx_entry is not None:
            arch, code = ptx_entry
            nvfatbin.add_ptx(handle, code, len(code), arch.fatbin_arch, arch.name, "")
        size = nvfatbin.size(handle)
        out = bytearray(size)
        nvfatbin.get(handle, out)
    except nvfatbin.nvFatbinError as err:
        raise CompileError(f"module {module}: nvFatbin rejected the inputs: {err}") from None
    finally:
        nvfatbin.destroy(handle)
    return bytes(out)


@functools.cache
def cuobjdump_path() -> Path:
    """The cuobjdump executable of the pinned nvidia-cuda-cuobjdump wheel."""
    dist = _distribution(*_CUOBJDUMP_DIST)
    candidates = [p for p in _dist_files(dist, r"^cuobjdump$") if p.parent.name == "bin"]
    if len(candidates) != 1 or not os.access(candidates[0], os.X_OK):
        raise CompileError(
            f"{_CUOBJDUMP_DIST[0]} does not hold one executable bin/cuobjdump (found {candidates})",
            fix=_INSTALL_FIX,
        )
    return candidates[0]


@dataclass(frozen=True)
class FatbinEntry:
    kind: str  # "elf" (SASS) or "ptx"
    arch: str  # "sm_90a" for SASS, "compute_75" for PTX
    code_version: str  # "1.8" for ELF; the PTX ISA ("9.4") for PTX
    identifier: str
    compressed: bool


def fatbin_entries(data: bytes) -> list[FatbinEntry]:
    """What cuobjdump (pinned wheel) sees in a fatbin, in file order."""
    with tempfile.TemporaryDirectory(prefix="wrpkg-cuobjdump-") as tmp:
        path = Path(tmp) / f"{hashlib.sha256(data).hexdigest()[:16]}.fatbin"
        path.write_bytes(data)
        try:
            done = subprocess.run(
                [str(cuobjdump_path()), str(path)],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
                env={"PATH": os.defpath, "LC_ALL": "C"},
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            raise CompileError(f"cuobjdump could not run: {err}", fix=_INSTALL_FIX) from None
    if done.returncode != 0:
        raise CompileError(f"cuobjdump rejected the fatbin ({len(data)} bytes): {done.stderr.strip()}")
    return _parse_cuobjdump(done.stdout)


def _parse_cuobjdump(text: str) -> list[FatbinEntry]:
    entries = []
    block: dict | None = None

    def flush():
        if block is not None:
            arch = block.get("arch", "?")
            if block["kind"] == "ptx":
                arch = arch.replace("sm_", "compute_", 1)
            version = block.get("code version", "").strip("[]").replace(",", ".")
            entries.append(
                FatbinEntry(block["kind"], arch, version, block.get("identifier", ""), block["compressed"])
            )

    for raw in text.splitlines():
        line = raw.strip()
        header = re.fullmatch(r"Fatbin (elf|ptx) code:", line)
        if header:
            flush()
            block = {"kind": header.group(1), "compressed": False}
        elif block is not None and line == "compressed":
            block["compressed"] = True
        elif block is not None and " = " in line:
            key, _, value = line.partition(" = ")
            block.setdefault(key.strip(), value.strip())
    flush()
    return entries


def fatbin_contents(data: bytes) -> list[str]:
    """Arch names in a fatbin, e.g. ['sm_75', 'sm_90', 'compute_75'] (cuobjdump's order)."""
    return [entry.arch for entry in fatbin_entries(data)]
