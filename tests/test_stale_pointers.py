"""Capture refuses launch parameters that hold a live Warp object's address as a plain number."""

from __future__ import annotations

from test_capture import PROGRAMS, assert_refused, run_capture

SCRIPT = PROGRAMS / "stale_pointer.py"


def test_mesh_id_passed_as_uint64_is_refused(tmp_path):
    out = tmp_path / "raw"
    proc = run_capture(
        SCRIPT, out, label="//tests:stale_wrp", env_extra={"WRP_TEST_STALE_MODE": "mesh_uint64"}
    )
    assert_refused(
        proc,
        out,
        "//tests:stale_wrp",
        "kernel 'closest', parameter 'mesh'",
        "live wp.Mesh",
        "declare 'mesh' of kernel 'closest' as wp.handle",
    )
    # The plain integer seed beside it is not mentioned.
    assert "'seed'" not in proc.stderr


def test_array_address_passed_as_uint64_is_refused(tmp_path):
    out = tmp_path / "raw"
    proc = run_capture(SCRIPT, out, label="//tests:stale_wrp", env_extra={"WRP_TEST_STALE_MODE": "array_ptr"})
    assert_refused(
        proc,
        out,
        "kernel 'scale_raw', parameter 'address'",
        "live wp.array data",
        "as a wp.array and pass the array itself",
    )


def test_wp_handle_and_a_plain_large_integer_capture(tmp_path):
    out = tmp_path / "raw"
    proc = run_capture(SCRIPT, out, label="//tests:stale_wrp", env_extra={"WRP_TEST_STALE_MODE": "handle"})
    assert proc.returncode == 0, proc.stderr
    assert (out / "sim.wrp").is_file() and (out / "golden" / "dist.bin").is_file()
