"""Machine-independent Python source paths in generated Warp code.

Warp's codegen writes the absolute path of the Python file that defines each `@wp.func`
(`Adjoint.filename`, from `inspect.getsourcefile`) into the generated code: a comment line
`// <path>:<line>` above every function in the `.cu` and `.cpp`, and `#line <n> "<path>"`
directives when a module is compiled with line info (`lineinfo` or debug mode), which NVRTC
then also embeds in the cubin. In a Bazel sandbox that path names the sandbox, so the
retained `.cu` (and with it the content hash) would change with the output base, and a
retargeted capture would differ from a GPU capture made in another directory. The path does
not feed the module hash: Warp's ModuleHasher hashes a function's source text, argument
types and references, never its file name, so module hashes, entry names and binary names
are the same everywhere; only the text (and line-info binaries) differ.

Two steps make them stable:
- `relocate(wp, script_dir, paths)` sets every Adjoint's `filename` to a stable form before
  Warp generates code (so Warp itself writes it, line-info binaries included): the path
  relative to the deepest of the capture script's folder (its own files: `cloth.py`, a
  subfolder's `lib/x.py`), the `sys.path` folders (Warp's own files: `warp/_src/...`) and the
  working directory (Bazel's execroot, for a file only it holds). The script's folder is a root
  wherever the capture runs from, so the names do not depend on the working directory. Once relocated, an
  Adjoint no longer names its absolute path, so the caller keeps the map of relocations
  (`paths`, the capture's own) across its calls.
- `canonicalize_sources()` runs on a saved capture, in memory: it rewrites what code generated
  before the relocation still holds (function comment lines and `#line` directives naming a
  file in that map) in the module source files, updates each rewritten module record's source
  sha256 in the parsed `.wrp` (the caller writes it), and refuses a capture whose sources or
  module binaries still hold an absolute path of a known source file or of the working
  directory.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path

from wrpkg import warp_internals, wrpformat
from wrpkg.errors import CaptureError

# Warp's function header comment (codegen.py's *_function_template) and line directive.
_FUNCTION_COMMENT = re.compile(r"^// (?P<path>.+):(?P<line>\d+)$", re.MULTILINE)
_LINE_DIRECTIVE = re.compile(r'^#line (?P<line>\d+) "(?P<path>(?:[^"\\]|\\.)*)"$', re.MULTILINE)


def _is_under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def stable_path(filename: str, script_dir: str | None = None) -> str | None:
    """The machine-independent form of a source file's path (None: no root contains it)."""
    path = os.path.abspath(filename)
    cwd = os.getcwd()
    roots = {cwd} | {os.path.abspath(entry or os.curdir) for entry in sys.path}
    if script_dir is not None:
        # Always a root, whatever the working directory: were it dropped when inside the working
        # directory, the script run from its repository would name tests/x.py, run from anywhere else x.py.
        roots.add(os.path.abspath(script_dir))
    # "/" is a root only as the working directory: a remote worker's sandbox runs the action
    # from its input root, so there Bazel's execroot is "/" (models/cloth.py is /models/cloth.py).
    roots = [root for root in roots if (root != os.sep or root == cwd) and _is_under(path, root)]
    if not roots:
        return None
    return Path(os.path.relpath(path, max(roots, key=len))).as_posix()


def _adjoints(wp):
    """Every Adjoint of every Warp module loaded in this process (kernels, their overloads,
    functions, their overloads and templates, custom gradient/replay functions)."""
    seen = set()
    pending = []
    for module in list(warp_internals.context().user_modules.values()):
        for kernel in list(module.kernels.values()):
            pending.append(kernel)
            pending.extend(getattr(kernel, "overloads", {}).values())
        pending.extend(module.functions.values())
    while pending:
        obj = pending.pop()
        if obj is None or id(obj) in seen:
            continue
        seen.add(id(obj))
        adj = getattr(obj, "adj", None)
        if adj is not None:
            yield adj
        for attr in ("user_overloads", "user_templates"):
            pending.extend(getattr(obj, attr, {}).values())
        for attr in ("custom_grad_func", "custom_replay_func"):
            pending.append(getattr(obj, attr, None))


def relocate(
    wp, script_dir: str | os.PathLike | None = None, paths: dict[str, str] | None = None
) -> dict[str, str]:
    """Gives every Adjoint that still names an absolute path a stable `filename`.

    Args:
      wp: the warp module.
      script_dir: the capture script's folder (see `stable_path`).
      paths: absolute path -> stable form, the relocations of earlier calls: added to and
        returned. Code generated before a relocation still names the absolute path, and only this
        map remembers it, so a caller that relocates more than once passes the same map each time.

    Returns:
      `paths` (a new dict when None) with this call's relocations added.
    """
    paths = {} if paths is None else paths
    script_dir = None if script_dir is None else os.fspath(script_dir)
    for adj in _adjoints(wp):
        filename = getattr(adj, "filename", None)
        if not filename or not os.path.isabs(filename):
            continue
        stable = paths.get(filename) or stable_path(filename, script_dir)
        if stable is not None:
            paths[filename] = stable
            adj.filename = stable
    return paths


def _rewrite(text: str, paths: dict[str, str]) -> str:
    _escape_line_directive_filename = warp_internals.private("codegen")._escape_line_directive_filename

    escaped = {
        _escape_line_directive_filename(a): _escape_line_directive_filename(s) for a, s in paths.items()
    }

    def comment(match: re.Match) -> str:
        stable = paths.get(match["path"])
        return match[0] if stable is None else f"// {stable}:{match['line']}"

    def directive(match: re.Match) -> str:
        stable = escaped.get(match["path"])
        return match[0] if stable is None else f'#line {match["line"]} "{stable}"'

    return _LINE_DIRECTIVE.sub(directive, _FUNCTION_COMMENT.sub(comment, text))


def _warp_native_dirs() -> list[str]:
    native = os.path.join(warp_internals.private("build").warp_home, "native")
    return sorted({native, os.path.abspath(native)})


def _machine_paths(paths: dict[str, str]) -> list[str]:
    cwd = os.getcwd()
    found = set(paths) | {cwd, os.path.realpath(cwd)}
    return sorted((p for p in found if p != os.sep), key=len, reverse=True)


def install_stable_header_paths() -> None:
    """From now on in this process, Warp's CPU compiles name its headers `warp/native/<file>`, not the
    venv's path (once; a second call changes nothing).

    Tile code's asserts expand `__FILE__` inside Warp's own headers (tile.h), so a CPU object of a
    module using tiles (MuJoCo Warp's) would carry the absolute path of the venv: clang's
    `-fmacro-prefix-map`, added to the compile's flags and not to the module's options, which Warp
    hashes. A path with whitespace cannot travel in Warp's flag string: canonicalize_sources then
    refuses the object that names it."""
    build = warp_internals.private("build")
    original = build.build_cpu
    if getattr(original, "stable_header_paths", False):
        return
    flags = " ".join(
        f"-fmacro-prefix-map={native}=warp/native"
        for native in _warp_native_dirs()
        if not any(c.isspace() for c in native)
    )

    def build_cpu(*args, **kwargs):
        kwargs["extra_flags"] = f"{kwargs.get('extra_flags') or ''} {flags}".strip()
        return original(*args, **kwargs)

    build_cpu.stable_header_paths = True
    build.build_cpu = build_cpu


def _absolute_left(text: str, needles: list[str]) -> str | None:
    for match in _FUNCTION_COMMENT.finditer(text):
        if os.path.isabs(match["path"]):
            return match[0]
    for match in _LINE_DIRECTIVE.finditer(text):
        if match["path"].startswith("/"):
            return match[0]
    return next((needle for needle in needles if needle in text), None)


def stable_text(text: str, paths: dict[str, str]) -> tuple[str, str | None]:
    """Generated code with the absolute paths of `paths` rewritten to their stable form, and the
    first machine-specific path still in it (None: none), as canonicalize_sources decides."""
    new_text = _rewrite(text, paths)
    return new_text, _absolute_left(new_text, _machine_paths(paths))


def binary_machine_path(data: bytes, paths: dict[str, str], cpu_object: bool) -> str | None:
    """The first machine-specific path a module binary embeds (None: none), as canonicalize_sources decides."""
    needles = _machine_paths(paths) + (_warp_native_dirs() if cpu_object else [])
    return next((needle for needle in needles if needle.encode() in data), None)


def canonicalize_sources(
    wrp: wrpformat.WrpFile,
    modules_dir: str | os.PathLike,
    paths: dict[str, str],
    target: str,
) -> list[str]:
    """Rewrites absolute source paths in a saved capture's retained sources (see the module doc).

    Args:
      wrp: the capture's `.wrp`, parsed: each rewritten module's source sha256 is updated in it
        (writing it is the caller's: the file is then out of date until it does).
      modules_dir: its module files; rewritten sources are written there.
      paths: absolute path -> stable form (`relocate`).
      target: the capture, named in errors.

    Returns:
      The names of the rewritten source files (empty: `wrp` is unchanged).

    Raises:
      CaptureError: a source or module binary still names a machine-specific path.
    """
    modules_dir = Path(modules_dir)
    rewritten = []
    for module in wrp.metadata.modules:
        if module.source_filename:
            source = modules_dir / module.source_filename
            data = source.read_bytes()
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise CaptureError(
                    f"{target}: {source} (module {module.name}) is not UTF-8 text: {exc}"
                ) from exc
            new_text, left = stable_text(text, paths)
            if left is not None:
                raise CaptureError(
                    f"{target}: the generated source {source.name} of module {module.name} still names the "
                    f"machine-specific path {left!r}, which would make the capture differ between machines",
                    fix="capture with a fresh kernel cache (no --cache-dir shared with another checkout), and "
                    "keep every Python file that defines Warp code inside the workspace or on sys.path",
                )
            if new_text != text:
                new_data = new_text.encode("utf-8")
                source.write_bytes(new_data)
                module.source_sha256 = hashlib.sha256(new_data).hexdigest()
                rewritten.append(module.source_filename)
        if module.binary_filename:
            binary = (modules_dir / module.binary_filename).read_bytes()
            # A CPU object's header paths are Warp's own spelling (install_stable_header_paths); CUDA
            # binaries are compiled again per SM (wrpkg.build.compile) against the pinned headers.
            needle = binary_machine_path(binary, paths, cpu_object=module.binary_filename.endswith(".o"))
            if needle is not None:
                raise CaptureError(
                    f"{target}: the binary {module.binary_filename} of module {module.name} embeds the "
                    f"machine-specific path {needle!r} (line information from code generated before "
                    "rules_warp could make its source paths relative)",
                    fix="capture without lineinfo/debug mode for this module, or load it only after "
                    "build() returns",
                )
    return rewritten
