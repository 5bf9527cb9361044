"""The aarch64 deployment binaries load on the oldest system docs/runtime-cpp.md promises.

JetPack 6 is Ubuntu 22.04: glibc 2.35 and GCC 12's libstdc++ (GLIBCXX_3.4.30,
CXXABI_1.3.13), libgcc_s of GCC 12. A binary that asks the dynamic loader for a newer
symbol version does not start there, whatever it does on the build host. The versions a
binary asks for depend on the host's cross GCC and its sysroot (GCC 14's libstdc++ needs
GLIBCXX_3.4.32 for any <iostream>; glibc 2.38's headers turn strtol into __isoc23_strtol),
so this test is what keeps toolchains/host_releases.tsv honest on every host release.
"""

import os
import pathlib

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerNeedSection

# Symbol-version family -> the newest version of it Ubuntu 22.04 has (libc, libm, libdl, libpthread
# share GLIBC_; libstdc++ has GLIBCXX_ and CXXABI_; libgcc_s GCC_).
FLOOR = {
    "GLIBC_": (2, 35),
    "GLIBCXX_": (3, 4, 30),
    "CXXABI_": (1, 3, 13),
    "GCC_": (12, 0, 0),
}


def _needed_versions(path):
    """Yields (library, version name) for each version the binary needs."""
    with open(path, "rb") as f:
        elf = ELFFile(f)
        assert elf["e_machine"] == "EM_AARCH64", f"{path} is not an aarch64 ELF file"
        for section in elf.iter_sections():
            if isinstance(section, GNUVerNeedSection):
                for verneed, auxiliaries in section.iter_versions():
                    for aux in auxiliaries:
                        yield verneed.name, aux.name


def _too_new(name):
    # Longest prefix first: GLIBCXX_ before GLIBC_.
    for prefix in sorted(FLOOR, key=len, reverse=True):
        if name.startswith(prefix):
            rest = name[len(prefix) :]
            if not rest[:1].isdigit():
                return False  # GLIBC_PRIVATE and the like: no number to compare
            return tuple(int(p) for p in rest.split(".")) > FLOOR[prefix]
    return False


BINARIES = [pathlib.Path(p) for p in os.environ["AARCH64_BINARIES"].split()]


@pytest.mark.parametrize("binary", BINARIES, ids=[b.name for b in BINARIES])
def test_binary_needs_nothing_newer_than_ubuntu_22_04(binary):
    needed = sorted(set(_needed_versions(binary)))
    assert needed, f"{binary}: no symbol versions at all (not a dynamically linked binary?)"
    print(f"{binary.name}: " + ", ".join(f"{lib} {name}" for lib, name in needed))
    too_new = [f"{lib} {name}" for lib, name in needed if _too_new(name)]
    assert not too_new, (
        f"{binary.name} needs {', '.join(too_new)}, newer than JetPack 6 / Ubuntu 22.04 has; fix: build "
        "with the cross GCC toolchains/host_releases.tsv pins, and avoid the functions that ask for them"
    )


def test_the_check_sees_a_version_past_the_floor():
    assert _too_new("GLIBCXX_3.4.32")
    assert _too_new("GLIBC_2.38")
    assert _too_new("CXXABI_1.3.15")
    assert _too_new("GCC_14.0.0")
    assert not _too_new("GLIBCXX_3.4.30")
    assert not _too_new("GLIBC_2.34")
    assert not _too_new("GLIBC_PRIVATE")
