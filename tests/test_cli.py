"""The `wrpkg` entry point: a real --version and --help, and tool dispatch."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def wrpkg(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "wrpkg.cli", *args], cwd=REPO, capture_output=True, text=True, check=False
    )


def test_version_names_the_pinned_warp():
    out = wrpkg("--version")
    assert out.returncode == 0
    assert out.stdout.strip() == "wrpkg 0.1.0 (warp-lang 1.19.0)"


def test_help_lists_every_tool():
    out = wrpkg("--help")
    assert out.returncode == 0
    for tool in ("inspect", "capture", "compile", "pack", "verify"):
        assert tool in out.stdout


def test_tool_help_is_the_tools_own():
    out = wrpkg("compile", "--help")
    assert out.returncode == 0 and "--arch" in out.stdout and "--out-dir" in out.stdout


def test_errors_are_one_line_and_exit_1(tmp_path):
    out = wrpkg("inspect", str(tmp_path / "missing.wrp"))
    assert out.returncode == 1
    assert out.stderr.startswith("error: ") and "missing.wrp" in out.stderr
    assert "Traceback" not in out.stderr
