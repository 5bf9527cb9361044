"""The recorded H200 capture (models/recorded/sim_cuda_sm90) must come from the model as it
is now: when models/sim.py or models/sim_kernels.py change, re-record it on a GPU
(tools/gpu/capture_cuda.sh) and update models/recorded/sim_cuda_sm90.sources.sha256."""

import hashlib
import json
from pathlib import Path

MODELS = Path(__file__).resolve().parents[1] / "models"
RECORDED = MODELS / "recorded" / "sim_cuda_sm90"


def test_recorded_capture_matches_the_model_sources():
    listed = {}
    for line in (MODELS / "recorded" / "sim_cuda_sm90.sources.sha256").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        listed[name] = digest
    assert sorted(listed) == ["models/sim.py", "models/sim_kernels.py"]
    for name, digest in listed.items():
        actual = hashlib.sha256((MODELS.parent / name).read_bytes()).hexdigest()
        assert actual == digest, (
            f"{name} changed since models/recorded/sim_cuda_sm90 was captured: re-record it on a GPU "
            "with tools/gpu/capture_cuda.sh and update models/recorded/sim_cuda_sm90.sources.sha256"
        )


def test_recorded_capture_is_a_cuda_capture_of_the_main_target():
    info = json.loads((RECORDED / "capture.json").read_text())
    assert info["device"] == "cuda" and info["label"] == "//models:sim_wrp"
    assert info["warp_version"] == "1.19.0"
