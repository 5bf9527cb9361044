"""wrp_kernel_cache: a library's Warp kernels compiled once, as the cache every capture starts from."""

load(":providers.bzl", "WrpKernelCacheInfo")
load(":python.bzl", "WRPKG_PYTHON_TOOLCHAIN", "WRPKG_TOOL_ATTRS", "run_wrpkg")

def _compile_cache(ctx, name, options, what):
    cache = ctx.actions.declare_directory(name)
    arguments = ["--out-dir", cache.path, "--label", str(ctx.label)] + options
    for package in ctx.attr.packages:
        arguments += ["--package", package]
    for pattern in ctx.attr.exclude:
        arguments += ["--exclude", pattern]
    run_wrpkg(
        ctx,
        tool = "kernel_cache",
        arguments = arguments,
        inputs = [],
        outputs = [cache],
        extra_files = [dep[DefaultInfo].default_runfiles.files for dep in ctx.attr.deps],
        mnemonic = "WrpKernelCache",
        progress_message = "Compiling the Warp kernels of {} once for {}, {}".format(", ".join(ctx.attr.packages), what, ctx.label),
    )
    return cache

def _wrp_kernel_cache_impl(ctx):
    if not ctx.attr.packages:
        fail("{}: packages is empty; name the Python packages whose Warp kernels to compile, e.g. [\"newton\"]".format(ctx.label))

    # Two actions, so that CPU captures need not wait for NVRTC, and the two run in parallel.
    cpu_dir = _compile_cache(ctx, ctx.label.name + "_cpu", [], "the CPU")
    cuda_dir = None
    if ctx.attr.cuda_arch:
        arch = str(ctx.attr.cuda_arch)
        cuda_dir = _compile_cache(ctx, ctx.label.name + "_sm" + arch, ["--cuda-arch", arch, "--no-cpu"], "sm_" + arch)
    return [
        DefaultInfo(files = depset([cpu_dir] + ([cuda_dir] if cuda_dir else []))),
        WrpKernelCacheInfo(
            cpu_dir = cpu_dir,
            cuda_dir = cuda_dir,
            packages = ctx.attr.packages,
            cuda_arch = ctx.attr.cuda_arch or None,
        ),
    ]

wrp_kernel_cache = rule(
    implementation = _wrp_kernel_cache_impl,
    doc = """Compiles every Warp module of `packages` once, into a kernel cache that captures start from.

Each capture action otherwise compiles, in its own sandbox, every module its step launches:
six Newton targets compile Newton's kernels six times. Set `kernel_cache` on each
wrp_artifact to this target, and each capture compiles only what the cache lacks (kernels
made at run time, new overloads of generic kernels). The cache changes no byte of any bundle:
Warp keys it by module hash, which names no path of the machine. Outputs: `<name>_cpu/` and,
with `cuda_arch`, `<name>_sm<cuda_arch>/` (each Warp's cache folder plus kernel_cache.json,
which lists what was compiled and what was left to the captures).""",
    attrs = dict(
        WRPKG_TOOL_ATTRS,
        packages = attr.string_list(
            mandatory = True,
            doc = "Python packages to import (with their submodules) whose Warp modules to compile, e.g. [\"newton\"].",
        ),
        deps = attr.label_list(
            doc = "py_library targets providing packages that the pinned venv does not.",
        ),
        exclude = attr.string_list(
            doc = "Globs of Warp module names not to compile here (kernel_cache.json lists them under " +
                  "`excluded`): modules no capture of yours launches that are slow to build. A capture " +
                  "that does launch one compiles it itself.",
        ),
        cuda_arch = attr.int(
            default = 0,
            doc = "Also compile each module for this SM (a second action), as a retargeted capture with this " +
                  "cuda_arch does; 0: CPU only.",
        ),
    ),
    toolchains = [WRPKG_PYTHON_TOOLCHAIN],
)
