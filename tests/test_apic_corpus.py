"""A few of Warp's own APIC test programs through the retarget mode (tools/apic_corpus.py).

The whole corpus runs on a GPU machine (tools/gpu/apic_retarget_check.sh); here, within CI's
budget, four tests' CPU variants: two whose captures retarget (a kernel launch; a mesh
query with a mesh handle) and two that must be refused (a capture_if; a sparse-matrix
operation that is not a kernel launch). A retargeted program must be a CUDA sm_90 capture
that Warp's format accepts, with CUDA entry names and a CUDA source and cubin per module
whose digests match its records, naming no absolute path; a refused one must name the
operation and the test's line that issued it."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from wrpkg import format as wrpformat

REPO = Path(__file__).resolve().parent.parent
TOOL = REPO / "tools" / "apic_corpus.py"

EXPECTED = {
    "test_apic.test_save_single_kernel.0": ("retargeted", None),
    "test_apic_mesh.test_apic_mesh_query_point.0": ("retargeted", None),
    "test_apic.test_capture_if_cpu.0": ("refused", ("wp.capture_if", "capture_if(")),
    "test_apic.test_capture_with_bsr_transpose.0": (
        "refused",
        ("operation 1 (bsr_from_triplets)", "bsr_set_from_triplets("),
    ),
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus")
    tests = sorted({program.rsplit(".", 1)[0] for program in EXPECTED})
    cmd = [sys.executable, str(TOOL), "retarget", "--out", str(out)]
    for test in tests:
        cmd += ["-k", test]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads((out / "corpus.json").read_text())
    return out, data


def test_every_program_is_retargeted_or_refused_as_expected(corpus):
    _, data = corpus
    assert data["schema"] == "rules_warp.apic_corpus/1" and data["mode"] == "retarget" and data["arch"] == 90
    statuses = {p["program"]: p["status"] for p in data["programs"]}
    assert statuses == {program: status for program, (status, _) in EXPECTED.items()}
    assert {t["test"] for t in data["tests"]} == {p.rsplit(".", 1)[0] for p in EXPECTED}


@pytest.mark.parametrize("program", sorted(p for p, (s, _) in EXPECTED.items() if s == "retargeted"))
def test_a_retargeted_program_is_a_cuda_capture(corpus, program):
    out, _ = corpus
    directory = out / program
    wrp = wrpformat.read_wrp(directory / "prog.wrp")
    assert wrp.is_cuda and wrp.header.target_arch == 90 and wrp.metadata.target_arch == 90
    assert wrp.metadata.kernels
    for kernel in wrp.metadata.kernels:
        assert kernel.forward_name.endswith("_cuda_kernel_forward"), kernel.forward_name
        assert kernel.block_dim == 256
    modules_dir = directory / "prog_modules"
    assert wrp.metadata.modules
    for module in wrp.metadata.modules:
        binary = (modules_dir / module.binary_filename).read_bytes()
        source = (modules_dir / module.source_filename).read_bytes()
        assert module.binary_filename.endswith(".sm90.cubin") and binary[:4] == b"\x7fELF"
        assert module.binary_sha256 == hashlib.sha256(binary).hexdigest()
        assert module.source_sha256 == hashlib.sha256(source).hexdigest()
        assert re.search(rb"^// /", source, re.MULTILINE) is None
    launches = [op for op in wrp.iter_ops() if isinstance(op, wrpformat.KernelLaunch)]
    assert launches and all(op.block_dim == 256 for op in launches)
    hashes = {m.hash for m in wrp.metadata.modules}
    assert all(op.module_hash in hashes for op in launches)


@pytest.mark.parametrize("program", sorted(p for p, (s, _) in EXPECTED.items() if s == "refused"))
def test_a_refusal_names_the_operation_and_its_line(corpus, program):
    import warp.tests  # noqa: PLC0415

    _, data = corpus
    (record,) = [p for p in data["programs"] if p["program"] == program]
    what, code = EXPECTED[program][1]
    message = record["message"]
    assert "cannot retarget" in message and what in message, message
    match = re.search(r"at (test_apic\w*\.py):(\d+) to CUDA", message)
    assert match, message
    lines = (Path(warp.tests.__file__).parent / match[1]).read_text().splitlines()
    assert code in lines[int(match[2]) - 1], (message, lines[int(match[2]) - 1])
