"""The capture harness (wrpkg.capture) on the CPU: the example model, golden values, and the
failures a capture script can cause (each must name the target and leave no output behind)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from wrp_testing import run_python

REPO = Path(__file__).resolve().parent.parent
SIM = REPO / "models" / "sim.py"
PROGRAMS = REPO / "tests" / "programs_capture"
LABEL = "//models:sim_cpu_wrp"


def run_capture(
    script: Path,
    out_dir: Path,
    *,
    device="cpu",
    mode=None,
    stem="sim",
    label=LABEL,
    cwd=None,
    env_extra=None,
    extra_args=(),
):
    """Runs `python -m wrpkg.capture` as the Bazel action does, in a fresh process."""
    args = ["--script", str(script), "--device", device, "--out-dir", str(out_dir)]
    args += ["--stem", stem, "--label", label] + (["--mode", mode] if mode else []) + list(extra_args)
    return run_python("-m", "wrpkg.capture", *args, env_extra=env_extra, cwd=cwd or REPO)


def assert_captures_the_direct_run(
    script: Path,
    out_dir: Path,
    capture_mode: str,
    expected: dict[str, bytes],
    *,
    label=LABEL,
    stem="sim",
    env_extra=None,
) -> None:
    """Captures `script` ("cpu", or "retarget": CUDA on this CPU) and holds every golden output to
    `expected` (wrp_testing.direct_step_outputs: the step run by Warp without a capture), byte for byte."""
    device, mode = ("cpu", None) if capture_mode == "cpu" else ("cuda", "retarget")
    proc = run_capture(script, out_dir, device=device, mode=mode, label=label, stem=stem, env_extra=env_extra)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.stem for p in (out_dir / "golden").glob("*.bin")) == sorted(expected)
    for name, data in expected.items():
        assert (out_dir / "golden" / f"{name}.bin").read_bytes() == data, name


def assert_no_output(out_dir: Path) -> None:
    """Neither the output dir nor a leftover temp dir next to it."""
    assert not out_dir.exists()
    assert [p.name for p in out_dir.parent.iterdir() if p.name.startswith(f".{out_dir.name}.")] == []


def assert_refused(proc: subprocess.CompletedProcess, out_dir: Path, *fragments: str) -> None:
    """The capture failed (exit 1) with every fragment in its error, and wrote nothing."""
    assert proc.returncode == 1, proc.stdout + proc.stderr
    for fragment in fragments:
        assert fragment in proc.stderr
    assert_no_output(out_dir)


@pytest.fixture(scope="module")
def sim_raw(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("capture") / "raw"
    proc = run_capture(SIM, out)
    assert proc.returncode == 0, proc.stderr
    return out


def test_sim_capture_layout(sim_raw):
    modules = sorted(p.name for p in (sim_raw / "sim_modules").iterdir())
    # Two Warp modules (the script's and sim_kernels), both CPU objects.
    assert len(modules) == 2 and all(name.endswith(".o") for name in modules)
    assert any(name.startswith("wp_sim_kernels_") for name in modules)
    assert sorted(p.name for p in (sim_raw / "golden").iterdir()) == [
        "contacts.bin",
        "displacement.bin",
        "energy.bin",
        "v.bin",
        "x.bin",
    ]
    # The kernel cache lived inside the temp output and is gone.
    assert sorted(p.name for p in sim_raw.iterdir()) == [
        "capture.json",
        "golden",
        "interface.json",
        "sim.wrp",
        "sim_modules",
    ]


def test_sim_capture_holds_the_promised_operations(sim_raw):
    from wrpkg import wrpformat

    wrp = wrpformat.read_wrp(sim_raw / "sim.wrp")
    counts = wrp.op_counts()
    assert counts["kernel_launch"] >= 3 * 100  # 3 launches per step, >= 100 steps
    assert counts["memset"] >= 1 and counts["memtile"] >= 1 and counts["memcpy_d2d"] >= 1
    assert len(wrp.metadata.meshes) == 1  # the ground mesh, relocated as a handle
    assert sorted(m.name for m in wrp.metadata.modules) == ["sim", "sim_kernels"]
    assert len(wrp.metadata.kernels) >= 3


def test_capture_json_is_provenance_without_times_or_paths(sim_raw):
    info = json.loads((sim_raw / "capture.json").read_text())
    assert info["warp_version"] == "1.19.0"
    assert info["device"] == "cpu" and info["sm"] is None
    assert info["label"] == LABEL
    text = (sim_raw / "capture.json").read_text()
    assert str(sim_raw.parent) not in text and str(REPO) not in text and os.path.expanduser("~") not in text
    assert not any(key in info for key in ("time", "timestamp", "date", "created"))


def test_interface_records_directions_and_sizes(sim_raw):
    interface = json.loads((sim_raw / "interface.json").read_text())
    directions = {b["name"]: b["direction"] for b in interface["bindings"]}
    assert directions == {
        "x": "inout",
        "v": "inout",
        "energy": "out",
        "contacts": "out",
        "displacement": "out",
    }
    sizes = {g["name"]: g["bytes"] for g in interface["golden"]}
    assert sizes["x"] == 2048 * 12 and sizes["energy"] == 120 * 4
    # Each array as models/sim.py allocates it: Warp's type name, shape and byte strides.
    layouts = {
        b["name"]: (b["dtype"], b["dtype_bytes"], b["shape"], b["strides"], b["offset"])
        for b in interface["bindings"]
    }
    assert layouts == {
        "x": ("vec3f", 12, [2048], [12], 0),
        "v": ("vec3f", 12, [2048], [12], 0),
        "energy": ("float32", 4, [120], [4], 0),
        "contacts": ("int32", 4, [120], [4], 0),
        "displacement": ("float32", 4, [2048], [4], 0),
    }
    # Tolerances for a CUDA replay against these CPU values; v and contacts are exact.
    assert {g["name"]: (g["atol"], g["rtol"]) for g in interface["golden"]} == {
        "x": (1e-4, 1e-5),
        "displacement": (1e-4, 1e-5),
        "energy": (1e-2, 1e-4),
        "v": (None, None),
        "contacts": (None, None),
    }


def test_golden_equals_a_fresh_replay_and_the_physics_is_sane(sim_raw):
    """Golden values must equal what wp.capture_load + one replay gives, bit for bit."""
    import warp as wp

    wp.config.log_level = wp.LOG_WARNING
    wp.init()
    graph = wp.capture_load(str(sim_raw / "sim.wrp"), device="cpu")
    wp.capture_launch(graph)
    for golden in sorted((sim_raw / "golden").iterdir()):
        name = golden.stem
        buffer = wp.empty(golden.stat().st_size, dtype=wp.uint8, device="cpu")
        graph.get_param(name, buffer)
        assert buffer.numpy().tobytes() == golden.read_bytes(), name
    contacts = np.fromfile(sim_raw / "golden" / "contacts.bin", dtype=np.int32)
    x = np.fromfile(sim_raw / "golden" / "x.bin", dtype=np.float32).reshape(-1, 3)
    v = np.fromfile(sim_raw / "golden" / "v.bin", dtype=np.float32)
    assert contacts[0] == 0 and contacts[-1] == 2048  # all particles end up resting on the ground
    assert x[:, 1].min() > -0.5 and not v.any()  # nobody fell through the mesh; all stopped


def _sim_module():
    sys.path[:0] = [str(SIM.parent)]
    try:
        import sim  # noqa: PLC0415 - the model script, as the harness imports it
    finally:
        del sys.path[0]
    return sim


def test_contacts_are_the_planned_landings(sim_raw):
    """Every particle reaches the ground in the step plan_drops computed in float64, with a
    margin no rounding difference can cross: the contact counts are the same on any device."""
    sim = _sim_module()
    _, _, landing = sim.plan_drops(np.random.default_rng(7))
    contacts = np.fromfile(sim_raw / "golden" / "contacts.bin", dtype=np.int32)
    planned = [int((landing <= s + 1).sum()) for s in range(sim.STEPS)]
    assert contacts.tolist() == planned
    assert 0 < landing.min() and landing.max() < sim.STEPS // 2  # all land, spread over many steps


def test_outputs_do_not_amplify_rounding_differences(sim_raw):
    """The CUDA replay of a retargeted bundle is checked against these CPU golden values with
    the script's tolerances. CUDA rounds differently by about an ulp per operation; a start
    state moved by up to 2 ulps must stay within a hundredth of those tolerances here, so
    the model cannot have become chaotic (its first version moved 0.3 apart on the H200)."""
    import warp as wp

    from wrpkg.golden import compare

    sim = _sim_module()
    wp.config.log_level = wp.LOG_WARNING
    wp.init()
    graph = wp.capture_load(str(sim_raw / "sim.wrp"), device="cpu")
    rng = np.random.default_rng(11)
    for name in ("x", "v"):
        start = np.fromfile(sim_raw / "golden" / f"{name}.bin", dtype=np.float32)  # sizes only
        buffer = wp.empty(start.size, dtype=float, device="cpu")
        graph.get_param(name, buffer)
        ulps = rng.integers(-2, 3, size=start.size)
        moved = (buffer.numpy().astype(np.float64) * (1.0 + ulps * 2.0**-23)).astype(np.float32)
        assert (moved != buffer.numpy()).any()
        graph.set_param(name, wp.array(moved, dtype=float, device="cpu"))
    wp.capture_launch(graph)
    interface = json.loads((sim_raw / "interface.json").read_text())
    for record in interface["golden"]:
        golden = (sim_raw / record["file"]).read_bytes()
        buffer = wp.empty(len(golden), dtype=wp.uint8, device="cpu")
        graph.get_param(record["name"], buffer)
        declared = sim.TOLERANCES.get(record["name"])
        tight = None if declared is None else type(declared)(declared.atol / 100, declared.rtol / 100)
        result = compare(golden, buffer.numpy().tobytes(), tight)
        assert result.match, f"{record['name']}: {result.detail}"


def test_script_that_raises_in_build(tmp_path):
    out = tmp_path / "raw"
    proc = run_capture(PROGRAMS / "raises_in_build.py", out, label="//models:broken_wrp")
    # The script's own traceback, down to the raising line, not the harness's frames.
    assert_refused(
        proc,
        out,
        "//models:broken_wrp",
        "Traceback",
        "raises_in_build.py",
        "in make_state",
        "ValueError: particle count must be positive",
    )
    assert "wrpkg/capture/tool.py" not in proc.stderr


def test_script_that_raises_at_import(tmp_path):
    out = tmp_path / "raw"
    proc = run_capture(PROGRAMS / "raises_at_import.py", out, label="//models:broken_wrp")
    assert_refused(proc, out, "//models:broken_wrp", "NameError", "undefined_name_in_capture_script")


def test_cuda_capture_without_a_cuda_device(tmp_path):
    out = tmp_path / "raw"
    # Hide any GPU so the test means the same on every machine.
    proc = run_capture(
        SIM, out, device="cuda", label="//models:sim_wrp", env_extra={"CUDA_VISIBLE_DEVICES": ""}
    )
    assert_refused(proc, out, "//models:sim_wrp", "--config=gpu", 'capture_mode = "retarget"')


def test_output_that_is_not_an_array(tmp_path):
    out = tmp_path / "raw"
    proc = run_capture(PROGRAMS / "output_not_array.py", out, stem="bad", label="//tests:bad_wrp")
    assert_refused(proc, out, "//tests:bad_wrp", "output 'result' is ndarray, not a wp.array")


def test_output_the_graph_does_not_contain(tmp_path):
    out = tmp_path / "raw"
    proc = run_capture(PROGRAMS / "output_not_captured.py", out, stem="bad", label="//tests:bad_wrp")
    assert_refused(proc, out, "output 'forces' is not used by any operation of the captured step")


def test_an_empty_out_dir_made_by_bazel_is_kept_empty_on_failure(tmp_path):
    out = tmp_path / "raw"
    out.mkdir()  # Bazel pre-creates a tree artifact's directory
    proc = run_capture(PROGRAMS / "raises_in_build.py", out)
    assert proc.returncode == 1
    assert list(out.iterdir()) == []
    assert [p.name for p in tmp_path.iterdir()] == ["raw"]


@pytest.mark.parametrize("name", ["new\nline", "back\\slash", "x" * 201, ".hidden"])
def test_a_binding_name_pack_would_refuse_is_refused_by_the_capture(tmp_path, name):
    out = tmp_path / "raw"
    proc = run_capture(PROGRAMS / "binding_name.py", out, env_extra={"WRP_TEST_BINDING_NAME": name})
    assert_refused(proc, out, "must be a non-empty plain name", "rename the binding")
    assert "Warp could not build" not in proc.stderr and "wp_" not in proc.stderr


def test_a_long_printable_binding_name_packs(tmp_path):
    out = tmp_path / "raw"
    proc = run_capture(PROGRAMS / "binding_name.py", out, env_extra={"WRP_TEST_BINDING_NAME": "é" * 100})
    assert proc.returncode == 0, proc.stderr
    args = ["--raw-dir", str(out), "--stem", "sim", "--name", "n_wrp", "--label", "//t:n_wrp"]
    args += [
        "--out-dir",
        str(tmp_path / "n_wrp"),
        "--tar",
        str(tmp_path / "n.tar"),
        "--hash",
        str(tmp_path / "n.sha256"),
    ]
    proc = run_python("-m", "wrpkg.build.pack", *args)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "n_wrp" / "golden" / ("é" * 100 + ".bin")).is_file()


def test_progress_lines_say_each_phase_with_its_time_and_quiet_silences_them(tmp_path):
    proc = run_capture(SIM, tmp_path / "loud")
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("wrpkg capture [")]
    phases = [line.split("] ", 1)[1] for line in lines]
    assert phases[0] == "starting Warp"
    assert (
        "golden replay 1/2 of the saved sim.wrp" in phases
        and "golden replay 2/2 of the saved sim.wrp" in phases
    )
    compiles = [p for p in phases if p.startswith("compiling CPU module ")]
    assert [p.split(":")[0] for p in compiles] == ["compiling CPU module 1/2", "compiling CPU module 2/2"]
    seconds = [float(line.split("[", 1)[1].split(" s]", 1)[0]) for line in lines]
    assert seconds == sorted(seconds)
    quiet = run_capture(SIM, tmp_path / "quiet", extra_args=["--quiet"])
    assert quiet.returncode == 0, quiet.stderr
    assert "wrpkg capture [" not in quiet.stderr


def test_a_long_phase_is_said_again_while_it_lasts(tmp_path):
    # build() sleeps 3 s; with a heartbeat of 0.5 s the watcher says so several times, then goes quiet.
    env = {"WRPKG_CAPTURE_HEARTBEAT_S": "0.5", "WRP_TEST_BUILD_SECONDS": "3"}
    proc = run_capture(PROGRAMS / "slow_build.py", tmp_path / "loud", env_extra=env)
    assert proc.returncode == 0, proc.stderr
    still = [line for line in proc.stderr.splitlines() if "] still " in line]
    assert all(line.startswith("wrpkg capture [") and line.endswith(" s so far)") for line in still), still
    in_build = [line for line in still if "still importing slow_build.py and its build('cpu') (" in line]
    assert len(in_build) >= 3, proc.stderr
    quiet = run_capture(PROGRAMS / "slow_build.py", tmp_path / "quiet", env_extra=env, extra_args=["--quiet"])
    assert quiet.returncode == 0, quiet.stderr
    assert "still" not in quiet.stderr
