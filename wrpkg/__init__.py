"""rules_warp's Python side: the tools Bazel actions run, and the library users call.

The package is laid out as the pipeline (docs/architecture.md): wrpkg.capture (the capture
action), wrpkg.build (compile, pack) and wrpkg.reader (a built bundle: open, verify, inspect),
with what several stages share at the top. Each tool is a module with a CLI
(`python -m wrpkg.capture`, `python -m wrpkg.build.pack`, ...) whose flags mirror the action's
inputs and outputs; `wrpkg <tool>` is the same thing through one entry point.

The public API is `__all__` below, importable from `wrpkg` itself:

    from wrpkg import CaptureSpec, Tolerance            # what a capture script returns
    from wrpkg import Bundle                            # a built bundle, from Python

    bundle = Bundle.open("bazel-bin/models/sim_wrp")    # verified once, its bytes held
    graph = bundle.load("cuda:0")                       # Warp gets the bytes that were verified

Each name is imported from its module on first use, so `import wrpkg` stays cheap (no Warp,
no NumPy). Three functions carry a longer name here than in their module, which names what
they act on: `run_capture` is `wrpkg.capture.capture`, `pack_bundle` is `wrpkg.build.pack.pack` and
`load_bundle` is `wrpkg.reader.bundle.load`. Every function listed has a
docstring with its Args and Returns (//tests:public_api_test holds that).
"""

import importlib

__version__ = "0.1.0"

# The exact Warp release this project's formats and compile recipes are verified against.
# The .wrp loader only accepts files whose producer version equals its own.
WARP_VERSION = "1.19.0"

# public name -> (module, name in it). By string, not by import: an action's sandbox holds only
# the modules its tool imports (wrpkg/BUILD.bazel), and this file is in every one of them.
_EXPORTS = {
    # What a capture script's build(device) returns.
    "CaptureSpec": ("wrpkg.capture", "CaptureSpec"),
    "Tolerance": ("wrpkg.golden", "Tolerance"),
    # The build steps the rules run, from Python.
    "run_capture": ("wrpkg.capture", "capture"),
    "CaptureResult": ("wrpkg.capture", "CaptureResult"),
    "compile_wrp": ("wrpkg.build.compile", "compile_wrp"),
    "pack_bundle": ("wrpkg.build.pack", "pack"),
    "BundleResult": ("wrpkg.build.pack", "BundleResult"),
    # A built bundle: open (verify), load, inspect; and the same as functions.
    "Bundle": ("wrpkg.reader.bundle", "Bundle"),
    "load_bundle": ("wrpkg.reader.bundle", "load"),
    "verify_bundle": ("wrpkg.reader.verify", "verify_bundle"),
    "verify_tar": ("wrpkg.reader.verify", "verify_tar"),
    "read_manifest": ("wrpkg.reader.validity", "read_manifest"),
    "Manifest": ("wrpkg.manifest", "Manifest"),
    "summarize_bundle": ("wrpkg.reader.inspection", "summarize_bundle"),
    # Every failure a user can cause (wrpkg/errors.py).
    "WrpError": ("wrpkg.errors", "WrpError"),
    "WrpFormatError": ("wrpkg.errors", "WrpFormatError"),
    "CaptureError": ("wrpkg.errors", "CaptureError"),
    "CompileError": ("wrpkg.errors", "CompileError"),
    "BundleError": ("wrpkg.errors", "BundleError"),
    "VerifyError": ("wrpkg.errors", "VerifyError"),
    "ArchMismatchError": ("wrpkg.errors", "ArchMismatchError"),
}

__all__ = ["WARP_VERSION", *_EXPORTS]


def __getattr__(name):
    """Imports a public name from its module on first use (PEP 562).

    Args:
      name: an attribute of the package that is not set yet.

    Returns:
      The object `_EXPORTS` names, which is then cached on the package.
    """
    if name not in _EXPORTS:
        raise AttributeError(f"module 'wrpkg' has no attribute {name!r}")
    module, attribute = _EXPORTS[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__():
    """The package's names, the lazy public ones included.

    Returns:
      A sorted list of names.
    """
    return sorted(set(globals()) | set(__all__))
