"""Capture refuses launch parameters that hold a live Warp object's address as a plain number."""

from __future__ import annotations

import pytest
from test_capture import PROGRAMS, assert_refused, run_capture

SCRIPT = PROGRAMS / "stale_pointer.py"
LABEL = "//tests:stale_wrp"


@pytest.mark.parametrize(
    "mode, fragments",
    [
        (
            "mesh_uint64",
            (
                "kernel 'closest', parameter 'mesh'",
                "live wp.Mesh",
                "declare 'mesh' of kernel 'closest' as wp.handle",
            ),
        ),
        (
            "array_ptr",
            (
                "kernel 'scale_raw', parameter 'address'",
                "live wp.array data",
                "as a wp.array and pass the array itself",
            ),
        ),
    ],
)
def test_a_live_address_passed_as_uint64_is_refused(tmp_path, mode, fragments):
    out = tmp_path / "raw"
    proc = run_capture(SCRIPT, out, label=LABEL, env_extra={"WRP_TEST_STALE_MODE": mode})
    assert_refused(proc, out, LABEL, *fragments)
    # A plain integer beside the stale one (the mesh kernel's seed) is not mentioned.
    assert "'seed'" not in proc.stderr


def test_wp_handle_and_a_plain_large_integer_capture(tmp_path):
    out = tmp_path / "raw"
    proc = run_capture(SCRIPT, out, label=LABEL, env_extra={"WRP_TEST_STALE_MODE": "handle"})
    assert proc.returncode == 0, proc.stderr
    assert (out / "sim.wrp").is_file() and (out / "golden" / "dist.bin").is_file()
