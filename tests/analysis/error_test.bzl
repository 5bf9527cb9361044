"""wrp_artifact's analysis-time errors: unknown or repeated SMs, PTX, recorded_capture, attributes."""

load(":analysis_test.bzl", "begin", "end", "expect_error", "make")
load(":artifact_test.bzl", "analysed_artifact")

def _error_test_impl(ctx):
    env = begin(ctx)
    expect_error(env, *ctx.attr.fragments)
    return end(env)

def _bool_setting_impl(ctx):
    return []

# `//tests/analysis:in_error_test`: True only in the configuration an error test analyses its
# target in. A failing_artifact is incompatible everywhere else, so a plain `bazel cquery //...`
# or `bazel build //...` skips it instead of failing on it.
bool_setting = rule(implementation = _bool_setting_impl, build_setting = config.bool(flag = False))

_IN_ERROR_TEST = {"//tests/analysis:in_error_test": True}

# Each target under test must fail analysis with one error holding every fragment.
analysis_error_test = make(
    _error_test_impl,
    expect_failure = True,
    config_settings = _IN_ERROR_TEST,
    attrs = {"fragments": attr.string_list(mandatory = True)},
)

# The same, under --//rules:archs=sm_70: the flag's list is checked like the attribute's.
analysis_error_with_archs_flag_test = make(
    _error_test_impl,
    expect_failure = True,
    config_settings = dict(_IN_ERROR_TEST, **{"//rules:archs": ["sm_70"]}),
    attrs = {"fragments": attr.string_list(mandatory = True)},
)

def failing_artifact(name, fragments, **kwargs):
    """analysed_artifact `name` and `name`_test, which expects its analysis to fail with one
    message holding every fragment."""
    analysed_artifact(
        name = name,
        target_compatible_with = select({
            "//tests/analysis:analysing_errors": [],
            "//conditions:default": ["//tests/analysis:only_in_error_tests"],
        }),
        **kwargs
    )
    analysis_error_test(name = name + "_test", fragments = fragments, target_under_test = ":" + name)
