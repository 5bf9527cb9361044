"""Writes docs/rules.md, the reference of rules_warp's public Starlark API, from its docstrings.

    python3 tools/docs/gen_rules_doc.py           # rewrites docs/rules.md
    python3 tools/docs/gen_rules_doc.py --check   # exits 1 when docs/rules.md is not current

Bazel 4.2 has no Stardoc here. Starlark's syntax is a subset of Python's, so Python's `ast`
reads the .bzl files: the docstrings of `def`s, and the `doc` keywords of `rule()`, of each
`attr.*()` and of `provider()`. Documented: every name rules/defs.bzl re-exports, the build
settings rules/BUILD.bazel declares (their rule's doc and the comment above them), and the
WORKSPACE functions of rules/repositories.bzl. A public attribute, macro parameter or provider
field without a doc is an error: the reference is complete or it is not written.
//tests:rules_doc_test fails when docs/rules.md is not what this writes.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path("docs/rules.md")
SECTIONS = ("Args", "Returns", "Declares", "Raises")
_ENTRY = re.compile(r"^(\*{0,2}[A-Za-z_][^:]*?):\s*(.*)$")


class DocError(Exception):
    """The .bzl files cannot be documented as they are (a doc missing, a form not understood)."""


class Module:
    """One parsed .bzl (or BUILD) file: its top-level assignments, defs, loads and dict updates."""

    def __init__(self, root: Path, relpath: str):
        self.root = root
        self.relpath = relpath
        self.text = (root / relpath).read_text(encoding="utf-8")
        self.tree = ast.parse(self.text, filename=relpath)
        self.assigns: dict[str, ast.expr] = {}
        self.defs: dict[str, ast.FunctionDef] = {}
        self.loads: dict[str, tuple[str, str]] = {}  # local name -> (bzl relpath, exported name)
        self.updates: dict[str, list[ast.expr]] = {}  # NAME.update(x) at top level
        for node in self.tree.body:
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            ):
                self.assigns[node.targets[0].id] = node.value
            elif isinstance(node, ast.FunctionDef):
                self.defs[node.name] = node
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                call = node.value
                if isinstance(call.func, ast.Name) and call.func.id == "load":
                    source = self._resolve_label(_const(call.args[0]))
                    for arg in call.args[1:]:
                        name = _const(arg)
                        self.loads[name] = (source, name)
                    for kw in call.keywords:
                        self.loads[kw.arg] = (source, _const(kw.value))
                elif (
                    isinstance(call.func, ast.Attribute)
                    and call.func.attr == "update"
                    and isinstance(call.func.value, ast.Name)
                ):
                    self.updates.setdefault(call.func.value.id, []).extend(call.args)

    def _resolve_label(self, label: str) -> str:
        if label.startswith("@"):
            return label  # another repository: not read
        if label.startswith("//"):
            package, _, name = label[2:].partition(":")
            return f"{package}/{name}" if package else name
        return str(Path(self.relpath).parent / label.lstrip(":"))

    def docstring(self) -> str:
        return ast.get_docstring(self.tree) or ""

    def comment_above(self, node: ast.AST) -> str:
        """The `#` lines right above a statement (BUILD targets have no docstrings)."""
        lines = self.text.splitlines()
        found = []
        index = node.lineno - 2
        while index >= 0 and lines[index].lstrip().startswith("#"):
            comment = lines[index].lstrip()[1:]
            found.append(comment[1:] if comment.startswith(" ") else comment)
            index -= 1
        return "\n".join(reversed(found))


class Reader:
    """Resolves names across .bzl files, the way Starlark's load() binds them."""

    def __init__(self, root: Path):
        self.root = root
        self.modules: dict[str, Module] = {}

    def module(self, relpath: str) -> Module:
        if relpath not in self.modules:
            self.modules[relpath] = Module(self.root, relpath)
        return self.modules[relpath]

    def definition(self, module: Module, name: str) -> tuple[Module, str, ast.AST]:
        """Where `name`, as seen from `module`, is defined: (module, name, def or value)."""
        seen = set()
        while name in module.loads and name not in module.defs and name not in module.assigns:
            source, exported = module.loads[name]
            if source.startswith("@") or (source, exported) in seen:
                raise DocError(f"{module.relpath}: {name} comes from {source}, which is not read")
            seen.add((source, exported))
            module, name = self.module(source), exported
        if name in module.defs:
            return module, name, module.defs[name]
        if name in module.assigns:
            value = module.assigns[name]
            if isinstance(value, ast.Name) and value.id != name:
                return self.definition(module, value.id)
            return module, name, value
        raise DocError(f"{module.relpath}: no definition of {name}")

    def string(self, module: Module, node: ast.expr) -> str:
        """A string expression: literals, `+` of strings, names bound to either."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.string(module, node.left) + self.string(module, node.right)
        if isinstance(node, ast.Name):
            where, _, value = self.definition(module, node.id)
            return self.string(where, value)
        raise DocError(
            f"{module.relpath}:{node.lineno}: not a string this generator can read: {ast.unparse(node)}"
        )

    def entries(self, module: Module, node: ast.expr) -> list[tuple[str, Module, ast.expr]]:
        """The (key, module, value) entries of a dict expression: a literal, a name bound to one
        (with the NAME.update(...) calls that follow it), or dict(base, key = value, **more)."""
        if isinstance(node, ast.Dict):
            out = []
            for key, value in zip(node.keys, node.values, strict=True):
                if key is None:
                    out.extend(self.entries(module, value))
                else:
                    out.append((self.string(module, key), module, value))
            return out
        if isinstance(node, ast.Name):
            where, name, value = self.definition(module, node.id)
            out = self.entries(where, value)
            for update in where.updates.get(name, []):
                out = _merge(out, self.entries(where, update))
            return out
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
            out = []
            for arg in node.args:
                out = _merge(out, self.entries(module, arg))
            for kw in node.keywords:
                more = self.entries(module, kw.value) if kw.arg is None else [(kw.arg, module, kw.value)]
                out = _merge(out, more)
            return out
        if isinstance(node, ast.DictComp):
            # Only private entries may be computed: their keys start with a literal "_".
            key = node.key
            prefix = key.left if isinstance(key, ast.BinOp) else key
            if isinstance(prefix, ast.Constant) and str(prefix.value).startswith("_"):
                return []
        raise DocError(
            f"{module.relpath}:{node.lineno}: not a dict this generator can read: {ast.unparse(node)}"
        )


def _merge(base, more):
    keys = {key for key, _, _ in more}
    return [e for e in base if e[0] not in keys] + list(more)


def _const(node: ast.expr):
    if not isinstance(node, ast.Constant):
        raise DocError(f"line {node.lineno}: expected a literal, found {ast.unparse(node)}")
    return node.value


def _starlark(node: ast.expr) -> str:
    """An expression as Starlark writes it (double-quoted strings)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return json.dumps(node.value)
    if isinstance(node, ast.List):
        return "[" + ", ".join(_starlark(e) for e in node.elts) + "]"
    return ast.unparse(node)


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((kw.value for kw in call.keywords if kw.arg == name), None)


def _kind(value: ast.AST) -> str | None:
    """'rule', 'provider' or 'macro' for a definition; None for anything else."""
    if isinstance(value, ast.FunctionDef):
        return "macro"
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in ("rule", "provider")
    ):
        return value.func.id
    return None


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _section_entries(lines: list[str]) -> list[tuple[str, str]]:
    """`name: text` entries of an Args-like section, continuation lines folded in."""
    entries: list[tuple[str, str]] = []
    indent = None
    for line in lines:
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        if indent is None:
            indent = depth
        match = _ENTRY.match(line.strip())
        if depth == indent and match:
            entries.append((match.group(1).strip(), match.group(2).strip()))
        elif entries:
            name, text = entries[-1]
            entries[-1] = (name, f"{text} {line.strip()}")
        else:
            raise DocError(f"cannot read the section line {line!r}")
    return entries


def split_docstring(doc: str) -> tuple[list[str], dict[str, list[tuple[str, str]]]]:
    """The prose lines of a docstring, and its sections (Args:, Returns:, ...) as entries."""
    prose: list[str] = []
    sections: dict[str, list[str]] = {}
    current = None
    for line in inspect.cleandoc(doc).splitlines():
        header = re.fullmatch(r"([A-Z][a-z]+):", line)
        if header and header.group(1) in SECTIONS:
            current = header.group(1)
            sections[current] = []
        elif current and (not line.strip() or line.startswith(" ")):
            sections[current].append(line)
        else:
            current = None
            prose.append(line)
    parsed = {}
    for name, lines in sections.items():
        if name == "Returns":
            parsed[name] = [("", " ".join(line.strip() for line in lines if line.strip()))]
        else:
            parsed[name] = _section_entries(lines)
    return prose, parsed


def prose_markdown(lines: list[str]) -> list[str]:
    """Paragraphs as they are; indented blocks as code blocks."""
    out: list[str] = []
    block: list[str] = []

    def flush():
        if block:
            out.extend(["", *("    " + code for code in inspect.cleandoc("\n".join(block)).splitlines()), ""])
            block.clear()

    for line in lines:
        if line.startswith("  ") or (block and not line.strip()):
            block.append(line)
            continue
        flush()
        out.append(line)
    flush()
    while out and not out[-1].strip():
        out.pop()
    while out and not out[0].strip():
        out.pop(0)
    return out


class Writer:
    def __init__(self, root: Path):
        self.reader = Reader(root)
        self.problems: list[str] = []
        self.lines: list[str] = []

    def emit(self, *lines: str) -> None:
        self.lines.extend(lines)

    def macro(self, module: Module, name: str, fn: ast.FunctionDef, what: str = "Macro") -> None:
        doc = ast.get_docstring(fn)
        if not doc:
            self.problems.append(f"{module.relpath}: macro {name} has no docstring")
            return
        args = fn.args
        defaults = [None] * (len(args.args) - len(args.defaults)) + list(args.defaults)
        params = [(a.arg, d) for a, d in zip(args.args, defaults, strict=True)]
        signature = [a if d is None else f"{a} = {_starlark(d)}" for a, d in params]
        if args.kwarg:
            signature.append(f"**{args.kwarg.arg}")
            params.append((f"**{args.kwarg.arg}", None))
        self.emit(f"```starlark\n{name}({', '.join(signature)})\n```", "")
        prose, sections = split_docstring(doc)
        self.emit(*prose_markdown([f"*{what}.* {prose[0]}", *prose[1:]]), "")
        if "Declares" in sections:
            self.emit("Declares:", "", "| target | what |", "| --- | --- |")
            for target, what in sections["Declares"]:
                self.emit(f"| `{_cell(target)}` | {_cell(what)} |")
            self.emit("")
        documented = dict(sections.get("Args", []))
        for param, _ in params:
            if param not in documented:
                self.problems.append(f"{module.relpath}: macro {name}: parameter {param} is not under Args:")
        extra = sorted(set(documented) - {p for p, _ in params})
        if extra:
            self.problems.append(
                f"{module.relpath}: macro {name}: Args: names no parameter: {', '.join(extra)}"
            )
        if params:
            self.emit("| parameter | default | description |", "| --- | --- | --- |")
            for param, default in params:
                shown = "required" if default is None else f"`{_starlark(default)}`"
                if param.startswith("**"):
                    shown = ""
                self.emit(f"| `{param}` | {shown} | {_cell(documented.get(param, ''))} |")
            self.emit("")
        if "Returns" in sections:
            self.emit(f"Returns: {sections['Returns'][0][1]}", "")
        # The rule the macro hands **kwargs to: its attributes are the macro's too.
        for node in ast.walk(fn):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            if not any(kw.arg is None for kw in node.keywords):
                continue
            try:
                where, rule_name, value = self.reader.definition(module, node.func.id)
            except DocError:
                continue
            if _kind(value) == "rule":
                self.emit(f"Through `**kwargs`, the attributes of the rule `{rule_name}`:", "")
                self.attributes(where, rule_name, value)

    def rule(self, module: Module, name: str, call: ast.Call) -> None:
        prose = self.doc_of(module, name, call).splitlines()
        self.emit(*prose_markdown([f"*Rule.* {prose[0]}", *prose[1:]]), "")
        self.attributes(module, name, call)

    def doc_of(self, module: Module, name: str, call: ast.Call) -> str:
        doc = _keyword(call, "doc")
        if doc is None:
            self.problems.append(f"{module.relpath}: {name} has no doc")
            return ""
        return inspect.cleandoc(self.reader.string(module, doc))

    def attributes(self, module: Module, name: str, call: ast.Call) -> None:
        attrs = _keyword(call, "attrs")
        entries = [] if attrs is None else self.reader.entries(module, attrs)
        public = [(key, where, value) for key, where, value in entries if not key.startswith("_")]
        if not public:
            self.emit("No attributes besides the common ones (`name`, `tags`, `visibility`, ...).", "")
            return
        self.emit("| attribute | type | default | description |", "| --- | --- | --- | --- |")
        for key, where, value in sorted(public, key=lambda e: e[0]):
            if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)):
                raise DocError(f"{where.relpath}: attribute {key} of {name} is not an attr.*() call")
            kind = value.func.attr
            doc = _keyword(value, "doc")
            if doc is None:
                self.problems.append(f"{where.relpath}: attribute {key} of {name} has no doc")
                text = ""
            else:
                text = self.reader.string(where, doc)
            mandatory = _keyword(value, "mandatory")
            default = _keyword(value, "default")
            if mandatory is not None and _const(mandatory):
                shown = "required"
            elif default is not None:
                shown = f"`{_starlark(default)}`"
            else:
                shown = ""
            values = _keyword(value, "values")
            if values is not None:
                text += " One of: " + ", ".join(f"`{_starlark(v)}`" for v in values.elts) + "."
            self.emit(f"| `{key}` | {kind} | {shown} | {_cell(text)} |")
        self.emit("")

    def provider(self, module: Module, name: str, call: ast.Call) -> None:
        prose = self.doc_of(module, name, call).splitlines()
        self.emit(*prose_markdown([f"*Provider.* {prose[0]}", *prose[1:]]), "")
        fields = _keyword(call, "fields")
        entries = [] if fields is None else self.reader.entries(module, fields)
        if not entries:
            return
        self.emit("| field | description |", "| --- | --- |")
        for key, where, value in sorted(entries, key=lambda e: e[0]):
            self.emit(f"| `{key}` | {_cell(self.reader.string(where, value))} |")
        self.emit("")

    def entry(self, module: Module, public_name: str) -> None:
        where, name, value = self.reader.definition(module, public_name)
        kind = _kind(value)
        self.emit(f"### {public_name}", "")
        origin = f"`{where.relpath}`" + (f" (`{name}`)" if name != public_name else "")
        self.emit(f"Defined in {origin}.", "")
        if kind == "macro":
            self.macro(where, public_name, value)
        elif kind == "rule":
            self.rule(where, public_name, value)
        elif kind == "provider":
            self.provider(where, public_name, value)
        else:
            raise DocError(f"{where.relpath}: {public_name} is neither a rule, a provider nor a macro")

    def build_settings(self, build_file: str) -> None:
        module = self.reader.module(build_file)
        package = str(Path(build_file).parent)
        for node in module.tree.body:
            if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
                continue
            call = node.value
            if not (isinstance(call.func, ast.Name) and call.func.id in module.loads):
                continue
            where, rule_name, value = self.reader.definition(module, call.func.id)
            setting = _kind(value) == "rule" and _keyword(value, "build_setting")
            if not setting:
                continue
            target = _const(_keyword(call, "name"))
            self.emit(f"### --//{package}:{target}", "")
            default = _keyword(call, "build_setting_default")
            kind = setting.func.attr if isinstance(setting, ast.Call) else ast.unparse(setting)
            self.emit(
                f"*Build setting* (`{rule_name}`, a {kind}; default `{_starlark(default)}`). "
                + self.doc_of(where, rule_name, value),
                "",
            )
            comment = module.comment_above(node)
            if not comment:
                self.problems.append(f"{build_file}: build setting {target} has no comment above it")
            self.emit(*prose_markdown(comment.splitlines()), "")

    def workspace_functions(self, relpath: str) -> None:
        module = self.reader.module(relpath)
        self.emit(*prose_markdown(module.docstring().splitlines()), "")
        for name, fn in module.defs.items():
            if not name.startswith("_"):
                self.emit(f"### {name}", "")
                self.macro(module, name, fn, what="WORKSPACE function")


def render(root: Path = ROOT) -> str:
    """docs/rules.md as the .bzl files under `root` document it; raises DocError when they cannot."""
    writer = Writer(root)
    defs = writer.reader.module("rules/defs.bzl")
    exported = [n for n, v in defs.assigns.items() if not n.startswith("_") and isinstance(v, ast.Name)]
    providers = [n for n in exported if _kind(writer.reader.definition(defs, n)[2]) == "provider"]
    writer.emit(
        "# Rules reference",
        "",
        "<!-- Generated by tools/docs/gen_rules_doc.py from the docstrings in rules/: do not edit.",
        "     //tests:rules_doc_test fails when this file is not what the generator writes. -->",
        "",
        *prose_markdown(defs.docstring().splitlines()),
        "",
        '    load("@rules_warp//rules:defs.bzl", ' + ", ".join(f'"{n}"' for n in exported) + ")",
        "",
        "Contents: "
        + ", ".join(f"[{n}](#{n.lower()})" for n in exported)
        + "; [build settings](#build-settings); [WORKSPACE setup](#workspace-setup).",
        "",
        "## Rules and macros",
        "",
    )
    for name in [n for n in exported if n not in providers]:
        writer.entry(defs, name)
    writer.emit("## Providers", "")
    for name in providers:
        writer.entry(defs, name)
    writer.emit("## Build settings", "")
    writer.build_settings("rules/BUILD.bazel")
    writer.emit("## WORKSPACE setup", "", "From `@rules_warp//rules:repositories.bzl`.", "")
    writer.workspace_functions("rules/repositories.bzl")
    if writer.problems:
        raise DocError("undocumented public API:\n  " + "\n  ".join(writer.problems))
    text = "\n".join(writer.lines)
    return re.sub(r"\n{3,}", "\n\n", text).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this one)")
    parser.add_argument("--out", type=Path, default=None, help="where to write (default: ROOT/docs/rules.md)")
    parser.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    args = parser.parse_args(argv)
    out = args.out or args.root / OUT
    try:
        text = render(args.root)
    except DocError as exc:
        print(f"gen_rules_doc: {exc}", file=sys.stderr)
        return 1
    if args.check:
        current = out.read_text(encoding="utf-8") if out.is_file() else ""
        if current != text:
            print(f"{out} is not current: run tools/docs/gen_rules_doc.py", file=sys.stderr)
            return 1
        return 0
    out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
