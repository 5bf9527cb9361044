"""The retarget capture mode on the CPU: models/sim.py retargeted is byte-identical (canonical
form) to its capture on an H200; the accepted launch forms get the CUDA records Warp writes;
every refused operation fails naming the operation and the script line, leaving no output."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from wrpkg import wrpformat
from wrpkg.capture.retarget import compare_captures

REPO = Path(__file__).resolve().parent.parent
PROGRAMS = REPO / "tests" / "programs_retarget"
RECORDED_SIM = REPO / "models" / "recorded" / "sim_cuda_sm90"


def retarget(
    script: Path,
    out_dir: Path,
    *,
    device="cuda",
    mode="retarget",
    hide_gpus=False,
    env_extra=None,
    extra_args=(),
):
    env = dict(os.environ, **(env_extra or {}))
    if hide_gpus:
        env["CUDA_VISIBLE_DEVICES"] = ""
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    cmd = [sys.executable, "-m", "wrpkg.capture", "--script", str(script), "--device", device]
    cmd += ["--mode", mode, "--out-dir", str(out_dir), "--stem", script.stem, "--label", "//t:x", *extra_args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=600)


def test_sim_retarget_is_the_h200_capture(tmp_path):
    out = tmp_path / "sim"
    temp = tmp_path / "tmp"
    temp.mkdir()
    proc = retarget(REPO / "models" / "sim.py", out, env_extra={"TMPDIR": str(temp)})
    assert proc.returncode == 0, proc.stderr
    # NVRTC's precompiled headers (hundreds of MB a process) and every other temp file went with it.
    assert sorted(os.listdir(temp)) == []
    # The canonical .wrp and every module file (.cu and sm_90 .cubin) byte for byte.
    assert compare_captures(out, RECORDED_SIM, "sim") == []
    interface = (out / "interface.json").read_text()
    assert '"golden_device": "cpu"' in interface and '"device": "cuda"' in interface
    info = json.loads((out / "capture.json").read_text())
    # models/sim.py asks nothing about its device: the model (h200, the default) answered nothing.
    assert info["device_model"] == "h200"
    assert "cpu_device_branches" not in info and "device_model_answers" not in info


def _line(script: Path, marker: str) -> int:
    return next(i for i, text in enumerate(script.read_text().splitlines(), 1) if marker in text)


def test_a_branch_on_the_device_takes_the_target_gpus_branch(tmp_path):
    """With the device model (h200, the default: wrpkg/capture/device_model.py), the script's line that
    asks whether it runs on the CPU is told it does not, so the capture launches with the CUDA branch's
    block_dim (128) as a GPU capture does; the answer and the line are recorded (capture.json
    device_model_answers, and a note). On a GPU, test_retarget_gpu.py holds this capture
    byte-identical to the native one."""
    script = PROGRAMS / "device_branch.py"
    out = tmp_path / "raw"
    proc = retarget(script, out)
    assert proc.returncode == 0, proc.stderr
    info = json.loads((out / "capture.json").read_text())
    assert info["device_model"] == "h200" and "cpu_device_branches" not in info
    assert info["device_model_answers"] == [
        {
            "asked": "Device.is_cpu",
            "answer": False,
            "where": f"tests/programs_retarget/device_branch.py:{_line(script, '# asks here')} "
            "(block_dim = 1 if wp.get_device(device).is_cpu else 128  # asks here)",
        }
    ]
    assert "answered as the h200 device model (NVIDIA H200, sm_90, 132 SMs)" in proc.stderr
    (launch,) = wrpformat.read_wrp(out / "device_branch.wrp").operations.ops
    assert launch.block_dim == 128  # the CUDA branch's
    # The step asks too: told it runs on CUDA, it skips the CPU branch's host read-back.
    proc = retarget(script, tmp_path / "readback", env_extra={"WRP_TEST_BRANCH": "readback"})
    assert proc.returncode == 0, proc.stderr
    asked = json.loads((tmp_path / "readback" / "capture.json").read_text())["device_model_answers"]
    assert [(a["asked"], a["answer"], a["where"].split(" ")[0]) for a in asked] == [
        ("Device.is_cpu", False, f"tests/programs_retarget/device_branch.py:{_line(script, '# asks here')}"),
        (
            "Device.is_cpu",
            False,
            f"tests/programs_retarget/device_branch.py:{_line(script, 'x.device.is_cpu')}",
        ),
    ]


@pytest.mark.parametrize(("model", "sm_count"), [("h200", 132), ("h100-pcie", 114), ("a100-sxm4-80gb", 108)])
def test_each_model_answers_its_own_sm_count_and_warps_global_queries(tmp_path, model, sm_count):
    """The model's SM count reaches the launch (max_blocks taken from Device.sm_count), and Warp's global
    queries (wp.is_conditional_graph_supported, wp.is_mempool_enabled) answer as on the GPU; each
    answer recorded once, at its line."""
    from wrpkg.capture import device_model  # noqa: PLC0415

    script = PROGRAMS / "device_branch.py"
    out = tmp_path / "raw"
    proc = retarget(
        script, out, env_extra={"WRP_TEST_BRANCH": "queries"}, extra_args=["--device-model", model]
    )
    assert proc.returncode == 0, proc.stderr
    info = json.loads((out / "capture.json").read_text())
    assert info["device_model"] == model
    assert info["sm"] == device_model.MODELS[model].arch  # without --cuda-arch, the cubins are the model's SM
    assert [(a["asked"], a["answer"]) for a in info["device_model_answers"]] == [
        ("Device.is_cpu", False),
        ("Device.sm_count", sm_count),
        ("wp.is_conditional_graph_supported()", True),
        ("wp.is_mempool_enabled()", True),
    ]
    (launch,) = wrpformat.read_wrp(out / "device_branch.wrp").operations.ops
    assert (launch.block_dim, launch.max_blocks) == (128, sm_count)


@pytest.mark.parametrize("model", ["h200", "a100-sxm4-80gb"])
def test_an_occupancy_query_is_computed_for_the_model(tmp_path, model):
    """wp.get_suggested_block_size is answered as cuOccupancyMaxPotentialBlockSize on the model's GPU:
    CUDA's occupancy calculator over the registers and shared memory of the kernel's cubin for the
    model's SM (wrpkg/capture/occupancy.py), not the CPU's (1, 1); the answer reaches the launch and is
    recorded with what it was computed from."""
    import importlib.util  # noqa: PLC0415

    from wrpkg.capture import device_model, occupancy  # noqa: PLC0415

    script = PROGRAMS / "device_branch.py"
    out = tmp_path / "raw"
    proc = retarget(
        script, out, env_extra={"WRP_TEST_BRANCH": "occupancy"}, extra_args=["--device-model", model]
    )
    assert proc.returncode == 0, proc.stderr
    target = device_model.MODELS[model]
    spec = importlib.util.spec_from_file_location("device_branch_for_occupancy", script)
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    _, resources, dynamic = occupancy.forward_resources(program.scale, target.arch, "test")
    expected = occupancy.max_potential_block_size(target.sm_limits, target.sm_count, resources, dynamic)
    assert expected != (1, 1) and expected[1] % target.sm_count == 0
    asked = json.loads((out / "capture.json").read_text())["device_model_answers"]
    assert [(a["asked"], a["where"].split(" ")[0]) for a in asked] == [
        ("Device.is_cpu", f"tests/programs_retarget/device_branch.py:{_line(script, '# asks here')}"),
        (
            "wp.get_suggested_block_size(scale)",
            f"tests/programs_retarget/device_branch.py:{_line(script, '# occupancy')}",
        ),
    ]
    answer = asked[1]["answer"]
    assert answer.startswith(f"{expected} (computed for sm_{target.arch} from its cubin: ")
    assert f"{resources.registers} registers" in answer
    assert f"computed for sm_{target.arch} with CUDA's occupancy calculator" in proc.stderr
    assert "answered by the CPU" not in proc.stderr
    (launch,) = wrpformat.read_wrp(out / "device_branch.wrp").operations.ops
    assert launch.max_blocks == expected[0] * expected[1]


@pytest.mark.parametrize("branch", ["context", "caught_context"])
def test_a_cuda_context_asked_on_the_model_branch_is_refused(tmp_path, branch):
    """Told it runs on CUDA, the script asks the device for its CUDA context, which a run on the CPU
    cannot give: refused with the line, the reason and the fix, and nothing written; also when the
    script catches the refusal and goes on."""
    script = PROGRAMS / "device_branch.py"
    out = tmp_path / "raw"
    proc = retarget(script, out, env_extra={"WRP_TEST_BRANCH": branch})
    assert proc.returncode == 1, proc.stderr
    error = proc.stderr.partition("error: ")[2]
    assert f"device_branch.py:{_line(script, '# asks for the context')}" in error
    assert "its CUDA context (Device.context)" in error and "h200 device model" in error
    assert 'capture_mode = "gpu"' in error and "--device-model none" in error
    assert "Traceback" not in proc.stderr
    assert not out.exists() or not any(out.iterdir())


def test_a_fork_onto_a_second_stream_is_recorded_in_issue_order(tmp_path):
    """A second wp.Stream, events and wp.ScopedStream on the model's branch (Newton's narrow phase
    forks its convex pairs so): stand-ins whose launches run on the CPU as issued, the order Warp's
    native capture records (one operation stream per device); each stand-in recorded."""
    from wrpkg.capture import device_model  # noqa: PLC0415

    script = PROGRAMS / "device_branch.py"
    out = tmp_path / "raw"
    proc = retarget(script, out, env_extra={"WRP_TEST_BRANCH": "fork"})
    assert proc.returncode == 0, proc.stderr
    asked = json.loads((out / "capture.json").read_text())["device_model_answers"]
    assert [(a["asked"], a["answer"], a["where"].split(" ")[0].rsplit(":", 1)[1]) for a in asked] == [
        ("Device.is_cpu", False, str(_line(script, "# asks here"))),
        ("Device.is_cuda", True, str(_line(script, 'BRANCH == "fork"'))),
        ("wp.Stream()", f"a stream {device_model.STAND_IN}", str(_line(script, "# a second stream"))),
        ("wp.Event()", f"an event {device_model.STAND_IN}", str(_line(script, "events = (wp.Event"))),
        (
            "wp.get_stream()",
            f"the current stream {device_model.STAND_IN}",
            str(_line(script, "# the current")),
        ),
    ]
    ops = wrpformat.read_wrp(out / "device_branch.wrp").operations.ops
    assert [op.block_dim for op in ops] == [256, 128, 256]  # y on the side stream, x, y in its scope
    n = 256
    x = np.frombuffer((out / "golden" / "x.bin").read_bytes(), dtype=np.float32)
    y = np.frombuffer((out / "golden" / "y.bin").read_bytes(), dtype=np.float32)
    assert np.array_equal(x, np.arange(n, dtype=np.float32) * 2) and np.array_equal(
        y, np.arange(n, dtype=np.float32) * 4
    )


def test_pinned_host_memory_on_the_model_branch_is_ordinary_host_memory(tmp_path):
    """Pinned host memory (Newton's implicit MPM reads its grid bounds back through it in build()) needs
    a CUDA driver; the CPU run gets ordinary host memory, the same bytes, and the answer is recorded.
    Without the model's answer Warp fails to allocate (CUDA error 35 on a machine without a driver)."""
    from wrpkg.capture import device_model  # noqa: PLC0415

    script = PROGRAMS / "device_branch.py"
    out = tmp_path / "raw"
    proc = retarget(script, out, env_extra={"WRP_TEST_BRANCH": "pinned"})
    assert proc.returncode == 0, proc.stderr
    asked = json.loads((out / "capture.json").read_text())["device_model_answers"]
    pinned = [a for a in asked if a["asked"] == "pinned host memory"]
    assert [(a["answer"], a["where"].split(" ")[0].rsplit(":", 1)[1]) for a in pinned] == [
        (device_model.PINNED_AS_PAGEABLE, str(_line(script, "# pinned read-back")))
    ]


def test_initial_state_from_block_sized_code_in_build_is_refused(tmp_path):
    """A reduction over wp.tile(x) at block_dim 64 in build(): the CPU reduces one value per block
    where a GPU reduces 64, so the saved initial state would not be a GPU's (what a GPU replay of the
    bundle would also start from: no golden could tell). Refused naming the kernel, its line and the
    code; the same launch in the step retargets."""
    script = PROGRAMS / "block_sized_build.py"
    proc = retarget(script, tmp_path / "raw")
    assert proc.returncode != 0
    assert (
        f"build() launches kernel 'block_max' at block_sized_build.py:{_line(script, '# launch')}"
        in proc.stderr
    ), proc.stderr
    assert "wp.block_dim() and wp.tile()" in proc.stderr and "maxima" in proc.stderr, proc.stderr
    assert "fix: compute that state on the host (NumPy) in build()" in proc.stderr, proc.stderr
    in_step = retarget(script, tmp_path / "step", env_extra={"WRP_TEST_BLOCK_SIZED": "step"})
    assert in_step.returncode == 0, in_step.stderr


def test_block_sized_code_is_found_in_a_warm_kernel_cache(tmp_path):
    """A module loaded from the kernel cache was never generated in the capturing process: its code is
    generated to be read (warp_internals.forward_code), so the second capture with one cache (as Bazel's
    seeded cache, and every later build, has it) refuses as the first did (it was saved silently)."""
    script = PROGRAMS / "block_sized_build.py"
    cache = ["--cache-dir", str(tmp_path / "cache")]
    for run in ("cold", "warm"):
        proc = retarget(script, tmp_path / run, extra_args=cache)
        assert proc.returncode == 1, f"{run}: {proc.stderr}"
        assert "build() launches kernel 'block_max' at block_sized_build.py:" in proc.stderr, proc.stderr


def test_a_host_read_in_build_of_block_sized_results_is_refused(tmp_path):
    """build() reads on the host what a block-sized launch wrote (the maxima) and sizes an array from
    it; the step does not use the maxima, so no saved state shows it, but the size is the CPU's. Refused
    before the step, naming the read's line and the kernel; reading the launch's input is not."""
    script = PROGRAMS / "block_sized_build.py"
    proc = retarget(script, tmp_path / "raw", env_extra={"WRP_TEST_BLOCK_SIZED": "host"})
    assert proc.returncode == 1, proc.stderr
    read_line = _line(script, "# host read")
    assert "build() reads on the host (array.numpy()) at " in proc.stderr, proc.stderr
    assert f"block_sized_build.py:{read_line} (size = int(read.numpy().max()) + 1" in proc.stderr
    assert f"kernel 'block_max' wrote at block_sized_build.py:{_line(script, '# launch')}" in proc.stderr
    assert "fix: compute that value on the host (NumPy) in build()" in proc.stderr
    assert "running step()" not in proc.stderr  # refused before the step
    assert not (tmp_path / "raw").exists()
    # x is the launch's input, not written by it: reading it is no refusal.
    inputs = retarget(script, tmp_path / "input", env_extra={"WRP_TEST_BLOCK_SIZED": "host_input"})
    assert inputs.returncode == 0, inputs.stderr


def test_an_unknown_device_model_is_refused_naming_the_known_ones(tmp_path):
    out = tmp_path / "raw"
    proc = retarget(PROGRAMS / "device_branch.py", out, extra_args=["--device-model", "h300"])
    assert proc.returncode == 1, proc.stderr
    assert "unknown device model 'h300'" in proc.stderr
    assert "h200, h100-sxm, h100-pcie, l40s, a100-sxm4-80gb, none" in proc.stderr
    assert not out.exists()


def test_a_branch_on_the_device_is_named_without_a_model(tmp_path):
    """With --device-model none, a retargeted capture runs the script's CPU branch: the line that asked
    which device it runs on is named (capture.json cpu_device_branches, and a note saying a GPU capture
    may differ); models/sim.py asks nothing (test_sim_retarget_is_the_h200_capture)."""
    script = PROGRAMS / "device_branch.py"
    line = _line(script, "# asks here")
    out = tmp_path / "raw"
    proc = retarget(script, out, extra_args=["--device-model", "none"])
    assert proc.returncode == 0, proc.stderr
    info = json.loads((out / "capture.json").read_text())
    assert info["device_model"] == "none" and "device_model_answers" not in info
    assert info["cpu_device_branches"] == [
        f"tests/programs_retarget/device_branch.py:{line} "
        "(block_dim = 1 if wp.get_device(device).is_cpu else 128  # asks here)"
    ]
    assert "code asked which device it runs on" in proc.stderr and 'capture_mode = "gpu"' in proc.stderr
    launch = next(op for op in wrpformat.read_wrp(out / "device_branch.wrp").operations.ops)
    assert launch.block_dim == 1  # the CPU branch's, retargeted as asked


def test_a_refusal_on_the_cpu_branch_names_the_lines_that_asked_for_the_device(tmp_path):
    """Without a device model, a retargeted step refused for what its CPU branch does (a host read-back)
    says which lines chose by device, and that a GPU capture takes the other branch; the refusal itself
    is unchanged."""
    script = PROGRAMS / "device_branch.py"
    out = tmp_path / "raw"
    proc = retarget(
        script, out, env_extra={"WRP_TEST_BRANCH": "readback"}, extra_args=["--device-model", "none"]
    )
    assert proc.returncode == 1, proc.stderr
    note, _, error = proc.stderr.partition("error: ")
    assert "reads an array's values on the host" in error
    assert "asked which device it runs on" in note and 'capture_mode = "gpu"' in note
    assert "device_branch.py:" in note and "# asks here" in note
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("case", ["step", "tiled", "build"])
def test_a_tape_backward_pass_launches_with_the_forward_launches_cuda_block_dim(tmp_path, case):
    """wp.Tape.backward() replays each forward launch with the block_dim the device resolved: 1 on the
    CPU, where a GPU's tape replays 256 (or the launch_tiled's 64). Retargeted, each backward launch
    has its forward launch's CUDA block_dim and shape, so the program keeps one CUDA module per block_dim
    a GPU capture would build (before: a block_dim-1 module for the backward launches). On a GPU,
    test_retarget_gpu.py holds the capture byte-identical to the native one."""
    out = tmp_path / "raw"
    proc = retarget(PROGRAMS / "tape_backward.py", out, env_extra={"WRP_TEST_TAPE": case})
    assert proc.returncode == 0, proc.stderr
    wrp = wrpformat.read_wrp(out / "tape_backward.wrp")
    launches = [op for op in wrp.operations.ops if op.op_type == wrpformat.OpType.KERNEL_LAUNCH]
    by_pass = {}
    for op in launches:
        by_pass.setdefault(op.kernel_key.split("_cuda_kernel_")[0], []).append(
            ("forward" if op.is_forward else "backward", op.block_dim, op.shape[: op.ndim])
        )
    expected = {"square_sum": 256, "tiled_scale": 64}
    for key, runs in by_pass.items():
        block_dim = next(v for k, v in expected.items() if key.startswith(k))
        assert sorted({kind for kind, _, _ in runs}) == ["backward", "forward"], runs
        assert {bd for _, bd, _ in runs} == {block_dim}, runs
        assert len({shape for _, _, shape in runs}) == 1, runs  # a tiled backward has the 64 lanes too
    assert len(by_pass) == (2 if case == "tiled" else 1)
    # One CUDA module per block_dim used: no block_dim-1 variant for the backward launches.
    assert {m.hash for m in wrp.metadata.modules} == {op.module_hash for op in launches}
    assert len(wrp.metadata.modules) == len(by_pass)


def test_a_later_overload_of_a_generic_kernel_has_its_own_cuda_kernel_record(tmp_path):
    """tests/programs_corpus/generic_overloads.py launches cube's float32 and float64 overloads in one
    step. Retargeted, each has a record naming its own CUDA symbol, which the module's source defines:
    the float64 launches name the record keyed by that overload's mangled name. (On the CPU its goldens
    equal NumPy's: capture_corpus_test; on a GPU, retarget_gpu_test holds the native capture to it.)"""
    out = tmp_path / "raw"
    proc = retarget(REPO / "tests" / "programs_corpus" / "generic_overloads.py", out)
    assert proc.returncode == 0, proc.stderr
    wrp = wrpformat.read_wrp(out / "generic_overloads.wrp")
    cubes = {k.key: k for k in wrp.metadata.kernels if k.key.startswith("cube")}
    assert len(cubes) == 2 and "cube" in cubes, sorted(cubes)
    (later,) = (key for key in cubes if key != "cube")
    assert (
        re.fullmatch(r"cube_[0-9a-f]{8}", later)
        and cubes[later].forward_name == f"{later}_cuda_kernel_forward"
    )
    assert cubes["cube"].forward_name != cubes[later].forward_name
    sources = "".join(p.read_text() for p in (out / "generic_overloads_modules").glob("*.cu"))
    for record in cubes.values():
        assert f"void {record.forward_name}(" in sources, record.forward_name
    launches = [op.kernel_key for op in wrp.iter_ops() if isinstance(op, wrpformat.KernelLaunch)]
    assert launches == ["cube", "scale", later, "cube"]


@pytest.mark.parametrize("by_name", ["0", "1"])
def test_launch_forms(tmp_path, by_name):
    # by_name: before the hooks followed names imported from warp, such launches were refused as
    # "not made through wp.launch/wp.launch_tiled".
    out = tmp_path / "forms"
    proc = retarget(PROGRAMS / "launch_forms.py", out, env_extra={"WRP_TEST_LAUNCH_BY_NAME": by_name})
    assert proc.returncode == 0, proc.stderr
    wrp = wrpformat.read_wrp(out / "launch_forms.wrp")
    assert wrp.is_cuda and wrp.header.target_arch == 90 and wrp.metadata.target_arch == 90
    # One Python module, launched with block_dims 256 (default), 64 (tiled) and 128: three
    # CUDA modules, each with its own hash, cubin and retained source.
    modules = {m.hash: m for m in wrp.metadata.modules}
    assert len(modules) == 3 and {m.name for m in modules.values()} == {"launch_forms"}
    files = sorted(os.listdir(out / "launch_forms_modules"))
    assert len(files) == 6 and all(f.endswith((".sm90.cubin", ".sm90.cu")) for f in files)
    for m in modules.values():
        assert m.binary_kind == wrpformat.BinaryKind.CUBIN
        assert m.fallback_reason == wrpformat.FallbackReason.AVAILABLE
        assert m.recipe.optimization_level == 3 and m.recipe.fuse_fp == 1
    block_dims = {(k.key, k.block_dim): k for k in wrp.metadata.kernels}
    assert sorted(block_dims) == [("affine", 256), ("square", 128), ("square", 256), ("tile_row_sum", 64)]
    for k in wrp.metadata.kernels:
        assert (
            k.forward_name.endswith("_cuda_kernel_forward") and modules[k.module_hash].hash == k.module_hash
        )
    launches = [op for op in wrp.iter_ops() if isinstance(op, wrpformat.KernelLaunch)]
    summary = [
        (op.kernel_key, op.block_dim, op.max_blocks, op.grid_stride, op.ndim, op.shape, op.size)
        for op in launches
    ]
    assert summary == [
        ("affine", 256, 0, 1, 2, (8, 64, 0, 0), 512),
        # Tiled: the CPU ran one lane per tile; CUDA runs block_dim (64) lanes.
        ("tile_row_sum", 64, 0, 1, 1, (8, 0, 0, 0), 8 * 64),
        ("square", 128, 0, 1, 1, (8, 0, 0, 0), 8),
        ("square", 256, 2, 1, 1, (8, 0, 0, 0), 8),
    ]
    tiled = launches[1]
    assert tiled.smem_bytes == block_dims[("tile_row_sum", 64)].forward_smem_bytes
    assert tiled.module_hash == block_dims[("tile_row_sum", 64)].module_hash
    assert len({op.module_hash for op in launches}) == 3
    ops = wrp.op_counts()
    assert ops == {"kernel_launch": 4, "memcpy_d2d": 1, "memset": 1, "memtile": 1}


def test_conditional_nodes_retarget_with_their_branches_launches(tmp_path):
    """wp.capture_if and wp.capture_while (MuJoCo Warp's solver loop): the conditional records are kept
    and every launch inside a branch becomes a CUDA launch, as the top-level ones do."""
    out = tmp_path / "raw"
    proc = retarget(PROGRAMS / "conditionals.py", out)
    assert proc.returncode == 0, proc.stderr
    wrp = wrpformat.read_wrp(out / "conditionals.wrp")
    assert wrp.is_cuda
    conditionals = [op for op in wrp.operations.ops if isinstance(op, wrpformat.Conditional)]
    assert [c.kind.name for c in conditionals] == ["IF", "WHILE"]
    branches = [
        [op.kernel_key for op in conditionals[0].branch_a.ops],
        [op.kernel_key for op in conditionals[0].branch_b.ops],
        [op.kernel_key for op in conditionals[1].branch_a.ops],
    ]
    assert branches == [["scale"], ["scale"], ["shift", "count_down"]]
    cuda_modules = {m.hash for m in wrp.metadata.modules}
    nested = [op for c in conditionals for b in (c.branch_a, c.branch_b) for op in b.ops]
    assert all(op.block_dim == 256 and op.module_hash in cuda_modules for op in nested)
    kernels = {k.key for k in wrp.metadata.kernels}
    assert kernels == {"scale", "shift", "count_down", "start_loop"}
    x = np.frombuffer((out / "golden" / "x.bin").read_bytes(), dtype=np.float32)
    expected = np.linspace(0.0, 1.0, 64, dtype=np.float32) * np.float32(2.0)
    for _ in range(3):
        expected = expected + np.float32(0.25)
    np.testing.assert_array_equal(x, expected)
    assert np.frombuffer((out / "golden" / "counter.bin").read_bytes(), dtype=np.int32).tolist() == [0]


@pytest.mark.parametrize(
    "program, launches",
    [
        # (kernel, block_dim, is_forward) of each launch: the backward one runs the CUDA backward entry.
        ("adjoint.py", [("double", 256, 1), ("double", 256, 0)]),
        # A command made in the step, and one made in build() with block_dim 64 (the CPU command keeps 1).
        ("record_cmd.py", [("fill", 256, 1)]),
        ("launch_command.py", [("fill", 64, 1)]),
    ],
)
def test_backward_launches_and_launch_commands_retarget(tmp_path, program, launches):
    out = tmp_path / "raw"
    proc = retarget(PROGRAMS / program, out)
    assert proc.returncode == 0, proc.stderr
    assert "computed in build()" not in proc.stderr  # a launch command made in build() runs nothing there
    wrp = wrpformat.read_wrp(out / program.replace(".py", ".wrp"))
    ops = [op for op in wrp.operations.ops if isinstance(op, wrpformat.KernelLaunch)]
    assert [(op.kernel_key, op.block_dim, op.is_forward) for op in ops] == launches
    kernels = {k.key: k for k in wrp.metadata.kernels}
    assert all(kernels[op.kernel_key].block_dim == op.block_dim for op in ops)
    assert all(k.backward_name.endswith("_cuda_kernel_backward") for k in kernels.values())
    if program == "adjoint.py":
        # y = 2x forward; the adjoint of x accumulates 2 * adj_y (ones).
        assert np.frombuffer((out / "golden" / "adj_x.bin").read_bytes(), np.float32).tolist() == [2.0] * 4
    else:
        assert np.frombuffer((out / "golden" / "x.bin").read_bytes(), np.float32).tolist() == [3.0] * 4


REFUSALS = {
    "refuse_bsr.py": "operation 0 (bsr_from_triplets)",
    "refuse_lean_max_blocks.py": "with max_blocks and grid_stride=False",
    "refuse_cluster.py": "(cluster_dim > 1)",
    "refuse_deterministic.py": "(deterministic mode 1)",
    "refuse_generic_in_step.py": "(Warp module 'refuse_generic_in_step' changed during step()",
}


@pytest.mark.parametrize("program", sorted(REFUSALS))
def test_refusal_names_the_operation_and_the_line(tmp_path, program):
    script = PROGRAMS / program
    line = next(i for i, text in enumerate(script.read_text().splitlines(), 1) if "# refused here" in text)
    out = tmp_path / "raw"
    proc = retarget(script, out)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "cannot retarget" in proc.stderr and REFUSALS[program] in proc.stderr, proc.stderr
    assert f"{program}:{line} to CUDA" in proc.stderr, proc.stderr
    assert "capture_mode" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_retarget_needs_a_cuda_device_name(tmp_path):
    proc = retarget(REPO / "models" / "sim.py", tmp_path / "raw", device="cpu")
    assert proc.returncode == 1
    assert "capture mode 'retarget' makes a CUDA capture, but the device is 'cpu'" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_auto_retargets_without_a_gpu(tmp_path):
    # With no CUDA device visible (CI has none; a GPU runner's is hidden), auto retargets.
    out = tmp_path / "forms"
    proc = retarget(PROGRAMS / "launch_forms.py", out, mode="auto", hide_gpus=True)
    assert proc.returncode == 0, proc.stderr
    assert '"mode": "retarget"' in (out / "capture.json").read_text()


BUILTIN_NUMPY = {
    # op: (output, dtype, NumPy's answer for tests/programs_retarget/builtin_ops.py's inputs)
    "radix_sort_pairs": ("keys", np.int32, np.sort(np.arange(32, 16, -1) % 7, kind="stable")),
    "segmented_sort_pairs": (
        "keys",
        np.int32,
        np.concatenate([np.sort(np.arange(32, 0, -1)[a:b] % 7) for a, b in ((0, 4), (4, 8), (8, 16))]),
    ),
    "runlength_encode": ("count", np.int32, [1 + np.count_nonzero(np.diff(np.arange(32, 16, -1) % 7))]),
    "array_sum": ("total", np.float32, [np.linspace(0, 1, 16, dtype=np.float32).sum()]),
    "array_inner": ("total", np.float32, [np.dot(*[np.linspace(0, 1, 16, dtype=np.float32)] * 2)]),
    "array_scan": ("scanned", np.float32, np.cumsum(np.linspace(0, 1, 16, dtype=np.float32))),
    "array_scan_int": ("prefix", np.int32, np.concatenate([[0], np.cumsum(np.arange(32, 1, -1) % 7)])),
}


@pytest.mark.parametrize("op", sorted(BUILTIN_NUMPY))
def test_warps_builtin_array_operations_are_kept_as_recorded(tmp_path, op):
    """APIC records a warp.utils sort, scan or reduction as the same operation on both devices (the
    CUDA loader sizes CUB's temporary storage): the retargeted .wrp holds the CPU capture's record
    byte for byte, and the goldens are NumPy's answer. Float sums and scans are named as caveats of
    the CPU goldens (CUB adds in another order); on an H200 each equals its native capture
    (test_retarget_gpu.py)."""
    script = PROGRAMS / "builtin_ops.py"
    env = {"WRP_TEST_BUILTIN_OP": op}
    cuda, cpu = tmp_path / "cuda", tmp_path / "cpu"
    assert retarget(script, cuda, env_extra=env).returncode == 0
    proc = retarget(script, cpu, device="cpu", mode="gpu", env_extra=env)
    assert proc.returncode == 0, proc.stderr
    records = [
        [(o.op_type, o.payload) for o in wrpformat.read_wrp(d / "builtin_ops.wrp").operations.ops]
        for d in (cuda, cpu)
    ]
    assert records[0] == records[1] and len(records[0]) == 1
    output, dtype, want = BUILTIN_NUMPY[op]
    want = np.asarray(want, dtype=dtype)
    got = np.frombuffer((cuda / "golden" / f"{output}.bin").read_bytes(), dtype=dtype)[: want.size]
    assert np.allclose(got, want, rtol=1e-6, atol=0) if dtype == np.float32 else np.array_equal(got, want)
    caveats = json.loads((cuda / "capture.json").read_text()).get("cpu_golden_caveats", [])
    line = next(
        i
        for i, t in enumerate(script.read_text().splitlines(), 1)
        if f"wp.utils.{op.removesuffix('_int')}(" in t
    )
    floats = op in ("array_sum", "array_inner", "array_scan")
    assert [(c["operation"], f"builtin_ops.py:{line}" in c["where"]) for c in caveats] == (
        [(op, True)] if floats else []
    ), caveats


def _code_in(folder: str, source: str):
    """`source` compiled as if it were a file in `folder`: its frames are that folder's code."""
    namespace = {}
    exec(compile(source, os.path.join(folder, "_device_model_probe.py"), "exec"), namespace)  # noqa: S102
    return namespace["probe"]


def test_warp_and_wrpkg_still_see_the_cpu_under_the_model():
    """In process: under the model, code outside Warp and wrpkg is told the CPU device is the target
    GPU, while Warp's own code (its functions, and code whose file lies in Warp's folder) and wrpkg's
    see the CPU; once the model's watch ends, everyone sees the CPU again, also through a modelled
    function a library bound while the watch was on."""
    import warp as wp  # noqa: PLC0415

    from wrpkg import warp_internals  # noqa: PLC0415
    from wrpkg.capture import device_model  # noqa: PLC0415

    wp.init()
    cpu = wp.get_device("cpu")
    probe = "def probe(device):\n    return (device.is_cuda, device.is_cpu, device.arch, device.sm_count, device.name)\n"
    warp_code = _code_in(os.path.dirname(os.path.abspath(wp.__file__)), probe)
    wrpkg_code = _code_in(os.path.dirname(os.path.abspath(device_model.__file__)), probe)
    user_code = _code_in(str(PROGRAMS), probe)
    real = warp_code(cpu)
    assert real[:4] == (False, True, 0, 0)
    model = device_model.DeviceModel(device_model.MODELS["h100-pcie"], "//t:x")
    with model.watching():
        assert user_code(cpu) == (True, False, 90, 114, "NVIDIA H100 PCIe")
        assert cpu.total_memory == 81559 << 20 and cpu.is_mempool_enabled
        assert warp_code(cpu) == real and wrpkg_code(cpu) == real
        # Warp's own functions read the device in Warp's frames.
        assert warp_internals.context().is_mempool_enabled(cpu) is False
        assert wp.is_mempool_enabled(cpu) is True  # asked from here: the model's answer
        assert cpu.get_allocator() is cpu.default_allocator  # Warp's is_cuda branch inside: the CPU's
        assert wp.get_cuda_device_count() == 1 and wp.is_conditional_graph_supported()
        bound = wp.is_conditional_graph_supported
        # A CUDA context or device: refused, naming this line.
        with pytest.raises(device_model.DeviceModelRefusal, match=r"test_retarget\.py:\d+ .*Device\.context"):
            _ = cpu.context
        with pytest.raises(device_model.DeviceModelRefusal, match="a CUDA device object"):
            wp.get_device("cuda:0")
        # A stream and an event: stand-ins without CUDA handles, their synchronization a no-op.
        side, event = wp.Stream(cpu), wp.Event(cpu)
        assert side.cuda_stream is None and event.cuda_event is None and side.device is cpu
        assert wp.get_stream(cpu) is cpu.stream and wp.get_stream(cpu).record_event(event) is event
        side.wait_event(event)
        side.wait_stream(wp.get_stream(cpu))
        with pytest.raises(device_model.DeviceModelRefusal, match="CUDA memory pool"):
            wp.get_mempool_used_mem_current(cpu)
        wp.set_mempool_enabled(cpu, True)  # already enabled, as the model says: nothing to do
    with pytest.raises(device_model.DeviceModelRefusal, match="Device.context"):
        model.check()  # the first refusal, for code that caught it
    assert user_code(cpu) == real
    assert bound() == warp_internals.context().is_conditional_graph_supported()
    assert wp.get_cuda_device_count() == 0
    asked = {(a["asked"], a["answer"]) for a in model.records()}
    assert ("Device.sm_count", 114) in asked and ("wp.get_cuda_device_count()", 1) in asked
    assert all("test_retarget.py:" in a["where"] for a in model.records() if a["asked"].startswith("wp."))


def test_every_model_is_a_real_gpu():
    from wrpkg.capture import device_model  # noqa: PLC0415

    assert device_model.DEFAULT_MODEL == "h200"
    assert {k: (m.arch, m.sm_count) for k, m in device_model.MODELS.items()} == {
        "h200": (90, 132),
        "h100-sxm": (90, 132),
        "h100-pcie": (90, 114),
        "l40s": (89, 142),
        "a100-sxm4-80gb": (80, 108),
    }
    assert (
        device_model.MODELS["h200"].total_memory > 140e9 and device_model.MODELS["l40s"].total_memory > 45e9
    )


def test_a_reviewed_library_kernel_is_not_block_sized_and_another_version_of_it_is(tmp_path):
    """Newton's compute_shape_local_bounds (model set-up of every program with meshes or heightfields)
    reduces with min and max, whose value no block size changes: reviewed, it is not refused
    (golden_caveats.BLOCK_SIZE_INDEPENDENT). A kernel of the same name and other code still is."""
    code = (
        "import json, warp as wp\n"
        "wp.config.quiet = True\n"
        "from newton._src.geometry import bvh\n"
        "from wrpkg.capture import golden_caveats\n"
        "@wp.kernel\n"
        "def compute_shape_local_bounds(x: wp.array(dtype=float), out: wp.array(dtype=float)):\n"
        "    block, lane = wp.tid()\n"
        "    v = x[block * wp.block_dim() + lane]\n"
        "    m = wp.tile_max(wp.tile(v))\n"
        "    if lane == 0:\n"
        "        out[block] = m[0]\n"
        "print(json.dumps([golden_caveats.block_sized_code(bvh.compute_shape_local_bounds),\n"
        "                  golden_caveats.block_sized_code(compute_shape_local_bounds)]))\n"
    )
    script = tmp_path / "same_name.py"  # Warp reads a kernel's source from its file
    script.write_text(code)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    reviewed, other = json.loads(proc.stdout.strip().splitlines()[-1])
    assert reviewed == [] and other == ["wp.block_dim()", "wp.tile()"], (reviewed, other)
