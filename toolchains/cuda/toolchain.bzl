"""wrp_cuda_toolchain: NVRTC + nvFatbin from pinned wheels, driven through cuda-python.

No nvcc, no host CUDA: the compile actions run `python -m wrpkg.build.compile` with a venv's
interpreter, which loads NVRTC and nvFatbin from the nvidia-* wheels. A toolchain has
two compilers: the SASS one (the NVRTC Warp embeds: cubins byte-equal to Warp's) and a
PTX one (`ptx_compiler`, a `wrp_nvrtc`), which may be an older NVRTC so that older
drivers can JIT the PTX. Several toolchains (e.g. one whose compilers are CUDA 12.9's
NVRTC, the last with sm_70/sm_72) can be declared side by side; WORKSPACE registers the
one to use.
"""

load("//rules/private:providers.bzl", "WrpCudaToolchainInfo", "WrpNvrtcInfo")

def _ptx_archs(supported_archs):
    return ["compute_" + a[len("sm_"):] for a in supported_archs]

def _nvrtc_info(ctx):
    return WrpNvrtcInfo(
        cuda_version = ctx.attr.cuda_version,
        supported_archs = ctx.attr.supported_archs,
        ptx_archs = _ptx_archs(ctx.attr.supported_archs),
        suffix_min_sm = {suffix: int(sm) for suffix, sm in ctx.attr.suffix_min_sm.items()},
        interpreter = ctx.file.interpreter,
        files = depset(transitive = [
            ctx.attr.python_files[DefaultInfo].files,
            ctx.attr.files[DefaultInfo].files,
        ]),
    )

_NVRTC_ATTRS = {
    "cuda_version": attr.string(
        mandatory = True,
        doc = "The nvidia-cuda-nvrtc wheel's version; wrpkg.build.compile checks it against the venv's.",
    ),
    "files": attr.label(mandatory = True, doc = "The NVRTC (and nvFatbin/cuobjdump) files of the pinned wheels."),
    "interpreter": attr.label(mandatory = True, allow_single_file = True, cfg = "exec"),
    "python_files": attr.label(mandatory = True, cfg = "exec"),
    "suffix_min_sm": attr.string_dict(
        mandatory = True,
        doc = "Lowest SM (as a string) whose name that NVRTC accepts with each suffix: {\"a\": \"90\", \"f\": \"100\"}.",
    ),
    "supported_archs": attr.string_list(
        mandatory = True,
        doc = "nvrtcGetSupportedArchs() of that NVRTC, as sm_N (asked at repository time).",
    ),
}

def _wrp_nvrtc_impl(ctx):
    info = _nvrtc_info(ctx)

    # As a data dependency (tests): $(rootpath) is the interpreter, the runfiles its venv.
    return [
        info,
        DefaultInfo(
            files = depset([info.interpreter]),
            runfiles = ctx.runfiles(files = [info.interpreter], transitive_files = info.files),
        ),
    ]

wrp_nvrtc = rule(
    implementation = _wrp_nvrtc_impl,
    attrs = _NVRTC_ATTRS,
    doc = "One pinned NVRTC in its own venv (a toolchain's `ptx_compiler`).",
)

def _wrp_cuda_toolchain_impl(ctx):
    sass = _nvrtc_info(ctx)
    ptx = ctx.attr.ptx_compiler[WrpNvrtcInfo] if ctx.attr.ptx_compiler else sass
    info = WrpCudaToolchainInfo(
        cuda_version = sass.cuda_version,
        supported_archs = sass.supported_archs,
        suffix_min_sm = sass.suffix_min_sm,
        ptx_archs = ptx.ptx_archs,
        default_archs = ctx.attr.default_archs,
        default_ptx = ctx.attr.default_ptx,
        interpreter = sass.interpreter,
        files = sass.files,
        ptx_compiler = ptx,
    )
    return [platform_common.ToolchainInfo(cuda = info)]

_TOOLCHAIN_ATTRS = dict(_NVRTC_ATTRS)
_TOOLCHAIN_ATTRS.update({
    "default_archs": attr.string_list(mandatory = True),
    "default_ptx": attr.string(mandatory = True),
    "ptx_compiler": attr.label(
        providers = [WrpNvrtcInfo],
        doc = "The wrp_nvrtc that makes PTX. Empty: the SASS NVRTC (this rule's own attributes) does.",
    ),
})

wrp_cuda_toolchain = rule(
    implementation = _wrp_cuda_toolchain_impl,
    attrs = _TOOLCHAIN_ATTRS,
    doc = "Declares one hermetic CUDA compile toolchain (see toolchains/toolchains.bzl).",
)
