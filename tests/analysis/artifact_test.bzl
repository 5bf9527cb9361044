"""wrp_artifact's actions: one capture (mode per capture_mode), one compile per SM, one bundle."""

load("//rules:defs.bzl", "wrp_artifact")
load("//rules/private:providers.bzl", "WrpInfo")
load(":analysis_test.bzl", "actions_by_mnemonic", "arg_after", "begin", "check", "check_equals", "end", "make")

_CUDA_TOOLCHAIN = "//toolchains/cuda:toolchain_type"

_ATTRS = {
    "capture_mnemonic": attr.string(doc = "The capture action's mnemonic; empty: no capture action."),
    "capture_args": attr.string_list(doc = "Arguments the capture action must have, in this order."),
    "capture_args_absent": attr.string_list(doc = "Arguments the capture action must not have."),
    "sass": attr.string_list(doc = "SASS archs, one compile action each."),
    "ptx": attr.string(doc = "The PTX arch compiled, empty for none."),
    "toolchain_default": attr.bool(doc = "sass and ptx: the CUDA toolchain's default_archs and default_ptx."),
    "keep_source": attr.bool(default = True),
}

def _contains_in_order(argv, wanted):
    text = "\n" + "\n".join(argv) + "\n"
    return ("\n" + "\n".join(wanted) + "\n") in text

def _artifact_actions_test_impl(ctx):
    env = begin(ctx)
    attrs = ctx.attr
    name = env.target.label.name
    sass, ptx = attrs.sass, attrs.ptx
    if attrs.toolchain_default:
        cuda = ctx.toolchains[_CUDA_TOOLCHAIN].cuda
        sass, ptx = cuda.default_archs, cuda.default_ptx

    captures = [a for m in ("WrpCapture", "WrpCaptureCuda", "WrpCaptureRetarget") for a in actions_by_mnemonic(env, m)]
    check_equals(env, [attrs.capture_mnemonic] if attrs.capture_mnemonic else [], [a.mnemonic for a in captures], "capture actions")
    for capture in captures:
        check(env, _contains_in_order(capture.argv, attrs.capture_args), "capture argv {} lacks {}".format(capture.argv, attrs.capture_args))
        for arg in attrs.capture_args_absent:
            check(env, arg not in capture.argv, "capture argv {} has {}".format(capture.argv, arg))

    # one WrpCompile per SASS arch and one for the PTX, each writing its own directory
    compiles = actions_by_mnemonic(env, "WrpCompile")
    wanted = sass + ([ptx] if ptx else [])
    check_equals(env, sorted(wanted), sorted([arg_after(a, "--arch") for a in compiles]), "compiled archs")
    for action in compiles:
        arch = arg_after(action, "--arch")
        check_equals(env, ["{}.{}".format(name, arch)], [f.basename for f in action.outputs.to_list()], "outputs of the " + arch + " compile")

        # SASS runs NVRTC 13.4.92 (Warp's), the PTX 13.0.88, each from its own venv
        venv = "wrp_nvrtc_13_0_venv" if arch.startswith("compute_") else "wrp_venv/"
        check(env, venv in action.argv[0], "{} compile runs {}, not the {} interpreter".format(arch, action.argv[0], venv))

    (bundle,) = actions_by_mnemonic(env, "WrpBundle") or [None]
    check(env, bundle != None, "no WrpBundle action")
    if bundle:
        check_equals(
            env,
            sorted([name, name + ".tar", name + ".sha256"]),
            sorted([f.basename for f in bundle.outputs.to_list()]),
            "bundle outputs",
        )
        arch_dirs = [bundle.argv[i + 1] for i in range(len(bundle.argv) - 1) if bundle.argv[i] == "--arch-dir"]
        check_equals(env, sorted(sass), [d.split("=")[0] for d in arch_dirs], "bundle --arch-dir (sorted)")
        check_equals(env, bool(ptx), "--ptx-dir" in bundle.argv, "bundle has --ptx-dir")
        check_equals(env, not attrs.keep_source, "--no-source" in bundle.argv, "bundle has --no-source")

    info = env.target[WrpInfo]
    check_equals(env, sass, info.archs, "WrpInfo.archs")
    check_equals(env, ptx or None, info.ptx_arch, "WrpInfo.ptx_arch")
    return end(env)

# The capture-mode flag pinned to its default, so the expectations hold under --config=gpu too.
artifact_actions_test = make(
    _artifact_actions_test_impl,
    attrs = _ATTRS,
    toolchains = [_CUDA_TOOLCHAIN],
    config_settings = {"//rules:capture_mode": "retarget"},
)

# capture_mode = "auto" under --config=gpu (which sets --//rules:capture_mode=gpu).
artifact_actions_gpu_config_test = make(
    _artifact_actions_test_impl,
    attrs = _ATTRS,
    toolchains = [_CUDA_TOOLCHAIN],
    config_settings = {"//rules:capture_mode": "gpu"},
)

# --//rules:archs sets the SASS list of every target without `archs`.
artifact_actions_archs_flag_test = make(
    _artifact_actions_test_impl,
    attrs = _ATTRS,
    toolchains = [_CUDA_TOOLCHAIN],
    config_settings = {"//rules:archs": ["sm_87", "sm_120"], "//rules:capture_mode": "retarget"},
)

# A capture script for targets only analysed, never built.
CAPTURE_SCRIPT = "//tests:programs_retarget/launch_forms.py"

def analysed_artifact(name, **kwargs):
    """A wrp_artifact only analysed here (manual: wildcards leave it alone), by default with
    no replay tests; without recorded_capture, its capture script is CAPTURE_SCRIPT."""
    if "recorded_capture" not in kwargs:
        kwargs.setdefault("capture", CAPTURE_SCRIPT)
    kwargs.setdefault("replay_tests", False)
    wrp_artifact(name = name, tags = ["manual"], **kwargs)
