"""Every refusal of a step is decided before anything is compiled (issue 25 item 3): for each
refused program of tests/refusal_programs.py, a capture in a fresh process compiles nothing
(neither Warp's CPU compiler nor NVRTC) before its message, which names the kernel or operation
and the script line. Counted, not timed: tools/bench/refusal_bench.py prints the times. Programs
whose own build() launches a kernel compile that in build(), before the capture's step."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from refusal_programs import REFUSALS, REPO

LABEL = "//tests:refused_wrp"
PROBE = Path(__file__).resolve().parent / "compile_probe.py"


def probe(refusal, out: Path) -> dict:
    env = dict(os.environ, **refusal.env)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    cmd = [sys.executable, str(PROBE), *refusal.capture_args(out, LABEL)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("refusal", REFUSALS, ids=[r.name for r in REFUSALS])
def test_refused_before_anything_is_compiled(tmp_path, refusal):
    out = tmp_path / "raw"
    result = probe(refusal, out)
    assert result["error"] is not None, f"{refusal.name} was not refused"
    for fragment in (LABEL, *refusal.fragments):
        assert fragment in result["error"], result["error"]
    compiled = [
        c for c in result["compiles"] if not (refusal.build_compiles and c["phase"].startswith("importing"))
    ]
    assert compiled == [], f"compiled before the refusal: {compiled}"
    if not refusal.build_compiles:
        assert result["compiles"] == []
    assert not out.exists()


def test_an_accepted_capture_compiles_after_its_step(tmp_path):
    """The counter sees compiles: the same program, accepted, compiles its module once, after the step."""
    from refusal_programs import CAPTURE, Refusal

    accepted = Refusal(
        "stale_pointer handle", CAPTURE / "stale_pointer.py", "cpu", (), env={"WRP_TEST_STALE_MODE": "handle"}
    )
    result = probe(accepted, tmp_path / "raw")
    assert result["error"] is None
    assert [c["compiler"] for c in result["compiles"]] == ["build_cpu"]
    # After the step: the deferred compile names each module it compiles (wrpkg.capture.deferred_compile).
    assert result["compiles"][0]["phase"].startswith("compiling CPU module 1/1: stale_pointer")


ABANDONED = """
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from wrpkg import capture
from wrpkg.errors import CaptureError
try:
    capture.capture(sys.argv[2], "cpu", sys.argv[3], "s", trace_lines=True)
except CaptureError as exc:
    print("refused:", str(exc).splitlines()[0])
import warp as wp
import stale_pointer
points = wp.array(np.ones((4, 3), dtype=np.float32), dtype=wp.vec3, device="cpu")
dist = wp.zeros(4, dtype=float, device="cpu")
wp.launch(stale_pointer.scale_raw, dim=4, inputs=[points.ptr, points, dist], device="cpu")
print("dist:", dist.numpy().tolist())
"""


def test_a_refused_capture_leaves_no_uncompiled_module_behind(tmp_path):
    """A capture refused after its step deferred a compile abandons the module Warp never compiled:
    the same process then launches the kernel, compiled for real, and it runs."""
    from refusal_programs import CAPTURE

    env = dict(os.environ, WRP_TEST_STALE_MODE="array_ptr")
    cmd = [
        sys.executable,
        "-c",
        ABANDONED,
        str(REPO),
        str(CAPTURE / "stale_pointer.py"),
        str(tmp_path / "raw"),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "refused:" in done.stdout and "kernel 'scale_raw', parameter 'address'" in done.stdout
    assert "dist: [2.0, 2.0, 2.0, 2.0]" in done.stdout, done.stdout
