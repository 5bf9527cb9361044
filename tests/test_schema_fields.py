"""The field checks are the schemas' (issue 39 item 2): wrpkg.schema_fields walks wrpkg/schemas, so an edit of
a schema changes what is accepted, and every field a schema declares is one the walker reaches. The cases of
runtime/testdata/schema_field_cases.json are judged here and by runtime/internal/manifest_test.cc
(runtime/internal/schema_fields.cc), to the same field and message."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest

from wrpkg.manifest import from_json_bytes
from wrpkg.schema_fields import SCHEMA_DIR, SchemaError, SchemaFields

TABLE = json.loads(Path(os.environ["WRP_SCHEMA_FIELD_CASES"]).read_bytes())
FILES = {
    "manifest": ("manifest.schema.json", "manifest.json"),
    "golden": ("golden.schema.json", "golden.json"),
    "capture": ("capture.schema.json", "capture.json"),
}


def _schema(kind: str) -> dict:
    return json.loads((SCHEMA_DIR / FILES[kind][0]).read_bytes())


def _tokens(pointer: str) -> list:
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]


def _parent(doc, pointer: str):
    *path, last = _tokens(pointer)
    for token in path:
        doc = doc[int(token)] if isinstance(doc, list) else doc[token]
    return doc, last


def _set(doc, pointer: str, value) -> None:
    parent, last = _parent(doc, pointer)
    if isinstance(parent, list):
        if last == "-":
            parent.append(value)
        else:
            parent[int(last)] = value
    else:
        parent[last] = value


def _delete(doc, pointer: str) -> None:
    parent, last = _parent(doc, pointer)
    del parent[int(last) if isinstance(parent, list) else last]


def _edited(case: dict, prefix: str, base):
    doc = copy.deepcopy(base)
    for pointer, value in case.get(prefix + "_set", {}).items():
        _set(doc, pointer, value)
    for pointer in case.get(prefix + "_delete", []):
        _delete(doc, pointer)
    return doc


@pytest.mark.parametrize("case", TABLE["cases"], ids=[c["name"] for c in TABLE["cases"]])
def test_the_shared_cases(case):
    schema_file, file_name = FILES[case["schema"]]
    schema = _edited(case, "schema", _schema(case["schema"]))
    if case.get("schema_fault"):
        with pytest.raises(SchemaError):
            SchemaFields(schema, schema_file, file_name)
        return
    document = _edited(case, "document", TABLE["documents"][case["schema"]])
    found = SchemaFields(schema, schema_file, file_name).problem(document)
    expected = case["refusal"]
    assert found == (None if expected is None else (expected["field"], expected["what"]))


def _declared(node: dict, definitions: dict, at: str, out: set) -> None:
    """Every field path the schema declares, found without the walker: properties and items, through $ref."""
    if "$ref" in node:
        node = definitions[node["$ref"].removeprefix("#/definitions/")]
    for key, sub in node.get("properties", {}).items():
        path = f"{at}.{key}" if at else key
        out.add(path)
        _declared(sub, definitions, path, out)
    if "items" in node:
        out.add(at + "[]")
        _declared(node["items"], definitions, at + "[]", out)


@pytest.mark.parametrize("kind", sorted(FILES))
def test_every_declared_field_is_walked(kind):
    schema = _schema(kind)
    declared: set = set()
    _declared(schema, schema.get("definitions", {}), "", declared)
    walker = SchemaFields(schema, *FILES[kind])
    assert walker.fields == declared
    assert len(declared) > 10


@pytest.mark.parametrize("kind", sorted(FILES))
def test_every_definition_is_used(kind):
    schema = _schema(kind)
    text = json.dumps(schema)
    for name in schema.get("definitions", {}):
        assert f'"#/definitions/{name}"' in text, name


def test_the_reader_refuses_what_the_schema_refuses():
    """wrpkg.manifest's reader runs the walk: the table's base manifest with a field of the wrong type is
    refused with the walker's message, naming the file."""
    raw = copy.deepcopy(TABLE["documents"]["manifest"])
    raw["files"][0]["size"] = "5007"
    data = json.dumps(raw, sort_keys=True, indent=1).encode() + b"\n"
    with pytest.raises(Exception) as err:
        from_json_bytes(data, "x/manifest.json")
    assert 'x/manifest.json: field "files[0].size": expected a non-negative integer, got "5007"' in str(
        err.value
    )
    assert "(wrpkg/schemas/manifest.schema.json)" in str(err.value)
