"""Running wrpkg tools (`python -m wrpkg.capture`, `wrpkg.build.pack`, ...) as actions, with the pinned venv."""

# The wrpkg tools that actions run (//wrpkg:<tool> -> the module `python -m` runs); each action
# takes only its tool's Python sources (the py_library's transitive sources), so editing
# another module re-runs no action.
_WRPKG_TOOLS = {
    "capture": "wrpkg.capture",
    "compile": "wrpkg.build.compile",
    "kernel_cache": "wrpkg.capture.kernel_cache",
    "pack": "wrpkg.build.pack",
    "regolden": "wrpkg.reader.regolden",
}

# Attributes every rule that runs a wrpkg tool carries.
WRPKG_TOOL_ATTRS = {
    "_wrpkg_" + tool: attr.label(default = "//wrpkg:" + tool, cfg = "exec")
    for tool in _WRPKG_TOOLS
}

def _tool_sources(ctx, tool):
    # A py_library's runfiles hold its transitive sources (PyInfo is not in current Bazel's core).
    return getattr(ctx.attr, "_wrpkg_" + tool)[DefaultInfo].default_runfiles.files

# The toolchain that rule must request: the venv interpreter (a wrp_python_toolchain).
WRPKG_PYTHON_TOOLCHAIN = str(Label("//toolchains/python:toolchain_type"))

def _import_root(tool_sources):
    # wrpkg/ sits at the root of this repository: "wrpkg" in the main workspace,
    # "external/rules_warp/wrpkg" when rules_warp is used as an external repository.
    package_dir = [
        f.dirname
        for f in tool_sources.to_list()
        if f.basename == "__init__.py" and f.dirname.endswith("wrpkg")
    ][0]
    root = package_dir[:-len("wrpkg")].rstrip("/")
    return root or "."

def run_wrpkg(
        ctx,
        tool,
        arguments,
        inputs,
        outputs,
        mnemonic,
        progress_message,
        extra_files = [],
        execution_requirements = {},
        exec_group = None,
        toolchain = None):
    """Runs `python -m <the tool's module> <arguments>` hermetically: only declared inputs, no host packages.

    `toolchain` (a WrpCudaToolchainInfo, or the WrpNvrtcInfo of its ptx_compiler) replaces
    the wrpkg Python toolchain's venv with that compiler's interpreter and files."""
    if not toolchain:
        toolchain = ctx.toolchains[WRPKG_PYTHON_TOOLCHAIN].python
    interpreter = toolchain.interpreter
    interpreter_files = toolchain.files
    if tool not in _WRPKG_TOOLS:
        fail("run_wrpkg: no //wrpkg:{} tool target; add it to _WRPKG_TOOLS".format(tool))
    tool_sources = _tool_sources(ctx, tool)
    python_path = [_import_root(tool_sources)]
    if "." not in python_path:
        # User capture scripts import their own modules relative to the workspace root.
        python_path.append(".")
    ctx.actions.run(
        executable = interpreter,
        arguments = ["-m", _WRPKG_TOOLS[tool]] + arguments,
        inputs = depset(
            direct = inputs,
            transitive = [tool_sources, interpreter_files] + extra_files,
        ),
        outputs = outputs,
        mnemonic = mnemonic,
        progress_message = progress_message,
        execution_requirements = execution_requirements,
        exec_group = exec_group,
        env = {
            "PYTHONPATH": ":".join(python_path),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONNOUSERSITE": "1",
            "PYTHONHASHSEED": "0",
        },
    )
