"""wrp_cuda_toolchain: NVRTC + nvFatbin from pinned wheels, driven through cuda-python.

No nvcc, no host CUDA: the compile actions run `python -m wrpkg.compile` with the
venv's interpreter, which loads NVRTC and nvFatbin from the nvidia-* wheels. Several
toolchains (e.g. CUDA 12.9's NVRTC, the last with sm_70/sm_72) can be declared side by
side; WORKSPACE registers the one to use.
"""

load("//rules/private:providers.bzl", "WrpCudaToolchainInfo")

def _wrp_cuda_toolchain_impl(ctx):
    info = WrpCudaToolchainInfo(
        cuda_version = ctx.attr.cuda_version,
        supported_archs = ctx.attr.supported_archs,
        ptx_archs = ["compute_" + a[len("sm_"):] for a in ctx.attr.supported_archs],
        default_archs = ctx.attr.default_archs,
        default_ptx = ctx.attr.default_ptx,
        interpreter = ctx.file.interpreter,
        files = depset(transitive = [
            ctx.attr.python_files[DefaultInfo].files,
            ctx.attr.files[DefaultInfo].files,
        ]),
    )
    return [platform_common.ToolchainInfo(cuda = info)]

wrp_cuda_toolchain = rule(
    implementation = _wrp_cuda_toolchain_impl,
    attrs = {
        "cuda_version": attr.string(mandatory = True),
        "default_archs": attr.string_list(mandatory = True),
        "default_ptx": attr.string(mandatory = True),
        "files": attr.label(mandatory = True, doc = "NVRTC/nvFatbin/cuobjdump files of the pinned wheels."),
        "interpreter": attr.label(mandatory = True, allow_single_file = True, cfg = "exec"),
        "python_files": attr.label(mandatory = True, cfg = "exec"),
        "supported_archs": attr.string_list(mandatory = True),
    },
    doc = "Declares one hermetic CUDA compile toolchain (see toolchains/cuda/BUILD.bazel).",
)
