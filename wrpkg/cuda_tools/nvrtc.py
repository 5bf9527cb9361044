"""NVRTC: compiling a module's CUDA source to SASS or PTX with the pinned library."""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import re
from pathlib import Path

from wrpkg import WARP_VERSION
from wrpkg.archs import SUPPORTED_SMS, Arch, parse_arch
from wrpkg.cuda_tools.pinning import (
    INSTALL_FIX,
    load_pinned,
    nvrtc_cuda_version,
    pinned_nvrtc_version,
    refuse_foreign_copies,
)
from wrpkg.errors import CompileError
from wrpkg.recipe import CompileRecipe


@functools.cache
def _nvrtc():
    library = load_pinned("nvrtc")
    from cuda.bindings import nvrtc

    api = _check(nvrtc, nvrtc.nvrtcVersion(), "nvrtcVersion")
    if ".".join(map(str, api)) != ".".join(library.version.split(".")[:2]):
        raise CompileError(f"{library.path} reports NVRTC {api}, expected {library.version}", fix=INSTALL_FIX)
    # The bindings load through cuda-pathfinder's cache, i.e. the file checked above; make
    # sure no other copy came along with them.
    refuse_foreign_copies("nvrtc", library.path.parent)
    return nvrtc


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
        "nvrtc": load_pinned("nvrtc").version,
        "nvrtc_api": f"{nvrtc_api[0]}.{nvrtc_api[1]}",
        "supported_sms": supported,
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
    # The path reaches the PTX (__FILE__ in assert strings, .file with lineinfo). A sys.path entry
    # made as "/" + "/abs/path" (a test run from "/", as on a remote worker) keeps POSIX's
    # leading "//", which Warp's own build (os.path.abspath of warp/__init__.py) would not.
    text = str(native)
    return text[1:] if text.startswith("//") and not text.startswith("///") else text


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


def compile_module(
    source: bytes,
    recipe: CompileRecipe,
    arch: Arch | str,
    *,
    module: str = "<module>",
    program_name: str = "module.cu",
    include_dir: str | None = None,
) -> bytes:
    """What Warp 1.19.0 would build from `source` and `recipe` for `arch` (with NVRTC
    13.4.92, Warp's own; another pinned NVRTC gives its own bytes): a cubin for a SASS
    target (`sm_90`), PTX for a virtual one (`compute_75`), NUL-terminated as NVRTC returns
    it and as Warp writes and loads its `.ptx` files. The PTX ISA (`.version`) is the
    loaded NVRTC's: 9.0 for 13.0.88, 9.4 for 13.4.92; only drivers at least that new can
    JIT it.

    `program_name` must be Warp's (`recipe.nvrtc_program_name(source_filename)`) for the
    bytes to equal Warp's: NVRTC embeds it.
    """
    arch = parse_arch(arch)
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
        if arch.is_ptx:
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
    refuse_foreign_copies("nvrtc", load_pinned("nvrtc").path.parent)


def ptx_isa_version(ptx: bytes) -> str | None:
    """The `.version X.Y` of a PTX text: a driver must know this ISA to JIT it."""
    match = re.search(rb"^\s*\.version\s+([0-9]+\.[0-9]+)", ptx, re.MULTILINE)
    return match.group(1).decode() if match else None
