"""Strided and indexed copies and fills in a step are captured as kernel launches
(wrpkg.capture.lowering.copy_lowering), on the CPU and retargeted to CUDA: the replayed outputs equal the
step run directly by Warp (its native strided copy and fill), byte for byte, and NumPy's
answer. What stays beyond a launch (a bit cast between element types) is refused as Warp's
APIC limit (test_step_refusals.py, programs_capture/apic_unsupported.py)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from test_capture import PROGRAMS, assert_captures_the_direct_run, run_capture
from wrp_testing import direct_step_outputs

from wrpkg import wrpformat

LABEL = "//tests:strided_copies_wrp"
SCRIPT = PROGRAMS / "strided_copies.py"


@pytest.fixture(scope="module")
def direct_outputs() -> dict[str, bytes]:
    return direct_step_outputs(SCRIPT)


def golden(out, name: str) -> bytes:
    return (out / "golden" / f"{name}.bin").read_bytes()


@pytest.mark.parametrize("capture_mode", ["cpu", "retarget"])
def test_lowered_copies_and_fills_replay_what_the_step_did(tmp_path, direct_outputs, capture_mode):
    out = tmp_path / "raw"
    assert_captures_the_direct_run(SCRIPT, out, capture_mode, direct_outputs, label=LABEL, stem="strided")
    # Each lowering is a kernel of its own module, recorded like the program's.
    modules = {module.name for module in wrpformat.read_wrp(out / "strided.wrp").metadata.modules}
    assert {
        "wrpkg_lowered_copy_array_indexedarray_float32_2d",
        "wrpkg_lowered_fill_array_vec3f_1d",
    } <= modules


def test_lowered_outputs_are_numpys_answer(tmp_path):
    out = tmp_path / "raw"
    proc = run_capture(SCRIPT, out, label=LABEL, stem="strided")
    assert proc.returncode == 0, proc.stderr
    spec = importlib.util.spec_from_file_location("strided_copies", SCRIPT)
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    data = program.inputs()
    a, idx = data["a"], data["idx"]

    def read(name, dtype, shape):
        return np.frombuffer(golden(out, name), dtype=dtype).reshape(shape)

    column = np.zeros((8, 2), np.float32)
    column[:, 1] = a[:, 2]
    assert np.array_equal(read("column", np.float32, (8, 2)), column)
    assert np.array_equal(read("transposed", np.float32, (4, 8)), a.T)
    window = np.zeros(10, np.float32)
    window[2:7] = a[1:6, 1]
    assert np.array_equal(read("window", np.float32, 10), window)
    assert np.array_equal(read("gathered", np.float32, (4, 4)), a[idx])
    scattered = np.zeros((8, 4), np.float32)
    scattered[idx] = a[4:8]
    assert np.array_equal(read("scattered", np.float32, (8, 4)), scattered)
    filled = np.ones((8, 4), np.float32)
    filled[:, 1], filled[:, 3] = 2.5, 0
    assert np.array_equal(read("filled", np.float32, (8, 4)), filled)
    vectors = np.zeros((8, 2, 3), np.float32)
    vectors[:, 0] = [1, 2, 3]
    vectors[:, 1] = data["v"]
    assert np.array_equal(read("vectors", np.float32, (8, 2, 3)), vectors)
    halves = np.stack([data["h"][:, 1], np.full(8, 0.75, np.float16)], axis=1)
    assert np.array_equal(read("halves", np.float16, (8, 2)), halves)
    assert np.array_equal(read("made_contiguous", np.float32, (8, 2)), a[:, 1:3])
    masses = 8 + 10 * (a[:, 1] + a[:, 0]) + 100 * np.arange(8, dtype=np.float32)
    assert np.array_equal(read("masses", np.float32, 8), masses)
