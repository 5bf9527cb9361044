"""Per-SM compile actions: one NVRTC action per target SM and one for PTX (`wrpkg.build.compile`).

Each SM is its own action, so adding one to `archs` re-runs exactly that compile and
the bundle, never the capture; the actions run in parallel. SASS actions run the
toolchain's own NVRTC (Warp's, for byte-equal cubins); the PTX action runs its
`ptx_compiler`, an NVRTC old enough for the drivers the PTX promises to serve.
MathDx modules (`wp.tile_matmul`, `tile_fft`, `tile_cholesky`, ...) are rebuilt in each SASS
action by the pinned Warp from the capture script (wrpkg.mathdx); they get no PTX.
"""

load(":python.bzl", "run_wrpkg")

def _compile_one(ctx, nvrtc, raw, stem, arch, with_script):
    """`nvrtc`: the WrpCudaToolchainInfo (SASS) or its ptx_compiler (WrpNvrtcInfo).

    `with_script`: give the action the capture script and its deps, from which Warp (in the
    SASS venv) rebuilds MathDx modules for that SM; they have no PTX, so the PTX action
    needs neither."""
    out = ctx.actions.declare_directory("{}.{}".format(ctx.label.name, arch))
    script_args, script_inputs, script_deps = [], [], []
    if with_script and raw.script:
        script_args = ["--script", raw.script.path]
        script_inputs = [raw.script]
        script_deps = raw.script_deps
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
            "--label",
            raw.label,
        ] + script_args,
        inputs = raw.files + script_inputs,
        extra_files = script_deps,
        outputs = [out],
        mnemonic = "WrpCompile",
        progress_message = "Compiling {} for {} (NVRTC {})".format(ctx.label, arch, nvrtc.cuda_version),
        toolchain = nvrtc,
    )
    return out

def declare_compiles(ctx, cuda, raw, stem, archs, ptx):
    """Returns ({sm: tree}, ptx tree or None)."""
    sass = {arch: _compile_one(ctx, cuda, raw, stem, arch, True) for arch in archs}
    ptx_dir = _compile_one(ctx, cuda.ptx_compiler, raw, stem, ptx, False) if ptx else None
    return sass, ptx_dir
