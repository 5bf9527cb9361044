"""One rule for a name a bundle holds and one way to show it (wrpkg/names.py; runtime/internal/names.cc reads the
same table, and tests/test_validity_parity.py holds both readers to one verdict and one spelling on the
hostile names of tests/hostile_corpus.py), and the NFC table as tools/unicode/nfc_tables.py writes it."""

from __future__ import annotations

import importlib.util
import os
import random
import re
import unicodedata
from pathlib import Path

import pytest

from wrpkg import nfc_table
from wrpkg.names import decode_name, name_problem, shown


def _generator():
    spec = importlib.util.spec_from_file_location("nfc_tables", os.environ["WRP_NFC_TABLES_PY"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_both_tables_are_what_the_generator_writes():
    rows = _generator().ranges()
    assert nfc_table.UNICODE_VERSION == unicodedata.unidata_version
    assert list(nfc_table.RANGES) == rows
    header = Path(os.environ["WRP_NFC_TABLE_H"]).read_text()
    numbers = re.findall(r"\{0x([0-9A-F]+), 0x([0-9A-F]+), (\d+), (\d)\}", header)
    assert [tuple(int(n, 16) if i < 2 else int(n) for i, n in enumerate(row)) for row in numbers] == rows
    assert f'kUnicodeVersion[] = "{unicodedata.unidata_version}"' in header


@pytest.mark.parametrize(
    "name",
    [
        "golden/x.bin",
        "caf\u00e9",
        "\ud55c\uad6d\uc5b4",
        "\u05e9\u05b8\u05c1",
        "a\u0335b",
        "\u00e9\u0335",
        "x_\u4e2d",
    ],
)
def test_names_in_nfc_pass(name):
    assert unicodedata.is_normalized("NFC", name)
    assert name_problem(name) is None


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("cafe\u0301", "NFC"),  # NFD of café
        ("\u212b", "NFC"),  # ANGSTROM SIGN: NFC makes it U+00C5
        ("a\u05b1\u05b0", "NFC"),  # marks out of canonical order (class 11 before 10)
        ("\u1100\u1161", "NFC"),  # Hangul jamo NFC composes
        ("a\x1bb", "control character"),
        ("a\x85", "control character"),
        ("a\x7f", "control character"),
        ("a\\b", "backslash"),
    ],
)
def test_names_refused(name, problem):
    assert problem in name_problem(name)


def test_a_quick_check_yes_is_always_nfc():
    """The rule is the quick check: never a name that is not NFC (it may refuse one that is, a MAYBE)."""
    rng = random.Random(40)
    marks = [first for first, _, _, _ in nfc_table.RANGES][:200] + [0x41, 0x65, 0xE9, 0x1100, 0xAC00, 0x05D0]
    for _ in range(20000):
        name = "".join(chr(rng.choice(marks)) for _ in range(rng.randint(1, 4)))
        if name_problem(name) is None:
            assert unicodedata.is_normalized("NFC", name), ascii(name)


def test_names_are_decoded_strictly():
    assert decode_name("caf\u00e9".encode()) == "caf\u00e9"
    for raw in [b"caf\xe9", b"a\xc0\xafb", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82"]:
        with pytest.raises(ValueError, match="is not valid UTF-8"):
            decode_name(raw)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("golden/x.bin", "golden/x.bin"),
        ("caf\u00e9", "caf\u00e9"),
        ("\x1b[2J", "\\x1b[2J"),
        ("a\nerror: forged", "a\\x0aerror: forged"),
        ("a\x85", "a\\xc2\\x85"),
        ("a\\b", "a\\x5cb"),
        (b"caf\xe9", "caf\\xe9"),
        (os.fsdecode(b"caf\xe9"), "caf\\xe9"),  # as os.listdir gives it
        (b"\xe2\x82", "\\xe2\\x82"),
    ],
)
def test_shown(name, expected):
    assert shown(name) == expected
