"""wrp_gcc_cross_config: the CcToolchainConfigInfo of a GCC cross compiler.

Tool paths point at the wrapper scripts the repository rule (repositories.bzl) writes,
so this file names no host path. Actions not configured here get Bazel's legacy
features (include paths, dependency files, libraries to link, ...), as the host's
autoconfigured toolchain does.
"""

load("@bazel_tools//tools/build_defs/cc:action_names.bzl", "ACTION_NAMES")
load(
    "@bazel_tools//tools/cpp:cc_toolchain_config_lib.bzl",
    "feature",
    "flag_group",
    "flag_set",
    "tool_path",
)

# Bazel's C++ tool names. The repository rule writes a wrapper of each name in tool_dir,
# which runs the cross program of the same name (gcc: g++).
CC_TOOLS = ["ar", "cpp", "dwp", "gcc", "gcov", "ld", "nm", "objcopy", "objdump", "strip"]

_COMPILE_ACTIONS = [
    ACTION_NAMES.assemble,
    ACTION_NAMES.preprocess_assemble,
    ACTION_NAMES.c_compile,
    ACTION_NAMES.cpp_compile,
    ACTION_NAMES.cpp_header_parsing,
    ACTION_NAMES.cpp_module_compile,
    ACTION_NAMES.cpp_module_codegen,
    ACTION_NAMES.linkstamp_compile,
]

_LINK_ACTIONS = [
    ACTION_NAMES.cpp_link_executable,
    ACTION_NAMES.cpp_link_dynamic_library,
    ACTION_NAMES.cpp_link_nodeps_dynamic_library,
]

def _flags(actions, flags):
    return flag_set(actions = actions, flag_groups = [flag_group(flags = flags)])

def _impl(ctx):
    features = [
        feature(
            name = "default_compile_flags",
            enabled = True,
            flag_sets = [
                _flags(_COMPILE_ACTIONS, [
                    "-U_FORTIFY_SOURCE",
                    "-fstack-protector",
                    "-Wall",
                    "-fno-omit-frame-pointer",
                    # The same bytes from any checkout path and on any day.
                    "-no-canonical-prefixes",
                    "-fno-canonical-system-headers",
                    "-Wno-builtin-macro-redefined",
                    "-D__DATE__=\"redacted\"",
                    "-D__TIMESTAMP__=\"redacted\"",
                    "-D__TIME__=\"redacted\"",
                ]),
            ],
        ),
        feature(
            name = "opt",
            flag_sets = [_flags(_COMPILE_ACTIONS, ["-g0", "-O2", "-D_FORTIFY_SOURCE=1", "-DNDEBUG", "-ffunction-sections", "-fdata-sections"])],
        ),
        feature(name = "dbg", flag_sets = [_flags(_COMPILE_ACTIONS, ["-g"])]),
        feature(
            name = "default_link_flags",
            enabled = True,
            flag_sets = [_flags(_LINK_ACTIONS, ["-no-canonical-prefixes", "-Wl,-z,relro,-z,now", "-pass-exit-codes", "-lstdc++", "-lm"])],
        ),
        feature(name = "supports_pic", enabled = True),
        feature(name = "supports_dynamic_linker", enabled = True),
    ]
    return cc_common.create_cc_toolchain_config_info(
        ctx = ctx,
        features = features,
        cxx_builtin_include_directories = ctx.attr.include_directories,
        toolchain_identifier = "wrp_gcc_" + ctx.attr.target_cpu,
        host_system_name = "local",
        target_system_name = ctx.attr.target_cpu + "-linux-gnu",
        target_cpu = ctx.attr.target_cpu,
        target_libc = "glibc",
        compiler = "gcc",
        abi_version = "gcc-" + ctx.attr.gcc_version,
        abi_libc_version = "glibc",
        tool_paths = [tool_path(name = name, path = ctx.attr.tool_dir + "/" + name) for name in CC_TOOLS],
    )

wrp_gcc_cross_config = rule(
    implementation = _impl,
    attrs = {
        "gcc_version": attr.string(mandatory = True),
        "include_directories": attr.string_list(doc = "The compiler's own include directories, as it reports them."),
        "target_cpu": attr.string(mandatory = True),
        "tool_dir": attr.string(mandatory = True, doc = "Directory of the tool wrappers, relative to the cc_toolchain's package."),
    },
    provides = [CcToolchainConfigInfo],
)
