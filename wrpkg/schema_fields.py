"""The field checks of manifest.json, golden.json and capture.json, driven by their JSON Schemas
(wrpkg/schemas/): the schema is the one declaration of every field, and this walks it, as
runtime/internal/schema_fields.cc does in C++, rule for rule and message for message.

The walker reads these keywords: type, const, enum, properties, required, additionalProperties
(false), items, minItems, minimum, $ref ("#/definitions/<name>") and format, whose names are the
checks both readers share (FORMATS: relpath, sha256, size, cuda_driver). A node with a format is
checked by it (a "null" in its type admits null; "type" beside it is for standard validators) and
minimum, an integer a number must not be below (beside a format too, after it). Any other
keyword is a fault of the schema, refused when it is compiled, so a schema
cannot say what the readers do not check. Each refusal is a VerifyError naming the file, the field
as both readers name it ("modules[0].binary"), what was wrong, and the schema file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from wrpkg.errors import VerifyError
from wrpkg.names import shown
from wrpkg.strict_json import edit_fix, is_sha256_hex, is_size, json_type, plain_relpath_problem

SCHEMA_DIR = Path(__file__).with_name("schemas")

# Strings are shown up to this many UTF-8 bytes in a message (runtime/internal/schema_fields.cc: kShownBytes).
SHOWN_BYTES = 80
_KEYWORDS = frozenset(
    {"$schema", "$comment", "type", "const", "enum", "properties", "required", "additionalProperties",
     "items", "minItems", "$ref", "definitions", "format", "minimum"}
)  # fmt: skip
# Beside a format, for standard validators: the format's check is at least as strict.
_BESIDE_FORMAT = frozenset({"$comment", "type", "minimum", "format"})
_ARTICLES = {"integer": "an integer", "array": "an array", "object": "an object"}


def shown_value(value) -> str:
    """A JSON value for a message, the same in both readers: null, true, false, an integer's digits,
    a string quoted (names.shown, its first SHOWN_BYTES bytes), else its type name."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        raw = value.encode("utf-8", "surrogatepass")
        return f'"{shown(raw[:SHOWN_BYTES])}"' + ("..." if len(raw) > SHOWN_BYTES else "")
    return json_type(value)


def _is_cuda_version(text: str) -> bool:
    """ "13.4": the form runtime/internal/manifest.cc's DriverVersion reads (1 to 3 digits, a dot, 1 or 2 digits)."""
    major, dot, minor = text.partition(".")
    return (
        bool(dot)
        and 1 <= len(major) <= 3
        and 1 <= len(minor) <= 2
        and (major + minor).isascii()
        and (major + minor).isdigit()
    )


def _sha256(value) -> str | None:
    if isinstance(value, str) and is_sha256_hex(value):
        return None
    return f"expected 64 lowercase hex digits, got {shown_value(value)}"


def _size(value) -> str | None:
    return None if is_size(value) else f"expected a non-negative integer, got {shown_value(value)}"


def _cuda_driver(value) -> str | None:
    if value is None or is_size(value) or (isinstance(value, str) and _is_cuda_version(value)):
        return None
    return (
        f'expected null, a CUDA version such as "13.4", or an integer such as 13040, got {shown_value(value)}'
    )


# The checks a schema's "format" names: the problem with a value, or None.
FORMATS: dict[str, Callable[[object], str | None]] = {
    "relpath": plain_relpath_problem,
    "sha256": _sha256,
    "size": _size,
    "cuda_driver": _cuda_driver,
}


def _predicate(problem: Callable[[object], str | None]) -> Callable[[object], bool]:
    return lambda value: problem(value) is None


def format_predicates() -> dict[str, Callable[[object], bool]]:
    """FORMATS as a standard validator's format predicates (fastjsonschema.compile's `formats`)."""
    return {name: _predicate(problem) for name, problem in FORMATS.items()}


# The Python types of each JSON type, as json.loads makes them.
_IS_TYPE = {
    "null": (type(None),),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
    "string": (str,),
    "array": (list,),
    "object": (dict,),
}


def _one_of(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def types_text(types: list[str]) -> str:
    """ "string", "string or null", "an integer or a string": what a type keyword asks for."""
    kinds = [t for t in types if t != "null"]
    text = kinds[0] if len(kinds) == 1 else _one_of([_ARTICLES.get(t, "a " + t) for t in kinds])
    return text + " or null" if "null" in types else text


def _below(value, minimum: int) -> bool:
    """A number under `minimum` (a value of another type is the type keyword's or the format's to refuse)."""
    return type(value) in (int, float) and value < minimum


def _same(a, b) -> bool:
    return json_type(a) == json_type(b) and a == b


class _Refused(Exception):
    def __init__(self, field: str, what: str):
        super().__init__(field, what)
        self.field, self.what = field, what


class SchemaError(Exception):
    """A schema the walker cannot read: a fault of wrpkg/schemas, not of a bundle."""


# A field as the walk passes it down: None for the top level, else (parent, key or index); made text only for a
# refusal (_field_text), so a manifest of 40k bindings builds no field name it does not show.
Field = tuple | None
Check = Callable[[object, Field], None]


def _field_text(field: Field) -> str:
    keys = []
    while field is not None:
        field, key = field
        keys.append(key)
    text = ""
    for key in reversed(keys):
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else key)
    return text or "(top level)"


class SchemaFields:
    """One schema compiled into its field checks. `check(raw, path)` raises the first refusal."""

    def __init__(self, schema: dict, schema_file: str, file_name: str):
        self.where = f"wrpkg/schemas/{schema_file}"
        self.file_name = file_name
        self._definitions = schema.get("definitions", {})
        self._compiled: dict[str, Check] = {}
        self.fields: set[str] = set()  # every field the walker reaches, as a schema path ("files[].path")
        self._check = self._compile(schema, "")

    def problem(self, raw) -> tuple[str, str] | None:
        """The first field of `raw` the schema refuses, as (field, what), or None: properties in key order,
        then unknown fields (runtime/internal/schema_fields.h's SchemaFieldProblem, message for message)."""
        try:
            self._check(raw, None)
        except _Refused as refused:
            return refused.field, refused.what
        return None

    def check(self, raw, path) -> None:
        """Raises the first refusal (problem()) as a VerifyError naming `path` and the field."""
        found = self.problem(raw)
        if found is not None:
            raise VerifyError(f'{path}: field "{found[0]}": {found[1]}', fix=edit_fix(self.file_name))

    def fail(self, field: Field, what: str) -> NoReturn:
        raise _Refused(_field_text(field), f"{what} ({self.where})")

    def _compile(self, node: dict, at: str) -> Check:  # noqa: C901, PLR0915 (one branch per keyword)
        if not isinstance(node, dict):
            raise SchemaError(f"{self.where}: {at or '(top level)'}: a schema node must be an object")
        unknown = set(node) - _KEYWORDS
        if unknown:
            raise SchemaError(f"{self.where}: {at or '(top level)'}: keywords {sorted(unknown)} are not read")
        if at:
            self.fields.add(at)
        if "$ref" in node:
            return self._reference(node, at)
        minimum = node.get("minimum")
        if minimum is not None and not is_size(minimum):
            raise SchemaError(f"{self.where}: {at}: minimum {minimum!r}")
        types = node.get("type")
        types = [types] if isinstance(types, str) else types
        if types is not None and (not types or not set(types) <= set(_IS_TYPE)):
            raise SchemaError(f"{self.where}: {at}: type {types}")
        nullable = types is not None and "null" in types
        fail = self.fail

        if "format" in node:
            problem = FORMATS.get(node["format"])
            if problem is None or set(node) - _BESIDE_FORMAT:
                raise SchemaError(f"{self.where}: {at}: format {node['format']!r} with {sorted(node)}")

            def check_format(value, field):
                if not (nullable and value is None):
                    what = problem(value)
                    if what is not None:
                        fail(field, what)
                    if minimum is not None and _below(value, minimum):
                        fail(field, f"expected at least {minimum}, got {shown_value(value)}")

            return check_format

        checks: list[Check] = []
        if types is not None:
            # Exact Python types: the documents are json.loads's (bool is no int, a float no integer).
            allowed = frozenset(py for t in types for py in _IS_TYPE[t])
            wanted = types_text(types)

            def check_type(value, field):
                if type(value) not in allowed:
                    fail(field, f"expected {wanted}, got {json_type(value)}")

            checks.append(check_type)
        if "const" in node:
            const = node["const"]

            def check_const(value, field):
                if not (type(value) is type(const) and value == const) and not _same(value, const):
                    fail(field, f"expected {shown_value(const)}, got {shown_value(value)}")

            checks.append(check_const)
        if "enum" in node:
            allowed = node["enum"]
            wanted_values = _one_of([shown_value(v) for v in allowed])
            exact = {(type(v), v) for v in allowed if not isinstance(v, (list, dict))}

            def check_enum(value, field):
                try:
                    if (type(value), value) in exact:
                        return
                except TypeError:  # an array or object: unhashable, and in no enum of ours
                    pass
                if not any(_same(value, v) for v in allowed):
                    fail(field, f"expected {wanted_values}, got {shown_value(value)}")

            checks.append(check_enum)
        if minimum is not None:

            def check_minimum(value, field):
                if _below(value, minimum):
                    fail(field, f"expected at least {minimum}, got {shown_value(value)}")

            checks.append(check_minimum)
        if "properties" in node or "additionalProperties" in node or "required" in node:
            checks.append(self._object(node, at))
        if "items" in node or "minItems" in node:
            checks.append(self._array(node, at))

        if len(checks) == 1 and not nullable:
            return checks[0]

        def check_all(value, field):
            if nullable and value is None:
                return
            for check in checks:
                check(value, field)

        return check_all

    def _reference(self, node: dict, at: str) -> Check:
        ref = node["$ref"]
        name = ref.removeprefix("#/definitions/")
        if set(node) - {"$ref", "$comment"} or name == ref or name not in self._definitions:
            raise SchemaError(f"{self.where}: {at}: $ref {ref!r}")
        if name not in self._compiled:
            self._compiled[name] = lambda value, field: self._compiled[name](value, field)  # while compiling
            self._compiled[name] = self._compile(self._definitions[name], at)
        return self._compiled[name]

    def _object(self, node: dict, at: str) -> Check:
        properties = node.get("properties", {})
        required = set(node.get("required", []))
        closed = node.get("additionalProperties", True)
        if closed not in (True, False) or not required <= set(properties):
            raise SchemaError(f"{self.where}: {at}: additionalProperties or required")
        children = [
            (key, key in required, self._compile(properties[key], f"{at}.{key}" if at else key))
            for key in sorted(properties)
        ]
        fail = self.fail

        def check_object(value, field):
            if type(value) is not dict:
                return  # the type keyword says whether an object may be something else
            known = 0
            for key, needed, check in children:
                if key in value:
                    known += 1
                    check(value[key], (field, key))
                elif needed:
                    fail((field, key), "missing")
            if not closed and known != len(value):
                for key in sorted(value):
                    if key not in properties:
                        fail((field, shown(key)), "unknown field")

        return check_object

    def _array(self, node: dict, at: str) -> Check:
        min_items = node.get("minItems", 0)
        items = self._compile(node["items"], at + "[]") if "items" in node else None
        if not is_size(min_items):
            raise SchemaError(f"{self.where}: {at}: minItems {min_items!r}")
        too_few = "expected a non-empty array" if min_items == 1 else f"expected at least {min_items} items"
        fail = self.fail

        def check_array(value, field):
            if type(value) is not list:
                return
            if len(value) < min_items:
                fail(field, too_few)
            if items is not None:
                for i, item in enumerate(value):
                    items(item, (field, i))

        return check_array


_walkers: dict[str, SchemaFields] = {}


def schema_fields(schema_file: str, file_name: str) -> SchemaFields:
    """The compiled field checks of wrpkg/schemas/`schema_file` (compiled once per process)."""
    walker = _walkers.get(schema_file)
    if walker is None:
        schema = json.loads((SCHEMA_DIR / schema_file).read_bytes())
        walker = _walkers[schema_file] = SchemaFields(schema, schema_file, file_name)
    return walker


def schema_name(schema_file: str) -> str:
    """The "schema" a file of wrpkg/schemas/`schema_file` names itself by ("rules_warp.manifest/4"): its
    schema's const, the one declaration (runtime/internal/manifest.cc reads it there too)."""
    return json.loads((SCHEMA_DIR / schema_file).read_bytes())["properties"]["schema"]["const"]
