"""Warp's native library for C++ targets, found by toolchain type.

The library (warp.so + headers) and warp-clang.so belong to the target platform, so they
are a toolchain of their own (//toolchains/warp:toolchain_type) rather than part of the
Python one: another platform (e.g. aarch64) registers its own wrp_warp_toolchain."""

def _wrp_warp_toolchain_impl(ctx):
    return [platform_common.ToolchainInfo(
        warp_cc = ctx.attr.warp_cc,
        warp_clang = ctx.attr.warp_clang[DefaultInfo].files,
    )]

wrp_warp_toolchain = rule(
    implementation = _wrp_warp_toolchain_impl,
    attrs = {
        "warp_cc": attr.label(mandatory = True, providers = [CcInfo], doc = "warp.so + warp/native headers."),
        "warp_clang": attr.label(mandatory = True, doc = "warp-clang.so (Warp loads it for CPU modules)."),
    },
    doc = "Warp's native library for one target platform.",
)

_TYPE = str(Label("//toolchains/warp:toolchain_type"))

def _warp_library_impl(ctx):
    warp_cc = ctx.toolchains[_TYPE].warp_cc
    return [warp_cc[CcInfo], DefaultInfo(
        files = warp_cc[DefaultInfo].files,
        runfiles = warp_cc[DefaultInfo].default_runfiles,
    )]

# The library is linked into target binaries: its toolchain must be configured for the
# target, which Bazel 4 does only for rules that opt into the toolchain transition
# (later Bazel always does).
warp_library = rule(
    implementation = _warp_library_impl,
    toolchains = [_TYPE],
    incompatible_use_toolchain_transition = True,
    doc = "The resolved toolchain's Warp library, as a CcInfo dependency.",
)

def _warp_clang_files_impl(ctx):
    toolchain = ctx.toolchains[_TYPE]
    files = toolchain.warp_clang

    # The headers too: a bundle's retained CUDA source is compiled at load time against
    # warp/native, which must be in the runfiles where they are copied (remote workers).
    headers = toolchain.warp_cc[CcInfo].compilation_context.headers
    return [DefaultInfo(files = files, runfiles = ctx.runfiles(transitive_files = depset(transitive = [files, headers])))]

warp_clang_files = rule(
    implementation = _warp_clang_files_impl,
    toolchains = [_TYPE],
    incompatible_use_toolchain_transition = True,
    doc = "The resolved toolchain's warp-clang.so (its one file), with warp/native's headers in its runfiles, as data.",
)
