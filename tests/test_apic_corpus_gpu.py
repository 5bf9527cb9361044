"""On a CUDA GPU (tagged gpu): Warp's own APIC test programs (tools/apic_corpus.py, the whole
corpus: the wheel's warp/tests/test_apic*.py), retargeted from their CPU variants with the GPU
hidden and captured natively from their cuda:0 variants, side by side in fresh processes.
Every program both sides saved is byte-identical in canonical form (.wrp, .cu, .cubin), and the
mesh programs (test_apic_mesh.py) captured natively in two processes are too: the content hash
depends neither on the capture mode nor on the process. //tests:apic_corpus_test runs five of
the programs' retargets on the CPU.

The corpus files and comparison tables, and every side of a program that differs, are kept in
the test's undeclared outputs (outputs.zip)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TOOL = REPO / "tools" / "apic_corpus.py"
OUTPUTS = Path(os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR", "/nonexistent"))
# On an H100 (Warp 1.19.0, 2026-12-06): 80 programs both sides save; a smaller count means the corpus shrank.
AT_LEAST_COMPARED = 75
MESH = "test_apic_mesh"


def _keep(path: Path, name: str) -> None:
    if OUTPUTS.is_dir() and path.exists():
        (shutil.copytree if path.is_dir() else shutil.copyfile)(path, OUTPUTS / name)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """The corpus retargeted, the corpus native, and the mesh programs native once more."""
    work = tmp_path_factory.mktemp("apic")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    started = {}
    for run, mode, only in (
        ("retarget", "retarget", []),
        ("native", "native", []),
        ("native_mesh", "native", [MESH]),
    ):
        cmd = [sys.executable, str(TOOL), mode, "--out", str(work / run)]
        for test in only:
            cmd += ["-k", test]
        run_env = dict(env, CUDA_VISIBLE_DEVICES="") if mode == "retarget" else env
        log = open(work / f"{run}.log", "w")  # noqa: SIM115
        started[run] = (
            subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=run_env, cwd=REPO),
            log,
        )
    failed = []
    for run, (proc, log) in started.items():
        proc.wait(timeout=3000)
        log.close()
        _keep(work / f"{run}.log", f"{run}.log")
        _keep(work / run / "corpus.json", f"{run}_corpus.json")
        if proc.returncode != 0:
            failed.append(f"{run}: exit {proc.returncode}: {(work / f'{run}.log').read_text()[-3000:]}")
    assert not failed, "\n".join(failed)
    return work


def _compare(work: Path, a: str, b: str) -> list[dict]:
    report = work / f"{a}_vs_{b}.json"
    cmd = [sys.executable, str(TOOL), "compare", str(work / a), str(work / b), "--report", str(report)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=900)
    print(proc.stdout)
    assert report.is_file(), proc.stderr
    _keep(report, report.name)
    rows = [row for row in json.loads(report.read_text()) if "byte_identical" in row]
    for row in rows:
        if not row["byte_identical"]:
            for side in (a, b):
                _keep(work / side / row["program"], f"differing/{side}/{row['program']}")
    return rows


def test_every_program_both_sides_saved_is_byte_identical_retargeted_and_native(runs):
    rows = _compare(runs, "retarget", "native")
    assert len(rows) >= AT_LEAST_COMPARED, [row["program"] for row in rows]
    differ = {row["program"]: row["differences"] for row in rows if not row["byte_identical"]}
    assert not differ, differ


def test_the_mesh_programs_are_byte_identical_between_two_native_processes(runs):
    rows = [row for row in _compare(runs, "native", "native_mesh") if row["program"].startswith(MESH + ".")]
    assert rows, "no mesh program was saved by both native runs"
    differ = {row["program"]: row["differences"] for row in rows if not row["byte_identical"]}
    assert not differ, differ
