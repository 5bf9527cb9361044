"""`python -m wrpkg.capture`: the capture tool (wrpkg/capture/tool.py)."""

import sys

from wrpkg.capture import crash_watch
from wrpkg.cli import run_tool

if __name__ == "__main__":
    # The watching parent starts the child before anything heavy is imported.
    watched = crash_watch.watch_command_line("wrpkg.capture", sys.argv[1:])
    if watched is not None:
        sys.exit(watched)
    # By its module name, not as __main__: scripts import CaptureSpec from wrpkg.capture, which
    # must be the class the tool checks build()'s result against.
    returncode = run_tool("wrpkg.capture.tool", ["capture"], sys.argv[1:])
    if crash_watch.in_child():
        crash_watch.exit_child(returncode)
    sys.exit(returncode)
