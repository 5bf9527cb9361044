"""Initial state without the build machine's stale bytes (wrpkg.capture.initial_state): scratch arrays made
with wp.empty, as Newton's and MuJoCo Warp's, in build() and inside the step."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from wrp_testing import run_python

from wrpkg import wrpformat
from wrpkg.wrpformat.canonical import canonicalize

REPO = Path(__file__).resolve().parent.parent
SCRATCH = REPO / "tests" / "programs_capture" / "scratch_arrays.py"
N = 256


def _capture(tmp_path: Path, mode: str, name: str, *, device: str = "cpu", retarget: bool = False):
    out = tmp_path / name
    args = ["--script", str(SCRATCH), "--device", device, "--out-dir", str(out), "--stem", "sim"]
    args += ["--cache-dir", str(tmp_path / "kernel-cache")] + (["--mode", "retarget"] if retarget else [])
    proc = run_python("-m", "wrpkg.capture", *args, env_extra={"WRP_TEST_SCRATCH": mode})
    assert proc.returncode == 0, proc.stderr
    return out, proc.stderr


def _canonical_digest(wrp_path: Path) -> str:
    # Raw captures hold stale pointer slots; pack writes the canonical form (wrpkg.wrpformat.canonical).
    data = canonicalize(wrpformat.read_wrp(wrp_path)).to_bytes()
    return hashlib.sha256(data).hexdigest()


def _golden(out: Path) -> np.ndarray:
    return np.frombuffer((out / "golden" / "x.bin").read_bytes(), dtype=np.float32)


@pytest.mark.parametrize("mode", ["written", "in_step"])
def test_scratch_the_step_writes_first_gives_one_capture(tmp_path, mode):
    first, first_log = _capture(tmp_path, mode, "first")
    second, _ = _capture(tmp_path, mode, "second")
    assert _canonical_digest(first / "sim.wrp") == _canonical_digest(second / "sim.wrp")
    info = json.loads((first / "capture.json").read_text())
    # The whole scratch array was never written before the save: saved as zeros, no note.
    assert info["zeroed_unwritten_bytes"] == 4 * N
    assert "step_reads_unwritten" not in info
    assert "nothing wrote" not in first_log
    # x + 2x, from the script's linspace.
    np.testing.assert_array_equal(_golden(first), (3.0 * np.linspace(0.0, 1.0, N, dtype=np.float32)))
    for region in wrpformat.read_wrp(first / "sim.wrp").memory.regions:
        if region.initial_data is not None:
            assert bytes.fromhex("a5a5c0ff") not in region.initial_data


def test_a_step_that_reads_unwritten_bytes_is_named_with_its_allocation(tmp_path):
    out, log = _capture(tmp_path, "read", "read")
    assert "step() reads bytes that nothing wrote" in log
    assert "scratch_arrays.py:38" in log  # Solver.__init__'s wp.empty
    info = json.loads((out / "capture.json").read_text())
    assert len(info["step_reads_unwritten"]) == 1 and "float32[256]" in info["step_reads_unwritten"][0]
    # The golden values are the replay from zeros: x + 0.
    np.testing.assert_array_equal(_golden(out), np.linspace(0.0, 1.0, N, dtype=np.float32))
    again, _ = _capture(tmp_path, "read", "again")
    assert _canonical_digest(out / "sim.wrp") == _canonical_digest(again / "sim.wrp")


def test_retargeted_capture_of_scratch_arrays_is_reproducible(tmp_path):
    first, _ = _capture(tmp_path, "written", "first", device="cuda", retarget=True)
    second, _ = _capture(tmp_path, "written", "second", device="cuda", retarget=True)
    assert _canonical_digest(first / "sim.wrp") == _canonical_digest(second / "sim.wrp")
    assert json.loads((first / "capture.json").read_text())["zeroed_unwritten_bytes"] == 4 * N


def test_fresh_memory_fills_and_canonicalize_zeroes_only_unwritten_words():
    import warp as wp  # noqa: PLC0415 - Warp only where a test needs it

    from wrpkg.capture.initial_state import SENTINEL, FreshMemory  # noqa: PLC0415 - imports Warp

    wp.init()
    fresh = FreshMemory((str(REPO / "tests") + "/",))
    with fresh.installed():
        scratch = wp.empty(5, dtype=wp.int32, device="cpu")
    outside = wp.empty(3, dtype=wp.int32, device="cpu")
    assert scratch.numpy().tobytes() == SENTINEL * 5
    assert list(fresh.allocations) == [scratch.ptr]
    assert fresh.allocations[scratch.ptr].user_line.startswith("test_initial_state.py:")
    scratch.numpy()[:]  # a view; write one element from the host
    host = scratch.numpy()
    host[1] = 7
    wp.copy(scratch, wp.array(host, dtype=wp.int32, device="cpu"))

    class Capture:  # what canonicalize reads of Warp's APICapture
        _regions = {"a": (1, scratch.ptr, 20, scratch), "b": (2, outside.ptr, 12, outside)}

    saved = wrpformat.WrpFile.__new__(wrpformat.WrpFile)
    saved.memory = wrpformat.MemorySection(
        [
            wrpformat.MemoryRegion(1, 4, 20, scratch.numpy().tobytes()),
            wrpformat.MemoryRegion(2, 4, 12, SENTINEL * 3),  # not filled by FreshMemory: kept
        ]
    )
    changed = fresh.canonicalize(saved, Capture(), {1: "scratch"})
    assert [(c.region_id, c.words, c.binding) for c in changed] == [(1, 4, "scratch")]
    expected = np.zeros(5, dtype=np.int32)
    expected[1] = 7
    assert saved.memory.regions[0].initial_data == expected.tobytes()
    assert saved.memory.regions[1].initial_data == SENTINEL * 3
