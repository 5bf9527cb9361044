"""Captures whose saved graph would not replay what the step did are refused at capture, on
the CPU and when retargeted to CUDA, naming the file and line and what to do instead; the
fixed program of each pattern captures. A native crash ends with a message, not a signal."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from test_capture import PROGRAMS, assert_no_output, assert_refused, run_capture
from wrp_testing import run_python

LABEL = "//tests:refused_wrp"


def capture(script, out, mode_var, mode, capture_mode):
    device, capture_flag = ("cpu", None) if capture_mode == "cpu" else ("cuda", "retarget")
    return run_capture(script, out, device=device, mode=capture_flag, label=LABEL, env_extra={mode_var: mode})


CAPTURE_MODES = ["cpu", "retarget"]


@pytest.mark.parametrize("capture_mode", CAPTURE_MODES)
@pytest.mark.parametrize(
    "mode, line",
    [
        ("direct", "wp.capture_launch(capture.graph)"),
        ("alias", "launch_graph(capture.graph)"),
        ("swallowed", "wp.capture_launch(capture.graph)"),
    ],
)
def test_a_nested_graph_launch_is_refused_naming_the_line(tmp_path, capture_mode, mode, line):
    out = tmp_path / "raw"
    proc = capture(PROGRAMS / "nested_graph.py", out, "WRP_TEST_NESTED_MODE", mode, capture_mode)
    assert_refused(proc, out, LABEL, "step() launches a captured graph", "nested_graph.py:", line)
    assert "call the code that was captured into that graph directly inside step()" in proc.stderr


def test_the_inlined_nested_graph_captures_and_replays_its_work(tmp_path):
    out = tmp_path / "raw"
    proc = capture(PROGRAMS / "nested_graph.py", out, "WRP_TEST_NESTED_MODE", "inline", "cpu")
    assert proc.returncode == 0, proc.stderr
    # Both launches are in the graph: the golden replay adds 2 to the saved zeros.
    golden = np.frombuffer((out / "golden" / "x.bin").read_bytes(), dtype=np.float32)
    assert np.array_equal(golden, np.full(64, 2.0, dtype=np.float32))


@pytest.mark.parametrize("capture_mode", CAPTURE_MODES)
@pytest.mark.parametrize(
    "mode, what",
    [
        ("numpy", "array.numpy()"),
        ("list", "array.list()"),
        ("asarray", "__array_interface__"),
        ("swallowed", "array.numpy()"),
        # Both captured before, with the bytes of before the step's launches frozen into the graph.
        ("dlpack", "__dlpack__, e.g. np.from_dlpack(array)"),
        ("to_dlpack", "wp.to_dlpack(), a zero-copy view for another library"),
    ],
)
def test_a_host_read_back_is_refused_naming_the_line(tmp_path, capture_mode, mode, what):
    out = tmp_path / "raw"
    proc = capture(PROGRAMS / "host_readback.py", out, "WRP_TEST_READBACK_MODE", mode, capture_mode)
    assert_refused(proc, out, LABEL, "reads an array's values on the host", what, "host_readback.py:")
    assert "move the read-back out of step()" in proc.stderr


@pytest.mark.parametrize("mode", ["print", "kernel"])
def test_a_step_computing_on_the_device_captures(tmp_path, mode):
    out = tmp_path / "raw"
    proc = capture(PROGRAMS / "host_readback.py", out, "WRP_TEST_READBACK_MODE", mode, "cpu")
    assert proc.returncode == 0, proc.stderr
    golden = np.frombuffer((out / "golden" / "x.bin").read_bytes(), dtype=np.float32)
    expected = np.arange(1, 65, dtype=np.float32) / np.float32(64)
    assert np.array_equal(golden, expected)


@pytest.mark.parametrize(
    "mode, kind, fix",
    [
        ("hashgrid_uint64", "wp.HashGrid", "keep the hash-grid queries out of step()"),
        ("hashgrid_handle", "wp.HashGrid", "keep the hash-grid queries out of step()"),
        ("bvh_handle", "wp.Bvh", "read bvh.id inside step()"),
    ],
)
def test_ids_apic_cannot_save_are_refused_with_what_works(tmp_path, mode, kind, fix):
    out = tmp_path / "raw"
    proc = capture(PROGRAMS / "geometry_ids.py", out, "WRP_TEST_GEOMETRY_MODE", mode, "cpu")
    why = "saves and relocates wp.Mesh handles only"
    assert_refused(proc, out, LABEL, f"holds the id of a live {kind}", why, fix)
    # Not the advice that would make it crash: wp.handle does not help these kinds.
    assert "as wp.handle (not wp.uint64)" not in proc.stderr


def test_a_native_crash_names_the_target_the_phase_and_the_line(tmp_path):
    out = tmp_path / "raw"
    proc = run_capture(PROGRAMS / "crash_in_step.py", out, label=LABEL)
    assert proc.returncode == 1, proc.stderr
    assert f"error: {LABEL}" in proc.stderr
    assert "died of SIGSEGV during step() under capture on cpu" in proc.stderr
    assert 'crash_in_step.py", line 30 in step' in proc.stderr
    assert "Traceback" not in proc.stderr
    assert_no_output(out)


def test_a_crash_on_the_branch_the_device_model_chose_says_so_and_how_to_avoid_it(tmp_path):
    env = {"WRP_TEST_CRASH_ON_GPU_BRANCH": "1"}
    retarget = ["--mode", "retarget"]
    out = tmp_path / "raw"
    proc = run_capture(
        PROGRAMS / "crash_in_step.py", out, device="cuda", label=LABEL, env_extra=env, extra_args=retarget
    )
    assert proc.returncode == 1, proc.stderr
    assert "died of SIGSEGV during importing crash_in_step.py and its build('cpu')" in proc.stderr
    assert "note: this retargeted capture answers device queries as the h200 device model" in proc.stderr
    assert re.search(r"first for Device\.is_cuda at \S*crash_in_step\.py:25 ", proc.stderr), proc.stderr
    assert 'fix: run the CPU branch instead (device_model = "none"' in proc.stderr
    assert_no_output(out)
    # The fix works: build() takes the CPU branch and gets past it (to the step's own crash).
    none = run_capture(
        PROGRAMS / "crash_in_step.py",
        tmp_path / "none",
        device="cuda",
        label=LABEL,
        env_extra=env,
        extra_args=[*retarget, "--device-model", "none"],
    )
    assert "died of SIGSEGV during step()" in none.stderr, none.stderr
    assert "note:" not in none.stderr


@pytest.mark.parametrize("mode", ["copy_out", "copy_in", "zero_host"])
def test_host_memory_is_ordinary_on_a_cpu_capture(tmp_path, mode):
    # The host is the capture device here; a CUDA capture refuses it (test_step_refusals_gpu.py).
    out = tmp_path / "raw"
    proc = capture(PROGRAMS / "host_memory.py", out, "WRP_TEST_HOST_MODE", mode, "cpu")
    assert proc.returncode == 0, proc.stderr


def test_a_repeatable_step_passes_the_two_replay_check_without_a_tolerance(tmp_path):
    # Serial on the CPU: both replays agree bit for bit (on CUDA: test_step_refusals_gpu.py).
    out = tmp_path / "raw"
    proc = capture(PROGRAMS / "nondeterministic_sum.py", out, "WRP_TEST_SUM_MODE", "exact", "cpu")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "interface.json").read_text())["golden"][0]["atol"] is None


@pytest.mark.parametrize("mode", ["kernel", "loop", "numpy"])
def test_a_retargeted_capture_names_initial_state_computed_by_build_kernels(tmp_path, mode):
    out = tmp_path / "raw"
    proc = capture(PROGRAMS / "build_kernel_state.py", out, "WRP_TEST_INIT_MODE", mode, "retarget")
    assert proc.returncode == 0, proc.stderr
    recorded = json.loads((out / "capture.json").read_text()).get("initial_state_from_build_kernels")
    if mode == "numpy":
        assert recorded is None and "computed in build()" not in proc.stderr
        return
    first = {"kernel": "spiral", "where": "build_kernel_state.py:36", "arrays": ["x"], "other_arrays": 0}
    looped = {**first, "where": "build_kernel_state.py:38"}
    assert recorded == [first] + ([looped] * 99 if mode == "loop" else [])
    assert "kernel 'spiral' at build_kernel_state.py:36 (1 launch): x" in proc.stderr
    assert "compute initial state on the host (NumPy)" in proc.stderr
    # Issue 40: a loop of launches in build() was one line naming the kernel each time (7-11 kB with
    # NVIDIA's examples); now one line per launch site, with its count.
    note = proc.stderr[proc.stderr.index("computed in build()") :].splitlines()
    assert max(len(line) for line in note[:3]) < 400, note[:3]
    assert proc.stderr.count("kernel 'spiral'") == (2 if mode == "loop" else 1)
    if mode == "loop":
        assert "kernel 'spiral' at build_kernel_state.py:38 (99 launches): x" in proc.stderr


def test_a_kernel_warp_cannot_build_is_one_error_naming_it(tmp_path):
    out = tmp_path / "raw"
    proc = run_capture(PROGRAMS / "broken_kernel.py", out, label=LABEL)
    assert_refused(proc, out, LABEL, "Warp could not build module 'broken_kernel'", "broken_kernel.py:15")
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("mode", ["all", "plain"])
def test_a_retargeted_capture_names_kernels_whose_cpu_result_is_no_cuda_golden(tmp_path, mode):
    out = tmp_path / "raw"
    proc = capture(PROGRAMS / "cpu_golden_caveats.py", out, "WRP_TEST_CAVEATS", mode, "retarget")
    assert proc.returncode == 0, proc.stderr
    recorded = json.loads((out / "capture.json").read_text()).get("cpu_golden_caveats")
    if mode == "plain":
        assert recorded is None and "may not match a GPU replay" not in proc.stderr
        return
    by_kernel = {r["kernel"]: r for r in recorded}
    assert sorted(by_kernel) == ["largest", "row_sums", "total"], recorded
    assert "atomic_add" in by_kernel["total"]["reasons"][0]
    assert "atomic_max" in by_kernel["largest"]["reasons"][0]  # inside the @wp.func it calls
    assert by_kernel["row_sums"]["block_dim"] == 64
    assert (
        "tile_load" in by_kernel["row_sums"]["reasons"][0]
        and "block_dim 64" in by_kernel["row_sums"]["reasons"][0]
    )
    assert by_kernel["total"]["where"].startswith("cpu_golden_caveats.py:")
    assert "may not match a GPU replay" in proc.stderr and "//rules:gpu_goldens" in proc.stderr


@pytest.mark.parametrize("capture_mode", CAPTURE_MODES)
def test_what_warps_apic_cannot_record_is_refused_as_such_naming_the_line(tmp_path, capture_mode):
    # Warp raises NotImplementedError for it: the script is not wrong, so the error must not say
    # so; it says where, quotes Warp, and points at Warp's tracker.
    out = tmp_path / "raw"
    device, flag = ("cpu", None) if capture_mode == "cpu" else ("cuda", "retarget")
    proc = run_capture(PROGRAMS / "apic_unsupported.py", out, device=device, mode=flag, label=LABEL)
    assert_refused(
        proc,
        out,
        LABEL,
        "step() does what Warp's APIC cannot record yet, at ",
        "apic_unsupported.py:16 (wp.copy(dst[:, 0], src[:, 1]))",
        "APIC capture does not yet support wp.copy() between non-contiguous",
        "NVIDIA/warp#1675",
    )
    assert "fix the error in the capture script" not in proc.stderr


@pytest.mark.parametrize("capture_mode", CAPTURE_MODES)
@pytest.mark.parametrize(
    "mode, what, line",
    [
        ("winding", "Mesh.refit() of a mesh built with support_winding_number=True", "mesh.refit()"),
        ("points", "assigning Mesh.points", "mesh.points = moved"),
        ("bvh", "Bvh.rebuild()", "bvh.rebuild()"),
    ],
)
def test_a_mesh_update_in_the_step_is_refused_naming_the_line(tmp_path, capture_mode, mode, what, line):
    """What wrpkg does not record (a plain Mesh.refit() is recorded: test_mesh_lowering.py); also
    a mesh created in the step (below)."""
    # Before the guard the CPU capture replayed a distance of 2.449 where the step gave 2.0.
    out = tmp_path / "raw"
    proc = capture(PROGRAMS / "mesh_refit.py", out, "WRP_TEST_MESH_UPDATE", mode, capture_mode)
    assert_refused(
        proc,
        out,
        LABEL,
        f"updates a BVH ({what}",
        f"({line})",
        "refit or rebuild in build()",
    )


@pytest.mark.parametrize("capture_mode", CAPTURE_MODES)
def test_a_mesh_created_in_the_step_is_refused_naming_the_line(tmp_path, capture_mode):
    out = tmp_path / "raw"
    proc = capture(PROGRAMS / "mesh_refit.py", out, "WRP_TEST_MESH_UPDATE", "create", capture_mode)
    assert_refused(
        proc, out, LABEL, "step() creates a wp.Mesh", "(made = wp.Mesh(", "create the wp.Mesh in build()"
    )


def test_the_watching_parent_imports_neither_warp_nor_numpy(tmp_path):
    """The parent only waits for the watched child: its own imports of Warp and NumPy cost every
    capture a second start-up. `-X importtime` is the parent's alone (a child does not inherit it)."""
    out = tmp_path / "raw"
    args = ["--script", str(PROGRAMS / "crash_in_step.py"), "--device", "cpu", "--out-dir", str(out)]
    proc = run_python("-X", "importtime", "-m", "wrpkg.capture", *args, "--stem", "sim", "--label", LABEL)
    assert "died of SIGSEGV during step() under capture on cpu" in proc.stderr
    imported = [
        line.rsplit("|", 1)[-1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    ]
    assert "wrpkg.capture.crash_watch" in imported
    assert not [name for name in imported if name.split(".")[0] in ("warp", "numpy")], imported


def test_the_capture_runs_under_a_fixed_hash_seed(tmp_path):
    """Warp's code generation walks sets of names: a capture from the command line runs the script under
    the hash seed the Bazel action sets (0), whatever the caller's, so its modules are the same bytes."""
    expected = subprocess.run(
        [sys.executable, "-c", "print(hash('wrpkg hash seed probe'))"],
        env={**os.environ, "PYTHONHASHSEED": "0"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    for seed in ("random", "1"):
        proc = run_capture(PROGRAMS / "hash_seed.py", tmp_path / seed, env_extra={"PYTHONHASHSEED": seed})
        assert proc.returncode == 1
        assert f"hash seed probe: {expected}" in proc.stderr, proc.stderr


# Native work of Warp's that APIC does not record, one program each: (script, its mode variable and
# mode, fragments of the refusal). Each captured before the guard, and its replay was not what the step
# did (the program's docstring says what it gave).
OUTSIDE_APIC = {
    "volume_rebuild": (
        "volume_rebuild.py",
        ("WRP_TEST_VOLUME_REBUILD", "step"),
        (
            "step() rebuilds a wp.Volume (Volume.rebuild())",
            "(volume.rebuild(points)",
            "rebuild the volume in build()",
        ),
    ),
    "volume_voxels": (
        "volume_rebuild.py",
        ("WRP_TEST_VOLUME_REBUILD", "voxels"),
        (
            "step() reads a wp.Volume's coordinates into an array (Volume.get_voxels())",
            "(volume.get_tiles if MODE",
            "call Volume.get_voxels() in build()",
        ),
    ),
    "volume_tiles": (
        "volume_rebuild.py",
        ("WRP_TEST_VOLUME_REBUILD", "tiles"),
        (
            "reads a wp.Volume's coordinates into an array (Volume.get_tiles())",
            "call Volume.get_tiles() in build()",
        ),
    ),
    "texture": (
        "texture_step.py",
        ("WRP_TEST_UNUSED", ""),
        (
            "step() launches 'sample' with a wp.Texture2D as 'tex'",
            "(wp.launch(sample, dim=N, inputs=[tex, uv, out], device=device)",
            "keep the texels in a wp.array",
        ),
    ),
    "coloring": (
        "coloring_step.py",
        ("WRP_TEST_UNUSED", ""),
        (
            "step() calls wp.utils.graph_coloring_assign()",
            "(wp.utils.graph_coloring_assign(edges, colors)",
            "call wp.utils.graph_coloring_assign() in build()",
        ),
    ),
    "mesh_velocities": (
        "mesh_velocities.py",
        ("WRP_TEST_MESH_VELOCITIES", "assign"),
        (
            "step() assigns a wp.Mesh's velocities (Mesh.velocities = ...)",
            "(mesh.velocities = fast",
            "give the mesh its velocities array once, in build()",
        ),
    ),
}


@pytest.mark.parametrize("capture_mode", CAPTURE_MODES)
@pytest.mark.parametrize("case", sorted(OUTSIDE_APIC))
def test_native_work_apic_does_not_record_is_refused_naming_the_line(tmp_path, capture_mode, case):
    script, (mode_var, mode), fragments = OUTSIDE_APIC[case]
    out = tmp_path / "raw"
    proc = capture(PROGRAMS / script, out, mode_var, mode, capture_mode)
    assert_refused(proc, out, LABEL, *fragments)


def test_a_volume_rebuilt_in_build_captures_what_the_step_computes(tmp_path):
    out = tmp_path / "raw"
    proc = capture(PROGRAMS / "volume_rebuild.py", out, "WRP_TEST_VOLUME_REBUILD", "build", "cpu")
    assert proc.returncode == 0, proc.stderr
    golden = np.fromfile(out / "golden" / "found.bin", dtype=np.int32)
    direct = run_python(
        "-c",
        "import json, sys, warp as wp; wp.config.quiet = True; sys.path.insert(0, sys.argv[1]); "
        "import volume_rebuild as m; spec = m.build('cpu'); spec.step(); "
        "print(json.dumps(spec.outputs['found'].numpy().tolist()))",
        str(PROGRAMS),
        env_extra={"WRP_TEST_VOLUME_REBUILD": "build"},
    )
    assert direct.returncode == 0, direct.stderr
    assert golden.tolist() == json.loads(direct.stdout.strip().splitlines()[-1])
    assert (golden >= 0).any(), golden


def test_velocities_written_into_the_meshs_array_capture_what_the_step_computes(tmp_path):
    out = tmp_path / "raw"
    proc = capture(PROGRAMS / "mesh_velocities.py", out, "WRP_TEST_MESH_VELOCITIES", "write", "cpu")
    assert proc.returncode == 0, proc.stderr
    before = np.fromfile(out / "golden" / "before.bin", dtype=np.float32)
    after = np.fromfile(out / "golden" / "after.bin", dtype=np.float32)
    # The first query sees the velocities of build() (1.0), the second the step's (5.0 doubled).
    assert before.tolist() == [1.0] * 6 and after.tolist() == [10.0] * 6, (before, after)


@pytest.mark.parametrize("capture_mode", CAPTURE_MODES)
def test_host_code_no_guard_knows_is_refused_by_the_direct_run(tmp_path, capture_mode):
    """ctypes writes y between two launches: the replay computes 2x + 1, the program 1."""
    out = tmp_path / "raw"
    proc = capture(
        PROGRAMS / "unrecorded_host_write.py", out, "WRP_TEST_DIRECT_MODE", "host_write", capture_mode
    )
    assert_refused(
        proc,
        out,
        LABEL,
        "the saved graph does not compute what step() computes: output 'z'",
        "direct_step_check = False",
    )
    # The opt-out captures it, and its golden is the replay's 2x + 1: what the check stood between.
    proc = run_capture(
        PROGRAMS / "unrecorded_host_write.py",
        out,
        device="cpu",
        label=LABEL,
        env_extra={"WRP_TEST_DIRECT_MODE": "host_write"},
        extra_args=["--no-direct-step-check"],
    )
    assert proc.returncode == 0, proc.stderr
    golden = np.frombuffer((out / "golden" / "z.bin").read_bytes(), dtype=np.float32)
    assert np.array_equal(golden, 2 * np.arange(16, dtype=np.float32) + 1)
    assert "direct_step_check" not in json.loads((out / "capture.json").read_text())


@pytest.mark.parametrize("capture_mode", CAPTURE_MODES)
def test_the_direct_run_agrees_with_a_recorded_write(tmp_path, capture_mode):
    out = tmp_path / "raw"
    proc = capture(PROGRAMS / "unrecorded_host_write.py", out, "WRP_TEST_DIRECT_MODE", "fixed", capture_mode)
    assert proc.returncode == 0, proc.stderr
    golden = np.frombuffer((out / "golden" / "z.bin").read_bytes(), dtype=np.float32)
    assert np.array_equal(golden, np.ones(16, dtype=np.float32))
    assert json.loads((out / "capture.json").read_text())["direct_step_check"] == {
        "bit_exact": ["z"],
        "within_tolerance": [],
    }


def test_a_program_that_differs_run_to_run_captures_with_a_note(tmp_path):
    """Unseeded random numbers in build(): two direct runs disagree as well, so nothing can hold the
    replay to the program; the capture is its own run, and says so."""
    out = tmp_path / "raw"
    proc = capture(PROGRAMS / "unrecorded_host_write.py", out, "WRP_TEST_DIRECT_MODE", "unseeded", "cpu")
    assert proc.returncode == 0, proc.stderr
    assert "build() and step() run twice without a capture give different 'z'" in proc.stderr
    record = json.loads((out / "capture.json").read_text())["direct_step_check"]
    assert record == {"bit_exact": [], "within_tolerance": [], "differs_run_to_run": ["z"]}


def test_a_step_that_runs_only_under_a_capture_is_refused_with_the_opt_out(tmp_path):
    out = tmp_path / "raw"
    proc = capture(PROGRAMS / "unrecorded_host_write.py", out, "WRP_TEST_DIRECT_MODE", "needs_capture", "cpu")
    assert_refused(
        proc,
        out,
        LABEL,
        "failed: RuntimeError: this step runs only under a capture",
        "--no-direct-step-check",
    )
