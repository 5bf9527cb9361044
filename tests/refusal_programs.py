"""Every refusal the capture makes of a step, one program each: what runs it and what its message
must hold. Shared by //tests:refusal_before_compile_test (nothing is compiled before the refusal)
and tools/bench/refusal_bench.py (time from process start to the message)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CAPTURE = REPO / "tests" / "programs_capture"
RETARGET = REPO / "tests" / "programs_retarget"


@dataclass(frozen=True)
class Refusal:
    name: str
    script: Path
    mode: str  # "cpu" or "retarget"
    fragments: tuple[str, ...]  # in the message, besides the target
    env: dict = field(default_factory=dict)
    args: tuple[str, ...] = ()
    # The script's build() compiles itself (it launches a kernel): compiles before the step are its own.
    build_compiles: bool = False

    def capture_args(self, out_dir: Path, label: str) -> list[str]:
        device = ["--device", "cpu"] if self.mode == "cpu" else ["--device", "cuda", "--mode", "retarget"]
        return [
            "--script",
            str(self.script),
            *device,
            "--out-dir",
            str(out_dir),
            "--stem",
            self.script.stem,
            "--label",
            label,
            *self.args,
        ]


def refused_line(script: Path, marker: str = "# refused here") -> str:
    """ "name.py:N" of the line holding `marker`."""
    lines = script.read_text().splitlines()
    number = next(i for i, text in enumerate(lines, 1) if marker in text)
    return f"{script.name}:{number}"


def _retarget(program: str, what: str, **kwargs) -> Refusal:
    script = RETARGET / program
    return Refusal(
        program.removesuffix(".py") + "/retarget", script, "retarget", (what, refused_line(script)), **kwargs
    )


def _both(name: str, script: Path, fragments: tuple[str, ...], **kwargs) -> list[Refusal]:
    return [Refusal(f"{name}/{mode}", script, mode, fragments, **kwargs) for mode in ("cpu", "retarget")]


def _stale(
    name: str, script: Path, kernel: str, param: str, line_marker: str, what: str, **kwargs
) -> Refusal:
    return Refusal(
        name,
        script,
        "cpu",
        (f"kernel '{kernel}', parameter '{param}', launched at", f"{script.name}:", line_marker, what),
        **kwargs,
    )


REFUSALS: list[Refusal] = [
    *_both(
        "nested_graph",
        CAPTURE / "nested_graph.py",
        ("step() launches a captured graph", "nested_graph.py:", "wp.capture_launch(capture.graph)"),
        env={"WRP_TEST_NESTED_MODE": "direct"},
        build_compiles=True,  # build() captures the graph that step() launches
    ),
    *_both(
        "host_readback",
        CAPTURE / "host_readback.py",
        ("reads an array's values on the host", "array.numpy()", "host_readback.py:"),
        env={"WRP_TEST_READBACK_MODE": "numpy"},
    ),
    *[
        refusal
        # Native work APIC does not record, refused at the line marked in the program.
        for name, what in (
            ("volume_rebuild", "rebuilds a wp.Volume (Volume.rebuild())"),
            ("texture_step", "launches 'sample' with a wp.Texture2D"),
            ("coloring_step", "step() calls wp.utils.graph_coloring_assign()"),
            ("mesh_velocities", "assigns a wp.Mesh's velocities"),
        )
        for refusal in _both(name, CAPTURE / f"{name}.py", (what, refused_line(CAPTURE / f"{name}.py")))
    ],
    *_both(
        "mesh_refit",
        CAPTURE / "mesh_refit.py",
        ("updates a BVH (assigning Mesh.points", "mesh_refit.py:", "mesh.points = moved"),
        env={"WRP_TEST_MESH_UPDATE": "points"},
    ),
    *[
        _stale(
            f"geometry_ids {mode}",
            CAPTURE / "geometry_ids.py",
            kernel,
            param,
            "wp.launch(kernel",
            f"holds the id of a live {kind}",
            env={"WRP_TEST_GEOMETRY_MODE": mode},
            build_compiles=builds,
        )
        for mode, kernel, param, kind, builds in (
            ("hashgrid_uint64", "neighbours", "grid", "wp.HashGrid", False),
            ("bvh_handle", "overlaps", "bvh", "wp.Bvh", False),
        )
    ],
    _stale(
        "stale_pointer mesh_uint64 (not relocated)",
        CAPTURE / "stale_pointer.py",
        "closest",
        "mesh",
        "wp.launch(closest",
        "holds the address of a live wp.Mesh",
        env={"WRP_TEST_STALE_MODE": "mesh_uint64"},
        args=("--no-relocate-uint64-mesh-ids",),
    ),
    _stale(
        "stale_pointer array_ptr",
        CAPTURE / "stale_pointer.py",
        "scale_raw",
        "address",
        "wp.launch(scale_raw",
        "holds the address of a live wp.array data",
        env={"WRP_TEST_STALE_MODE": "array_ptr"},
    ),
    _stale(
        "mesh_id_uint64 array_ptr",
        CAPTURE / "mesh_id_uint64.py",
        "closest_point",
        "tag",
        "wp.launch(",
        "holds the address of a live wp.array data",
        env={"WRP_TEST_MESH_TAG": "array_ptr"},
    ),
    Refusal(
        "broken_kernel",
        CAPTURE / "broken_kernel.py",
        "cpu",
        ("Warp could not build module 'broken_kernel'", "broken_kernel.py:15"),
    ),
    Refusal(
        "broken_kernel_unlaunched",
        CAPTURE / "broken_kernel_unlaunched.py",
        "cpu",
        ("Warp could not build module 'broken_kernel'", "broken_kernel.py:15"),
    ),
    Refusal(
        "output_not_captured",
        CAPTURE / "output_not_captured.py",
        "cpu",
        ("output 'forces' is not used by any operation of the captured step",),
    ),
    _retarget("refuse_cluster.py", "(cluster_dim > 1)"),
    _retarget("refuse_deterministic.py", "(deterministic mode 1)"),
    _retarget("refuse_generic_in_step.py", "(Warp module 'refuse_generic_in_step' changed during step()"),
    # build() records the launch command that step() launches.
    _retarget("refuse_lean_max_blocks.py", "with max_blocks and grid_stride=False"),
    _retarget("refuse_bsr.py", "operation 0 (bsr_from_triplets)", build_compiles=True),
    _retarget("refuse_bsr_after_launch.py", "operation 1 (bsr_from_triplets)", build_compiles=True),
]


def by_name(pattern: str) -> list[Refusal]:
    return [r for r in REFUSALS if re.search(pattern, r.name)]
