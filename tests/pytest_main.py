"""Runs pytest on the files given as arguments, inside Bazel's test sandbox.

Keeps Warp's kernel cache and pytest's cache inside the test's temp dir, so a
test never writes to $HOME or to the source tree.
"""

import os
import sys

if __name__ == "__main__":
    tmp = os.environ.get("TEST_TMPDIR") or os.path.join(os.getcwd(), ".pytest_tmp")
    os.environ.setdefault("WARP_CACHE_PATH", os.path.join(tmp, "warp-cache"))
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.dont_write_bytecode = True
    import pytest

    from wrpkg.private_tmp import use_private_tmpdir

    # The in-process captures' NVRTC files (hundreds of MB each) go with the test, not into /tmp.
    use_private_tmpdir()

    args = ["-p", "no:cacheprovider", "-q", "--basetemp", os.path.join(tmp, "pytest"), *sys.argv[1:]]
    xml = os.environ.get("XML_OUTPUT_FILE")
    if xml:
        args += ["--junitxml", xml]
    sys.exit(pytest.main(args))
