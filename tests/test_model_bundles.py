"""The multi-arch CUDA bundles Bazel builds of models/sim.py, from the CPU capture
retargeted to CUDA (//models:sim_wrp) and from the recorded H200 capture
(//models:sim_recorded_wrp): every module's fatbin holds exactly the default SASS targets
plus the PTX (as the pinned cuobjdump lists them), agrees with the manifest, the rewritten
.wrp verifies, and both bundles deploy the same bytes and so have the same content hash."""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wrpkg import archs
from wrpkg.cuda_tools import fatbin_contents, fatbin_entries
from wrpkg.reader.validity import bundle_content_hash, read_hash_file
from wrpkg.reader.verify import verify_bundle
from wrpkg.wrpformat import BinaryKind, read_wrp

# Passed by tests/BUILD.bazel as $(rootpath //models:sim_wrp_dir) and (..._recorded_wrp_dir).
BUNDLES = ["WRP_RETARGETED_BUNDLE", "WRP_RECORDED_BUNDLE"]
# ... and their <name>.sha256 files (//models:sim_wrp_sha256, //models:sim_recorded_wrp_sha256).
HASH_FILES = ["WRP_RETARGETED_HASH", "WRP_RECORDED_HASH"]


@pytest.fixture(params=BUNDLES)
def bundle_dir(request) -> Path:
    return Path(os.environ[request.param])


def test_retargeted_and_recorded_bundles_deploy_the_same_bytes():
    retargeted, recorded = (Path(os.environ[name]) for name in BUNDLES)
    a, b = verify_bundle(retargeted), verify_bundle(recorded)
    assert a.modules == b.modules and a.bindings == b.bindings and a.toolchain == b.toolchain
    assert a.files == b.files
    for f in a.files:
        assert (retargeted / f.path).read_bytes() == (recorded / f.path).read_bytes(), f.path
    # Golden values: a CPU replay for the retargeted bundle (a GPU replay when --config=gpu
    # captured it natively), the H200's for the recorded one.
    assert (a.golden_device, b.golden_device) == (os.environ["WRP_SIM_GOLDEN_DEVICE"], "cuda")


def test_retargeted_and_recorded_bundles_share_the_content_hash():
    """The content hash covers what is deployed only: the capture mode, the target's label and
    the golden outputs (CPU vs H200 replay) live in golden.json, outside it."""
    bundles = [Path(os.environ[name]) for name in BUNDLES]
    built = [read_hash_file(os.environ[name]) for name in HASH_FILES]
    assert built == [bundle_content_hash(b) for b in bundles]
    assert built[0] == built[1]
    assert (bundles[0] / "manifest.json").read_bytes() == (bundles[1] / "manifest.json").read_bytes()
    tests = [json.loads((b / "golden.json").read_bytes()) for b in bundles]
    assert [t["label"] for t in tests] == ["//models:sim_wrp", "//models:sim_recorded_wrp"]
    assert [t["content_hash"] for t in tests] == built
    # The golden files themselves may or may not differ (CPU vs CUDA arithmetic); each bundle's
    # test manifest vouches for its own.
    for b, t in zip(bundles, tests, strict=True):
        for g in t["golden"]:
            assert hashlib.sha256((b / g["file"]).read_bytes()).hexdigest() == g["sha256"], (b, g["file"])


def test_fatbins_hold_exactly_the_default_targets(bundle_dir):
    root = bundle_dir
    manifest = json.loads((root / "manifest.json").read_text())
    expected = sorted([*archs.DEFAULT_SASS_ARCHS, archs.DEFAULT_PTX_ARCH])
    assert len(manifest["modules"]) == 2
    for module in manifest["modules"]:
        listed = fatbin_contents((root / module["binary"]).read_bytes())
        assert sorted(listed) == expected, module["name"]
        assert sorted(s["arch"] for s in module["sass"]) == sorted(archs.DEFAULT_SASS_ARCHS)
        assert module["ptx"]["arch"] == archs.DEFAULT_PTX_ARCH
        assert module["source"] and module["source"].endswith(".cu") and ".sm90." not in module["source"]


def test_rewritten_wrp_points_at_the_fatbins_and_verifies(bundle_dir):
    root = bundle_dir
    manifest = verify_bundle(root)
    wrp = read_wrp(root / manifest.wrp)
    for record in wrp.metadata.modules:
        assert record.binary_kind == BinaryKind.CUBIN
        assert record.binary_filename.endswith(".fatbin.cubin")
        assert (root / "sim_modules" / record.binary_filename).is_file()
        assert (root / "sim_modules" / record.source_filename).is_file()


def test_ptx_comes_from_the_older_nvrtc_and_sass_from_warps(bundle_dir):
    # PTX from NVRTC 13.0.88 (ISA 9.0) JITs on every CUDA 13 driver; SASS stays Warp's 13.4.92.
    root = bundle_dir
    manifest = verify_bundle(root)
    assert manifest.toolchain.nvrtc == archs.DEFAULT_TOOLCHAIN == "13.4.92"
    assert manifest.toolchain.nvrtc_ptx == archs.PTX_TOOLCHAIN == "13.0.88"
    assert manifest.ptx_min_driver == "13.0"
    for module in manifest.modules:
        assert module.ptx.nvrtc_version == "13.0.88", module.name
        entries = fatbin_entries((root / module.binary).read_bytes())
        assert [e.code_version for e in entries if e.kind == "ptx"] == ["9.0"], module.name


def test_inspect_leads_with_the_bundle_summary():
    root = Path(os.environ["WRP_RECORDED_BUNDLE"])
    out = subprocess.run(
        [sys.executable, "-m", "wrpkg.cli", "inspect", "--json", str(root)],
        capture_output=True,
        text=True,
        check=True,
    )
    doc = json.loads(out.stdout)
    bundle, wrp = doc["bundle"], doc["wrp"]
    manifest = json.loads((root / "manifest.json").read_text())
    assert bundle["content_sha256"] == hashlib.sha256((root / "manifest.json").read_bytes()).hexdigest()
    assert bundle["label"] == "//models:sim_recorded_wrp"
    assert bundle["sass"] == list(archs.DEFAULT_SASS_ARCHS)
    assert (
        bundle["ptx"] == [archs.DEFAULT_PTX_ARCH] and bundle["ptx_min_driver"] == manifest["ptx_min_driver"]
    )
    assert bundle["source_kept"] is True
    directions = {b["name"]: b["direction"] for b in manifest["bindings"]}
    assert {b["name"]: b["direction"] for b in bundle["bindings"]} == directions
    # dtype and shape come from the recorded capture's interface.json, as the manifest lists them.
    arrays = {b["name"]: (b["dtype"], b["shape"]) for b in manifest["bindings"]}
    assert arrays["x"] == ("vec3f", [2048]) and arrays["contacts"] == ("int32", [120])
    assert {b["name"]: (b["dtype"], b["shape"]) for b in bundle["bindings"]} == arrays
    assert {b["name"]: (b["dtype"], b["shape"]) for b in wrp["bindings"]} == arrays
    assert [g["name"] for g in bundle["golden"]] == sorted(directions)
    # The .wrp part takes its directions from the manifest too: none is left unknown.
    assert wrp["directions_from"] == "manifest.json"
    as_wrp = {"in": "input", "out": "output", "inout": "both"}
    assert {b["name"]: b["direction"] for b in wrp["bindings"]} == {
        n: as_wrp[d] for n, d in directions.items()
    }
    for module in wrp["modules"]:
        assert module["fatbin"] == [*archs.DEFAULT_SASS_ARCHS, archs.DEFAULT_PTX_ARCH]

    text = subprocess.run(
        [sys.executable, "-m", "wrpkg.cli", "inspect", str(root)], capture_output=True, text=True, check=True
    ).stdout
    assert text.startswith("bundle //models:sim_recorded_wrp")
    assert f"content sha256: {bundle['content_sha256']}" in text
    assert "CUDA source: kept" in text and "unknown" not in text
    assert "vec3f[2048]" in text and "int32[120]" in text
