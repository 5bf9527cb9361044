"""On a CUDA GPU (tagged gpu): a native CUDA capture refuses what its graph would not replay,
before Warp or the driver fail with an error that names no line: a nested graph launch, a
host read-back, host memory in the step; each fixed program captures."""

from __future__ import annotations

import pytest
from test_capture import PROGRAMS, assert_refused, run_capture

LABEL = "//tests:refused_gpu_wrp"


def capture_cuda(script, out, mode_var, mode):
    return run_capture(script, out, device="cuda", mode="gpu", label=LABEL, env_extra={mode_var: mode})


@pytest.mark.parametrize(
    "script, mode_var, mode, fragments",
    [
        (
            "nested_graph.py",
            "WRP_TEST_NESTED_MODE",
            "direct",
            ("step() launches a captured graph", "nested_graph.py:"),
        ),
        ("host_readback.py", "WRP_TEST_READBACK_MODE", "numpy", ("array.numpy()", "host_readback.py:")),
        ("host_readback.py", "WRP_TEST_READBACK_MODE", "list", ("array.list()", "host_readback.py:")),
        ("host_memory.py", "WRP_TEST_HOST_MODE", "copy_out", ("wp.copy of a cpu array", "host_memory.py:")),
        ("host_memory.py", "WRP_TEST_HOST_MODE", "copy_in", ("wp.copy of a cpu array", "host_memory.py:")),
        (
            "host_memory.py",
            "WRP_TEST_HOST_MODE",
            "zero_host",
            ("array.zero_() of a cpu array", "host_memory.py:"),
        ),
    ],
)
def test_native_cuda_capture_refuses_naming_the_line(tmp_path, script, mode_var, mode, fragments):
    out = tmp_path / "raw"
    proc = capture_cuda(PROGRAMS / script, out, mode_var, mode)
    assert_refused(proc, out, LABEL, *fragments)


@pytest.mark.parametrize(
    "script, mode_var, mode",
    [
        ("nested_graph.py", "WRP_TEST_NESTED_MODE", "inline"),
        ("host_readback.py", "WRP_TEST_READBACK_MODE", "kernel"),
        ("host_memory.py", "WRP_TEST_HOST_MODE", "device"),
    ],
)
def test_the_fixed_programs_capture_natively(tmp_path, script, mode_var, mode):
    out = tmp_path / "raw"
    proc = capture_cuda(PROGRAMS / script, out, mode_var, mode)
    assert proc.returncode == 0, proc.stderr
    assert (out / "sim.wrp").is_file()


def test_an_output_two_replays_disagree_on_is_refused_unless_a_tolerance_covers_it(tmp_path):
    script = PROGRAMS / "nondeterministic_sum.py"
    proc = capture_cuda(script, tmp_path / "exact", "WRP_TEST_SUM_MODE", "exact")
    assert_refused(
        proc, tmp_path / "exact", LABEL, "output 'sum' differs between two replays", "declare a tolerance"
    )
    proc = capture_cuda(script, tmp_path / "tolerance", "WRP_TEST_SUM_MODE", "tolerance")
    assert proc.returncode == 0, proc.stderr
