"""wrp_pytest: one py_test per pytest file, run with the pinned venv."""

def wrp_pytest(name, src, data = [], deps = [], size = "medium", tags = [], **kwargs):
    native.py_test(
        name = name,
        srcs = ["//tests:pytest_main.py", src],
        main = "//tests:pytest_main.py",
        args = ["$(rootpath {})".format(src)],
        data = data + ["//tests:support"],
        deps = deps + ["//wrpkg"],
        python_version = "PY3",
        size = size,
        tags = tags,
        **kwargs
    )
