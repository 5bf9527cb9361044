"""The capture stage: run a user's capture script under Warp APIC and record what it saves.

    python -m wrpkg.capture --script models/sim.py --device cpu --out-dir RAW --stem sim ...

A capture script returns `wrpkg.capture.CaptureSpec` (docs/capture-script.md); the tool itself
is wrpkg/capture/tool.py. The modules beside it are its parts: the launch recorder and what it
refuses (launch_recorder, step_guard, stale_pointers, device_branches, call_sites), the
crash-watched child process and deferred CPU compiles (crash_watch, deferred_compile), the
graph's initial state and build launches (initial_state, build_launches), relocated source
paths (source_paths), the kernel cache a capture starts from (kernel_cache), the CUDA capture
made on a CPU (retarget, golden_caveats), and the lowered Warp operations (lowering/).

The names below are imported from wrpkg/capture/tool.py on first use, so importing a module of
this package (e.g. wrpkg.capture.kernel_cache) does not import the whole capture tool.
"""

import importlib

# What capture scripts and callers of the tool import from `wrpkg.capture`.
_EXPORTS = (
    "CaptureSpec",
    "Binding",
    "CaptureResult",
    "CAPTURE_MODES",
    "array_layout",
    "capture",
    "import_script",
    "configure_parser",
    "run",
)

__all__ = list(_EXPORTS)


def __getattr__(name):
    """Imports a public name of the capture tool on first use (PEP 562).

    Args:
      name: an attribute of the package that is not set yet.

    Returns:
      The object of that name in wrpkg.capture.tool, then cached on the package.
    """
    if name not in _EXPORTS:
        raise AttributeError(f"module 'wrpkg.capture' has no attribute {name!r}")
    value = getattr(importlib.import_module("wrpkg.capture.tool"), name)
    globals()[name] = value
    return value


def __dir__():
    """The package's names, the lazy public ones included.

    Returns:
      A sorted list of names.
    """
    return sorted(set(globals()) | set(__all__))
