"""Where an operation of the step came from: the user's line and, when a library made it, the library's.

A refusal of an operation that Newton, MuJoCo Warp or Warp's own library code made inside the step
names two places: the line of the user's code that called into the library (what the user can
change, or switch off) and the library line that made the operation (what explains it). Frames of
Warp's core and of wrpkg are neither; an installed package's files (under site-packages or
dist-packages) are the library; the first frame outside all of those is the user's.
"""

from __future__ import annotations

import linecache
import os
import sys
from dataclasses import dataclass

# The package root, not this module's folder: wrpkg's frames anywhere (warp_internals.py, reader/) are its own.
_WRPKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_INSTALLED = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")


def _warp_dir() -> str:
    import warp  # noqa: PLC0415 - Warp is imported lazily

    return os.path.dirname(os.path.abspath(warp.__file__)) + os.sep


def own_dirs() -> tuple[str, str]:
    """Warp's and wrpkg's folders: code there is neither the user's nor a library's (the capture
    handles Warp's own device branches and operations itself)."""
    return (_warp_dir(), _WRPKG_DIR)


def is_installed(filename: str, user_dirs: tuple[str, ...] = ()) -> bool:
    """Whether `filename` belongs to an installed package, not the user's code: a file under a
    site-packages or dist-packages folder, or outside both the working directory (a Bazel action's
    execroot, which holds the workspace's sources) and `user_dirs` (the capture script's folder)."""
    path = os.path.abspath(filename)
    if any(marker in path for marker in _INSTALLED):
        return True
    roots = tuple(os.path.join(os.path.abspath(d), "") for d in (os.getcwd(), *user_dirs))
    return not path.startswith(roots)


def module_source_files(module) -> set[str]:
    """The Python files a Warp module's kernels and functions are defined in (absolute, as Python
    compiled them: a relocated Adjoint's filename no longer is). A factory's module is named after
    its kernel (Newton's narrow_phase_primitive_write_contact_False_False_False), not after a
    Python module, so its name says nothing of where it comes from; with no kernel or function,
    the file of the Python module of the same name."""
    files = {
        code.co_filename
        for obj in [*module.kernels.values(), *module.functions.values()]
        if (code := getattr(getattr(obj, "func", None), "__code__", None)) is not None
    }
    if not files:
        path = getattr(sys.modules.get(module.name), "__file__", None)
        files = {path} if path else set()
    return files


@dataclass(frozen=True)
class CallSite:
    user: tuple[str, int] | None  # (file, line) of the user's code that led to the operation
    library: tuple[str, int] | None  # (file, line) in an installed library that made it; None: the user did


def of_frame(frame, library_frame=None) -> CallSite:
    """The call site of an operation whose innermost frame is `frame`. The library line is the first
    frame outside Warp and wrpkg, when that lies in an installed package; `library_frame` names it
    instead (a read-back that Warp's own library code makes)."""
    warp_dir = _warp_dir()
    user = library = None
    if library_frame is not None:
        library = (library_frame.f_code.co_filename, library_frame.f_lineno)
    while frame is not None:
        filename = frame.f_code.co_filename
        path = os.path.abspath(filename)
        # "<string>" and the like: code Warp or a library made with exec(), no file to name.
        if not filename.startswith("<") and not path.startswith(_WRPKG_DIR):
            if not path.startswith(warp_dir) and library is None and is_installed(path):
                library = (filename, frame.f_lineno)
            elif not is_installed(path) and not path.startswith(warp_dir):
                user = (filename, frame.f_lineno)
                break
        frame = frame.f_back
    return CallSite(user, library)


def here() -> CallSite:
    """The call site of the operation being made now (frames of Warp and wrpkg are skipped)."""
    return of_frame(sys._getframe(1))


def of_exception(exc: BaseException) -> CallSite:
    """The call site of the innermost frame an exception passed through."""
    tb = exc.__traceback__
    if tb is None:
        return CallSite(None, None)
    while tb.tb_next is not None:
        tb = tb.tb_next
    return of_frame(tb.tb_frame)


def _shown(filename: str) -> str:
    if is_installed(filename):
        # An installed file as its package spells it (newton/_src/...), not the venv's path.
        path = os.path.abspath(filename)
        for marker in _INSTALLED:
            if marker in path:
                return path.rsplit(marker, 1)[1]
    shown = os.path.relpath(filename)  # a Bazel action runs in the execroot: models/sim.py, not its path
    return filename if shown.startswith("..") else shown


def describe_location(location: tuple[str, int]) -> str:
    """ "newton/_src/geometry/broad_phase_sap.py:823 (the code there)"."""
    filename, line = location
    code = linecache.getline(filename, line).strip()
    return f"{_shown(filename)}:{line}" + (f" ({code})" if code else "")


# What a user of a library can switch when that library's code made a refused operation: the library
# file (as its package spells it) -> the switch. Only switches the library itself documents.
LIBRARY_SWITCHES = {
    "newton/_src/solvers/implicit_mpm/": "Newton's SolverImplicitMPM runs as a graph only on a GPU: off it, its "
    "solver reads residuals back to the host, and its default sparse grid (a wp.Volume) is built or rebuilt "
    "in every step; set its config's grid_type = \"fixed\", the grid Newton's own examples use to "
    'graph-capture, and capture on a GPU (capture_mode = "gpu")',
}


def library_switch(site: CallSite) -> str | None:
    """The LIBRARY_SWITCHES entry of the library line that made an operation; None for others."""
    if site.library is None:
        return None
    shown = _shown(site.library[0]).replace(os.sep, "/")
    return next((switch for prefix, switch in LIBRARY_SWITCHES.items() if shown.startswith(prefix)), None)


def describe(site: CallSite) -> str:
    """ "at models/sim.py:42 (the code there)", with ", inside newton/...:823 (its code)" when a library
    made the operation; "in step()" when neither is known."""
    parts = []
    if site.user is not None:
        parts.append(f"at {describe_location(site.user)}")
    if site.library is not None:
        parts.append(f"inside {describe_location(site.library)}")
    return ", ".join(parts) if parts else "in step()"
