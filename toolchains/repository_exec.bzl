"""Running a host program from a repository rule, for every repository rule of rules_warp."""

def execute_or_fail(rctx, args, what, environment = {}, timeout = 3600):
    """Runs `args` and returns its stdout; a failure stops the fetch naming the repository,
    `what` was being done, the exit code and the ends of both outputs.

    Python started here writes no .pyc files: they would land in the repository, or in the
    source tree a script is imported from."""
    env = {"PYTHONDONTWRITEBYTECODE": "1"}
    env.update(environment)
    result = rctx.execute(args, environment = env, quiet = True, timeout = timeout)
    if result.return_code != 0:
        fail("@{}: {} failed (exit {}):\n{}\n{}".format(
            rctx.name,
            what,
            result.return_code,
            result.stdout[-4000:],
            result.stderr[-4000:],
        ))
    return result.stdout
