"""On a CUDA GPU (tagged gpu): a native CUDA capture refuses what its graph would not replay,
before Warp or the driver fail with an error that names no line: a nested graph launch, a
host read-back, host memory in the step, native work APIC does not record (test_step_refusals'
OUTSIDE_APIC cases), a live address passed as a plain wp.uint64; each fixed program captures
(and passes the direct-step check), and the wp.handle one replays in C++."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from test_capture import PROGRAMS, assert_refused, run_capture
from test_step_refusals import OUTSIDE_APIC
from wrp_testing import run_python

from wrpkg.build.pack import pack

LABEL = "//tests:refused_gpu_wrp"
REPLAY = os.environ["WRP_REPLAY"]
STALE = PROGRAMS / "stale_pointer.py"


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


# Warp's graph coloring takes CPU arrays only ("edges array must be on the CPU"): a CUDA step cannot
# call it on its own arrays (seen on an H100).
@pytest.mark.parametrize("case", sorted(set(OUTSIDE_APIC) - {"coloring"}))
def test_native_work_apic_does_not_record_is_refused_on_cuda(tmp_path, case):
    script, (mode_var, mode), fragments = OUTSIDE_APIC[case]
    out = tmp_path / "raw"
    proc = capture_cuda(PROGRAMS / script, out, mode_var, mode)
    assert_refused(proc, out, LABEL, *fragments)


@pytest.mark.parametrize(
    "script, mode_var, mode",
    [
        ("nested_graph.py", "WRP_TEST_NESTED_MODE", "inline"),
        ("host_readback.py", "WRP_TEST_READBACK_MODE", "kernel"),
        ("host_memory.py", "WRP_TEST_HOST_MODE", "device"),
        ("unrecorded_host_write.py", "WRP_TEST_DIRECT_MODE", "fixed"),
    ],
)
def test_the_fixed_programs_capture_natively(tmp_path, script, mode_var, mode):
    out = tmp_path / "raw"
    proc = capture_cuda(PROGRAMS / script, out, mode_var, mode)
    assert proc.returncode == 0, proc.stderr
    assert (out / "sim.wrp").is_file()
    # The direct-step check ran on the GPU and found every output bit-exact.
    record = json.loads((out / "capture.json").read_text())["direct_step_check"]
    assert record["within_tolerance"] == [] and record["bit_exact"], record


def test_an_output_two_replays_disagree_on_is_refused_unless_a_tolerance_covers_it(tmp_path):
    script = PROGRAMS / "nondeterministic_sum.py"
    proc = capture_cuda(script, tmp_path / "exact", "WRP_TEST_SUM_MODE", "exact")
    assert_refused(
        proc, tmp_path / "exact", LABEL, "output 'sum' differs between two replays", "declare a tolerance"
    )
    proc = capture_cuda(script, tmp_path / "tolerance", "WRP_TEST_SUM_MODE", "tolerance")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    "mode, fragments",
    [
        ("mesh_uint64", ("kernel 'closest', parameter 'mesh'", "live wp.Mesh", "as wp.handle")),
        ("array_ptr", ("kernel 'scale_raw', parameter 'address'", "live wp.array data")),
    ],
)
def test_a_live_address_passed_as_uint64_is_refused_on_cuda(tmp_path, mode, fragments):
    # A mesh id is recorded as a wp.handle unless that is turned off (test_retarget_gpu.py has it on).
    out = tmp_path / "raw"
    args = ["--script", str(STALE), "--device", "cuda", "--mode", "gpu", "--out-dir", str(out)]
    args += ["--stem", "sim", "--label", LABEL, "--no-relocate-uint64-mesh-ids"]
    proc = run_python("-m", "wrpkg.capture", *args, env_extra={"WRP_TEST_STALE_MODE": mode})
    assert_refused(proc, out, LABEL, *fragments)


def test_the_wp_handle_program_captures_and_replays_in_cpp(tmp_path):
    raw = tmp_path / "raw"
    proc = capture_cuda(STALE, raw, "WRP_TEST_STALE_MODE", "handle")
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "handle_wrp"
    pack(raw, "sim", "handle_wrp", LABEL, out, out.with_suffix(".tar"), out.with_suffix(".sha256"))
    proc = subprocess.run([REPLAY, "--bundle", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "FAIL" not in proc.stdout, proc.stdout + proc.stderr
