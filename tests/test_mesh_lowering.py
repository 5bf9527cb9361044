"""A wp.Mesh refitted and queried in a step is captured as Warp's refit (wrpkg.capture.lowering.mesh_lowering): the
replayed closest points and ray hits equal the step run directly by Warp (its native refit), byte
for byte, on the CPU and retargeted to CUDA, for one and two refits a step. A refit of a mesh with
winding-number data, a new Mesh.points and a mesh made in the step stay refused
(test_step_refusals.py). On a GPU: test_geometry_gpu.py."""

from __future__ import annotations

import pytest
from test_capture import PROGRAMS, assert_captures_the_direct_run, assert_refused, run_capture
from wrp_testing import direct_step_outputs

from wrpkg import wrpformat

LABEL = "//tests:mesh_refit_wrp"
SCRIPT = PROGRAMS / "mesh_refit_step.py"
MODES = ["refit", "twice", "stale"]
LOWERED = ("mesh_refit_triangle_bounds", "mesh_refit_average_edge_length", "mesh_refit_bvh")


@pytest.fixture(scope="module")
def direct_outputs():
    return {mode: direct_step_outputs(SCRIPT, {"WRP_TEST_MESH_STEP": mode}) for mode in MODES}


@pytest.mark.parametrize("capture_mode", ["cpu", "retarget"])
@pytest.mark.parametrize("mode, refits", [("refit", 1), ("twice", 2)])
def test_a_mesh_refitted_in_the_step_replays_what_warps_refit_gives(
    tmp_path, direct_outputs, capture_mode, mode, refits
):
    out = tmp_path / "raw"
    assert_captures_the_direct_run(
        SCRIPT,
        out,
        capture_mode,
        direct_outputs[mode],
        label=LABEL,
        stem="mesh",
        env_extra={"WRP_TEST_MESH_STEP": mode},
    )
    wrp = wrpformat.read_wrp(out / "mesh.wrp")
    launched = [op.kernel_key for op in wrp.operations.ops if op.op_type == wrpformat.OpType.KERNEL_LAUNCH]
    for name in LOWERED:
        assert sum(key.startswith(name) for key in launched) == refits, name
    # The edge-length scan is a recorded operation of its own, one a refit.
    assert sum(op.op_type == wrpformat.OpType.SCAN for op in wrp.operations.ops) == refits
    # The load builds the tree the program built (wrpkg.capture.lowering.mesh_builds): wp.Mesh's default leaf size 4,
    # with SAH on the CPU and, retargeted, the LBVH a GPU builds; Warp's own save says SAH, leaf 1.
    (record,) = wrp.metadata.meshes
    assert (record.bvh_constructor, record.bvh_leaf_size) == ((0 if capture_mode == "cpu" else 2), 4)
    # The mesh reaches the lowered kernels as a handle APIC relocates to the mesh it creates at load.
    assert any(
        reloc.kind == wrpformat.RelocKind.HANDLE
        for op in wrp.operations.ops
        for reloc in getattr(op, "relocs", [])
    )


def test_the_refit_is_what_the_queries_see(direct_outputs):
    """Without the refit the queries give other closest points: a capture that dropped the
    recorded refit could not equal the direct run."""
    assert direct_outputs["stale"]["dists"] != direct_outputs["refit"]["dists"]
    assert direct_outputs["twice"]["t_hits"] != direct_outputs["refit"]["t_hits"]


@pytest.mark.parametrize("capture_mode", ["cpu", "retarget"])
@pytest.mark.parametrize(
    "mode, fragments",
    [
        (
            "grouped",
            (
                "the step queries a wp.Mesh (169 points, 288 triangles) built with groups",
                "one wp.Mesh per group",
            ),
        ),
        (
            "view",
            (
                "the step queries a wp.Mesh (169 points, 288 triangles) whose points is a view into a larger array",
                "give the wp.Mesh arrays of its own",
            ),
        ),
        (
            "warmed",
            (
                "the points of a wp.Mesh (169 points, 288 triangles) the step queries changed between its build",
                "build the wp.Mesh in build() from the points the capture starts with",
            ),
        ),
    ],
)
def test_a_mesh_no_load_builds_again_is_refused(tmp_path, capture_mode, mode, fragments):
    out = tmp_path / "raw"
    device, run_mode = ("cpu", None) if capture_mode == "cpu" else ("cuda", "retarget")
    proc = run_capture(
        SCRIPT,
        out,
        device=device,
        mode=run_mode,
        label=LABEL,
        stem="mesh",
        env_extra={"WRP_TEST_MESH_STEP": mode},
    )
    assert_refused(proc, out, LABEL, *fragments)
