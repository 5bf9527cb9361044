"""wp.Volume ids passed to a step's kernels (wp.uint64 or wp.handle) are recorded as the
address of the volume's NanoVDB buffer, saved with the capture: on the CPU and retargeted to
CUDA, the replay equals the step run directly by Warp, byte for byte; so are ids in struct fields
(wp.uint64, and wp.handle in a nested struct). The C++ replay of the CPU bundle is
//tests:volume_cpu_wrp_replay_test; a volume of another device in a struct stays refused
(test_step_refusals.py)."""

from __future__ import annotations

import numpy as np
import pytest
from test_capture import PROGRAMS, assert_captures_the_direct_run
from test_capture_corpus import load_program
from wrp_testing import direct_step_outputs

from wrpkg import wrpformat

LABEL = "//tests:volume_wrp"
SCRIPT = PROGRAMS / "volume_step.py"


@pytest.fixture(scope="module")
def direct_outputs():
    return direct_step_outputs(SCRIPT)


@pytest.mark.parametrize("capture_mode", ["cpu", "retarget"])
def test_volumes_sampled_in_the_step_replay_what_the_step_did(tmp_path, direct_outputs, capture_mode):
    out = tmp_path / "raw"
    assert_captures_the_direct_run(SCRIPT, out, capture_mode, direct_outputs, label=LABEL, stem="volume")
    # Not the background everywhere: the samples read the saved voxels.
    values = np.frombuffer(direct_outputs["values"], dtype=np.float32)
    flows = np.frombuffer(direct_outputs["flows"], dtype=np.float32)
    assert np.count_nonzero(values != -2.0) > 10 and np.count_nonzero(flows) > 10
    wrp = wrpformat.read_wrp(out / "volume.wrp")
    launch, in_struct = [op for op in wrp.operations.ops if op.op_type == wrpformat.OpType.KERNEL_LAUNCH]
    # Both ids relocated as addresses (DATA_PTR), neither as a mesh handle.
    first_two = [r for r in launch.relocs if r.value_byte_offset == 0][:2]
    assert [r.kind for r in first_two] == [wrpformat.RelocKind.DATA_PTR] * 2
    assert all(r.kind != wrpformat.RelocKind.HANDLE for r in launch.relocs)
    # In the struct, both ids relocated as addresses at their fields' offsets, as Warp lays them out.
    program = load_program(SCRIPT)
    density_at = program.Grids.ctype.density.offset
    velocity_at = program.Grids.ctype.flow.offset + program.Flow.ctype.velocity.offset
    at = {r.value_byte_offset: r.kind for r in in_struct.relocs}
    assert at[density_at] == at[velocity_at] == wrpformat.RelocKind.DATA_PTR, at
    assert all(r.kind != wrpformat.RelocKind.HANDLE for r in in_struct.relocs)
    struct_values = np.frombuffer(direct_outputs["struct_values"], dtype=np.float32)
    assert np.count_nonzero(struct_values != -2.0) > 10
