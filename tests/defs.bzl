"""wrp_pytest: one py_test per pytest file, run with the pinned venv; wrp_pytests: a table of them;
cpu_and_retargeted_artifacts: a program's CPU and retargeted test bundles."""

load("//rules:defs.bzl", "wrp_artifact")
load("//rules/private:pools.bzl", "test_env", "test_exec_properties")

def _rootpaths(labels):
    # A variable holding several files lists their runfiles paths space-separated.
    if type(labels) != "list":
        labels = [labels]
    return " ".join(["$(rootpath {})".format(label) for label in labels])

def wrp_pytest(name, src = None, data = [], env_files = {}, env = {}, env_select = {}, deps = [], size = "medium", tags = [], **kwargs):
    """A py_test that runs one pytest file with the shared test data (//tests:support).

    Args:
      name: the target; `<stem>_test` runs test_<stem>.py unless `src` says otherwise.
      src: the pytest file.
      data: more runtime files.
      env_files: environment variable -> label, or list of labels: each label is also
        a data dependency, and the test reads its runfiles path (a list's, space-separated)
        from the variable. The one place a test names a file it is handed.
      env: other environment.
      env_select: environment that depends on the configuration: condition -> dict, as
        select() takes it (Bazel 4.2 cannot concatenate a select() of dicts).
      deps: Python libraries besides //wrpkg.
      size: the test size.
      tags: the test's tags; `gpu`: the test needs a CUDA GPU (run by `bazel test --config=gpu`,
        its test spawn routed to the GPU pool, a GPU of its own under --config=gpu's
        --run_under, tools/gpu/one_gpu.sh).
      **kwargs: passed to py_test.
    """
    if src == None:
        if not name.endswith("_test"):
            fail("wrp_pytest {}: name it <stem>_test (it runs test_<stem>.py) or set src".format(name))
        src = "test_{}.py".format(name[:-len("_test")])
    files = []
    for labels in env_files.values():
        files.extend(labels if type(labels) == "list" else [labels])
    env = dict(test_env(tags), **env)
    env.update({var: _rootpaths(labels) for var, labels in env_files.items()})
    if env_select:
        env = select({condition: dict(env, **values) for condition, values in env_select.items()})
    native.py_test(
        name = name,
        srcs = ["//tests:pytest_main.py", src],
        main = "//tests:pytest_main.py",
        args = ["$(rootpath {})".format(src)],
        data = data + [f for f in files if f not in data] + ["//tests:support"],
        deps = deps + ["//wrpkg"],
        env = env,
        python_version = "PY3",
        size = size,
        tags = tags,
        exec_properties = test_exec_properties(tags),
        **kwargs
    )

def wrp_pytests(tests):
    """One wrp_pytest per entry of `tests`: its name -> its other arguments (a dict)."""
    for name, kwargs in tests.items():
        wrp_pytest(name = name, **kwargs)

def cpu_and_retargeted_artifacts(name, capture, **kwargs):
    """Two test bundles of one capture program: `<name>_cpu_wrp`, captured on the CPU (its replay test
    runs in every CI run), and `<name>_wrp`, retargeted to sm_90 without a GPU (replayed on a GPU
    runner under --config=gpu). kwargs go to both."""
    wrp_artifact(
        name = name + "_cpu_wrp",
        testonly = True,
        capture = capture,
        device = "cpu",
        **kwargs
    )
    wrp_artifact(
        name = name + "_wrp",
        testonly = True,
        archs = ["sm_90"],
        capture = capture,
        capture_mode = "retarget",
        **kwargs
    )
