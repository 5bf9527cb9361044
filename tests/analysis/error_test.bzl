"""wrp_artifact's analysis-time errors: unknown or repeated SMs, PTX, recorded_capture, attributes."""

load(":analysis_test.bzl", "begin", "end", "expect_error", "make")
load(":artifact_test.bzl", "analysed_artifact")

def _error_test_impl(ctx):
    env = begin(ctx)
    expect_error(env, *ctx.attr.fragments)
    return end(env)

# Each target under test must fail analysis with one error holding every fragment.
analysis_error_test = make(
    _error_test_impl,
    expect_failure = True,
    attrs = {"fragments": attr.string_list(mandatory = True)},
)

# The same, under --//rules:archs=sm_70: the flag's list is checked like the attribute's.
analysis_error_with_archs_flag_test = make(
    _error_test_impl,
    expect_failure = True,
    config_settings = {"//rules:archs": ["sm_70"]},
    attrs = {"fragments": attr.string_list(mandatory = True)},
)

def failing_artifact(name, fragments, **kwargs):
    """analysed_artifact `name` and `name`_test, which expects its analysis to fail with one
    message holding every fragment."""
    analysed_artifact(name = name, **kwargs)
    analysis_error_test(name = name + "_test", fragments = fragments, target_under_test = ":" + name)
