"""Providers: the contracts between rules_warp's rules."""

WrpInfo = provider(
    doc = "A bundled Warp APIC artifact (what wrp_artifact produces).",
    fields = {
        "name": "The bundle's name (its directory name inside the tar).",
        "label": "The wrp_artifact target's label, as a string (named in runtime errors).",
        "device": '"cpu" or "cuda".',
        "stem": "File stem of the .wrp inside the bundle (sim -> sim.wrp).",
        "bundle_dir": "Tree artifact: <name>/ with manifest.json, the canonical .wrp, modules, golden outputs.",
        "tar": "File: <name>.tar, the deterministic archive of bundle_dir (what C++ targets embed).",
        "content_hash": "File: <name>.sha256, sha256 of the bundle's manifest.json.",
        "archs": "List of SASS architectures compiled ahead of time (CUDA only).",
        "ptx_arch": "The PTX architecture included, or None.",
        "golden_device": '"cpu" or "cuda": the device whose replay made the golden outputs; None when not known at analysis (a recorded capture).',
    },
)

WrpKernelCacheInfo = provider(
    doc = "Warp kernels of some packages compiled once (what wrp_kernel_cache produces); captures start from it.",
    fields = {
        "cpu_dir": "Tree artifact: Warp's kernel cache with the CPU objects (<warp version>/ inside) and kernel_cache.json.",
        "cuda_dir": "Tree artifact: likewise with the retargeted CUDA compiles for cuda_arch, or None.",
        "packages": "The Python packages whose Warp modules it holds.",
        "cuda_arch": "The SM its retargeted CUDA compiles are for, or None (CPU only).",
    },
)

_NVRTC_FIELDS = {
    "cuda_version": "CUDA release of this NVRTC (the nvidia-cuda-nvrtc wheel's version), e.g. 13.0.88.",
    "supported_archs": "SASS architectures this NVRTC can target (sm_75, ...): its nvrtcGetSupportedArchs().",
    "suffix_min_sm": "Lowest SM this NVRTC accepts with each suffix: {\"a\": 90, \"f\": 100}.",
    "ptx_archs": "Virtual architectures it can emit PTX for (compute_75, ...).",
    "interpreter": "File: the venv interpreter that runs wrpkg with cuda-python and this NVRTC.",
    "files": "depset of every file an action running `interpreter` needs (venv, NVRTC).",
}

WrpNvrtcInfo = provider(
    doc = "One pinned NVRTC, in its own hash-locked venv, that wrpkg.build.compile runs with.",
    fields = _NVRTC_FIELDS,
)

WrpCudaToolchainInfo = provider(
    doc = """The hermetic CUDA compiler toolchain: NVRTC + nvFatbin from pinned wheels, through cuda-python.

The fields of WrpNvrtcInfo are the SASS compiler's (the NVRTC Warp embeds, so cubins equal
Warp's; its venv also has nvFatbin for packing), except `ptx_archs`; `ptx_compiler` is the
NVRTC that makes the bundle's PTX, which may be older so that older drivers can JIT it (see
toolchains/toolchains.bzl).""",
    fields = dict(
        _NVRTC_FIELDS,
        ptx_archs = "Virtual architectures the PTX compiler can emit PTX for (compute_75, ...).",
        default_archs = "The default target list when neither the attribute nor the flag gives one.",
        default_ptx = "The default PTX architecture.",
        ptx_compiler = "WrpNvrtcInfo of the NVRTC the PTX action runs (the SASS NVRTC's own when none is given).",
    ),
)

WrpPythonInfo = provider(
    doc = "The pinned venv that runs the wrpkg tools (capture, bundle, ...) in actions.",
    fields = {
        "interpreter": "File: the venv's interpreter (built for the execution platform).",
        "files": "depset of every file an action running `interpreter` needs.",
    },
)
