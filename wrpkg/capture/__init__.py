"""The capture stage: run a user's capture script under Warp APIC and record what it saves.

    python -m wrpkg.capture --script models/sim.py --device cpu --out-dir RAW --stem sim ...

A capture script returns `wrpkg.capture.CaptureSpec` (docs/capture-script.md); the tool itself
is wrpkg/capture/tool.py. The modules beside it are its parts: the script's contract, its import
and its recorded step (capture_script), the golden replays (golden_replay), the launch recorder and what it
refuses (launch_recorder, step_guard, stale_pointers, device_branches, call_sites), the
crash-watched child process and deferred CPU compiles (crash_watch, deferred_compile), the
graph's initial state and build launches (initial_state, build_launches), relocated source
paths (source_paths), the kernel cache a capture starts from (kernel_cache), the CUDA capture
made on a CPU (retarget, golden_caveats), and the lowered Warp operations (lowering/).

The names below are imported from their module on first use, so importing a module of this
package (e.g. wrpkg.capture.kernel_cache) does not import the whole capture tool, and a capture
script's `from wrpkg.capture import CaptureSpec` imports capture_script alone (the compile
action imports the script with only that).
"""

import importlib

# What capture scripts and callers of the tool import from `wrpkg.capture`: name -> its module.
_EXPORTS = {
    "CaptureSpec": "wrpkg.capture.capture_script",
    "Binding": "wrpkg.capture.capture_script",
    "CaptureResult": "wrpkg.capture.tool",
    "CAPTURE_MODES": "wrpkg.capture.tool",
    "array_layout": "wrpkg.capture.capture_script",
    "capture": "wrpkg.capture.tool",
    "import_script": "wrpkg.capture.capture_script",
    "configure_parser": "wrpkg.capture.tool",
    "run": "wrpkg.capture.tool",
}

__all__ = list(_EXPORTS)


def __getattr__(name):
    """Imports a public name of the capture tool on first use (PEP 562).

    Args:
      name: an attribute of the package that is not set yet.

    Returns:
      The object of that name in its module (_EXPORTS), then cached on the package.
    """
    if name not in _EXPORTS:
        raise AttributeError(f"module 'wrpkg.capture' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__():
    """The package's names, the lazy public ones included.

    Returns:
      A sorted list of names.
    """
    return sorted(set(globals()) | set(__all__))
