"""Capture refuses launch parameters that hold a live Warp object's address as a plain number.

A live wp.Mesh id in a wp.uint64 parameter is recorded as a wp.handle unless that is turned off
(test_mesh_id_relocation.py); here it is off, and the capture refuses it as Warp would save it."""

from __future__ import annotations

import pytest
from test_capture import PROGRAMS, assert_refused, run_capture
from wrp_testing import run_python

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
                "drop relocate_uint64_mesh_ids = False",
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
    args = [
        "--script",
        str(SCRIPT),
        "--device",
        "cpu",
        "--out-dir",
        str(out),
        "--stem",
        "sim",
        "--label",
        LABEL,
    ]
    proc = run_python(
        "-m", "wrpkg.capture", *args, "--no-relocate-uint64-mesh-ids", env_extra={"WRP_TEST_STALE_MODE": mode}
    )
    assert_refused(proc, out, LABEL, *fragments)
    # A plain integer beside the stale one (the mesh kernel's seed) is not mentioned.
    assert "'seed'" not in proc.stderr


def test_a_mesh_id_as_uint64_is_recorded_as_a_handle_by_default(tmp_path):
    out = tmp_path / "raw"
    proc = run_capture(SCRIPT, out, label=LABEL, env_extra={"WRP_TEST_STALE_MODE": "mesh_uint64"})
    assert proc.returncode == 0, proc.stderr
    assert "kernel 'closest', parameter 'mesh' is declared wp.uint64" in proc.stderr
    assert "'seed'" not in proc.stderr


def test_wp_handle_and_a_plain_large_integer_capture(tmp_path):
    out = tmp_path / "raw"
    proc = run_capture(SCRIPT, out, label=LABEL, env_extra={"WRP_TEST_STALE_MODE": "handle"})
    assert proc.returncode == 0, proc.stderr
    assert (out / "sim.wrp").is_file() and (out / "golden" / "dist.bin").is_file()
