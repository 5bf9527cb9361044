"""The strict JSON profile a bundle's manifest.json, golden.json and capture.json are read in, the
same in both readers (runtime/internal/json.cc), and the value checks wrpkg.schema_fields's formats use.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from wrpkg.errors import VerifyError
from wrpkg.names import name_problem, shown

# The strict JSON profile, the same in both readers (runtime/internal/json.cc): a duplicate key, NaN or
# Infinity, an integer outside 64 bits, nesting deeper than MAX_JSON_DEPTH or invalid UTF-8 is
# refused, because each is read differently by different parsers (a later duplicate wins in
# Python, NaN is no JSON at all), so two readers would otherwise see two manifests in one file.
# Nesting counts containers: the top-level object is depth 1.
# One table for both readers (the C++ runtime compiles it in: runtime/internal/bundle_limits.cc).
_LIMITS = json.loads((Path(__file__).with_name("schemas") / "bundle_limits.json").read_bytes())
MAX_JSON_BYTES = _LIMITS["max_json_bytes"]  # manifest.json and golden.json, checked before they are read
MAX_JSON_DEPTH = _LIMITS["max_json_depth"]
MAX_CAPTURE_INFO_BYTES = _LIMITS["max_capture_info_bytes"]
_INT_MIN, _INT_END = -(2**63), 2**64  # an integer must fit int64 or uint64
_INT_MAX_DIGITS = 20  # len(str(2**64 - 1)): longer digit strings are refused before int()


def edit_fix(file_name: str) -> str:
    return f"rebuild the bundle's wrp_artifact target; do not edit {file_name} by hand"


def strict_json_loads(data: bytes | bytearray | memoryview, path, file_name: str):
    """`data` parsed in the strict profile (above); any deviation is one VerifyError naming `path`."""
    fix = edit_fix(file_name)

    def refuse(what: str) -> VerifyError:
        return VerifyError(f"{path}: not valid JSON in the strict profile: {what}", fix=fix)

    def unique_keys(pairs: list[tuple[str, object]]) -> dict:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            seen = set()
            duplicate = next(key for key, _ in pairs if key in seen or seen.add(key))
            raise refuse(f"duplicate key {json.dumps(duplicate)}")
        return obj

    def no_constant(name: str):
        raise refuse(f"{name} is not a JSON number")

    def int64(text: str) -> int:
        if len(text.lstrip("-")) > _INT_MAX_DIGITS or not _INT_MIN <= int(text) < _INT_END:
            raise refuse(f"integer {text[:24]}{'...' if len(text) > 24 else ''} does not fit in 64 bits")
        return int(text)

    def finite(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise refuse(f"number {text[:24]} is out of range")
        return value

    # runtime/internal/json.cc refuses a NUL byte before parsing (nlohmann would stop reading there): so here,
    # with its message, wherever the byte is.
    nul = (bytes(data) if isinstance(data, memoryview) else data).find(b"\0")
    if nul >= 0:
        raise refuse(f"a NUL byte at byte {nul}")
    try:
        text = str(data, "utf-8")
    except UnicodeDecodeError as exc:
        raise refuse(f"invalid UTF-8 at byte {exc.start}") from exc
    try:
        value = json.loads(
            text,
            object_pairs_hook=unique_keys,
            parse_constant=no_constant,
            parse_int=int64,
            parse_float=finite,
        )
    except json.JSONDecodeError as exc:
        raise VerifyError(f"{path}: not valid JSON ({exc})", fix=fix) from exc
    except RecursionError as exc:
        # The decoder recurses per container: far deeper nesting than the limit ends here.
        raise refuse(f"nested deeper than {MAX_JSON_DEPTH} levels") from exc
    except MemoryError as exc:
        raise refuse("too large to parse in the memory available") from exc
    # Only a \u escape can spell a surrogate: text without one needs no string walk.
    _check_nesting(value, refuse, strings="\\u" in text)
    return value


def _check_nesting(value, refuse, *, strings: bool) -> None:
    """Refuses nesting deeper than MAX_JSON_DEPTH and, with `strings`, strings that are no
    Unicode text (a lone surrogate such as \\ud800, which a JSON escape can spell but UTF-8
    cannot hold). Iterative: the depth being checked is what a recursive walk overflows on."""
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    if strings and isinstance(value, str):
        _check_text(value, refuse)
    while stack:
        item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise refuse(f"nested deeper than {MAX_JSON_DEPTH} levels")
        if isinstance(item, dict):
            if strings:
                for key in item:
                    _check_text(key, refuse)
            item = item.values()
        for child in item:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
            elif strings and isinstance(child, str):
                _check_text(child, refuse)


def _check_text(text: str, refuse) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise refuse(f"string {json.dumps(text)[:40]} holds a lone surrogate") from exc


def plain_relpath_problem(value) -> str | None:
    """Why `value` is not a plain relative path inside the bundle, or None: the rule of
    runtime/internal/schema_fields.cc's IsPlainRelativePath (a string; not empty; no leading '/'; no empty, '.' or
    '..' component; a name by wrpkg.names: no control character or backslash, in NFC), for every
    path a manifest names and every tar entry. A message shows it escaped (wrpkg.names.shown)."""
    if not isinstance(value, str):
        return f"expected a string path, got {json_type(value)}"
    if is_safe_relpath(value):
        return None
    return f'"{shown(value)}" is not a plain relative path inside the bundle'


def json_type(value) -> str:
    """The JSON type name of a parsed value, as runtime/internal/json.cc's TypeName spells it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), type(value).__name__)


def is_size(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**63


def is_sha256_hex(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


def is_safe_relpath(relpath: str) -> bool:
    parts = relpath.split("/")
    return (
        bool(relpath)
        and not relpath.startswith("/")
        and "\\" not in relpath
        and "\0" not in relpath
        and all(p not in ("", ".", "..") for p in parts)
        and name_problem(relpath) is None
    )
