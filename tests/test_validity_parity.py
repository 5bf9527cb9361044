"""One bundle-validity policy: wrpkg.verify and the C++ runtime give every bundle of the
shared corpus (tests/bundle_corpus.py) the verdict the README's policy expects."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from bundle_corpus import make_corpus

from wrpkg.errors import WrpError
from wrpkg.verify import verify_bundle, verify_tar

RUNFILES = Path(os.environ.get("TEST_SRCDIR", ".")) / "rules_warp"
VERIFY_BUNDLE = os.environ["WRP_VERIFY_BUNDLE"]
GOOD_DIR = Path(os.environ["WRP_GOOD_BUNDLE_DIR"])
GOOD_TAR = Path(os.environ["WRP_GOOD_BUNDLE_TAR"])


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(GOOD_DIR.resolve(), GOOD_TAR, tmp_path_factory.mktemp("corpus"))


def python_verdict(case) -> tuple[bool, str]:
    try:
        verify_tar(case.path) if case.kind == "tar" else verify_bundle(case.path)
    except WrpError as exc:
        return False, str(exc)
    return True, ""


def cpp_verdict(case) -> tuple[bool, str]:
    cmd = [VERIFY_BUNDLE, "--tar", str(case.path)] if case.kind == "tar" else [VERIFY_BUNDLE, str(case.path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.startswith("ok"), proc.stdout.strip()


def test_the_corpus_is_complete(corpus):
    names = {c.name for c in corpus}
    for required in [
        "extra_file", "missing_file", "flipped_byte", "truncated_file", "edited_manifest",
        "duplicate_manifest_entry", "dotdot_path_in_manifest", "absolute_path_in_manifest",
        "symlinked_directory_escaping_bundle", "oversized_size_in_manifest",
        "tar_dotdot_entry", "tar_absolute_entry", "tar_duplicate_entry", "tar_truncated",
        "missing_golden_manifest", "golden_manifest_of_other_bundle", "edited_golden_digest",
        "tar_without_golden_manifest",
    ]:  # fmt: skip
        assert required in names


def test_both_runtimes_judge_the_corpus_alike(corpus):
    wrong = []
    for case in corpus:
        cpp_ok, cpp_message = cpp_verdict(case)
        if cpp_ok != case.valid:
            wrong.append(f"C++ {case.name}: expected {'ok' if case.valid else 'reject'}, got {cpp_message}")
        py_ok, py_message = python_verdict(case)
        if py_ok != case.valid:
            wrong.append(
                f"Python {case.name}: expected {'ok' if case.valid else 'reject'}, got {py_message or 'ok'}"
            )
    assert not wrong, "\n".join(wrong)


def test_rejections_name_the_file(corpus):
    by_name = {c.name: c for c in corpus}
    for case_name, needle in [
        ("extra_file", "notes.txt"),
        ("flipped_byte", "_modules/"),
        ("missing_file", "golden/"),
        ("missing_golden_manifest", "golden.json"),
        ("golden_manifest_of_other_bundle", "golden.json"),
    ]:
        case = by_name[case_name]
        assert needle in cpp_verdict(case)[1]
        assert needle in python_verdict(case)[1]
