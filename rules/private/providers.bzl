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
    },
)

WrpCudaToolchainInfo = provider(
    doc = "The hermetic CUDA compiler toolchain: NVRTC + nvFatbin from pinned wheels, through cuda-python.",
    fields = {
        "cuda_version": "CUDA release of NVRTC, e.g. 13.4.92.",
        "supported_archs": "SASS architectures this NVRTC can target (sm_75, ...).",
        "ptx_archs": "Virtual architectures it can emit PTX for (compute_75, ...).",
        "default_archs": "The default target list when neither the attribute nor the flag gives one.",
        "default_ptx": "The default PTX architecture.",
        "interpreter": "File: the venv interpreter that runs wrpkg with cuda-python.",
        "files": "depset of every file the compile actions need (venv, NVRTC, nvFatbin).",
    },
)
