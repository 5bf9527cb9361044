"""wrpkg.reader.device_fit and the C++ runtime give the same arch-mismatch message, word for word, for
the bundles of tests/gpu (built from the recorded H200 capture) on described devices."""

import os
import subprocess
from pathlib import Path

import pytest

from wrpkg.reader.device_fit import arch_mismatch_message, device_fit
from wrpkg.reader.validity import bundle_content_hash, read_manifest

BUNDLES = [Path(p) for p in os.environ["WRP_PARITY_BUNDLES"].split()]
ARCH_MESSAGE = os.environ["WRP_ARCH_MESSAGE"]
DEVICES = [(90, "NVIDIA H200", 13000), (120, "NVIDIA RTX PRO 6000", 13000), (70, "Tesla V100", 12040)]


def cpp_decision(bundle: Path, sm: int, name: str, driver: int) -> tuple[bool, str]:
    out = subprocess.run(
        [ARCH_MESSAGE, str(bundle), str(sm), name, str(driver)], capture_output=True, text=True, check=True
    ).stdout
    verdict, _, message = out.partition("\n")
    return verdict == "fits", message


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda b: b.name)
@pytest.mark.parametrize("device", DEVICES, ids=lambda d: f"sm_{d[0]}")
def test_python_and_cpp_agree(bundle, device):
    sm, name, driver = device
    driver_version = (driver // 1000, (driver % 1000) // 10)
    manifest = read_manifest(bundle)  # with golden.json: the label the message names
    fit = device_fit(manifest, sm, driver_version)
    cpp_fits, cpp_message = cpp_decision(bundle, sm, name, driver)
    assert (fit.how is not None) == cpp_fits
    if not cpp_fits:
        py_message = arch_mismatch_message(
            manifest, bundle_content_hash(bundle), "cuda:0", name, sm, driver_version, fit
        )
        assert py_message == cpp_message


def test_the_no_fit_bundle_fails_on_the_h200_in_both():
    bundle = next(b for b in BUNDLES if b.name == "sim_no_fit_wrp")
    fits, message = cpp_decision(bundle, 90, "NVIDIA H200", 13000)
    assert not fits and 'add "sm_90" to the archs attribute of //tests/gpu:sim_no_fit_wrp' in message
