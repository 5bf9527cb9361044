"""rules_warp's Python side: the tools Bazel actions run, and the library users call.

Each tool is a module with a CLI (`python -m wrpkg.<tool>`) whose flags mirror the
action's inputs and outputs; `wrpkg <tool>` is the same thing through one entry point.
"""

__version__ = "0.1.0"

# The exact Warp release this project's formats and compile recipes are verified against.
# The .wrp loader only accepts files whose producer version equals its own.
WARP_VERSION = "1.19.0"
