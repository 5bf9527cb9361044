"""The 16-byte CUDA compile recipe of a .wrp module record, and the NVRTC options it means.

Layout (`APICCudaCompileRecipe` in warp/native/apic_types.h, packed, one byte each):
debug, optimization_level, verify_fp, fast_math, fuse_fp, lineinfo, arch_suffix
(0 none, 1 'a', 2 'f'), then 9 reserved bytes that must be zero.

`CompileRecipe.nvrtc_options()` reproduces, option for option and in order, what
Warp 1.19.0 hands NVRTC for a module: `wp_cuda_compile_program` in warp/native/warp.cu
(the path that built the capture's packaged binary) = `--gpu-architecture`,
`--include-path=<warp>/native`, [`-pch`], then `append_common_nvrtc_compile_options`.
The APIC source-fallback path (`apic_cuda_compile_program_to_memory`) passes the same list
without `-pch`. `-pch` never changes the output (verified byte for byte), so it is off by
default here: it only costs time and writes .pch files.

What else decides the bytes NVRTC emits, besides these options and the source:
- the program name: Warp names the program after the arch-neutral source file
  (`wp___main___5bca816.cu`), not the retained `...sm90.cu`; see `nvrtc_program_name`.
  With the retained name the sm_90 cubin of the fixture differs (41616 vs 41488 bytes).
- the NVRTC build (pin the exact patch release),
- with `lineinfo`/`debug`: the absolute include path of Warp's headers, which ends up in
  the line tables, so such cubins match Warp's only for the same install path.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from wrpkg.archs import SUFFIX_MIN_SM, Arch, parse_arch
from wrpkg.errors import CompileError, WrpFormatError

RECIPE_SIZE = 16

# CUDA_VERSION Warp 1.19.0's native library was built with (runtime.toolkit_version is
# (13, 4)), i.e. that of the NVRTC it embeds; the option rules below branch on it exactly
# as warp.cu's #if's do. It is only the default: the rules are about NVRTC's behaviour, so
# wrpkg.cuda_tools passes the version of the NVRTC it actually loaded (13000 for the PTX
# compiler's 13.0.88), as a Warp built against that toolkit would.
WARP_CUDA_VERSION = 13040
# Warp 1.19.0's Linux wheels are built with MathDx (wp_is_mathdx_enabled() == 1), which
# warp.cu turns into --define-macro=WP_ENABLE_MATHDX=1 for every module.
WARP_ENABLE_MATHDX = True

_SUFFIX_BY_CODE = {0: "", 1: "a", 2: "f"}
_CODE_BY_SUFFIX = {v: k for k, v in _SUFFIX_BY_CODE.items()}
_FLAG_FIELDS = ("debug", "verify_fp", "fast_math", "fuse_fp", "lineinfo")
# Field order on the wire.
_BYTE_FIELDS = ("debug", "optimization_level", "verify_fp", "fast_math", "fuse_fp", "lineinfo", "arch_suffix")

# Warp compiles `<module id>.cu` to `<module id>.sm<N>[a|f].cubin|ptx` and retains the source
# for APIC as `<module id>.sm<N>[a|f].cu` (context.py, _snapshot_cuda_compile_artifact).
_RETAINED_SOURCE_RE = re.compile(r"(?P<module_id>.+)\.sm[0-9]+[af]?\.cu")


@dataclass(frozen=True)
class CompileRecipe:
    """What Warp recorded about how a module was compiled; target arch comes from the build."""

    debug: bool = False
    optimization_level: int = 3
    verify_fp: bool = False
    fast_math: bool = False
    fuse_fp: bool = True
    lineinfo: bool = False
    arch_suffix: str = ""  # '', 'a' or 'f'

    @classmethod
    def from_bytes(cls, data: bytes, *, path=None, offset: int = 0) -> CompileRecipe:
        """Decodes and validates like Warp's loader (apic_validate_cuda_recipe in apic.cpp)."""

        def bad(rule: str, at: int = 0) -> WrpFormatError:
            return WrpFormatError(
                path,
                "METADATA module compile recipe",
                offset + at,
                rule,
                fix="re-capture with warp-lang 1.19.0; the recipe bytes were not written by it",
            )

        data = bytes(data)
        if len(data) != RECIPE_SIZE:
            raise bad(f"recipe is {len(data)} bytes, expected {RECIPE_SIZE}")
        values = dict(zip(_BYTE_FIELDS, data[: len(_BYTE_FIELDS)], strict=True))
        for index, name in enumerate(_BYTE_FIELDS):
            if name in _FLAG_FIELDS and values[name] > 1:
                raise bad(f"{name} is {values[name]}, expected 0 or 1", index)
        if values["optimization_level"] > 3:
            raise bad(f"optimization_level is {values['optimization_level']}, expected 0..3", 1)
        if values["arch_suffix"] not in _SUFFIX_BY_CODE:
            raise bad(f"arch_suffix is {values['arch_suffix']}, expected 0 (none), 1 (a) or 2 (f)", 6)
        for index in range(len(_BYTE_FIELDS), RECIPE_SIZE):
            if data[index]:
                raise bad(f"reserved byte {index} is {data[index]}, expected 0", index)
        return cls(
            debug=bool(values["debug"]),
            optimization_level=values["optimization_level"],
            verify_fp=bool(values["verify_fp"]),
            fast_math=bool(values["fast_math"]),
            fuse_fp=bool(values["fuse_fp"]),
            lineinfo=bool(values["lineinfo"]),
            arch_suffix=_SUFFIX_BY_CODE[values["arch_suffix"]],
        )

    def to_bytes(self) -> bytes:
        if self.arch_suffix not in _CODE_BY_SUFFIX or not 0 <= self.optimization_level <= 3:
            raise CompileError(f"recipe {self} cannot be encoded: bad arch_suffix or optimization_level")
        head = [int(getattr(self, name)) for name in _BYTE_FIELDS[:-1]]
        return bytes([*head, _CODE_BY_SUFFIX[self.arch_suffix]]) + bytes(RECIPE_SIZE - len(_BYTE_FIELDS))

    def to_dict(self) -> dict:
        return asdict(self)

    def target_arch(self, requested: Arch | str, *, module: str = "<module>") -> Arch:
        """The architecture NVRTC actually gets for `requested`, after the recipe's suffix rules.

        A module captured with `wp.config.cuda_arch_suffix = "a"` or `"f"` is compiled as
        `sm_<N>a` / `sm_<N>f` (Warp names its binary `.sm<N>a.cubin`). Like Warp's guest
        loader (apic_cuda_select_compile_target): 'a' needs sm_90+ and is never PTX (its
        PTX runs only on that exact SM), 'f' needs sm_100+ (its PTX is fine: compute_<N>f).
        A suffix on the requested target wins over no suffix in the recipe; two different
        suffixes are an error.
        """
        arch = parse_arch(requested)
        suffix = arch.suffix or self.arch_suffix
        if arch.suffix and self.arch_suffix and arch.suffix != self.arch_suffix:
            raise CompileError(
                f"module {module}: requested {arch.name} but its recipe is '{self.arch_suffix}'-specific",
                fix=f"request sm_{arch.sm}{self.arch_suffix} or sm_{arch.sm}",
            )
        if suffix and arch.sm < SUFFIX_MIN_SM[suffix]:
            raise CompileError(
                f"module {module} was captured with arch suffix '{suffix}' "
                f"(wp.config.cuda_arch_suffix), which cannot target {arch.name}: "
                f"'{suffix}' needs sm_{SUFFIX_MIN_SM[suffix]} or newer",
                fix=f"drop {arch.name} from archs, or capture without wp.config.cuda_arch_suffix",
            )
        if suffix == "a" and arch.is_ptx:
            raise CompileError(
                f"module {module} was captured with arch suffix 'a' (arch-specific): its PTX "
                f"would run only on sm_{arch.sm}, so it cannot serve as a portable PTX fallback",
                fix="build without ptx, or capture without wp.config.cuda_arch_suffix = 'a'",
            )
        return arch.with_suffix(suffix)

    def nvrtc_options(
        self,
        arch: Arch | str,
        include_dir: str | bytes,
        *,
        precompiled_headers: bool = False,
        cuda_version: int = WARP_CUDA_VERSION,
        module: str = "<module>",
    ) -> list[bytes]:
        """Warp 1.19.0's NVRTC options for this recipe, in Warp's order (see module doc)."""
        target = self.target_arch(arch, module=module)
        if isinstance(include_dir, bytes):
            include_dir = include_dir.decode()
        options = [f"--gpu-architecture={target.name}", f"--include-path={include_dir}"]
        if precompiled_headers and cuda_version >= 12080:
            options.append("-pch")  # CUDA 13 picks the .pch location itself (no --pch-dir)
        options += _common_nvrtc_options(self, target, cuda_version)
        return [option.encode() for option in options]


def _common_nvrtc_options(recipe: CompileRecipe, target: Arch, cuda_version: int) -> list[str]:
    """append_common_nvrtc_compile_options of warp.cu (Warp 1.19.0), line for line."""
    options = ["--std=c++17"]
    texture_bug_target = 12080 <= cuda_version < 13000 and target.sm >= 90
    optimizations_trigger_texture_bug = cuda_version < 12090 or recipe.optimization_level > 0
    if not target.is_ptx and texture_bug_target and optimizations_trigger_texture_bug:
        options.append("--define-macro=WP_WORKAROUND_CUDA_TEXTURE_CUBIN")
    if cuda_version >= 12090:
        # --Ofast-compile runs inversely to -O levels. CUDA 13.1+ NVRTC corrupts its state
        # after =max, so Warp uses =mid for level 0 there.
        options.append(
            {
                0: "--Ofast-compile=mid" if cuda_version >= 13010 else "--Ofast-compile=max",
                1: "--Ofast-compile=mid",
                2: "--Ofast-compile=min",
            }.get(recipe.optimization_level, "--Ofast-compile=0")
        )
    if recipe.debug:
        # --device-debug is skipped by Warp only on Windows; these toolchains are Linux.
        options += ["--define-macro=_DEBUG", "--generate-line-info", "--device-debug"]
    else:
        options.append("--define-macro=NDEBUG")
        if recipe.lineinfo:
            options.append("--generate-line-info")
    options.append("--define-macro=WP_VERIFY_FP" if recipe.verify_fp else "--undefine-macro=WP_VERIFY_FP")
    options.append(f"--define-macro=WP_ENABLE_MATHDX={1 if WARP_ENABLE_MATHDX else 0}")
    if recipe.fast_math:
        options.append("--use_fast_math")
    options.append("--fmad=true" if recipe.fuse_fp else "--fmad=false")
    options += [
        "--device-as-default-execution-space",
        "--extra-device-vectorization",
        "--restrict",
        "--diag-suppress=177,550",
    ]
    return options


def cuda_version_number(version: str) -> int:
    """CUDA_VERSION-style number of a CUDA release: "13.0.88" -> 13000, "12.9" -> 12090."""
    parts = version.split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        raise CompileError(f"{version!r} is not a CUDA version (major.minor[.patch])")
    return int(parts[0]) * 1000 + int(parts[1]) * 10


def nvrtc_program_name(source_filename: str) -> str:
    """The NVRTC program name Warp used when it built the module: `<module id>.cu`.

    NVRTC embeds the program name in the cubin, so this decides byte equality with
    Warp's packaged binary. A name that is not Warp's retained-source pattern is used as is.
    """
    match = _RETAINED_SOURCE_RE.fullmatch(source_filename)
    return f"{match['module_id']}.cu" if match else source_filename
