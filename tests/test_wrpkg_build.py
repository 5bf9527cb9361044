"""wrpkg/BUILD.bazel's per-module py_library deps match what each module imports.

Actions take only their tool's transitive sources; a module a tool imports but its
library does not list would be missing from the action's sandbox, and a listed one it
does not import re-runs the action for nothing. Lazy imports inside functions count.
"""

import ast
from pathlib import Path

# In the runfiles tree: the sources //wrpkg declares, not whatever lies in the checkout.
_WRPKG = Path(__file__).absolute().parent.parent / "wrpkg"


def _libraries():
    """{name: (srcs, deps)} of the per-module py_library targets in wrpkg/BUILD.bazel
    (not :wrpkg, the whole package)."""
    libraries = {}

    def py_library(name, srcs=(), deps=(), **_):
        libraries[name] = (list(srcs), [d.lstrip(":") for d in deps])

    def glob(patterns):
        return sorted({str(p.relative_to(_WRPKG)) for pattern in patterns for p in _WRPKG.glob(pattern)})

    def ignored(*_, **__):
        return None

    build = (_WRPKG / "BUILD.bazel").read_text(encoding="utf-8")
    # BUILD files are Starlark, which for these calls is Python syntax.
    names = {"py_library": py_library, "glob": glob}
    names.update(dict.fromkeys(("filegroup", "package", "exports_files"), ignored))
    exec(build, names)
    del libraries["wrpkg"]
    return libraries


def _module_of(src):
    """wrpkg module name of a source path: "capture.py" -> "capture", "wrp/reader.py" -> "wrp.reader"."""
    parts = list(Path(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package_of(src):
    """The package (below wrpkg) a source file's module is in: "capture/tool.py" -> "capture",
    "capture/lowering/__init__.py" -> "capture", "capture/__init__.py" and "errors.py" -> ""."""
    return _module_of(src).rpartition(".")[0]


def _imports(path):
    """The wrpkg modules a source file imports, anywhere in it (dotted names under wrpkg)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name[len("wrpkg.") :] for a in node.names if a.name.startswith("wrpkg."))
        elif isinstance(node, ast.ImportFrom):
            assert not node.level, f"{path}: relative import; wrpkg imports itself as `wrpkg.`"
            if node.module != "wrpkg" and not (node.module or "").startswith("wrpkg."):
                continue
            module = node.module[len("wrpkg.") :] if node.module != "wrpkg" else ""
            for alias in node.names:
                submodule = f"{module}.{alias.name}" if module else alias.name
                # `from wrpkg import atomic` names a module; `from wrpkg.errors import X` a member.
                if _source_of(submodule) is not None:
                    found.add(submodule)
                elif module:
                    found.add(module)
    return found


def _source_of(module):
    for candidate in (
        _WRPKG / (module.replace(".", "/") + ".py"),
        _WRPKG / module.replace(".", "/") / "__init__.py",
    ):
        if module and candidate.is_file():
            return candidate
    return None


def test_every_module_has_exactly_one_library():
    owners = {}
    for name, (srcs, _) in _libraries().items():
        for src in srcs:
            owners.setdefault(src, []).append(name)
    sources = {str(p.relative_to(_WRPKG)) for p in _WRPKG.rglob("*.py")}
    assert {s: o for s, o in owners.items() if len(o) > 1} == {}
    assert sorted(sources - set(owners)) == [], "wrpkg sources no py_library in wrpkg/BUILD.bazel lists"


def test_library_deps_are_the_imports():
    libraries = _libraries()
    library_of = {_module_of(src): name for name, (srcs, _) in libraries.items() for src in srcs}
    problems = []
    for name, (srcs, deps) in sorted(libraries.items()):
        wanted = set()
        for src in srcs:
            # Python runs a subpackage's __init__.py before any module of it: its library is a dep
            # (the stage packages' __init__.py import nothing of their stage: no cycle).
            parent = _package_of(src)
            if parent and library_of.get(parent) not in (None, name):
                wanted.add(library_of[parent])
            for module in _imports(_WRPKG / src):
                owner = library_of.get(module)
                assert owner is not None, f"{src} imports wrpkg.{module}, which no library lists"
                if owner != name:
                    wanted.add(owner)
        listed = set(deps) - {"package"}
        if name != "package" and not deps:
            problems.append(f":{name} has no deps: it needs :package for wrpkg/__init__.py")
        if listed != wanted - {"package"}:
            problems.append(f":{name} deps {sorted(listed)}, imports need {sorted(wanted - {'package'})}")
    assert problems == []
