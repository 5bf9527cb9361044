"""wrp_test_bundle: under --//rules:gpu_goldens, CUDA bundles whose goldens came from the CPU get one
regolden action (on the `golden` exec group) and a WrpInfo with goldens from cuda; others forward the
artifact unchanged."""

load("//rules/private:providers.bzl", "WrpInfo")
load(":analysis_test.bzl", "actions_by_mnemonic", "arg_after", "begin", "check_equals", "end", "make")

def _test_bundle_test_impl(ctx):
    env = begin(ctx)
    regolden = actions_by_mnemonic(env, "WrpGoldenOnGpu")
    check_equals(env, 1 if ctx.attr.regolden else 0, len(regolden), "regolden actions")
    info = env.target[WrpInfo]
    check_equals(env, ctx.attr.golden_device or None, info.golden_device, "WrpInfo.golden_device")
    if regolden:
        action = regolden[0]
        check_equals(env, "cuda", arg_after(action, "--device"), "regolden --device")
        check_equals(env, info.bundle_dir.path, arg_after(action, "--out-dir"), "regolden --out-dir is WrpInfo.bundle_dir")
        check_equals(env, info.tar.path, arg_after(action, "--tar"), "regolden --tar is WrpInfo.tar")
        inputs = [f.basename for f in action.inputs.to_list()]
        check_equals(env, True, ctx.attr.artifact_name in inputs and ctx.attr.artifact_name + ".sha256" in inputs, "the artifact's bundle and hash are inputs")
    else:
        check_equals(env, ctx.attr.artifact_name, info.bundle_dir.basename, "forwarded bundle_dir")
    return end(env)

_ATTRS = {
    "regolden": attr.bool(doc = "A regolden action is expected."),
    "golden_device": attr.string(doc = "The WrpInfo.golden_device expected; empty: None."),
    "artifact_name": attr.string(doc = "The artifact's name (its bundle directory's)."),
}

test_bundle_gpu_goldens_test = make(
    _test_bundle_test_impl,
    attrs = _ATTRS,
    config_settings = {"//rules:gpu_goldens": True, "//rules:capture_mode": "retarget"},
)

test_bundle_default_test = make(
    _test_bundle_test_impl,
    attrs = _ATTRS,
    config_settings = {"//rules:gpu_goldens": False, "//rules:capture_mode": "retarget"},
)
