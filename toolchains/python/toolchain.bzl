"""wrp_python_toolchain: the venv interpreter the wrpkg actions run (capture, bundle, ...).

Rules find it by toolchain type (//toolchains/python:toolchain_type), never by a
repository name, so a consuming WORKSPACE may name its venv repositories as it likes
(rules/repositories.bzl declares and registers them)."""

load("//rules/private:providers.bzl", "WrpPythonInfo")

def _wrp_python_toolchain_impl(ctx):
    return [platform_common.ToolchainInfo(python = WrpPythonInfo(
        interpreter = ctx.file.interpreter,
        files = ctx.attr.python_files[DefaultInfo].files,
    ))]

wrp_python_toolchain = rule(
    implementation = _wrp_python_toolchain_impl,
    attrs = {
        "interpreter": attr.label(mandatory = True, allow_single_file = True, cfg = "exec"),
        "python_files": attr.label(mandatory = True, cfg = "exec"),
    },
    doc = "The venv (interpreter + files) that runs `python -m wrpkg.<tool>` in actions.",
)
