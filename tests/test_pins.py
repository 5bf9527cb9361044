"""One home for each pinned fact; every other copy is held to it here.

- The architecture tables: what the pinned NVRTCs answered at repository time
  (`@rules_warp_toolchains//:cuda_archs.json`, which the rules' toolchains are declared
  from). wrpkg/archs.py keeps a copy so Python can check names without loading NVRTC.
- The default target list: wrpkg/archs.py; the rules read it through the same file.
- The Warp version: wrpkg.WARP_VERSION; toolchains/warp/version.bzl (C++ runtime), the
  lock files and the venv that actually runs must agree with it.
"""

import json
import os
import re
from pathlib import Path

import pytest

from wrpkg import WARP_VERSION, archs

CUDA_ARCHS = json.loads(Path(os.environ["WRP_CUDA_ARCHS"]).read_text())
VENV_VERSIONS = json.loads(Path(os.environ["WRP_VENV_VERSIONS"]).read_text())


@pytest.mark.parametrize(
    "compiler, toolchain", [("sass", archs.DEFAULT_TOOLCHAIN), ("ptx", archs.PTX_TOOLCHAIN)]
)
def test_wrpkg_arch_tables_are_what_the_pinned_nvrtc_answered(compiler, toolchain):
    answer = CUDA_ARCHS[compiler]
    assert answer["cuda_version"] == toolchain
    assert list(archs.SUPPORTED_SMS[toolchain]) == answer["supported_sms"]
    assert archs.SUFFIX_MIN_SM == answer["suffix_min_sm"]


def test_wrpkg_pins_no_nvrtc_the_toolchains_do_not_run():
    assert sorted(archs.SUPPORTED_SMS) == sorted(
        {CUDA_ARCHS["sass"]["cuda_version"], CUDA_ARCHS["ptx"]["cuda_version"]}
    )


def test_the_rules_default_archs_are_wrpkg_archs():
    assert CUDA_ARCHS["default_archs"] == list(archs.DEFAULT_SASS_ARCHS)
    assert CUDA_ARCHS["default_ptx"] == archs.DEFAULT_PTX_ARCH
    # and NVRTC can build them (the rules would fail analysis of every default target)
    archs.default_archs()


def _lock_pin(path: str, dist: str) -> str:
    (version,) = re.findall(rf"^{re.escape(dist)}==(\S+)", Path(path).read_text(), re.MULTILINE)
    return version


def test_warp_version_has_one_value():
    (bzl,) = re.findall(
        r'^WARP_VERSION = "([^"]+)"$', Path(os.environ["WRP_WARP_VERSION_BZL"]).read_text(), re.MULTILINE
    )
    found = {
        "toolchains/warp/version.bzl": bzl,
        "installed in the venv": VENV_VERSIONS["packages"]["warp-lang"],
        **{lock: _lock_pin(lock, "warp-lang") for lock in os.environ["WRP_LOCKS"].split()},
    }
    assert found == dict.fromkeys(found, WARP_VERSION)


def test_nvrtc_version_has_one_value():
    assert VENV_VERSIONS["packages"]["nvidia-cuda-nvrtc"] == archs.DEFAULT_TOOLCHAIN
