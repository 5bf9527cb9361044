"""The aarch64 and x86_64 builds of the same C++ targets embed the same bundle bytes.

The content hash is a property of the bundle, not of the CPU its C++ consumer is
built for: the bundle built in the aarch64 configuration must be byte-identical to the
host's, and each binary (ELF for its CPU) must hold exactly those bytes.
"""

import hashlib
import os
import pathlib

import pytest

ELF_MACHINE = {"x86_64": 62, "aarch64": 183}


def _paths(var):
    return [pathlib.Path(p) for p in os.environ[var].split()]


def _elf_machine(data):
    assert data[:4] == b"\x7fELF", "not an ELF file"
    return int.from_bytes(data[18:20], "little")


def test_bundle_bytes_do_not_depend_on_the_target_cpu():
    host = pathlib.Path(os.environ["X86_64_TAR"]).read_bytes()
    cross = pathlib.Path(os.environ["AARCH64_TAR"]).read_bytes()
    print(
        f"tar sha256: x86_64 {hashlib.sha256(host).hexdigest()} aarch64 {hashlib.sha256(cross).hexdigest()}"
    )
    assert host == cross


@pytest.mark.parametrize("cpu", ["x86_64", "aarch64"])
def test_binaries_are_elf_for_their_cpu_and_embed_the_bundle(cpu):
    tar = pathlib.Path(os.environ["X86_64_TAR"]).read_bytes()
    binaries = _paths(cpu.upper() + "_BINARIES")
    assert binaries
    for binary in binaries:
        data = binary.read_bytes()
        print(f"{cpu} {binary.name}: {len(data)} bytes")
        assert _elf_machine(data) == ELF_MACHINE[cpu], f"{binary} is not an {cpu} ELF file"
        assert data.find(tar) >= 0, f"{binary} does not hold the bundle's tar byte for byte"
