"""A wp.Bvh refitted and queried in a step is captured as Warp operations (wrpkg.capture.lowering.bvh_lowering), on
the CPU and retargeted to CUDA: the replayed outputs equal the step run directly by Warp (its
native refit), byte for byte, traversal order included, for a plain, a grouped and a packed-leaf
tree and a tree only queried. The C++ replay of the CPU bundle is //tests:bvh_cpu_wrp_replay_test;
the retargeted bundle's GPU replay //tests:bvh_wrp_replay_test (gpu). A BVH rebuilt in the step,
or whose id was read in build(), stays refused (test_step_refusals.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_capture import PROGRAMS, assert_captures_the_direct_run, run_capture
from wrp_testing import direct_step_outputs

from wrpkg import wrpformat
from wrpkg.capture.lowering import bvh_lowering

LABEL = "//tests:bvh_wrp"
SCRIPT = PROGRAMS / "bvh_step.py"
KINDS = ["refit", "query", "groups", "leaves"]


@pytest.fixture(scope="module")
def direct_outputs():
    return {kind: direct_step_outputs(SCRIPT, {"WRP_TEST_BVH": kind}) for kind in KINDS}


def _launches(wrp, name: str) -> list:
    return [
        op
        for op in wrp.operations.ops
        if op.op_type == wrpformat.OpType.KERNEL_LAUNCH and op.kernel_key.startswith(name)
    ]


@pytest.mark.parametrize(
    "kind, capture_mode", [(kind, "cpu") for kind in KINDS] + [("refit", "retarget"), ("groups", "retarget")]
)
def test_a_bvh_refitted_in_the_step_replays_what_warps_refit_gives(
    tmp_path, direct_outputs, kind, capture_mode
):
    out = tmp_path / "raw"
    env = {"WRP_TEST_BVH": kind}
    assert_captures_the_direct_run(
        SCRIPT, out, capture_mode, direct_outputs[kind], label=LABEL, stem="bvh", env_extra=env
    )
    wrp = wrpformat.read_wrp(out / "bvh.wrp")
    # One descriptor write (the first read of bvh.id or refit()), then one launch a tree level for
    # each of the step's two refits: the levels cover the tree's nodes, root last.
    assert len(_launches(wrp, "bvh_write_header")) == 1
    levels = _launches(wrp, "bvh_refit_level")
    if kind == "query":
        assert levels == []
    else:
        assert len(levels) % 2 == 0 and len(levels) >= 4
        per_refit = levels[: len(levels) // 2]
        assert [op.dim for op in per_refit] == [op.dim for op in levels[len(levels) // 2 :]]
        assert per_refit[-1].dim == 1  # the root
    # The descriptor's address is relocated as an array (DATA_PTR), never as a mesh handle.
    assert all(
        reloc.kind != wrpformat.RelocKind.HANDLE
        for op in wrp.operations.ops
        for reloc in getattr(op, "relocs", [])
    )
    info = json.loads((out / "capture.json").read_text())
    if capture_mode == "retarget":
        assert info["bvhs_built_on_cpu"] == [f"wp.Bvh (96 items, leaf_size {4 if kind == 'leaves' else 1})"]
    else:
        assert "bvhs_built_on_cpu" not in info


def test_the_refit_is_what_the_queries_see(direct_outputs):
    """The items move far enough that a tree left as built finds other items: a capture that
    dropped the refits could not equal the direct run."""
    moved = np.frombuffer(direct_outputs["refit"]["counts"], dtype=np.int32)
    still = np.frombuffer(direct_outputs["query"]["counts"], dtype=np.int32)
    assert not np.array_equal(moved, still)


def test_tree_levels_refuses_what_is_no_tree():
    # 0 -> (1, 2), leaves 1 and 2.
    children = [[1, 2], [0, 1], [1, 2]]
    assert bvh_lowering.tree_levels(children, [False, True, True], 0, 3) == [[0], [1, 2]]
    # A child out of range, a node reached twice, a root out of range.
    assert bvh_lowering.tree_levels([[1, 5], [0, 0], [0, 0]], [False, True, True], 0, 3) is None
    assert bvh_lowering.tree_levels([[1, 1], [0, 0], [0, 0]], [False, True, True], 0, 3) is None
    assert bvh_lowering.tree_levels([[1, 2], [0, 0], [0, 0]], [False, True, True], 3, 3) is None


@pytest.mark.parametrize("kind", ["refit", "groups"])
def test_a_retargeted_capture_keeps_the_bytes_of_the_trees_nodes(tmp_path, kind):
    """A CUDA capture saves an array allocated inside the capture by size alone (the replay regenerates
    its content): the node buffers the lowering fills from the host are initial state, so only the
    descriptor (which the replay's one-thread kernel writes) may be saved without bytes. Saved by
    size alone, the nodes load as zeros and the GPU's traversal faulted (CUDA error 700, H100)."""
    out = tmp_path / "raw"
    proc = run_capture(
        SCRIPT, out, device="cuda", mode="retarget", label=LABEL, stem="bvh", env_extra={"WRP_TEST_BVH": kind}
    )
    assert proc.returncode == 0, proc.stderr
    wrp = wrpformat.read_wrp(out / "bvh.wrp")
    without_bytes = [region.size for region in wrp.memory.regions if region.initial_data is None]
    assert without_bytes == [bvh_lowering._HEADER_WORDS * 8]
