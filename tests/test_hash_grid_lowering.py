"""A wp.HashGrid rebuilt and queried in a step is captured as Warp operations
(wrpkg.capture.lowering.hash_grid_lowering), on the CPU and retargeted to CUDA: the replayed outputs equal the
step run directly by Warp (its native build), byte for byte, neighbour order included, for
float32, float64 and float16 grids and a grouped build. A grid built in build() and only
queried in the step is still refused, with the fix that now works: build it in the step."""

from __future__ import annotations

import pytest
from test_capture import PROGRAMS, assert_captures_the_direct_run, assert_refused, run_capture
from wrp_testing import direct_step_outputs

from wrpkg import wrpformat

LABEL = "//tests:hash_grid_wrp"
SCRIPT = PROGRAMS / "hash_grid_step.py"
KINDS = ["float32", "float64", "float16", "groups"]


@pytest.fixture(scope="module")
def direct_outputs():
    return {kind: direct_step_outputs(SCRIPT, {"WRP_TEST_HASH_GRID": kind}) for kind in KINDS}


@pytest.mark.parametrize(
    "kind, capture_mode",
    [(kind, "cpu") for kind in KINDS] + [("float32", "retarget"), ("groups", "retarget")],
)
def test_a_grid_built_in_the_step_replays_what_warps_build_gives(
    tmp_path, direct_outputs, kind, capture_mode
):
    out = tmp_path / "raw"
    env = {"WRP_TEST_HASH_GRID": kind}
    assert_captures_the_direct_run(
        SCRIPT, out, capture_mode, direct_outputs[kind], label=LABEL, stem="grid", env_extra=env
    )
    wrp = wrpformat.read_wrp(out / "grid.wrp")
    # Two builds: each a header write, a sort and the cell offsets, recorded as operations.
    ops = wrp.operations.ops
    assert sum(op.op_type == wrpformat.OpType.RADIX_SORT for op in ops) == 2
    headers = [
        op for op in ops if op.op_type == wrpformat.OpType.KERNEL_LAUNCH and "write_header" in op.kernel_key
    ]
    assert len(headers) == 2
    # The grid's id is relocated as an array address, never as a mesh handle.
    assert all(reloc.kind != wrpformat.RelocKind.HANDLE for op in ops for reloc in getattr(op, "relocs", []))


def test_a_grid_built_in_build_and_queried_in_the_step_is_refused_with_the_fix(tmp_path):
    out = tmp_path / "raw"
    proc = run_capture(PROGRAMS / "geometry_ids.py", out, label=LABEL)
    assert_refused(proc, out, LABEL, "holds the id of a live wp.HashGrid", "build the grid inside step()")
