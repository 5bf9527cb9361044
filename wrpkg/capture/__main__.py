"""`python -m wrpkg.capture`: the capture tool (wrpkg/capture/tool.py)."""

from wrpkg.cli import tool_main

if __name__ == "__main__":
    # By its module name, not as __main__: scripts import CaptureSpec from wrpkg.capture, which
    # must be the class the tool checks build()'s result against.
    tool_main("wrpkg.capture.tool", "capture")
