"""NVIDIA's own Warp samples that Warp's APIC alone cannot save, captured as they are written
(tests/programs_examples/: a capture script around each sample's Example class): SPH and DEM
rebuild a wp.HashGrid in the step (wrpkg.capture.lowering.hash_grid_lowering), the NanoVDB sample samples a
wp.Volume by id. Each capture's replay equals the sample's step run directly by Warp, byte for
byte; the NanoVDB capture also when retargeted to CUDA."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_capture import assert_captures_the_direct_run
from wrp_testing import direct_step_outputs

EXAMPLES = Path(__file__).resolve().parent / "programs_examples"
LABEL = "//tests:warp_example_wrp"


@pytest.mark.parametrize(
    "example, capture_mode",
    [("warp_sph", "cpu"), ("warp_dem", "cpu"), ("warp_nvdb", "cpu"), ("warp_nvdb", "retarget")],
)
def test_a_warp_sample_replays_what_its_step_did(tmp_path, example, capture_mode):
    script = EXAMPLES / f"{example}.py"
    expected = direct_step_outputs(script)
    assert_captures_the_direct_run(
        script, tmp_path / "raw", capture_mode, expected, label=LABEL, stem=example
    )
