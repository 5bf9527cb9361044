"""The build stage: compile a capture's CUDA modules per SM and pack the bundle.

    python -m wrpkg.build.compile ...   one NVRTC compile per target SM, and one for PTX
    python -m wrpkg.build.pack ...      the canonical .wrp, fatbins, manifest and deterministic tar

Both take what the capture stage (wrpkg.capture) wrote; the compile imports the capture script
again when Warp must rebuild a MathDx module for an SM (wrpkg.mathdx).
"""
