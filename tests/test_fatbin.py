"""Fatbins packed with the pinned nvFatbin hold exactly the requested SASS and PTX,
as the pinned cuobjdump lists them. No GPU needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from wrpkg import cuda_tools
from wrpkg.errors import CompileError
from wrpkg.reader.inspection import module_contents
from wrpkg.recipe import CompileRecipe, nvrtc_program_name
from wrpkg.wrpformat import read_wrp

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "cuda-sm90-particles"
TINY = b'extern "C" __global__ void k(float* x) { x[0] = 2.0f; }'


@pytest.fixture(scope="module")
def fixture_binaries():
    """sm_75 SASS and compute_75 PTX compiled from the fixture's module; sm_90 is Warp's own."""
    (module,) = read_wrp(FIXTURE / "sim.wrp").metadata.modules
    source = (FIXTURE / "sim_modules" / module.source_filename).read_bytes()
    recipe = CompileRecipe.from_bytes(module.compile_recipe)
    name = nvrtc_program_name(module.source_filename)
    return {
        "sm_75": cuda_tools.compile_module(source, recipe, "sm_75", program_name=name),
        "sm_90": (FIXTURE / "sim_modules" / module.binary_filename).read_bytes(),
        "compute_75": cuda_tools.compile_module(source, recipe, "compute_75", program_name=name),
    }


def test_fatbin_holds_exactly_the_requested_targets(fixture_binaries):
    cubins = {"sm_90": fixture_binaries["sm_90"], "sm_75": fixture_binaries["sm_75"]}
    fatbin = cuda_tools.pack_fatbin(cubins, ("compute_75", fixture_binaries["compute_75"]))
    assert cuda_tools.fatbin_contents(fatbin) == ["sm_75", "sm_90", "compute_75"]
    entries = cuda_tools.fatbin_entries(fatbin)
    assert [(e.kind, e.identifier) for e in entries] == [
        ("elf", "sm_75"),
        ("elf", "sm_90"),
        ("ptx", "compute_75"),
    ]
    assert entries[2].code_version == "9.4"  # the PTX ISA NVRTC 13.4 writes
    # The SASS goes in as is (uncompressed), so the cubin bytes are inside the fatbin.
    assert fixture_binaries["sm_90"] in fatbin and fixture_binaries["sm_75"] in fatbin


def test_fatbin_is_deterministic_and_order_independent(fixture_binaries):
    a = cuda_tools.pack_fatbin(
        {"sm_75": fixture_binaries["sm_75"], "sm_90": fixture_binaries["sm_90"]},
        ("compute_75", fixture_binaries["compute_75"]),
    )
    b = cuda_tools.pack_fatbin(
        {"sm_90": fixture_binaries["sm_90"], "sm_75": fixture_binaries["sm_75"]},
        ("compute_75", fixture_binaries["compute_75"]),
    )
    assert a == b


def test_sass_only_and_ptx_only_fatbins(fixture_binaries):
    sass_only = cuda_tools.pack_fatbin({"sm_90": fixture_binaries["sm_90"]})
    assert cuda_tools.fatbin_contents(sass_only) == ["sm_90"]
    ptx_only = cuda_tools.pack_fatbin({}, ("compute_75", fixture_binaries["compute_75"]))
    assert cuda_tools.fatbin_contents(ptx_only) == ["compute_75"]


def test_suffixed_targets_keep_their_suffix():
    recipe = CompileRecipe()
    cubins = {arch: cuda_tools.compile_module(TINY, recipe, arch) for arch in ("sm_120", "sm_90a", "sm_100f")}
    ptx = cuda_tools.compile_module(TINY, CompileRecipe(arch_suffix="f"), "compute_100")
    fatbin = cuda_tools.pack_fatbin(cubins, ("compute_100f", ptx))
    assert cuda_tools.fatbin_contents(fatbin) == ["sm_90a", "sm_100f", "sm_120", "compute_100f"]
    # `wrpkg inspect` reads fatbins through the same pinned cuobjdump: suffixes stay exact.
    assert module_contents(fatbin) == ["sm_90a", "sm_100f", "sm_120", "compute_100f"]
    assert module_contents(cubins["sm_100f"]) is None


@pytest.mark.parametrize(
    "cubins, ptx, message",
    [
        ({"compute_75": b"x"}, None, "given as a cubin"),
        ({"sm_75": b""}, None, "empty"),
        ({}, ("sm_75", b"x"), "given as PTX"),
        ({}, None, "nothing to pack"),
        ({"sm_61": b"x"}, None, "unsupported CUDA architecture"),
    ],
)
def test_pack_fatbin_rejects_bad_inputs(cubins, ptx, message):
    with pytest.raises(CompileError, match=message):
        cuda_tools.pack_fatbin(cubins, ptx, module="m")


def test_nvfatbin_rejects_a_non_cubin():
    with pytest.raises(CompileError, match="nvFatbin"):
        cuda_tools.pack_fatbin({"sm_90": b"not an ELF file at all"}, module="m")


def test_fatbin_contents_rejects_junk():
    with pytest.raises(CompileError, match="cuobjdump"):
        cuda_tools.fatbin_contents(b"\x00junk" * 20)
