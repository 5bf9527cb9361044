"""docs/rules.md is what tools/docs/gen_rules_doc.py writes from the docstrings in rules/.

The generator reads the .bzl files with Python's `ast` (no Stardoc for Bazel 4.2 here) and
refuses a public attribute, macro parameter or provider field without a doc, so the
reference is complete and current, or this test fails saying what to run or to write."""

from __future__ import annotations

import difflib
import importlib.util
import shutil
from pathlib import Path

import pytest

# The test runs in its runfiles: rules/, docs/rules.md and the generator are its data.
ROOT = Path.cwd()


def _generator():
    spec = importlib.util.spec_from_file_location("gen_rules_doc", ROOT / "tools/docs/gen_rules_doc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rules_doc_is_current():
    expected = _generator().render(ROOT)
    current = (ROOT / "docs/rules.md").read_text(encoding="utf-8")
    if current != expected:
        diff = "".join(
            difflib.unified_diff(
                current.splitlines(keepends=True),
                expected.splitlines(keepends=True),
                "docs/rules.md",
                "generated",
            )
        )
        pytest.fail(f"docs/rules.md is not current: run tools/docs/gen_rules_doc.py\n{diff[:6000]}")


def test_every_public_rule_is_documented():
    text = (ROOT / "docs/rules.md").read_text(encoding="utf-8")
    for name in ("wrp_artifact", "wrp_cc_library", "wrp_replay_test", "WrpInfo", "rules_warp_dependencies"):
        assert f"### {name}\n" in text, name
    for setting in ("--//rules:archs", "--//rules:capture_mode"):
        assert f"### {setting}\n" in text, setting
    # Every attribute of wrp_artifact's rule, as rules/private/artifact.bzl declares it.
    for attribute in (
        "archs",
        "capture",
        "capture_mode",
        "device",
        "device_model",
        "keep_source",
        "ptx",
        "recorded_capture",
    ):
        assert f"| `{attribute}` |" in text, attribute


def test_device_model_values_are_the_capture_tools_models():
    """wrp_artifact's device_model accepts exactly the names `wrpkg capture --device-model` knows (Bazel
    refuses another, listing these), with the tool's default."""
    import ast  # noqa: PLC0415

    from wrpkg.capture import device_model  # noqa: PLC0415

    tree = ast.parse((ROOT / "rules/private/artifact.bzl").read_text(encoding="utf-8"))
    (attr,) = [
        node.values[i]
        for node in ast.walk(tree)
        if isinstance(node, ast.Dict)
        for i, key in enumerate(node.keys)
        if isinstance(key, ast.Constant) and key.value == "device_model"
    ]
    keywords = {k.arg: ast.literal_eval(k.value) for k in attr.keywords if k.arg in ("default", "values")}
    assert keywords == {"default": device_model.DEFAULT_MODEL, "values": list(device_model.CHOICES)}


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    for relpath in ("rules/BUILD.bazel", "rules/defs.bzl", "rules/repositories.bzl"):
        (root / relpath).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / relpath, root / relpath)
    shutil.copytree(ROOT / "rules/private", root / "rules/private", ignore=shutil.ignore_patterns("BUILD*"))
    return root


def test_an_undocumented_attribute_is_refused(tmp_path):
    gen = _generator()
    root = _tree(tmp_path)
    gen.render(root)  # the copy documents as the tree does
    cc = root / "rules/private/cc.bzl"
    text = cc.read_text(encoding="utf-8")
    cc.write_text(
        text.replace('"_runtime": attr.label_list(', '"runtime": attr.label_list('), encoding="utf-8"
    )
    with pytest.raises(gen.DocError, match="attribute runtime of wrp_cc_library has no doc"):
        gen.render(root)


def test_an_undocumented_macro_parameter_is_refused(tmp_path):
    gen = _generator()
    root = _tree(tmp_path)
    test_bzl = root / "rules/private/test.bzl"
    text = test_bzl.read_text(encoding="utf-8")
    assert "      size: the test size.\n" in text
    test_bzl.write_text(text.replace("      size: the test size.\n", ""), encoding="utf-8")
    with pytest.raises(gen.DocError, match="parameter size is not under Args:"):
        gen.render(root)


def test_check_mode_names_the_command(tmp_path, capsys):
    gen = _generator()
    root = _tree(tmp_path)
    (root / "docs").mkdir()
    (root / "docs/rules.md").write_text("stale\n", encoding="utf-8")
    assert gen.main(["--root", str(root), "--check"]) == 1
    assert "run tools/docs/gen_rules_doc.py" in capsys.readouterr().err
    assert gen.main(["--root", str(root)]) == 0
    assert gen.main(["--root", str(root), "--check"]) == 0
