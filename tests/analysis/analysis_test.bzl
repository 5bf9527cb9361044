"""A small analysis-test kit over Bazel's own API (what bazel_skylib's `analysistest` wraps).

`analysis_test = True` rules run entirely at analysis: `bazel test` reports the
AnalysisTestResultInfo they return, so the rules' decisions are checked without building
or running anything. Kept here instead of depending on bazel_skylib, which would be one
more repository to pin for an offline build.
"""

_FAILURES_ALLOWED = "//command_line_option:allow_analysis_failures"

_ActionsInfo = provider(fields = {"actions": "The target's registered actions."})

def _actions_aspect_impl(target, ctx):
    # `target.actions` is readable only from an aspect.
    return [_ActionsInfo(actions = target.actions)]

_actions_aspect = aspect(implementation = _actions_aspect_impl)

def _target(ctx):
    if not hasattr(ctx.attr, "target_under_test"):
        return None
    target = ctx.attr.target_under_test

    # An attribute with a transition is a list, even for a 1:1 transition.
    return target[0] if type(target) == "list" else target

def begin(ctx):
    """The test's state: .ctx, .target (under test) and the failures recorded so far."""
    return struct(ctx = ctx, target = _target(ctx), failures = [])

def check(env, condition, message):
    """Records `message` as a failure when `condition` is false."""
    if not condition:
        env.failures.append(message)

def check_equals(env, expected, actual, what):
    check(env, expected == actual, "{}: expected {}, got {}".format(what, repr(expected), repr(actual)))

def actions(env):
    return env.target[_ActionsInfo].actions

def actions_by_mnemonic(env, mnemonic):
    return [a for a in actions(env) if a.mnemonic == mnemonic]

def arg_after(action, flag):
    """The value following `flag` in the action's command line, or None."""
    argv = action.argv
    for i in range(len(argv) - 1):
        if argv[i] == flag:
            return argv[i + 1]
    return None

def failure_messages(env):
    """The analysis errors of a target under an expect_failure test."""
    return [cause.message for cause in env.target[AnalysisFailureInfo].causes.to_list()]

def end(env):
    """The test's result; return it from the implementation."""
    if getattr(env.ctx.attr, "_expect_failure", False) and AnalysisFailureInfo not in env.target:
        env.failures.append("analysis succeeded, but it was expected to fail")
    subject = env.target.label if env.target else env.ctx.label
    message = "\n".join(["{}: {}".format(subject, f) for f in env.failures])
    return [AnalysisTestResultInfo(success = not env.failures, message = message)]

def make(implementation, expect_failure = False, config_settings = {}, attrs = {}, toolchains = []):
    """A rule testing `target_under_test` at analysis, like bazel_skylib's analysistest.make.

    Args:
      implementation: (ctx) -> end(env), with env = begin(ctx) and check*() in between.
      expect_failure: the target's analysis is expected to fail; failure_messages(env) has why.
      config_settings: build settings and command-line options the target is analysed under.
      attrs: extra attributes of the test rule.
      toolchains: toolchain types the implementation reads (ctx.toolchains).
    """
    settings = dict(config_settings)
    if expect_failure:
        settings[_FAILURES_ALLOWED] = "True"
    all_attrs = dict(attrs)
    all_attrs["_expect_failure"] = attr.bool(default = expect_failure)
    all_attrs["target_under_test"] = attr.label(
        mandatory = True,
        aspects = [_actions_aspect],
        cfg = analysis_test_transition(settings = settings) if settings else "target",
    )
    return rule(implementation = implementation, attrs = all_attrs, toolchains = toolchains, analysis_test = True)

def make_unit(implementation, attrs = {}, toolchains = []):
    """A rule testing Starlark functions directly (no target under test), at analysis."""
    return rule(implementation = implementation, attrs = attrs, toolchains = toolchains, analysis_test = True)

def expect_error(env, *fragments):
    """The target failed analysis with one message holding every fragment."""
    messages = failure_messages(env)
    matching = [m for m in messages if all([f in m for f in fragments])]
    check(env, matching, "no analysis error holds all of {}; errors: {}".format(list(fragments), messages))
