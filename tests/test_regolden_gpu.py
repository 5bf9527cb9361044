"""On a CUDA GPU (tagged gpu): goldens of retargeted bundles remade by replaying them there
(wrpkg.reader.regolden, what --//rules:gpu_goldens runs). The copy keeps every deployed byte and the
content hash, holds goldens from the GPU, and the C++ replay of it passes (bit for bit where
no tolerance is declared)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from wrpkg.files import relative_files
from wrpkg.reader import regolden
from wrpkg.reader.verify import verify_bundle

REPLAY = os.environ["WRP_REPLAY"]
BUNDLES = {
    "launch_forms": (Path(os.environ["WRP_CUDA_BUNDLE"]), Path(os.environ["WRP_CUDA_BUNDLE_HASH"])),
    "caveats": (Path(os.environ["WRP_CAVEATS_BUNDLE"]), Path(os.environ["WRP_CAVEATS_BUNDLE_HASH"])),
}


@pytest.mark.parametrize("which", sorted(BUNDLES))
def test_goldens_made_on_the_gpu_hold_the_cpp_replay(tmp_path, which):
    bundle, content_hash = BUNDLES[which]
    assert json.loads((bundle / "golden.json").read_text())["golden_device"] == "cpu"
    out_dir = tmp_path / bundle.name
    report = regolden.regolden(
        bundle, content_hash, "cuda", out_dir, tmp_path / f"{bundle.name}.sha256", tmp_path / "b.tar"
    )
    print("\n".join(report))
    deployed = [r for r in relative_files(bundle) if r != "golden.json" and not r.startswith("golden/")]
    for rel in deployed:
        assert (out_dir / rel).read_bytes() == (bundle / rel).read_bytes(), rel
    manifest = verify_bundle(out_dir, content_hash.read_text().split()[0])
    assert manifest.golden_device == "cuda"
    proc = subprocess.run(
        [REPLAY, "--bundle", str(out_dir), "--content-hash-file", str(tmp_path / f"{bundle.name}.sha256")],
        capture_output=True,
        text=True,
    )
    print(proc.stdout, proc.stderr)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "goldens made on cuda" in proc.stdout and "FAIL" not in proc.stdout
