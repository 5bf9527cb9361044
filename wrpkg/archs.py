"""CUDA target architectures: names, parsing, and what the pinned toolchain supports.

An architecture is either SASS for one SM (`sm_90`, a `.cubin`) or PTX for a virtual
architecture (`compute_75`, a `.ptx`), with an optional suffix:

- `a` (arch-specific, e.g. `sm_90a`): code that runs only on exactly that SM; NVRTC
  accepts it from sm_90 on.
- `f` (family-specific, e.g. `sm_100f`): code that runs on that SM and the later members
  of its family (same tens digit); NVRTC accepts it from sm_100 on.

This module is pure Python (no NVRTC load) so CLIs can validate a target list cheaply.
The rules do not read its SM tables: the toolchains repository asks each pinned NVRTC
itself (toolchains/cuda/nvrtc_facts.py), and `//tests:pins_test` holds the tables below
to that answer. The default target list, a choice rather than a fact about NVRTC, lives
here only; the toolchains repository reads it from this file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wrpkg.errors import CompileError

# The NVRTCs rules_warp pins, keyed by the nvidia-cuda-nvrtc wheel's version. Each runs in
# its own venv; wrpkg.cuda_tools uses the entry of the wheel installed in the running one.
# - 13.4.92 (DEFAULT_TOOLCHAIN): the NVRTC Warp 1.19.0 embeds, for SASS (cubins byte-equal
#   to Warp's), with nvFatbin + cuobjdump 13.4.92 for packing.
# - 13.0.88 (PTX_TOOLCHAIN): the PTX compiler. Its PTX (ISA 9.0) is JIT-able by every
#   CUDA 13 driver; 13.4's (ISA 9.4) only by 13.4+ drivers.
# Add another (e.g. CUDA 12.9, the last NVRTC with sm_70/sm_72) only with an SM list
# checked against that NVRTC's nvrtcGetSupportedArchs() (tests do, for every entry whose
# wheel they can run).
DEFAULT_TOOLCHAIN = "13.4.92"
PTX_TOOLCHAIN = "13.0.88"
SUPPORTED_SMS: dict[str, tuple[int, ...]] = {
    # nvrtcGetSupportedArchs() of nvidia-cuda-nvrtc 13.4.92.
    "13.4.92": (75, 80, 86, 87, 88, 89, 90, 100, 103, 107, 110, 120, 121),
    # nvrtcGetSupportedArchs() of nvidia-cuda-nvrtc 13.0.88.
    "13.0.88": (75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121),
}

# Lowest SM for which NVRTC accepts each suffix (checked by compiling a kernel for every
# sm_/compute_ x suffix combination with NVRTC 13.4.92).
SUFFIX_MIN_SM = {"a": 90, "f": 100}

# The default target list of wrp_artifact: SASS for these, plus PTX for the lowest. The
# rules get it from here (rules/repositories.bzl runs this module when it makes the
# toolchains repository).
DEFAULT_SASS_ARCHS = ("sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_100", "sm_120")
DEFAULT_PTX_ARCH = "compute_75"

_ARCH_RE = re.compile(r"(sm|compute)_([0-9]+)([af]?)")


@dataclass(frozen=True, order=True)
class Arch:
    """One compile target. `sm` is the SM number (90), `suffix` is '', 'a' or 'f'."""

    sm: int
    suffix: str = ""
    is_ptx: bool = False

    @property
    def name(self) -> str:
        """`sm_90a` for SASS, `compute_75` for PTX: the form NVRTC's --gpu-architecture takes."""
        return f"{'compute' if self.is_ptx else 'sm'}_{self.sm}{self.suffix}"

    @property
    def ext(self) -> str:
        """Output file extension: Warp decides PTX vs CUBIN by it."""
        return "ptx" if self.is_ptx else "cubin"

    @property
    def fatbin_arch(self) -> str:
        """The arch string nvFatbinAddCubin/AddPTX take: the number plus suffix (`90a`)."""
        return f"{self.sm}{self.suffix}"

    def as_ptx(self) -> Arch:
        return Arch(self.sm, self.suffix, True)

    def as_sass(self) -> Arch:
        return Arch(self.sm, self.suffix, False)

    def with_suffix(self, suffix: str) -> Arch:
        return Arch(self.sm, suffix, self.is_ptx)

    def __str__(self) -> str:
        return self.name


def supported_archs(toolchain: str = DEFAULT_TOOLCHAIN) -> list[str]:
    """Every target name the toolchain accepts: sm_N, sm_Na, sm_Nf, then compute_ likewise."""
    names = []
    for prefix in ("sm", "compute"):
        for sm in _toolchain_sms(toolchain):
            names.append(f"{prefix}_{sm}")
            names.extend(f"{prefix}_{sm}{s}" for s, lowest in SUFFIX_MIN_SM.items() if sm >= lowest)
    return names


def _toolchain_sms(toolchain: str) -> tuple[int, ...]:
    try:
        return SUPPORTED_SMS[toolchain]
    except KeyError:
        raise CompileError(
            f"unknown CUDA toolchain version {toolchain!r}",
            fix=f"use one of: {', '.join(sorted(SUPPORTED_SMS))}",
        ) from None


def _unsupported(text: str, why: str, toolchain: str) -> CompileError:
    sms = _toolchain_sms(toolchain)
    return CompileError(
        f"unsupported CUDA architecture {text!r}: {why}",
        fix=(
            f"pick from the architectures NVRTC {toolchain} supports: "
            f"{', '.join(f'sm_{sm}' for sm in sms)} "
            f"(suffix 'a' from sm_{SUFFIX_MIN_SM['a']}, 'f' from sm_{SUFFIX_MIN_SM['f']}; "
            f"compute_N for PTX)"
        ),
    )


def split_arch(text: str) -> Arch | None:
    """The shape of a target name alone, with no toolchain check: `"sm_90a"` -> Arch(90, 'a'),
    None when it is not sm_<N>[a|f] or compute_<N>[a|f]. For reading manifests, whose
    names a toolchain already accepted."""
    match = _ARCH_RE.fullmatch(text.strip()) if isinstance(text, str) else None
    if not match:
        return None
    prefix, number, suffix = match.groups()
    return Arch(int(number), suffix, prefix == "compute")


def parse_arch(text: str | Arch, toolchain: str = DEFAULT_TOOLCHAIN) -> Arch:
    """`"sm_90a"` -> Arch(90, 'a'); `"compute_75"` -> Arch(75, '', is_ptx=True).

    Raises CompileError, listing the supported architectures, for anything the pinned
    toolchain cannot target (sm_61, sm_999, 'banana', sm_80a, ...).
    """
    if isinstance(text, Arch):
        text = text.name
    if not isinstance(text, str):
        raise _unsupported(repr(text), "not a string", toolchain)
    arch = split_arch(text)
    if arch is None:
        raise _unsupported(text, "expected sm_<N>[a|f] or compute_<N>[a|f]", toolchain)
    suffix = arch.suffix
    if arch.sm not in _toolchain_sms(toolchain):
        raise _unsupported(text, f"NVRTC {toolchain} has no target sm_{arch.sm}", toolchain)
    if suffix and arch.sm < SUFFIX_MIN_SM[suffix]:
        raise _unsupported(text, f"suffix '{suffix}' needs sm_{SUFFIX_MIN_SM[suffix]} or newer", toolchain)
    return arch


def parse_arch_list(texts, toolchain: str = DEFAULT_TOOLCHAIN) -> list[Arch]:
    """Parses, de-duplicates and sorts (SASS by SM, then PTX) a list of target names."""
    return sorted({parse_arch(t, toolchain) for t in texts}, key=lambda a: (a.is_ptx, a.sm, a.suffix))


def default_archs() -> list[Arch]:
    return parse_arch_list([*DEFAULT_SASS_ARCHS, DEFAULT_PTX_ARCH])
