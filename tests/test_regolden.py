"""wrpkg.reader.regolden: a bundle replayed on a device for its goldens. The copy keeps every deployed byte
(same content hash, same files), writes goldens from the replay and a golden.json naming the device,
and verifies; a CUDA bundle without a GPU is refused naming the fix, with nothing written. The CUDA
run itself is //tests:regolden_gpu_test (tagged gpu)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wrpkg.errors import CaptureError
from wrpkg.files import relative_files
from wrpkg.reader import regolden
from wrpkg.reader.verify import verify_bundle

CPU_BUNDLE = Path(os.environ["WRP_CPU_BUNDLE"])
CPU_HASH = Path(os.environ["WRP_CPU_BUNDLE_HASH"])
CPU_TAR = Path(os.environ["WRP_CPU_BUNDLE_TAR"])
CUDA_BUNDLE = Path(os.environ["WRP_CUDA_BUNDLE"])
CUDA_HASH = Path(os.environ["WRP_CUDA_BUNDLE_HASH"])


def outputs(tmp_path: Path) -> dict[str, Path]:
    return {
        "out_dir": tmp_path / "out" / "sim_test",
        "out_hash": tmp_path / "out" / "sim_test.sha256",
        "tar_path": tmp_path / "out" / "sim_test.tar",
        "report_path": tmp_path / "out" / "report.txt",
    }


def test_a_cpu_bundle_replayed_on_the_cpu_gives_the_same_bundle_byte_for_byte(tmp_path):
    out = outputs(tmp_path)
    (tmp_path / "out").mkdir()
    report = regolden.regolden(CPU_BUNDLE, CPU_HASH, "cpu", **out)
    # The CPU replay is serial and repeatable: the copy is the bundle, golden files and tar included.
    assert relative_files(out["out_dir"]) == relative_files(CPU_BUNDLE)
    for rel in relative_files(CPU_BUNDLE):
        assert (out["out_dir"] / rel).read_bytes() == (CPU_BUNDLE / rel).read_bytes(), rel
    assert out["tar_path"].read_bytes() == CPU_TAR.read_bytes()
    assert out["out_hash"].read_bytes() == CPU_HASH.read_bytes()
    assert report[0].startswith("goldens of //models:sim_cpu_wrp made on cpu")
    assert len(report) == 1 + len(json.loads((CPU_BUNDLE / "golden.json").read_text())["golden"])


def test_changed_goldens_are_rewritten_from_the_replay_and_reported(tmp_path):
    """A bundle whose golden is off by a rounding step: the copy carries the replay's value, the
    report names the output, its errors and the tolerance that would pass, and the copy verifies."""
    bundle = tmp_path / "in" / "sim_cpu_wrp"
    shutil.copytree(CPU_BUNDLE, bundle)
    shutil.copyfile(CPU_HASH, tmp_path / "in" / "sim_cpu_wrp.sha256")
    golden_json = json.loads((bundle / "golden.json").read_text())
    v = next(g for g in golden_json["golden"] if g["name"] == "v")
    data = bytearray((bundle / v["file"]).read_bytes())
    data[4 * 7] ^= 1  # the last bit of the mantissa of value 7
    (bundle / v["file"]).chmod(0o644)
    (bundle / v["file"]).write_bytes(bytes(data))
    from wrpkg.files import sha256_bytes  # noqa: PLC0415

    v["sha256"] = sha256_bytes(bytes(data))
    (bundle / "golden.json").chmod(0o644)
    (bundle / "golden.json").write_text(json.dumps(golden_json, sort_keys=True, indent=1) + "\n")
    verify_bundle(bundle)
    out = outputs(tmp_path)
    (tmp_path / "out").mkdir()
    report = regolden.regolden(bundle, tmp_path / "in" / "sim_cpu_wrp.sha256", "cpu", **out)
    line = next(line for line in report if line.strip().startswith("v:"))
    assert "1 of 6144 float32 differ" in line and "passes with Tolerance(atol=" in line, line
    assert (out["out_dir"] / v["file"]).read_bytes() == (CPU_BUNDLE / v["file"]).read_bytes()
    assert verify_bundle(out["out_dir"]).golden_device == "cpu"
    assert out["report_path"].read_text().splitlines() == report


def test_a_cuda_bundle_without_a_gpu_is_refused_naming_the_fix_and_writes_nothing(tmp_path):
    out = outputs(tmp_path)
    (tmp_path / "out").mkdir()
    with pytest.raises(CaptureError) as refused:
        regolden.regolden(CUDA_BUNDLE, CUDA_HASH, "cuda", **out)
    assert "no CUDA device is visible" in str(refused.value)
    assert "--config=gpu" in refused.value.fix and "--//rules:gpu_goldens" in refused.value.fix
    assert sorted(os.listdir(tmp_path / "out")) == []


def test_the_device_must_be_of_the_bundles_kind(tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(CaptureError, match="device 'cuda'"):
        regolden.regolden(CPU_BUNDLE, CPU_HASH, "cuda", **outputs(tmp_path))


def test_the_command_line_is_the_library(tmp_path):
    out = outputs(tmp_path)
    (tmp_path / "out").mkdir()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "wrpkg.reader.regolden",
            "--bundle-dir",
            str(CUDA_BUNDLE),
            "--content-hash",
            str(CUDA_HASH),
            "--out-dir",
            str(out["out_dir"]),
            "--out-hash",
            str(out["out_hash"]),
            "--tar",
            str(out["tar_path"]),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert "//models:sim_wrp: making goldens on a GPU" in proc.stderr and "fix:" in proc.stderr
    assert "Traceback" not in proc.stderr
