"""wrpkg's public API is `wrpkg.__all__`, and each of its functions and classes says how to call it.

A function's docstring has an `Args:` section naming every parameter and a `Returns:` section.
A class has its own docstring; one that is built with arguments (a dataclass, or a class
with its own __init__) names each of them under `Args:` (or `Attributes:`, for the results
the tools return). `import wrpkg` stays cheap: it imports neither Warp nor NumPy."""

from __future__ import annotations

import dataclasses
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import wrpkg


def _section(doc: str, title: str) -> str | None:
    """The lines of a Google-style section (`Args:`), up to the next unindented line."""
    match = re.search(rf"^{title}:\n((?:[ \t]+\S.*\n?|[ \t]*\n)+)", doc, flags=re.M)
    return match.group(1) if match else None


def _parameters(obj) -> list[str]:
    signature = inspect.signature(obj)
    return [
        ("*" * (p.kind == p.VAR_POSITIONAL) + "**" * (p.kind == p.VAR_KEYWORD)) + p.name
        for p in signature.parameters.values()
        if p.name != "self"
    ]


def _documents(section: str, name: str) -> bool:
    return re.search(rf"^\s+{re.escape(name)}( \(.*?\))?:", section, flags=re.M) is not None


def test_all_names_resolve():
    assert len(set(wrpkg.__all__)) == len(wrpkg.__all__)
    for name in wrpkg.__all__:
        assert getattr(wrpkg, name) is not None, name
        assert name in dir(wrpkg), name


def test_unknown_names_are_attribute_errors():
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        wrpkg.not_a_name  # noqa: B018


def test_aliases_are_the_module_functions():
    from wrpkg.build import pack  # noqa: PLC0415
    from wrpkg.capture import tool as capture  # noqa: PLC0415
    from wrpkg.reader import bundle  # noqa: PLC0415

    assert wrpkg.run_capture is capture.capture
    assert wrpkg.pack_bundle is pack.pack
    assert wrpkg.load_bundle is bundle.load


def test_importing_the_package_is_cheap():
    code = "import sys, wrpkg; print(sorted(m for m in ('warp', 'numpy') if m in sys.modules))"
    root = str(Path(wrpkg.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.strip() == "[]", done.stdout


FUNCTIONS = [n for n in wrpkg.__all__ if inspect.isfunction(getattr(wrpkg, n))]
CLASSES = [n for n in wrpkg.__all__ if inspect.isclass(getattr(wrpkg, n))]


def test_the_lists_cover_the_api():
    constants = set(wrpkg.__all__) - set(FUNCTIONS) - set(CLASSES)
    assert constants == {"WARP_VERSION"}, constants
    assert {"load_bundle", "verify_bundle", "run_capture"} <= set(FUNCTIONS)
    assert {"CaptureSpec", "Tolerance", "WrpError"} <= set(CLASSES)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_function_docstring_gives_args_and_returns(name):
    function = getattr(wrpkg, name)
    doc = inspect.getdoc(function) or ""
    where = f"{function.__module__}.{function.__qualname__} (wrpkg.{name})"
    args = _section(doc, "Args")
    assert args is not None, f"{where}: its docstring has no Args: section"
    missing = [p for p in _parameters(function) if not _documents(args, p)]
    assert not missing, f"{where}: Args: does not name {missing}"
    assert _section(doc, "Returns"), f"{where}: its docstring has no Returns: section"


@pytest.mark.parametrize("name", CLASSES)
def test_class_docstring_gives_its_arguments(name):
    cls = getattr(wrpkg, name)
    where = f"{cls.__module__}.{cls.__qualname__} (wrpkg.{name})"
    doc = cls.__dict__.get("__doc__")
    assert doc and not doc.startswith(f"{cls.__name__}("), f"{where}: no docstring of its own"
    if not (dataclasses.is_dataclass(cls) or "__init__" in cls.__dict__):
        return  # takes its base class's arguments, which that documents
    doc = inspect.cleandoc(doc)
    section = _section(doc, "Args") or _section(doc, "Attributes")
    assert section is not None, f"{where}: its docstring has no Args: (or Attributes:) section"
    missing = [p for p in _parameters(cls) if not _documents(section, p)]
    assert not missing, f"{where}: its docstring does not name {missing}"
