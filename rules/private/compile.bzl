"""Per-SM compile actions: one NVRTC action per target SM and one for PTX (`wrpkg.compile`).

Each SM is its own action, so adding one to `archs` re-runs exactly that compile and
the bundle, never the capture; the actions run in parallel.
"""

load(":python.bzl", "run_wrpkg")

def _compile_one(ctx, cuda, raw, stem, arch):
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
        progress_message = "Compiling {} for {} (NVRTC {})".format(ctx.label, arch, cuda.cuda_version),
        toolchain = cuda,
    )
    return out

def declare_compiles(ctx, cuda, raw, stem, archs, ptx):
    """Returns ({sm: tree}, ptx tree or None)."""
    sass = {arch: _compile_one(ctx, cuda, raw, stem, arch) for arch in archs}
    ptx_dir = _compile_one(ctx, cuda, raw, stem, ptx) if ptx else None
    return sass, ptx_dir
