"""Bundles: reproducible content hash and tar, the manifest, `wrpkg verify`, `wrpkg.reader.bundle`, and
the arch-mismatch message. CPU only: the CUDA side runs on the in-repo sm_90 fixture."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from wrpkg import warp_internals, wrpformat
from wrpkg.build.pack import pack
from wrpkg.errors import ArchMismatchError, BundleError, VerifyError
from wrpkg.manifest import (
    MANIFEST_SCHEMA,
    PtxEntry,
    SassEntry,
    attach_golden,
    content_hash_of_bytes,
    from_json_bytes,
    golden_to_json_bytes,
    to_json_bytes,
)
from wrpkg.reader.device_fit import arch_mismatch_message, check_device, device_fit
from wrpkg.reader.validity import bundle_content_hash
from wrpkg.reader.verify import verify_bundle

REPO = Path(__file__).resolve().parent.parent
SIM = REPO / "models" / "sim.py"
PROGRAMS = REPO / "tests" / "programs_capture"
CUDA_FIXTURE = REPO / "tests" / "fixtures" / "cuda-sm90-particles"
LABEL = "//models:sim_cpu_wrp"


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _start_capture(script: Path, out_dir: Path, stem: str, label: str, cwd: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "wrpkg.capture", "--script", str(script), "--device", "cpu"]
    cmd += ["--out-dir", str(out_dir), "--stem", stem, "--label", label]
    return subprocess.Popen(
        cmd, cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _run_bundle(
    raw: Path, out_root: Path, name: str, label: str, stem: str = "sim"
) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "wrpkg.build.pack", "--raw-dir", str(raw), "--stem", stem, "--name", name]
    cmd += ["--label", label, "--out-dir", str(out_root / name), "--tar", str(out_root / f"{name}.tar")]
    cmd += ["--hash", str(out_root / f"{name}.sha256")]
    return subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory) -> list[Path]:
    """The model captured and bundled twice, in two processes, from two copies of the sources
    at different paths (as two Bazel output bases would): returns the two output roots."""
    roots, procs = [], []
    for i in range(2):
        root = tmp_path_factory.mktemp(f"build{i}")
        src = root / "src" / "models"
        src.mkdir(parents=True)
        for name in ("sim.py", "sim_kernels.py"):
            shutil.copy(REPO / "models" / name, src / name)
        roots.append(root)
        # Both captures run at once: they are independent processes, as in two builds.
        procs.append(_start_capture(src / "sim.py", root / "raw", "sim", LABEL, cwd=root / "src"))
    for proc in procs:
        _, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stderr
    for root in roots:
        proc = _run_bundle(root / "raw", root / "out", "sim_cpu_wrp", LABEL)
        assert proc.returncode == 0, proc.stderr
    return roots


@pytest.fixture()
def bundle_copy(two_builds, tmp_path) -> Path:
    """A private copy of one bundle (with its .sha256 beside it) to tamper with."""
    src = two_builds[0] / "out"
    shutil.copytree(src / "sim_cpu_wrp", tmp_path / "sim_cpu_wrp")
    shutil.copy(src / "sim_cpu_wrp.sha256", tmp_path / "sim_cpu_wrp.sha256")
    return tmp_path / "sim_cpu_wrp"


# --- reproducibility ---------------------------------------------------------------------


def test_two_captures_give_byte_identical_tar_and_hash(two_builds):
    a, b = (root / "out" for root in two_builds)
    # The raw captures differ (stale pointers in the .wrp); the canonical bundles may not.
    assert (two_builds[0] / "raw" / "sim.wrp").read_bytes() != (
        two_builds[1] / "raw" / "sim.wrp"
    ).read_bytes()
    assert (a / "sim_cpu_wrp.tar").read_bytes() == (b / "sim_cpu_wrp.tar").read_bytes()
    assert (a / "sim_cpu_wrp.sha256").read_bytes() == (b / "sim_cpu_wrp.sha256").read_bytes()
    content_hash = bundle_content_hash(a / "sim_cpu_wrp")
    assert (a / "sim_cpu_wrp.sha256").read_text() == f"{content_hash}  sim_cpu_wrp/manifest.json\n"


def test_tar_is_deterministic_ustar(two_builds):
    tar_path = two_builds[0] / "out" / "sim_cpu_wrp.tar"
    with tarfile.open(tar_path) as tar:
        members = tar.getmembers()
        assert tar.pax_headers == {}
    names = [m.name for m in members]
    assert names == sorted(names) and names[0] == "sim_cpu_wrp"
    assert "sim_cpu_wrp/manifest.json" in names and "sim_cpu_wrp/capture.json" in names
    for m in members:
        assert (m.mtime, m.uid, m.gid, m.uname, m.gname) == (0, 0, 0, "", "")
        assert m.mode == (0o755 if m.isdir() else 0o644)
        assert m.pax_headers == {}
    # No PAX extended headers anywhere in the raw bytes.
    assert b"PaxHeader" not in tar_path.read_bytes()


def test_hash_ignores_capture_provenance(two_builds, tmp_path):
    """capture.json describes the machine; changing it must not change the content hash."""
    raw = tmp_path / "raw"
    shutil.copytree(two_builds[0] / "raw", raw)
    info = json.loads((raw / "capture.json").read_text())
    info["device_name"] = "Some Other CPU"
    (raw / "capture.json").write_text(json.dumps(info))
    result = pack(
        raw,
        "sim",
        "sim_cpu_wrp",
        LABEL,
        tmp_path / "out/sim_cpu_wrp",
        tmp_path / "out/t.tar",
        tmp_path / "out/t.sha256",
    )
    assert result.content_hash == bundle_content_hash(two_builds[0] / "out" / "sim_cpu_wrp")
    assert "Some Other CPU" in (tmp_path / "out/sim_cpu_wrp/capture.json").read_text()


# --- manifest ------------------------------------------------------------------------------


def test_manifest_content(two_builds):
    bundle_dir = two_builds[0] / "out" / "sim_cpu_wrp"
    data = (bundle_dir / "manifest.json").read_bytes()
    manifest = from_json_bytes(data)
    assert to_json_bytes(manifest) == data and data.endswith(b"}\n")
    # The target's identity and the golden outputs are in the test manifest, not in the hashed one.
    assert b"golden" not in data and LABEL.encode() not in data and b"sim_cpu_wrp" not in data
    golden_bytes = (bundle_dir / "golden.json").read_bytes()
    attach_golden(manifest, golden_bytes, content_hash_of_bytes(data))
    assert golden_to_json_bytes(manifest, content_hash_of_bytes(data)) == golden_bytes
    assert manifest.schema == MANIFEST_SCHEMA and manifest.label == LABEL and manifest.name == "sim_cpu_wrp"
    assert manifest.golden_device == "cpu"
    assert (manifest.device, manifest.warp_version, manifest.format_version) == ("cpu", "1.19.0", 18)
    assert manifest.toolchain.warp == "1.19.0" and manifest.toolchain.nvrtc is None
    assert sorted(m.name for m in manifest.modules) == ["sim", "sim_kernels"]
    assert all(m.binary_kind == "cpu_object" and m.sass == [] and m.ptx is None for m in manifest.modules)
    paths = [f.path for f in manifest.files]
    assert paths == sorted(paths) and not {"manifest.json", "capture.json", "golden.json"} & set(paths)
    assert set(paths) == {"sim.wrp"} | {m.binary for m in manifest.modules}
    assert {g.file for g in manifest.golden} >= {"golden/x.bin"}
    bindings = {b.name: (b.direction, b.bytes) for b in manifest.bindings}
    assert bindings["x"] == ("inout", 2048 * 12) and bindings["energy"] == ("out", 480)
    x = next(b for b in manifest.bindings if b.name == "x")
    assert (x.dtype, x.dtype_bytes, x.shape, x.strides, x.offset) == ("vec3f", 12, [2048], [12], 0)
    tolerances = {g.name: (g.atol, g.rtol) for g in manifest.golden}
    assert tolerances == {
        "x": (1e-4, 1e-5),
        "displacement": (1e-4, 1e-5),
        "energy": (1e-2, 1e-4),
        "v": (None, None),
        "contacts": (None, None),
    }
    # The bundled .wrp is the canonical form of the raw capture.
    raw = wrpformat.read_wrp(two_builds[0] / "raw" / "sim.wrp")
    assert (bundle_dir / "sim.wrp").read_bytes() == wrpformat.canonicalize(raw).to_bytes()


def test_tolerance_is_carried_into_the_manifest(tmp_path):
    proc = _start_capture(
        PROGRAMS / "atomic_sum.py", tmp_path / "raw", "atomic", "//tests:atomic_wrp", tmp_path
    )
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    result = pack(
        tmp_path / "raw", "atomic", "atomic_wrp", "//tests:atomic_wrp",
        tmp_path / "out/atomic_wrp", tmp_path / "out/atomic_wrp.tar", tmp_path / "out/atomic_wrp.sha256",
    )  # fmt: skip
    assert {g.name: (g.atol, g.rtol) for g in result.manifest.golden} == {
        "sum": (0.0, 1e-5),
        "x": (None, None),
    }
    verify_bundle(tmp_path / "out/atomic_wrp")


def test_bundle_fails_cleanly_on_a_broken_raw_dir(two_builds, tmp_path):
    raw = tmp_path / "raw"
    shutil.copytree(two_builds[0] / "raw", raw)
    (raw / "golden" / "energy.bin").write_bytes(b"\0" * 12)  # wrong size
    out = tmp_path / "out"
    with pytest.raises(BundleError, match="energy"):
        pack(raw, "sim", "sim_cpu_wrp", LABEL, out / "sim_cpu_wrp", out / "s.tar", out / "s.sha256")
    assert not out.exists() or list(out.iterdir()) == []


def _edit_interface(raw: Path, edit) -> None:
    path = raw / "interface.json"
    interface = json.loads(path.read_text())
    edit(interface)
    path.write_text(json.dumps(interface))


def test_bundle_refuses_an_interface_without_array_layouts(two_builds, tmp_path):
    """A capture recorded before bindings carried dtype and shape must be captured again."""
    raw = tmp_path / "raw"
    shutil.copytree(two_builds[0] / "raw", raw)

    def to_version_1(interface):
        interface["schema"] = "rules_warp.capture_interface/1"
        for b in interface["bindings"]:
            for key in ("dtype", "dtype_bytes", "shape", "strides", "offset"):
                del b[key]

    _edit_interface(raw, to_version_1)
    out = tmp_path / "out"
    with pytest.raises(BundleError) as err:
        pack(raw, "sim", "sim_cpu_wrp", LABEL, out / "sim_cpu_wrp", out / "s.tar", out / "s.sha256")
    message = str(err.value)
    assert str(raw / "interface.json") in message and "capture_interface/2" in message
    assert f"rebuild {LABEL}" in message and "tools/gpu/capture_cuda.sh" in message
    assert not out.exists() or list(out.iterdir()) == []


def test_bundle_refuses_a_binding_array_larger_than_its_region(two_builds, tmp_path):
    raw = tmp_path / "raw"
    shutil.copytree(two_builds[0] / "raw", raw)

    def grow_x(interface):
        next(b for b in interface["bindings"] if b["name"] == "x")["shape"] = [2049]

    _edit_interface(raw, grow_x)
    out = tmp_path / "out"
    with pytest.raises(
        BundleError, match=r"binding 'x': its vec3f array of shape \[2049\].*past its region's 24576 bytes"
    ):
        pack(raw, "sim", "sim_cpu_wrp", LABEL, out / "sim_cpu_wrp", out / "s.tar", out / "s.sha256")


def test_a_view_binding_records_its_place_in_the_base_allocation(tmp_path):
    proc = _start_capture(
        PROGRAMS / "view_binding.py", tmp_path / "raw", "view", "//tests:view_wrp", tmp_path
    )
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    out = tmp_path / "out"
    result = pack(
        tmp_path / "raw", "view", "view_wrp", "//tests:view_wrp",
        out / "view_wrp", out / "view_wrp.tar", out / "view_wrp.sha256",
    )  # fmt: skip
    layouts = {
        b.name: (b.dtype, b.dtype_bytes, b.shape, b.strides, b.offset, b.bytes, b.region)
        for b in result.manifest.bindings
    }
    grid_region = layouts["grid"][-1]
    # One region (the grid's 4 x 8 vec2f), two arrays in it.
    assert layouts == {
        "column": ("vec2f", 8, [4], [64], 24, 256, grid_region),
        "grid": ("vec2f", 8, [4, 8], [64, 8], 0, 256, grid_region),
    }
    verify_bundle(out / "view_wrp")
    text = subprocess.run(
        [sys.executable, "-m", "wrpkg.cli", "inspect", str(out / "view_wrp")],
        env=_env(), capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "vec2f[4] strides [64] at byte 24" in text and "vec2f[4, 8] " in text


# --- verify --------------------------------------------------------------------------------


def test_verify_accepts_a_fresh_bundle_and_the_cli_says_ok(two_builds):
    bundle_dir = two_builds[0] / "out" / "sim_cpu_wrp"
    assert verify_bundle(bundle_dir).label == LABEL
    proc = subprocess.run(
        [sys.executable, "-m", "wrpkg.cli", "verify", str(bundle_dir)],
        env=_env(),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert bundle_content_hash(bundle_dir) in proc.stdout


def _first_module(bundle_dir: Path) -> Path:
    return sorted((bundle_dir / "sim_modules").iterdir())[0]


def test_verify_catches_a_flipped_byte_in_a_module(bundle_copy):
    module = _first_module(bundle_copy)
    data = bytearray(module.read_bytes())
    data[len(data) // 2] ^= 0x01
    module.write_bytes(bytes(data))
    with pytest.raises(VerifyError) as err:
        verify_bundle(bundle_copy)
    assert str(module) in str(err.value) and "sha256" in str(err.value)
    assert f"rebuild {LABEL}" in str(err.value)
    proc = subprocess.run(
        [sys.executable, "-m", "wrpkg.reader.verify", str(bundle_copy)],
        env=_env(),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and module.name in proc.stderr


def test_verify_catches_a_changed_manifest(bundle_copy):
    manifest_path = bundle_copy / "manifest.json"
    manifest = from_json_bytes(manifest_path.read_bytes())
    manifest.bindings[0].direction = "in"  # a plausible edit, still canonical
    manifest_path.write_bytes(to_json_bytes(manifest))
    with pytest.raises(VerifyError) as err:  # caught by the .sha256 beside the bundle
        verify_bundle(bundle_copy)
    assert str(manifest_path) in str(err.value) and "content hash" in str(err.value)


def test_verify_catches_a_binding_array_larger_than_its_region(bundle_copy):
    (bundle_copy.parent / "sim_cpu_wrp.sha256").unlink()
    manifest_path = bundle_copy / "manifest.json"
    manifest = from_json_bytes(manifest_path.read_bytes())
    next(b for b in manifest.bindings if b.name == "energy").strides = [8]  # canonical, but reads past
    manifest_path.write_bytes(to_json_bytes(manifest))
    with pytest.raises(VerifyError, match=r"binding 'energy'.*reaches byte 956, past its region's 480 bytes"):
        verify_bundle(bundle_copy)


def test_verify_catches_a_hand_edited_manifest_without_a_hash_file(bundle_copy):
    (bundle_copy.parent / "sim_cpu_wrp.sha256").unlink()
    manifest_path = bundle_copy / "manifest.json"
    manifest_path.write_text(manifest_path.read_text().replace('"device": "cpu"', '"device":"cpu"'))
    with pytest.raises(VerifyError, match="canonical form") as err:
        verify_bundle(bundle_copy)
    assert str(manifest_path) in str(err.value)


def test_verify_catches_a_manifest_that_disagrees_with_a_file(bundle_copy):
    (bundle_copy.parent / "sim_cpu_wrp.sha256").unlink()
    manifest = verify_bundle(bundle_copy)
    module = next(f for f in manifest.files if f.path == manifest.modules[0].binary)
    module.sha256 = "0" * 64
    _rewrite_manifests(bundle_copy, manifest)  # golden.json follows the new content hash
    with pytest.raises(VerifyError) as err:
        verify_bundle(bundle_copy)
    assert str(bundle_copy / module.path) in str(err.value) and "manifest.json says" in str(err.value)


def test_verify_catches_a_golden_manifest_that_disagrees_with_a_file(bundle_copy):
    manifest = verify_bundle(bundle_copy)
    entry = next(g for g in manifest.golden if g.file == "golden/x.bin")
    entry.sha256 = "0" * 64
    _rewrite_manifests(bundle_copy, manifest)
    with pytest.raises(VerifyError) as err:
        verify_bundle(bundle_copy)
    assert str(bundle_copy / "golden" / "x.bin") in str(err.value) and "golden.json says" in str(err.value)


def test_verify_catches_a_golden_manifest_of_another_build(bundle_copy):
    manifest = verify_bundle(bundle_copy)
    (bundle_copy / "golden.json").write_bytes(golden_to_json_bytes(manifest, "1" * 64))
    with pytest.raises(VerifyError, match="belongs to content hash") as err:
        verify_bundle(bundle_copy)
    assert str(bundle_copy / "golden.json") in str(err.value)
    (bundle_copy / "golden.json").unlink()
    with pytest.raises(VerifyError, match="cannot read the test manifest"):
        verify_bundle(bundle_copy)


def _rewrite_manifests(bundle: Path, manifest) -> None:
    """Writes an edited manifest and its test manifest consistently, without the .sha256 file
    beside the bundle (which would catch the edit first)."""
    (bundle.parent / f"{bundle.name}.sha256").unlink(missing_ok=True)
    data = to_json_bytes(manifest)
    (bundle / "manifest.json").write_bytes(data)
    (bundle / "golden.json").write_bytes(golden_to_json_bytes(manifest, content_hash_of_bytes(data)))


def test_verify_catches_a_truncated_wrp(bundle_copy):
    wrp = bundle_copy / "sim.wrp"
    wrp.write_bytes(wrp.read_bytes()[:1000])
    with pytest.raises(VerifyError) as err:
        verify_bundle(bundle_copy)
    assert str(wrp) in str(err.value) and "1000 bytes" in str(err.value)


def test_verify_catches_an_extra_file(bundle_copy):
    extra = bundle_copy / "sim_modules" / "apic_guest_leftover.cubin"
    extra.write_bytes(b"not listed")
    with pytest.raises(VerifyError) as err:
        verify_bundle(bundle_copy)
    assert str(extra) in str(err.value) and "not listed" in str(err.value)


def test_verify_catches_a_missing_file(bundle_copy):
    (bundle_copy / "golden" / "v.bin").unlink()
    with pytest.raises(VerifyError, match="missing") as err:
        verify_bundle(bundle_copy)
    assert "v.bin" in str(err.value)


# --- load (CPU) ----------------------------------------------------------------------------


def test_load_replays_to_the_golden_outputs(two_builds):
    """The bundle built here, opened (wrpkg.Bundle: verified, its bytes held) and replayed to its
    golden outputs; wrpkg.reader.bundle.load, which reads only what it hands Warp, replays the same."""
    import warp as wp

    from wrpkg.reader.bundle import Bundle, load

    wp.config.log_level = wp.LOG_WARNING
    bundle = Bundle.open(two_builds[1] / "out" / "sim_cpu_wrp")
    deployed_graph, manifest = load(bundle.directory, device="cpu")
    assert manifest == bundle.manifest
    for graph in (bundle.load("cpu"), deployed_graph):
        outputs = warp_internals.replay_outputs(graph, [g.name for g in bundle.manifest.golden], "cpu")
        for golden in bundle.manifest.golden:
            assert outputs[golden.name] == bytes(bundle.file(golden.file)), golden.name


def test_load_refuses_a_tampered_bundle(bundle_copy):
    from wrpkg.reader.bundle import Bundle, load

    wrp = bundle_copy / "sim.wrp"
    wrp.write_bytes(wrp.read_bytes()[:-8])
    with pytest.raises(VerifyError, match="sim.wrp"):
        load(bundle_copy, device="cpu")
    with pytest.raises(VerifyError, match="sim.wrp"):
        Bundle.open(bundle_copy)


# --- CUDA bundles from the sm_90 fixture (no GPU needed) ----------------------------------


@pytest.fixture(scope="module")
def cuda_bundle(tmp_path_factory) -> Path:
    """A CUDA bundle made from the fixture's real H200 capture. The fixture has no golden
    outputs or interface.json, so zeros of the right sizes stand in (they are not replayed)."""
    root = tmp_path_factory.mktemp("cuda")
    raw = root / "raw"
    raw.mkdir()
    shutil.copy(CUDA_FIXTURE / "sim.wrp", raw / "sim.wrp")
    shutil.copytree(CUDA_FIXTURE / "sim_modules", raw / "sim_modules")
    infos = wrpformat.binding_infos(
        wrpformat.read_wrp(raw / "sim.wrp"), inputs=["x", "v"], outputs=["x", "e"]
    )
    direction = {"both": "inout", "input": "in", "output": "out"}
    (raw / "golden").mkdir()
    golden = []
    for info in infos:
        if info.name in ("x", "e"):
            (raw / "golden" / f"{info.name}.bin").write_bytes(b"\0" * info.byte_size)
            golden.append(
                {
                    "name": info.name,
                    "file": f"golden/{info.name}.bin",
                    "bytes": info.byte_size,
                    "atol": 1e-6 if info.name == "e" else None,
                    "rtol": 1e-5 if info.name == "e" else None,
                }
            )
    # The fixture's arrays (capture_fixture.py): x, v are vec3f[4096], e is float32[1].
    layout = {
        "x": {"dtype": "vec3f", "dtype_bytes": 12, "shape": [4096], "strides": [12], "offset": 0},
        "v": {"dtype": "vec3f", "dtype_bytes": 12, "shape": [4096], "strides": [12], "offset": 0},
        "e": {"dtype": "float32", "dtype_bytes": 4, "shape": [1], "strides": [4], "offset": 0},
    }
    interface = {
        "schema": "rules_warp.capture_interface/2",
        "stem": "sim",
        "device": "cuda",
        "bindings": [
            {"name": i.name, "direction": direction[i.direction.value], **layout[i.name]} for i in infos
        ],
        "golden": golden,
    }
    (raw / "interface.json").write_text(json.dumps(interface))
    info = {"schema": "rules_warp.capture/1", "warp_version": "1.19.0", "device": "cuda", "device_name": "NVIDIA H200",
            "sm": 90, "driver_version": "13.0", "cuda_toolkit_version": "13.4"}  # fmt: skip
    (raw / "capture.json").write_text(json.dumps(info))
    out = root / "out"
    pack(
        raw,
        "sim",
        "particles_wrp",
        "//tests:particles_wrp",
        out / "particles_wrp",
        out / "p.tar",
        out / "p.sha256",
    )
    return out / "particles_wrp"


def test_cuda_manifest_lists_the_captured_sass_and_source(cuda_bundle):
    manifest = verify_bundle(cuda_bundle)
    assert manifest.device == "cuda" and manifest.toolchain.nvrtc == "13.4"
    (module,) = manifest.modules
    assert module.binary_kind == "cubin" and module.binary.endswith(".sm90.cubin")
    assert module.source == "sim_modules/wp___main___5bca816.sm90.cu"
    assert [(s.arch, s.sha256) for s in module.sass] == [
        ("sm_90", "dcef466b302ce0b79a98a3ca1b66ac090670c9589336ea5a50946fb351229d81")
    ]
    assert module.ptx is None and manifest.ptx_min_driver is None
    assert manifest.sass_archs() == ["sm_90"] and manifest.has_source_fallback()


def test_verify_catches_a_module_that_disagrees_with_the_wrp(cuda_bundle, tmp_path):
    """A module swapped together with its manifest entry: the .wrp's digest still catches it."""
    copy = tmp_path / "particles_wrp"
    shutil.copytree(cuda_bundle, copy)
    manifest = verify_bundle(copy)
    module_path = copy / manifest.modules[0].binary
    module_path.write_bytes(module_path.read_bytes() + b"\0")
    entry = next(f for f in manifest.files if f.path == manifest.modules[0].binary)
    from wrpkg.manifest import file_entry

    fresh = file_entry(copy, entry.path)
    entry.size, entry.sha256 = fresh.size, fresh.sha256
    _rewrite_manifests(copy, manifest)
    with pytest.raises(VerifyError) as err:
        verify_bundle(copy)
    assert str(module_path) in str(err.value) and "sim.wrp" in str(err.value)


# --- arch checks ---------------------------------------------------------------------------


def test_arch_mismatch_message_names_bundle_device_and_fix(cuda_bundle):
    manifest = from_json_bytes((cuda_bundle / "manifest.json").read_bytes())
    manifest.label = "//models:sim_wrp"
    manifest.modules[0].sass = [SassEntry("sm_80", 1, "0" * 64), SassEntry("sm_90", 1, "0" * 64)]
    manifest.modules[0].ptx = PtxEntry("compute_90", 1, "0" * 64, "13.0.88")
    manifest.modules[0].source = None
    manifest.ptx_min_driver = "13.0"
    message = arch_mismatch_message(manifest, "ab" * 32, "cuda:0", "NVIDIA GeForce RTX 2080", 75, (13, 0))
    module = manifest.modules[0]
    assert message == (
        'bundle //models:sim_wrp (content sha256 abababababababab...) has no code that runs on cuda:0 "NVIDIA '
        'GeForce RTX 2080" (sm_75, driver CUDA 13.0).\n'
        "  the bundle holds: SASS sm_80 and sm_90, PTX compute_90 (needs driver CUDA >= 13.0), no CUDA source\n"
        f"  module {module.name} ({module.hash[:8]}): no SASS for sm_75 (has sm_80 and sm_90), no CUDA source; "
        "PTX compute_90 is newer than sm_75\n"
        'fix: add "sm_75" to the archs attribute of //models:sim_wrp and rebuild it'
    )


def test_check_device_on_a_cuda_manifest(cuda_bundle):
    manifest = verify_bundle(cuda_bundle)
    content_hash = bundle_content_hash(cuda_bundle)
    assert device_fit(manifest, 90).how == "sass"
    assert device_fit(manifest, 80).how == "source"  # the retained .cu still fits
    manifest.modules[0].source = None  # as if built without source fallback
    with pytest.raises(ArchMismatchError) as err:
        check_device(manifest, content_hash, "cuda:0", "NVIDIA A100-SXM4-80GB", 80, (13, 0))
    text = str(err.value)
    assert "//tests:particles_wrp" in text and content_hash[:16] in text
    assert "SASS sm_90, PTX none" in text and '"NVIDIA A100-SXM4-80GB" (sm_80' in text
    assert 'add "sm_80" to the archs attribute of //tests:particles_wrp' in text
    assert device_fit(manifest, 90).how == "sass"


def test_ptx_needs_a_driver_as_new_as_its_nvrtc(cuda_bundle):
    # Seen on an H200 with a CUDA 13.0 driver: PTX from NVRTC 13.4 does not JIT there.
    manifest = from_json_bytes((cuda_bundle / "manifest.json").read_bytes())
    manifest.modules[0].ptx = PtxEntry("compute_75", 10, "0" * 64, "13.4")
    manifest.modules[0].sass = []
    manifest.ptx_min_driver = "13.4"
    assert device_fit(manifest, 90, (13, 4)).how == "ptx"
    assert device_fit(manifest, 90, (13, 0)).how == "source"
    manifest.modules[0].source = None
    with pytest.raises(ArchMismatchError) as err:
        check_device(manifest, "f" * 64, "cuda:0", "NVIDIA H200", 90, (13, 0))
    assert "PTX compute_75 (needs driver CUDA >= 13.4)" in str(err.value)
    assert "PTX compute_75 needs driver CUDA >= 13.4, the device's driver is CUDA 13.0" in str(err.value)


def test_per_module_fit_mixes_sass_and_ptx(cuda_bundle):
    """One module with native code and another with only PTX still loads (as in C++)."""
    manifest = from_json_bytes((cuda_bundle / "manifest.json").read_bytes())
    second = copy.deepcopy(manifest.modules[0])
    second.name, second.sass, second.source = "other", [], None
    second.ptx = PtxEntry("compute_75", 1, "0" * 64, "13.0.88")
    manifest.modules.append(second)
    fit = device_fit(manifest, 90, (13, 0))
    assert fit.how == "ptx" and [m.how for m in fit.modules] == ["sass", "ptx"]


def test_multiarch_seam_packs_a_fatbin_from_compile_outputs(cuda_bundle, tmp_path):
    """The per-SM path: compile outputs (wrpkg.build.compile) in, one fatbin per module out, with
    the .wrp's module record rewritten to it. Only sm_90 + PTX here to keep NVRTC time low."""
    from wrpkg.build.compile import compile_wrp
    from wrpkg.cuda_tools import fatbin_contents

    raw = cuda_bundle.parent.parent / "raw"
    compile_wrp(raw / "sim.wrp", raw / "sim_modules", "sm_90", tmp_path / "sm_90")
    compile_wrp(raw / "sim.wrp", raw / "sim_modules", "compute_75", tmp_path / "ptx")
    out = tmp_path / "out"
    result = pack(
        raw, "sim", "particles_wrp", "//tests:particles_wrp", out / "particles_wrp", out / "p.tar", out / "p.sha256",
        arch_dirs={"sm_90": tmp_path / "sm_90"}, ptx_dir=tmp_path / "ptx",
    )  # fmt: skip
    manifest = verify_bundle(out / "particles_wrp")
    (module,) = manifest.modules
    assert module.binary == "sim_modules/wp___main___5bca816.fatbin.cubin"
    assert [s.arch for s in module.sass] == ["sm_90"] and module.ptx.arch == "compute_75"
    assert module.source is not None and manifest.ptx_min_driver == "13.4"
    assert (
        manifest.toolchain.nvrtc == manifest.toolchain.nvfatbin == manifest.toolchain.nvrtc_ptx == "13.4.92"
    )
    fatbin = (out / "particles_wrp" / module.binary).read_bytes()
    assert fatbin_contents(fatbin) == ["sm_90", "compute_75"]
    (record,) = wrpformat.read_wrp(out / "particles_wrp" / "sim.wrp").metadata.modules
    assert record.binary_filename == "wp___main___5bca816.fatbin.cubin"
    assert record.binary_sha256 == next(f.sha256 for f in manifest.files if f.path == module.binary)
    assert result.content_hash != bundle_content_hash(cuda_bundle)
    assert device_fit(manifest, 120).how == "ptx" and device_fit(manifest, 90).how == "sass"


def _relabel_compile_dir(src: Path, dst: Path, nvrtc: str, arch: str | None = None) -> Path:
    """A copy of a `wrpkg compile` output as if another NVRTC (and SM) had made it."""
    shutil.copytree(src, dst)
    index = json.loads((dst / "compile.json").read_text())
    index["toolchain"]["nvrtc"] = nvrtc
    if arch:
        index["arch"] = arch
        for entry in index["modules"]:
            entry["nvrtc_arch"] = arch
    (dst / "compile.json").write_text(json.dumps(index))
    return dst


def test_ptx_may_come_from_an_older_nvrtc_but_sass_from_one(cuda_bundle, tmp_path):
    """SASS from Warp's NVRTC, PTX from an older one (what //toolchains/cuda does): the
    manifest names both, and the PTX's NVRTC decides the oldest driver that JITs it."""
    from wrpkg.build.compile import compile_wrp

    raw = cuda_bundle.parent.parent / "raw"
    compile_wrp(raw / "sim.wrp", raw / "sim_modules", "sm_90", tmp_path / "sm_90")
    compile_wrp(raw / "sim.wrp", raw / "sim_modules", "compute_75", tmp_path / "ptx")
    old_ptx = _relabel_compile_dir(tmp_path / "ptx", tmp_path / "ptx_13_0", "13.0.88")
    out = tmp_path / "out"
    pack(
        raw, "sim", "particles_wrp", "//tests:particles_wrp", out / "particles_wrp", out / "p.tar", out / "p.sha256",
        arch_dirs={"sm_90": tmp_path / "sm_90"}, ptx_dir=old_ptx,
    )  # fmt: skip
    manifest = verify_bundle(out / "particles_wrp")
    (module,) = manifest.modules
    assert module.ptx.nvrtc_version == "13.0.88" and manifest.ptx_min_driver == "13.0"
    assert manifest.toolchain.nvrtc == "13.4.92" and manifest.toolchain.nvrtc_ptx == "13.0.88"
    assert device_fit(manifest, 120, (13, 0)).how == "ptx"

    # Two SASS outputs from different NVRTCs would mix codegens inside one fatbin: refused.
    other_sass = _relabel_compile_dir(tmp_path / "sm_90", tmp_path / "sm_80", "13.0.88", arch="sm_80")
    with pytest.raises(
        BundleError, match=r"its SASS was compiled by several NVRTC versions \['13.0.88', '13.4.92'\]"
    ):
        pack(
            raw, "sim", "particles_wrp", "//tests:particles_wrp", out / "bad", out / "b.tar", out / "b.sha256",
            arch_dirs={"sm_90": tmp_path / "sm_90", "sm_80": other_sass}, ptx_dir=old_ptx,
        )  # fmt: skip
