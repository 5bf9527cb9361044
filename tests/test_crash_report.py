"""A bundle that crashes the replaying process says so: the C++ replay_test reports the fatal
signal with the bundle's label and the likely cause.

The bundle is what an unchecked capture of tests/programs_capture/stale_pointer.py ships (a
mesh id in a wp.uint64 parameter, with the relocation of such ids turned off), with that saved address pointed at the never-mapped zero
page so the crash does not depend on the loading process's memory layout.

//tests:crash_report_gpu_test (tagged gpu) sets WRP_CRASH_DEVICE=cuda: the same program captured
natively on the GPU, whose replay faults on the device (an illegal address) and says so, with the
label and the likely cause."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

from test_capture import PROGRAMS, REPO

from wrpkg.build.pack import pack

REPLAY = os.environ["WRP_REPLAY"]
LABEL = "//tests:stale_wrp"
DEVICE = os.environ.get("WRP_CRASH_DEVICE", "cpu")

# Capture with the stale-pointer refusal turned into a note of the address it found.
UNCHECKED_CAPTURE = """
import re, sys
import wrpkg.capture.capture_script, wrpkg.capture.stale_pointers
from wrpkg.errors import CaptureError
check = wrpkg.capture.stale_pointers.check_launches
def note_instead(*args):
    try:
        check(*args)
    except CaptureError as err:
        open(sys.argv[1], "w").write(re.search(r"\\(0x([0-9a-f]+)\\)", str(err)).group(1))
wrpkg.capture.capture_script.check_launches = note_instead
from wrpkg.cli import run_tool
sys.exit(run_tool("wrpkg.capture.tool", ["capture"], sys.argv[2:]))
"""


def test_replay_of_a_stale_pointer_bundle_reports_the_crash(tmp_path):
    raw, address_file = tmp_path / "raw", tmp_path / "address"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    env["WRP_TEST_STALE_MODE"] = "mesh_uint64"
    args = ["--script", str(PROGRAMS / "stale_pointer.py"), "--device", DEVICE, "--out-dir", str(raw),
            "--stem", "sim", "--label", LABEL, "--in-process", *(["--mode", "gpu"] if DEVICE == "cuda" else []),
            # A live mesh id in a wp.uint64 would be relocated as a handle: keep it a stale number.
            "--no-relocate-uint64-mesh-ids"]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", UNCHECKED_CAPTURE, str(address_file), *args],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    stale = int(address_file.read_text(), 16).to_bytes(8, "little")
    wrp = (raw / "sim.wrp").read_bytes()
    assert wrp.count(stale) >= 1  # the capture process's mesh address, saved verbatim
    (raw / "sim.wrp").write_bytes(wrp.replace(stale, (16).to_bytes(8, "little")))

    out = tmp_path / "out"
    pack(raw, "sim", "stale_wrp", LABEL, out / "stale_wrp", out / "stale_wrp.tar", out / "stale_wrp.sha256")
    proc = subprocess.run(
        [REPLAY, "--bundle", str(out / "stale_wrp")], capture_output=True, text=True, timeout=120
    )
    if DEVICE == "cuda":
        # The kernel reads the GPU's address 16: the driver's illegal-address error, reported when
        # the replay waits for the graph.
        assert proc.returncode != 0, proc.stdout + proc.stderr
        assert LABEL in proc.stderr and "likely cause" in proc.stderr and "wp.handle" in proc.stderr, (
            proc.stderr
        )
        return
    assert proc.returncode == -signal.SIGSEGV, proc.stdout + proc.stderr
    assert re.search(r"FATAL: SIGSEGV \(invalid memory access\) while (loading|launching) bundle //tests:stale_wrp",
                     proc.stderr), proc.stderr  # fmt: skip
    assert "likely cause" in proc.stderr and "declare it wp.handle" in proc.stderr
    assert "rebuild //tests:stale_wrp" in proc.stderr
