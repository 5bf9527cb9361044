"""`wrpkg capture` and `wrpkg pack` outside Bazel: a full disk or a kill mid-way leaves the
previous output exactly as it was and never a half-written one (faults injected here)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_capture import PROGRAMS, REPO

from wrpkg.build.pack import pack
from wrpkg.reader.verify import verify_bundle

SCRIPT = PROGRAMS / "atomic_sum.py"

# Run inside the tool's process before the tool: the n-th Path.write_bytes call (counting from 1)
# fails with ENOSPC or kills the process, i.e. the fault strikes while outputs are being written.
INJECT = """
import errno, os, pathlib, runpy, signal, sys
mode, at = os.environ["WRP_FAULT"], int(os.environ["WRP_FAULT_AT"])
original = pathlib.Path.write_bytes
calls = [0]
def write_bytes(self, data):
    calls[0] += 1
    if calls[0] == at:
        if mode == "kill":
            original(self, data[: len(data) // 2])  # a half-written file in the staging area
            os.kill(os.getpid(), signal.SIGKILL)
        raise OSError(errno.ENOSPC, "No space left on device", str(self))
    return original(self, data)
pathlib.Path.write_bytes = write_bytes
sys.argv = [sys.argv[1]] + sys.argv[2:]
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
"""


def snapshot(*paths: Path) -> dict[str, bytes]:
    """Every published file under the given paths (hidden staging dirs left out), by path."""
    found = {}
    for root in paths:
        files = (
            [root]
            if root.is_file()
            else sorted(
                p
                for p in root.rglob("*")
                if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
            )
        )
        for path in files:
            found[str(path)] = path.read_bytes()
    return found


def hidden_leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def run_tool(module: str, args: list[str], fault: str | None = None, at: int = 0):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    if fault:
        env.update(WRP_FAULT=fault, WRP_FAULT_AT=str(at))
        cmd = [sys.executable, "-c", INJECT, module, *args]
    else:
        cmd = [sys.executable, "-m", module, *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=300)


def capture_args(out: Path, cache: Path, label: str) -> list[str]:
    # In process: the faults are injected into this process's writes (a watched child would not see them).
    return ["--script", str(SCRIPT), "--device", "cpu", "--out-dir", str(out), "--stem", "atomic",
            "--label", label, "--cache-dir", str(cache), "--in-process"]  # fmt: skip


@pytest.fixture(scope="module")
def previous(tmp_path_factory):
    """A finished capture and bundle: the 'previous output' every fault must leave alone."""
    root = tmp_path_factory.mktemp("atomic")
    proc = run_tool("wrpkg.capture", capture_args(root / "raw", root / "cache", "//tests:atomic_wrp"))
    assert proc.returncode == 0, proc.stderr
    out = root / "out"
    pack(root / "raw", "atomic", "atomic_wrp", "//tests:atomic_wrp",
         out / "atomic_wrp", out / "atomic_wrp.tar", out / "atomic_wrp.sha256")  # fmt: skip
    return root


def bundle_args(root: Path, label: str) -> list[str]:
    out = root / "out"
    return ["--raw-dir", str(root / "raw"), "--stem", "atomic", "--name", "atomic_wrp", "--label", label,
            "--out-dir", str(out / "atomic_wrp"), "--tar", str(out / "atomic_wrp.tar"),
            "--hash", str(out / "atomic_wrp.sha256")]  # fmt: skip


def test_bundle_out_of_disk_space_keeps_the_previous_bundle(previous):
    out = previous / "out"
    before = snapshot(out)
    # A different label makes a different bundle, so a half-published one would show.
    proc = run_tool("wrpkg.build.pack", bundle_args(previous, "//tests:atomic_v2"), fault="enospc", at=2)
    assert proc.returncode == 1, proc.stderr
    assert "No space left on device" in proc.stderr and "were left as they were" in proc.stderr
    assert snapshot(out) == before
    assert hidden_leftovers(out) == []
    verify_bundle(out / "atomic_wrp")


def test_bundle_killed_mid_way_keeps_the_previous_bundle(previous):
    out = previous / "out"
    before = snapshot(out)
    proc = run_tool("wrpkg.build.pack", bundle_args(previous, "//tests:atomic_v2"), fault="kill", at=2)
    assert proc.returncode == -signal.SIGKILL
    assert snapshot(out) == before
    # What the kill left is a hidden staging dir; the next run removes it and publishes.
    assert hidden_leftovers(out) and all(".atomic_wrp.tmp-" in n for n in hidden_leftovers(out))
    proc = run_tool("wrpkg.build.pack", bundle_args(previous, "//tests:atomic_v2"))
    assert proc.returncode == 0, proc.stderr
    assert hidden_leftovers(out) == []
    assert verify_bundle(out / "atomic_wrp").label == "//tests:atomic_v2"
    # Back to the original for the other tests.
    pack(previous / "raw", "atomic", "atomic_wrp", "//tests:atomic_wrp",
         out / "atomic_wrp", out / "atomic_wrp.tar", out / "atomic_wrp.sha256")  # fmt: skip
    assert snapshot(out) == before


@pytest.mark.parametrize("fault", ["enospc", "kill"])
def test_capture_fault_keeps_the_previous_capture(previous, fault):
    raw = previous / "raw"
    before = snapshot(raw)
    # The golden files are the capture's last writes through Path.write_bytes.
    args = capture_args(raw, previous / "cache", "//tests:atomic_v2")
    proc = run_tool("wrpkg.capture", args, fault=fault, at=1)
    if fault == "kill":
        assert proc.returncode == -signal.SIGKILL
    else:
        assert proc.returncode == 1, proc.stderr
        assert "No space left on device" in proc.stderr and "was left as it was" in proc.stderr
        assert hidden_leftovers(previous) == []
    assert snapshot(raw) == before
    proc = run_tool("wrpkg.capture", args)
    assert proc.returncode == 0, proc.stderr
    assert hidden_leftovers(previous) == []
    assert '"label": "//tests:atomic_v2"' in (raw / "capture.json").read_text()


def test_publishing_a_directory_swaps_it_whole(tmp_path):
    from wrpkg import atomic

    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("old")
    staged = atomic.staging_dir(out)
    (staged / "new.txt").write_text("new")
    atomic.publish_dir(staged, out)
    assert sorted(p.name for p in out.iterdir()) == ["new.txt"]
    assert hidden_leftovers(tmp_path) == []
