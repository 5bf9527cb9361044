"""Per-SM compiles with the pinned NVRTC: archs, recipes, byte equality with Warp, the CLI.

No GPU needed. The CUDA fixture is a real sm_90 capture from an H200.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wrp_testing import run_python

from wrpkg import archs, cuda_tools
from wrpkg.archs import Arch, parse_arch
from wrpkg.cuda_tools import pinning
from wrpkg.errors import CompileError, WrpFormatError
from wrpkg.recipe import CompileRecipe, nvrtc_program_name
from wrpkg.wrpformat import read_wrp

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "cuda-sm90-particles"
WRP = FIXTURE / "sim.wrp"
MODULES = FIXTURE / "sim_modules"


@pytest.fixture(scope="module")
def module_record():
    (module,) = read_wrp(WRP).metadata.modules
    return module


@pytest.fixture(scope="module")
def source(module_record):
    return (MODULES / module_record.source_filename).read_bytes()


# --- architectures -----------------------------------------------------------------------


def test_supported_table_is_what_the_pinned_nvrtc_reports():
    assert list(archs.SUPPORTED_SMS[archs.DEFAULT_TOOLCHAIN]) == cuda_tools.nvrtc_supported_sms()
    versions = cuda_tools.toolchain_versions()
    assert versions["nvrtc"] == versions["nvfatbin"] == versions["cuobjdump"] == "13.4.92"
    assert versions["nvrtc_api"] == "13.4"


def test_toolchain_files_come_from_the_pinned_wheels():
    import importlib.metadata

    for tool, dist in [
        ("nvrtc", "nvidia-cuda-nvrtc"),
        ("nvfatbin", "nvidia-nvfatbin"),
        ("cuobjdump", "nvidia-cuda-cuobjdump"),
    ]:
        path = Path(cuda_tools.toolchain_library_paths()[tool])
        wheel_files = {
            Path(os.path.realpath(importlib.metadata.distribution(dist).locate_file(f)))
            for f in importlib.metadata.distribution(dist).files
        }
        assert path in wheel_files, (tool, path)
        assert not str(path).startswith("/usr/local/cuda")


def test_a_host_copy_of_nvrtc_in_the_process_is_refused(monkeypatch):
    wheel_dir = Path(cuda_tools.toolchain_library_paths()["nvrtc"]).parent
    host_copy = Path("/usr/local/cuda/lib64/libnvrtc.so.13")
    monkeypatch.setattr(
        pinning, "_mapped_libraries", lambda prefix: {wheel_dir / "libnvrtc.so.13", host_copy}
    )
    with pytest.raises(CompileError, match="/usr/local/cuda/lib64/libnvrtc.so.13"):
        pinning.refuse_foreign_copies("nvrtc", wheel_dir)


def test_parse_arch():
    assert parse_arch("sm_90a") == Arch(90, "a")
    assert parse_arch("sm_90a").name == "sm_90a"
    assert parse_arch("sm_100f").suffix == "f"
    ptx = parse_arch("compute_75")
    assert (ptx.sm, ptx.is_ptx, ptx.name, ptx.ext) == (75, True, "compute_75", "ptx")
    assert parse_arch("sm_75").as_ptx().name == "compute_75"
    # SASS first, in SM order, then the PTX (the list itself: //tests:pins_test)
    assert [a.name for a in archs.default_archs()] == [*archs.DEFAULT_SASS_ARCHS, archs.DEFAULT_PTX_ARCH]
    assert "sm_121f" in archs.supported_archs() and "sm_89a" not in archs.supported_archs()


@pytest.mark.parametrize("text", ["sm_61", "sm_999", "banana", "sm_70", "sm_80a", "sm_90f", "compute_61", ""])
def test_unknown_arch_lists_the_supported_ones(text):
    with pytest.raises(CompileError) as err:
        parse_arch(text)
    message = str(err.value)
    assert repr(text) in message
    for sm in archs.SUPPORTED_SMS[archs.DEFAULT_TOOLCHAIN]:
        assert f"sm_{sm}" in message


def test_every_listed_suffix_variant_is_accepted_by_nvrtc():
    # A tiny kernel (no Warp headers) keeps this fast: ~26 NVRTC runs.
    tiny = b'extern "C" __global__ void k(float* x) { x[0] = 1.0f; }'
    recipe = CompileRecipe()
    for name in archs.supported_archs():
        arch = parse_arch(name)
        if arch.suffix == "a" and arch.is_ptx:
            continue  # accepted by NVRTC, refused by the recipe rules (see test below)
        assert cuda_tools.compile_module(tiny, recipe, arch), name


# --- recipes -----------------------------------------------------------------------------


def test_fixture_recipe(module_record):
    recipe = CompileRecipe.from_bytes(module_record.compile_recipe)
    assert recipe == CompileRecipe(optimization_level=3, fuse_fp=True)
    assert recipe.to_bytes() == module_record.compile_recipe


@settings(max_examples=60, deadline=None, database=None)
@given(
    flags=st.tuples(*[st.booleans()] * 5),
    level=st.integers(0, 3),
    suffix=st.sampled_from(["", "a", "f"]),
)
def test_recipe_round_trip(flags, level, suffix):
    debug, verify_fp, fast_math, fuse_fp, lineinfo = flags
    recipe = CompileRecipe(debug, level, verify_fp, fast_math, fuse_fp, lineinfo, suffix)
    raw = recipe.to_bytes()
    assert len(raw) == 16 and raw[7:] == bytes(9)
    assert CompileRecipe.from_bytes(raw) == recipe


@pytest.mark.parametrize(
    "raw, rule",
    [
        (bytes(15), "15 bytes"),
        (bytes([2]) + bytes(15), "debug is 2"),
        (bytes([0, 4]) + bytes(14), "optimization_level is 4"),
        (bytes(6) + bytes([3]) + bytes(9), "arch_suffix is 3"),
        (bytes(15) + bytes([1]), "reserved byte 15"),
    ],
)
def test_bad_recipe_bytes(raw, rule):
    with pytest.raises(WrpFormatError, match=rule):
        CompileRecipe.from_bytes(raw, path="x.wrp")


def test_nvrtc_options_are_warps(module_record):
    # append_common_nvrtc_compile_options (warp.cu) for Warp 1.19.0 (CUDA 13.4, MathDx on).
    recipe = CompileRecipe.from_bytes(module_record.compile_recipe)
    assert recipe.nvrtc_options("sm_90", "/w/native") == [
        b"--gpu-architecture=sm_90",
        b"--include-path=/w/native",
        b"--std=c++17",
        b"--Ofast-compile=0",
        b"--define-macro=NDEBUG",
        b"--undefine-macro=WP_VERIFY_FP",
        b"--define-macro=WP_ENABLE_MATHDX=1",
        b"--fmad=true",
        b"--device-as-default-execution-space",
        b"--extra-device-vectorization",
        b"--restrict",
        b"--diag-suppress=177,550",
    ]
    tweaked = CompileRecipe(True, 0, True, True, False, False, "f")
    options = tweaked.nvrtc_options("compute_100", b"/w/native", precompiled_headers=True)
    assert options == [
        b"--gpu-architecture=compute_100f",
        b"--include-path=/w/native",
        b"-pch",
        b"--std=c++17",
        b"--Ofast-compile=mid",  # level 0 -> mid on CUDA >= 13.1 (NVRTC state bug)
        b"--define-macro=_DEBUG",
        b"--generate-line-info",
        b"--device-debug",
        b"--define-macro=WP_VERIFY_FP",
        b"--define-macro=WP_ENABLE_MATHDX=1",
        b"--use_fast_math",
        b"--fmad=false",
        b"--device-as-default-execution-space",
        b"--extra-device-vectorization",
        b"--restrict",
        b"--diag-suppress=177,550",
    ]
    levels = {lvl: CompileRecipe(optimization_level=lvl).nvrtc_options("sm_80", "/i")[3] for lvl in range(4)}
    assert levels == {
        0: b"--Ofast-compile=mid",
        1: b"--Ofast-compile=mid",
        2: b"--Ofast-compile=min",
        3: b"--Ofast-compile=0",
    }
    assert b"--generate-line-info" in CompileRecipe(lineinfo=True).nvrtc_options("sm_80", "/i")
    # CUDA 12.8/12.9 texture workaround (kept for a second toolchain): SASS only, sm_90+.
    assert b"--define-macro=WP_WORKAROUND_CUDA_TEXTURE_CUBIN" in CompileRecipe().nvrtc_options(
        "sm_90", "/i", cuda_version=12090
    )
    assert b"--define-macro=WP_WORKAROUND_CUDA_TEXTURE_CUBIN" not in CompileRecipe().nvrtc_options(
        "compute_90", "/i", cuda_version=12090
    )


def test_arch_suffix_rules():
    plain, a, f = CompileRecipe(), CompileRecipe(arch_suffix="a"), CompileRecipe(arch_suffix="f")
    assert plain.target_arch("sm_90").name == "sm_90"
    assert plain.target_arch("sm_90a").name == "sm_90a"  # an explicit request wins over none
    assert a.target_arch("sm_90").name == "sm_90a"
    assert a.target_arch("sm_120").name == "sm_120a"
    assert f.target_arch("sm_100").name == "sm_100f"
    assert f.target_arch("compute_120").name == "compute_120f"
    for recipe, arch, why in [
        (a, "sm_86", "needs sm_90"),
        (a, "compute_90", "portable PTX"),
        (f, "sm_90", "needs sm_100"),
        (a, "sm_100f", "'a'-specific"),
    ]:
        with pytest.raises(CompileError, match=why):
            recipe.target_arch(arch, module="m")


def test_program_name():
    assert nvrtc_program_name("wp___main___5bca816.sm90.cu") == "wp___main___5bca816.cu"
    assert nvrtc_program_name("wp_mod_abc.sm100f.cu") == "wp_mod_abc.cu"
    assert nvrtc_program_name("other.cu") == "other.cu"


# --- byte equality with Warp ------------------------------------------------------------


def test_sm90_cubin_equals_warps_packaged_cubin(module_record, source):
    packaged = (MODULES / module_record.binary_filename).read_bytes()
    assert hashlib.sha256(packaged).hexdigest() == module_record.binary_sha256
    recipe = CompileRecipe.from_bytes(module_record.compile_recipe)
    ours = cuda_tools.compile_module(
        source,
        recipe,
        "sm_90",
        module=module_record.name,
        program_name=nvrtc_program_name(module_record.source_filename),
    )
    assert ours == packaged
    # Why the program name matters: NVRTC embeds it. Warp's APIC source fallback names the
    # program after the retained `.sm90.cu` and so gets a different (equivalent) cubin.
    renamed = cuda_tools.compile_module(source, recipe, "sm_90", program_name=module_record.source_filename)
    assert renamed != packaged


@pytest.mark.parametrize(
    "recipe, arch",
    [
        (CompileRecipe(optimization_level=0, fast_math=True, fuse_fp=False), "sm_75"),
        (CompileRecipe(optimization_level=2, lineinfo=True, verify_fp=True), "compute_75"),
    ],
)
def test_same_bytes_as_warps_own_nvrtc_build(tmp_path, source, recipe, arch):
    """Warp's native compiler (wp_cuda_compile_program, its embedded NVRTC) vs ours, for
    recipes other than the fixture's and a non-capture target: same bytes."""
    import warp as wp
    import warp._src.build as warp_build

    wp.config.quiet = True
    wp.config.kernel_cache_dir = str(tmp_path / "kernel-cache")
    wp.init()
    cu_path = tmp_path / "wp___main___5bca816.cu"
    cu_path.write_bytes(source)
    target = parse_arch(arch)
    out = tmp_path / f"out.{target.ext}"
    warp_build.build_cuda(
        str(cu_path),
        target.sm,
        str(out),
        pch_dir=None,
        config="debug" if recipe.debug else "release",
        optimization_level=recipe.optimization_level,
        verify_fp=recipe.verify_fp,
        fast_math=recipe.fast_math,
        fuse_fp=recipe.fuse_fp,
        lineinfo=recipe.lineinfo,
        arch_suffix=target.suffix,
        use_precompiled_headers=True,  # Warp's default; -pch does not change the output
    )
    ours = cuda_tools.compile_module(source, recipe, target, program_name=cu_path.name)
    theirs = out.read_bytes()
    if ours != theirs and target.ext == "ptx":
        import difflib  # noqa: PLC0415

        diff = difflib.unified_diff(
            theirs.decode(errors="replace").splitlines(),
            ours.decode(errors="replace").splitlines(),
            "warp",
            "wrpkg",
            n=1,
            lineterm="",
        )
        raise AssertionError("PTX differs from Warp's own build:\n" + "\n".join(list(diff)[:40]))
    assert ours == theirs


def test_nvrtc_error_names_the_module_and_carries_the_log():
    broken = b"__global__ void k() { this_is_not_defined(); }\n"
    with pytest.raises(CompileError) as err:
        cuda_tools.compile_module(broken, CompileRecipe(), "sm_80", module="my_module", program_name="b.cu")
    message = str(err.value)
    assert "my_module" in message and "sm_80" in message
    assert "this_is_not_defined" in message  # from NVRTC's log


def test_the_target_picks_the_output_kind():
    tiny = b'extern "C" __global__ void k(float* x) { x[0] = 1.0f; }'
    cubin = cuda_tools.compile_module(tiny, CompileRecipe(), "sm_80")
    ptx = cuda_tools.compile_module(tiny, CompileRecipe(), "compute_80")
    assert cubin.startswith(b"\x7fELF")
    assert b".target sm_80" in ptx and ptx.endswith(b"\0")


# --- the CLI -----------------------------------------------------------------------------


def _run_cli(*args) -> subprocess.CompletedProcess:
    return run_python("-m", "wrpkg.build.compile", *args)


def _cli_args(out_dir, arch="sm_90"):
    return [str(a) for a in ("--wrp", WRP, "--modules-dir", MODULES, "--arch", arch, "--out-dir", out_dir)]


def test_cli_compiles_deterministically(tmp_path, module_record):
    runs = []
    for i in range(2):
        out = tmp_path / f"run{i}" / "sm_90"
        done = _run_cli(*_cli_args(out))
        assert done.returncode == 0, done.stderr
        runs.append({p.name: p.read_bytes() for p in sorted(out.iterdir())})
    assert runs[0] == runs[1]
    cubin_name = f"{module_record.hash}.sm_90.cubin"
    assert sorted(runs[0]) == [cubin_name, "compile.json"]
    packaged = (MODULES / module_record.binary_filename).read_bytes()
    assert runs[0][cubin_name] == packaged

    listing = json.loads(runs[0]["compile.json"])
    assert listing["arch"] == "sm_90" and listing["toolchain"]["nvrtc"] == "13.4.92"
    (entry,) = listing["modules"]
    assert entry["output"] == cubin_name
    assert entry["sha256"] == hashlib.sha256(packaged).hexdigest() == module_record.binary_sha256
    assert entry["size"] == len(packaged)
    assert entry["matches_packaged_binary"] is True
    assert listing["skipped"] == []
    # Nothing host-specific: the include path is a placeholder.
    assert cuda_tools.warp_include_dir() not in runs[0]["compile.json"].decode()


def test_cli_ptx_and_atomic_replace(tmp_path):
    from wrpkg.build.compile import compile_wrp

    out = tmp_path / "ptx"
    out.mkdir()
    (out / "stale.txt").write_text("from an earlier run")  # a pre-existing output dir is replaced
    result = compile_wrp(WRP, MODULES, "compute_75", out)
    (entry,) = result["modules"]
    assert entry["output"].endswith(".compute_75.ptx") and entry["ptx_isa_version"] == "9.4"
    assert sorted(p.name for p in out.iterdir()) == sorted(["compile.json", entry["output"]])
    ptx = (out / entry["output"]).read_bytes()
    assert ptx.startswith(b"//") and ptx.endswith(b"\0") and b".target sm_75" in ptx
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ptx"]  # no temp dirs left behind


def test_cli_unknown_arch_fails_listing_supported(tmp_path, capsys):
    from wrpkg.cli import run_tool

    assert run_tool("wrpkg.build.compile", ["compile"], _cli_args(tmp_path / "o", "sm_61")) == 1
    err = capsys.readouterr().err
    assert "sm_61" in err and "sm_75" in err and "sm_121" in err
    assert not (tmp_path / "o").exists()


def test_cli_rejects_a_changed_source(tmp_path, module_record):
    modules = tmp_path / "sim_modules"
    shutil.copytree(MODULES, modules)
    cu = modules / module_record.source_filename
    os.chmod(cu, 0o644)
    cu.write_bytes(cu.read_bytes() + b"\n// edited\n")
    from wrpkg.build.compile import compile_wrp

    with pytest.raises(CompileError, match="sha256"):
        compile_wrp(WRP, modules, "sm_90", tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("program", "refusal"),
    [
        ("tile_cholesky_made_in_build.py", "defines no Warp module 'make_kernel__locals__cholesky"),
        # Issue 40: NVIDIA's example_tile_block_cholesky: the module exists at import, its Cholesky kernel is
        # made in build(); before, even the capture's SM was refused, saying the script had changed.
        ("tile_cholesky_factory.py", "does not define its kernel(s) 'make_kernel__locals__cholesky'"),
    ],
)
def test_a_mathdx_module_made_while_the_script_runs_serves_the_capture_sm_only(tmp_path, program, refusal):
    """MuJoCo Warp makes its tile Cholesky kernels while it runs: importing the script defines no such
    module (or, as NVIDIA's example does, the module without that kernel). The capture's own SM is served
    by its packaged cubin (Warp's build for that SM); another SM is refused, naming the module and the way
    out."""
    script = Path(__file__).resolve().parent / "programs_mathdx" / program
    raw = tmp_path / "raw"
    args = [
        "--script",
        str(script),
        "--device",
        "cuda",
        "--mode",
        "retarget",
        "--out-dir",
        str(raw),
        "--stem",
        "t",
    ]
    proc = run_python("-m", "wrpkg.capture", *args, "--quiet", timeout=900)
    assert proc.returncode == 0, proc.stderr
    # Said at the capture already, not minutes later by the per-SM compile of another SM.
    assert "are made while the script runs, not at import" in proc.stderr, proc.stderr
    assert "List only sm_90 in archs" in proc.stderr
    compile_args = [
        "--wrp",
        str(raw / "t.wrp"),
        "--modules-dir",
        str(raw / "t_modules"),
        "--script",
        str(script),
    ]
    proc = run_python(
        "-m", "wrpkg.build.compile", *compile_args, "--arch", "sm_90", "--out-dir", str(tmp_path / "sm_90")
    )
    assert proc.returncode == 0, proc.stderr
    entry = json.loads((tmp_path / "sm_90" / "compile.json").read_text())["modules"][0]
    (packaged,) = [p for p in (raw / "t_modules").iterdir() if p.suffix == ".cubin"]
    assert entry["sha256"] == hashlib.sha256(packaged.read_bytes()).hexdigest()
    proc = run_python(
        "-m", "wrpkg.build.compile", *compile_args, "--arch", "sm_80", "--out-dir", str(tmp_path / "sm_80")
    )
    assert proc.returncode == 1
    assert refusal in proc.stderr, proc.stderr
    assert "list only the capture's sm_90 in archs" in proc.stderr
    assert "script or a module it imports changed" not in proc.stderr
    assert not (tmp_path / "sm_80").exists()
