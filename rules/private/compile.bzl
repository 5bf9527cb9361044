"""Per-SM compile actions: one NVRTC action per target SM and one for PTX (`wrpkg.compile`).

Each SM is its own action, so adding one to `archs` re-runs exactly that compile and
the bundle, never the capture; the actions run in parallel. SASS actions run the
toolchain's own NVRTC (Warp's, for byte-equal cubins); the PTX action runs its
`ptx_compiler`, an NVRTC old enough for the drivers the PTX promises to serve.
"""

load(":python.bzl", "run_wrpkg")

def _compile_one(ctx, nvrtc, raw, stem, arch):
    """`nvrtc`: the WrpCudaToolchainInfo (SASS) or its ptx_compiler (WrpNvrtcInfo)."""
    out = ctx.actions.declare_directory("{}.{}".format(ctx.label.name, arch))
    run_wrpkg(
        ctx,
        tool = "compile",
        arguments = [
            "--wrp",
            "{}/{}.wrp".format(raw.path, stem),
            "--modules-dir",
            "{}/{}_modules".format(raw.path, stem),
            "--arch",
            arch,
            "--out-dir",
            out.path,
        ],
        inputs = raw.files,
        outputs = [out],
        mnemonic = "WrpCompile",
        progress_message = "Compiling {} for {} (NVRTC {})".format(ctx.label, arch, nvrtc.cuda_version),
        toolchain = nvrtc,
    )
    return out

def declare_compiles(ctx, cuda, raw, stem, archs, ptx):
    """Returns ({sm: tree}, ptx tree or None)."""
    sass = {arch: _compile_one(ctx, cuda, raw, stem, arch) for arch in archs}
    ptx_dir = _compile_one(ctx, cuda.ptx_compiler, raw, stem, ptx) if ptx else None
    return sass, ptx_dir
