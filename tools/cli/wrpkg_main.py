"""`bazel run //:wrpkg -- <subcommand> ...`: the wrpkg CLI with the pinned venv.

`bazel run` starts programs inside their runfiles tree; paths on the command line are
the user's, so they are taken from the directory `bazel run` was called in. This file
lives outside wrpkg/ because a script's own directory leads sys.path, where wrpkg's modules
would be importable under their bare names (`errors`, `manifest`, ...)."""

import os
import sys

from wrpkg.cli import main

if __name__ == "__main__":
    workdir = os.environ.get("BUILD_WORKING_DIRECTORY")
    if workdir:
        os.chdir(workdir)
    sys.exit(main())
