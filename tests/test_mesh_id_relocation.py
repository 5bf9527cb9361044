"""A wp.uint64 kernel parameter holding a live wp.Mesh id (as NVIDIA's mesh samples pass `mesh.id`)
is recorded as a wp.handle relocation: the capture is the one of the same program declaring
wp.handle, says so in its log, capture.json and `wrpkg inspect`, and is refused with
--no-relocate-uint64-mesh-ids (wrp_artifact's relocate_uint64_mesh_ids = False) as before.
An array address in a wp.uint64 is still refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_capture import PROGRAMS, assert_refused
from wrp_testing import kernel_cache_dir, replay_cpu, run_python

from wrpkg.build.pack import pack
from wrpkg.wrpformat import canonicalize, read_wrp

SCRIPT = PROGRAMS / "mesh_id_uint64.py"
LABEL = "//tests:mesh_id_uint64_wrp"
OUTPUTS = ("dist_a", "dist_b", "face_a", "face_b", "t_hit")
NOTE = "recorded as a wp.handle relocation, as if declared wp.handle"


def _capture(out: Path, *extra: str, device="cpu", mode=None, env=None):
    args = ["--script", str(SCRIPT), "--device", device, "--out-dir", str(out), "--stem", "mesh"]
    args += ["--label", LABEL, *(["--mode", mode] if mode else []), *extra]
    return run_python("-m", "wrpkg.capture", *args, env_extra=env or {})


def _canonical(wrp: Path) -> bytes:
    return canonicalize(read_wrp(wrp)).to_bytes()


def _modules(raw: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((raw / "mesh_modules").iterdir())}


@pytest.fixture(scope="module")
def captures(tmp_path_factory) -> dict[str, tuple[Path, str]]:
    """The program as written (wp.uint64) and edited to wp.handle, each captured on the CPU."""
    root = tmp_path_factory.mktemp("mesh_id")
    found = {}
    for name, mesh_type in (("uint64", "uint64"), ("handle", "handle")):
        proc = _capture(root / name, env={"WRP_TEST_MESH_ID_TYPE": mesh_type})
        assert proc.returncode == 0, proc.stderr
        found[name] = (root / name, proc.stderr)
    return found


def test_the_capture_is_the_wp_handle_programs(captures):
    (u64, _), (handle, _) = captures["uint64"], captures["handle"]
    assert len(read_wrp(u64 / "mesh.wrp").metadata.meshes) == 2  # both meshes saved, as for wp.handle
    assert _canonical(u64 / "mesh.wrp") == _canonical(handle / "mesh.wrp")
    assert _modules(u64) == _modules(handle)
    for name in OUTPUTS:
        assert (u64 / "golden" / f"{name}.bin").read_bytes() == (
            handle / "golden" / f"{name}.bin"
        ).read_bytes()


def test_log_and_capture_json_name_each_relocated_parameter(captures):
    (u64, log), (handle, handle_log) = captures["uint64"], captures["handle"]
    lines = [line for line in log.splitlines() if NOTE in line]
    assert len(lines) == 2, log
    assert "kernel 'closest_point', parameter 'mesh' is declared wp.uint64" in lines[0]
    assert "wp.Mesh (4 points, 4 triangles) and wp.Mesh (8 points, 12 triangles) (2 launches)" in lines[0]
    assert (
        "kernel 'cast_rays', parameter 'mesh'" in lines[1] and "wp.Mesh (8 points, 12 triangles)" in lines[1]
    )
    assert "'tag'" not in log  # the plain wp.uint64 beside it stays a plain number
    info = json.loads((u64 / "capture.json").read_text())
    assert info["uint64_mesh_ids_as_handles"] == [
        {
            "kernel": "closest_point",
            "parameter": "mesh",
            "meshes": ["wp.Mesh (4 points, 4 triangles)", "wp.Mesh (8 points, 12 triangles)"],
            "launches": 2,
        },
        {
            "kernel": "cast_rays",
            "parameter": "mesh",
            "meshes": ["wp.Mesh (8 points, 12 triangles)"],
            "launches": 1,
        },
    ]
    # Declared wp.handle: nothing to say.
    assert NOTE not in handle_log
    assert "uint64_mesh_ids_as_handles" not in json.loads((handle / "capture.json").read_text())


def test_bundles_are_identical_replay_the_goldens_and_inspect_names_the_parameters(captures, tmp_path):
    out = {}
    for name, (raw, _) in captures.items():
        out[name] = tmp_path / name / "mesh_wrp"
        pack(
            raw,
            "mesh",
            "mesh_wrp",
            LABEL,
            out[name],
            out[name].with_suffix(".tar"),
            out[name].with_suffix(".sha256"),
        )
    u64, handle = out["uint64"], out["handle"]
    assert (u64 / "mesh.wrp").read_bytes() == (handle / "mesh.wrp").read_bytes()
    assert u64.with_suffix(".sha256").read_text() == handle.with_suffix(".sha256").read_text()

    # A replay in this process (not the capturing one: the capture's mesh addresses mean nothing here).
    replayed = replay_cpu(u64 / "mesh.wrp", cache_dir=kernel_cache_dir(tmp_path))
    for name in OUTPUTS:
        assert replayed[name] == (u64 / "golden" / f"{name}.bin").read_bytes(), name

    text = run_python("-m", "wrpkg.cli", "inspect", str(u64)).stdout
    assert "wp.uint64 parameters saved as wp.handle relocations (2):" in text, text
    assert (
        "kernel 'closest_point', parameter 'mesh': wp.Mesh (4 points, 4 triangles); "
        "wp.Mesh (8 points, 12 triangles) (2 launches)"
    ) in text
    assert "kernel 'cast_rays', parameter 'mesh': wp.Mesh (8 points, 12 triangles) (1 launch)" in text
    as_json = json.loads(run_python("-m", "wrpkg.cli", "inspect", "--json", str(u64)).stdout)
    assert [r["parameter"] for r in as_json["wrp"]["uint64_mesh_ids_as_handles"]] == ["mesh", "mesh"]
    assert "relocations" not in run_python("-m", "wrpkg.cli", "inspect", str(handle)).stdout


def test_a_backward_launch_records_the_adjoint_as_a_handle_too(tmp_path):
    """APIC walks a wp.handle parameter's adjoint record as a handle: so must the relocation."""
    raws, logs = {}, {}
    for name in ("uint64", "handle"):
        raws[name] = tmp_path / name
        args = ["--script", str(PROGRAMS / "mesh_id_uint64_backward.py"), "--device", "cpu"]
        args += ["--out-dir", str(raws[name]), "--stem", "mesh", "--label", LABEL]
        proc = run_python("-m", "wrpkg.capture", *args, env_extra={"WRP_TEST_MESH_ID_TYPE": name})
        assert proc.returncode == 0, proc.stderr
        logs[name] = proc.stderr
    assert "kernel 'distance', parameter 'mesh' is declared wp.uint64" in logs["uint64"]
    assert "(2 launches)" in logs["uint64"]  # forward and backward
    assert _canonical(raws["uint64"] / "mesh.wrp") == _canonical(raws["handle"] / "mesh.wrp")
    for name in ("dist", "adj_points"):
        golden = [(raws[side] / "golden" / f"{name}.bin").read_bytes() for side in raws]
        assert golden[0] == golden[1], name


def test_turned_off_it_is_refused_as_before(tmp_path):
    out = tmp_path / "raw"
    proc = _capture(out, "--no-relocate-uint64-mesh-ids")
    assert_refused(
        proc,
        out,
        "kernel 'closest_point', parameter 'mesh'",
        "holds the address of a live wp.Mesh",
        "declare 'mesh' of kernel 'closest_point' as wp.handle",
        "relocate_uint64_mesh_ids = False",
    )
    assert NOTE not in proc.stderr


def test_an_array_address_in_a_uint64_is_still_refused(tmp_path):
    out = tmp_path / "raw"
    proc = _capture(out, env={"WRP_TEST_MESH_TAG": "array_ptr"})
    assert_refused(
        proc,
        out,
        "kernel 'closest_point', parameter 'tag'",
        "live wp.array data",
        "as a wp.array and pass the array itself",
    )


def test_retargeted_to_cuda_it_is_the_wp_handle_programs(tmp_path):
    raws = {}
    for name in ("uint64", "handle"):
        raws[name] = tmp_path / name
        proc = _capture(raws[name], device="cuda", mode="retarget", env={"WRP_TEST_MESH_ID_TYPE": name})
        assert proc.returncode == 0, proc.stderr
        assert (NOTE in proc.stderr) == (name == "uint64")
    assert _canonical(raws["uint64"] / "mesh.wrp") == _canonical(raws["handle"] / "mesh.wrp")
    assert _modules(raws["uint64"]) == _modules(raws["handle"])  # .cu and .cubin
