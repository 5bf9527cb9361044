"""Every private Warp name wrpkg relies on (wrpkg.warp_internals.ASSUMPTIONS) exists in the
pinned Warp with the parameters its hooks assume: a Warp upgrade that breaks one fails here,
naming it, instead of somewhere inside a capture."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import warp as wp

from wrpkg import warp_internals

SOURCES = Path(__file__).resolve().parent.parent / "wrpkg"


def test_the_pinned_warp_meets_every_assumption():
    wp.config.log_level = wp.LOG_WARNING
    wp.init()  # the native calls are checked once Warp's library is loaded
    assert warp_internals.check_assumptions() == []


def test_the_check_names_what_a_warp_upgrade_breaks(monkeypatch):
    wp.init()
    capture_class = warp_internals.apic_capture_class()
    monkeypatch.delattr(capture_class, "_pack_param_record")
    monkeypatch.setattr(wp, "__version__", "9.9.9")
    problems = warp_internals.check_assumptions()
    assert any("APICapture._pack_param_record is gone" in p for p in problems), problems
    assert any("checked against 1.19.0" in p for p in problems), problems


def test_only_the_adapter_imports_warp_private_modules():
    offenders = []
    for path in sorted(SOURCES.rglob("*.py")):
        if path.name == "warp_internals.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if "warp._src" in code or "wp._src" in code:
                offenders.append(f"{path.relative_to(SOURCES.parent)}:{number}: {line.strip()}")
    assert offenders == []


def test_importing_wrpkg_modules_does_not_import_warp():
    # The adapter imports Warp lazily: `wrpkg verify` and friends start without it.
    code = "import sys, wrpkg.warp_internals, wrpkg.capture.step_guard; print('warp' in sys.modules)"
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(SOURCES.parent), os.environ.get("PYTHONPATH", "")])
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "False"
