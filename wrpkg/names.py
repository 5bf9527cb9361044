"""The one rule for a name a bundle holds, and the one way a message shows a name (runtime/internal/names.cc is
the same rule, check for check: tests/test_validity_parity.py and //tests:names_test hold them to it).

A name (a tar entry's path, a path a manifest lists) is UTF-8, strictly (no overlong form, no
surrogate), holds no control character (U+0000-U+001F, U+007F-U+009F) and no backslash, and is in
Unicode NFC by the quick check of UAX #15 (wrpkg/nfc_table.py; tools/unicode/nfc_tables.py says why a
quick check). So two spellings of one name (a precomposed 'é' and 'e' with a combining accent; a
latin-1 byte and its UTF-8 form) can never be two entries, and no reader decodes a name another way.

A message shows a name from a bundle with `shown`: valid UTF-8 text as it is, and each byte of a control
character, of a backslash or of invalid UTF-8 as \\xNN, so that a hostile name cannot move the cursor,
clear a terminal or forge a log line in either reader's output.
"""

from __future__ import annotations

from bisect import bisect_right

from wrpkg.nfc_table import RANGES

_FIRSTS = [first for first, _, _, _ in RANGES]


def _nfc_values(code_point: int) -> tuple[int, int]:
    """(canonical combining class, NFC_Quick_Check) of `code_point`: (0, 0) for a YES starter."""
    i = bisect_right(_FIRSTS, code_point) - 1
    if i >= 0 and code_point <= RANGES[i][1]:
        return RANGES[i][2], RANGES[i][3]
    return 0, 0


def is_control(code_point: int) -> bool:
    return code_point < 0x20 or 0x7F <= code_point <= 0x9F


def name_problem(name: str) -> str | None:
    """Why `name` (decoded text) breaks the rule, or None; runtime/internal/names.cc's NameProblem, in its order."""
    if any(is_control(ord(c)) for c in name):
        return "holds a control character"
    if "\\" in name:
        return "holds a backslash"
    last = 0
    for c in name:
        combining_class, quick_check = _nfc_values(ord(c))
        if quick_check != 0 or (combining_class and last > combining_class):
            return "is not in Unicode NFC (precomposed, marks in canonical order)"
        last = combining_class
    return None


def decode_name(raw: bytes) -> str:
    """A name's bytes as text, strictly UTF-8 (ValueError "is not valid UTF-8" otherwise)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("is not valid UTF-8") from None


def _bytes_of(name: str | bytes) -> bytes:
    if isinstance(name, bytes):
        return name
    try:
        # A file name os.listdir decoded with surrogateescape: its own bytes back.
        return name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogatepass")


def shown(name: str | bytes) -> str:
    """`name` for a message: valid UTF-8 as text, and every byte of a control character, a backslash or
    invalid UTF-8 as \\xNN (runtime/internal/names.cc's Shown)."""
    raw = _bytes_of(name)
    out = []
    i = 0
    while i < len(raw):
        length = _utf8_length(raw, i)
        if length:
            text = raw[i : i + length].decode("utf-8")
            if not is_control(ord(text)) and text != "\\":
                out.append(text)
                i += length
                continue
        else:
            length = 1
        out.extend(f"\\x{b:02x}" for b in raw[i : i + length])
        i += length
    return "".join(out)


def _utf8_length(raw: bytes, i: int) -> int:
    """The length of the well-formed UTF-8 sequence at raw[i] (Unicode's table 3-7), or 0."""
    c = raw[i]
    if c < 0x80:
        return 1
    if 0xC2 <= c <= 0xDF:
        length, low, high = 2, 0x80, 0xBF
    elif 0xE0 <= c <= 0xEF:
        length = 3
        low, high = (0xA0 if c == 0xE0 else 0x80), (0x9F if c == 0xED else 0xBF)
    elif 0xF0 <= c <= 0xF4:
        length = 4
        low, high = (0x90 if c == 0xF0 else 0x80), (0x8F if c == 0xF4 else 0xBF)
    else:
        return 0
    if i + length > len(raw) or not low <= raw[i + 1] <= high:
        return 0
    if any(not 0x80 <= b <= 0xBF for b in raw[i + 2 : i + length]):
        return 0
    return length
