"""rules/private/archs.bzl: which SASS and PTX targets a wrp_artifact gets (its errors: error_test.bzl)."""

load("//rules/private:archs.bzl", "resolve_archs")
load(":analysis_test.bzl", "begin", "check_equals", "end", "make_unit")

_CUDA_TOOLCHAIN = "//toolchains/cuda:toolchain_type"

def _resolve(ctx, archs, ptx = "lowest", flag = []):
    # resolve_archs reads only the label and these two attributes of the rule's ctx.
    fake_ctx = struct(label = Label("//tests/analysis:example"), attr = struct(archs = archs, ptx = ptx))
    return resolve_archs(fake_ctx, ctx.toolchains[_CUDA_TOOLCHAIN].cuda, flag)

def _resolve_archs_test_impl(ctx):
    env = begin(ctx)
    cuda = ctx.toolchains[_CUDA_TOOLCHAIN].cuda

    # attribute, else --//rules:archs, else the toolchain's default (wrpkg/archs.py's)
    check_equals(env, (cuda.default_archs, "compute_75"), _resolve(ctx, []), "no archs anywhere")
    check_equals(env, (["sm_86"], "compute_86"), _resolve(ctx, [], flag = ["sm_86"]), "archs from the flag")
    check_equals(env, (["sm_90"], "compute_90"), _resolve(ctx, ["sm_90"], flag = ["sm_86"]), "attribute over flag")

    # "lowest" is the lowest SM's virtual arch whatever the order; the SASS order stays as given
    check_equals(env, (["sm_90", "sm_80", "sm_120"], "compute_80"), _resolve(ctx, ["sm_90", "sm_80", "sm_120"]), "ptx lowest")
    check_equals(env, (["sm_90a", "sm_100f"], "compute_90"), _resolve(ctx, ["sm_90a", "sm_100f"]), "suffixed SMs")
    check_equals(env, (["sm_80"], None), _resolve(ctx, ["sm_80"], ptx = "none"), "ptx none")
    check_equals(env, (["sm_120"], "compute_75"), _resolve(ctx, ["sm_120"], ptx = "compute_75"), "explicit ptx")

    # the tables are what the pinned NVRTCs answered at repository time
    check_equals(env, "13.4.92", cuda.cuda_version, "SASS NVRTC")
    check_equals(env, "13.0.88", cuda.ptx_compiler.cuda_version, "PTX NVRTC")
    check_equals(env, {"a": 90, "f": 100}, cuda.suffix_min_sm, "suffix rules")
    check_equals(env, True, "sm_107" in cuda.supported_archs, "sm_107 in NVRTC 13.4")
    check_equals(env, False, "compute_107" in cuda.ptx_archs, "compute_107 in NVRTC 13.0")
    return end(env)

resolve_archs_test = make_unit(_resolve_archs_test_impl, toolchains = [_CUDA_TOOLCHAIN])
