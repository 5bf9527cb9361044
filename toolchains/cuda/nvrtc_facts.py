"""Asks a venv's pinned NVRTC what it can target; prints JSON for the toolchains repository.

Run by rules_warp_dependencies' toolchains repository (rules/repositories.bzl) with each
venv's interpreter, so the architecture tables the rules check `archs` and `ptx` against
are what the pinned NVRTC itself reports, never a hand-copied list:

    {"cuda_version": "13.4.92", "supported_sms": [75, ...], "suffix_min_sm": {"a": 90, "f": 100}}

`nvrtcGetSupportedArchs()` names plain SMs only; which of them take an `a` or `f` suffix
NVRTC tells only by compiling, so an empty kernel is compiled for every SM with each
suffix. Standalone on purpose (no wrpkg import): it runs at repository time, before any
build, and its result must depend only on the wheel it asks.
"""

import importlib.metadata
import json
import os
import sys

SUFFIXES = ("a", "f")
_KERNEL = b'extern "C" __global__ void k() {}\n'


def _check(nvrtc, result, what):
    err, *values = result
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        sys.exit(f"nvrtc_facts: {what} failed: {nvrtc.nvrtcGetErrorString(err)[1]!r}")
    return values[0] if len(values) == 1 else values


def _compiles(nvrtc, arch):
    program = _check(nvrtc, nvrtc.nvrtcCreateProgram(_KERNEL, b"k.cu", 0, [], []), "nvrtcCreateProgram")
    try:
        (err,) = nvrtc.nvrtcCompileProgram(program, 1, [f"--gpu-architecture={arch}".encode()])
        return err == nvrtc.nvrtcResult.NVRTC_SUCCESS
    finally:
        nvrtc.nvrtcDestroyProgram(program)


def _suffix_min_sm(nvrtc, sms):
    """Lowest SM accepting each suffix; refuses a table that a single lower bound cannot state
    (the rules and wrpkg.archs both assume every SM from that bound on accepts it)."""
    table = {}
    for suffix in SUFFIXES:
        accepted = [sm for sm in sms if _compiles(nvrtc, f"sm_{sm}{suffix}")]
        if not accepted or accepted != [sm for sm in sms if sm >= accepted[0]]:
            sys.exit(
                f"nvrtc_facts: NVRTC accepts suffix {suffix!r} on {accepted} of {sms}: not one lower bound"
            )
        table[suffix] = accepted[0]
    return table


def _loaded_nvrtc_paths():
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
        paths = {line.split()[-1] for line in maps if "libnvrtc" in line}
    return sorted(os.path.realpath(p) for p in paths if p.startswith("/"))


def main():
    version = importlib.metadata.version("nvidia-cuda-nvrtc")
    from cuda.bindings import nvrtc

    api = _check(nvrtc, nvrtc.nvrtcVersion(), "nvrtcVersion")
    if list(api) != [int(part) for part in version.split(".")[:2]]:
        sys.exit(f"nvrtc_facts: the loaded NVRTC is {api[0]}.{api[1]}, the venv's wheel {version}")
    sms = sorted(_check(nvrtc, nvrtc.nvrtcGetSupportedArchs(), "nvrtcGetSupportedArchs"))
    facts = {"cuda_version": version, "supported_sms": sms, "suffix_min_sm": _suffix_min_sm(nvrtc, sms)}
    # A host CUDA that shadowed the wheel's library would make these tables the host's.
    prefix = os.path.realpath(sys.prefix)
    foreign = [p for p in _loaded_nvrtc_paths() if not p.startswith(prefix + os.sep)]
    if foreign:
        sys.exit(f"nvrtc_facts: loaded an NVRTC from outside the venv {prefix}: {foreign}")
    print(json.dumps(facts, sort_keys=True))


if __name__ == "__main__":
    main()
