"""On a CUDA GPU (tagged gpu): every road a bundle loads by, in Python and in C++.

Python (each bundle in a fresh process, as a deployed program loads it: a module Warp has
loaded once is not loaded again in that process): `wrpkg.reader.bundle` of the multi-arch bundle (its
SASS, through the per-device view), of the bundles that leave the GPU only PTX JIT or Warp's
source fallback, of the retargeted model bundles, and stock `wp.capture_load` of the
multi-arch bundle; each replays once to its golden values (within the tolerances the manifest
declares). A bundle with no code for the GPU is refused with the arch-mismatch message.

C++ (runtime/replay_main.cc, tools/bench/start_bench.cc, examples/deploy): the replay of a
bundle directory through the device view, of its tar and of its bytes in memory; the source
fallback compiles in the private per-user cache and writes nothing into the bundle; a load
that verifies only what it hands Warp names a changed .wrp chunk (after Warp's load, or
before it with --hash-first) and a changed image of the device's SM, and does not read the
image of another SM, which a replay that verifies every file names; the deploy example runs
the recorded model on the GPU.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from wrp_testing import TESTS_DIR, run_python

from wrpkg.reader.fatbin import parse_fatbin

REPLAY = os.environ["WRP_REPLAY"]
START_BENCH = os.environ["WRP_START_BENCH"]
DEPLOY = os.environ["WRP_DEPLOY_RECORDED"]
NO_FIT = Path(os.environ["WRP_NO_FIT_BUNDLE"])  # sm_75 SASS only, no PTX, no source
# Every bundle an H200 loads, by directory name: the SASS, PTX-only and source-only roads of
# the recorded capture, and the model and launch-form bundles (retargeted, or with --config=gpu
# captured on the GPU).
LOADS = {Path(p).name: Path(p) for p in os.environ["WRP_LOADING_BUNDLES"].split()}
SASS = LOADS["sim_recorded_wrp"]  # //models:sim_recorded_wrp: SASS for every default SM
SASS_TAR = Path(os.environ["WRP_SASS_BUNDLE_TAR"])
SASS_HASH = Path(os.environ["WRP_SASS_BUNDLE_HASH"])
# Multi-arch bundles with SASS for sm_75 and sm_90 whose C++ load takes the device view.
DEVICE_VIEW = ("sim_recorded_wrp", "cloth_wrp")
CHUNK = 262144  # the .wrp's digest chunk (wrpkg.digests): a changed byte past it is named by chunk


def replay_once(bundle: Path, stock: bool) -> dict[str, list]:
    """Loads `bundle` on cuda:0 (wrpkg.reader.bundle, or stock wp.capture_load), replays it once and
    compares each output with its golden value: {output: [match, detail]}. Run in a fresh process."""
    import warp as wp  # noqa: PLC0415

    from wrpkg import golden, warp_internals  # noqa: PLC0415
    from wrpkg.reader.bundle import load  # noqa: PLC0415

    manifest = json.loads((bundle / "manifest.json").read_text())
    # The golden outputs are in the test manifest, outside the content hash.
    goldens = json.loads((bundle / "golden.json").read_text())["golden"]
    wp.config.quiet = True
    wp.init()
    if stock:
        graph = wp.capture_load(str(bundle / manifest["wrp"]), device="cuda:0")
    else:
        graph, _ = load(bundle, device="cuda:0")
    outputs = warp_internals.replay_outputs(graph, [record["name"] for record in goldens], "cuda:0")
    results = {}
    for record in goldens:
        want = (bundle / record["file"]).read_bytes()
        verdict = golden.compare(want, outputs[record["name"]], golden.golden_tolerance(record))
        results[record["name"]] = [verdict.match, verdict.detail]
    return results


_IN_A_FRESH_PROCESS = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from test_loads_gpu import replay_once
print("RESULT " + json.dumps(replay_once(Path(sys.argv[2]), sys.argv[3] == "stock")))
"""


def _python_replay(bundle: Path, stock: bool = False) -> subprocess.CompletedProcess:
    # Warp compiles retained source (the source road) into the test's kernel cache (pytest_main.py).
    how = "stock" if stock else "wrpkg"
    return run_python("-c", _IN_A_FRESH_PROCESS, str(TESTS_DIR), str(bundle), how, timeout=600)


def _results(proc: subprocess.CompletedProcess) -> dict[str, list]:
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stdout + proc.stderr
    return json.loads(lines[-1][len("RESULT ") :])


@pytest.mark.parametrize("name", sorted(LOADS))
def test_wrpkg_load_replays_to_the_goldens(name):
    results = _results(_python_replay(LOADS[name]))
    assert results and all(match for match, _ in results.values()), results


def test_stock_capture_load_reads_the_multi_arch_bundle():
    results = _results(_python_replay(SASS, stock=True))
    assert results and all(match for match, _ in results.values()), results


def test_wrpkg_load_refuses_a_bundle_with_no_code_for_the_gpu():
    script = "import sys, warp as wp; from wrpkg.reader.bundle import load; wp.init(); load(sys.argv[1], device='cuda:0')"
    proc = run_python("-c", script, str(NO_FIT))
    assert proc.returncode != 0
    assert "ArchMismatchError" in proc.stderr, proc.stderr
    for fragment in ("//tests/gpu:sim_no_fit_wrp", "sm_75", "archs"):
        assert fragment in proc.stderr, proc.stderr


def _run(*argv, env=None) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=600, env=env)
    print(proc.stdout, proc.stderr, file=sys.stderr)
    return proc


@pytest.mark.parametrize(
    "how",
    [
        ("--bundle", SASS, "--content-hash-file", SASS_HASH),
        ("--bundle", SASS, "--from-memory"),
        ("--tar", SASS_TAR),
    ],
    ids=["directory", "from_memory", "tar"],
)
def test_cpp_replay_from_directory_memory_and_tar(how):
    proc = _run(REPLAY, *how)
    assert proc.returncode == 0 and "FAIL" not in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("name", DEVICE_VIEW)
def test_cpp_replay_loads_the_device_view(name):
    proc = _run(REPLAY, "--bundle", LOADS[name])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "loaded from device view" in proc.stdout and "\nPASS" in proc.stdout, proc.stdout


def test_cpp_source_fallback_compiles_in_the_private_cache(tmp_path):
    bundle = tmp_path / "sim_source_only_wrp"
    shutil.copytree(LOADS["sim_source_only_wrp"], bundle)
    before = sorted(str(p.relative_to(bundle)) for p in bundle.rglob("*"))
    cache = tmp_path / "cache"
    proc = _run(REPLAY, "--bundle", bundle, env=dict(os.environ, WRP_CACHE_DIR=str(cache)))
    assert proc.returncode == 0 and "\nPASS" in proc.stdout, proc.stdout + proc.stderr
    assert f"private cache {cache}/" in proc.stdout, proc.stdout
    assert sorted(str(p.relative_to(bundle)) for p in bundle.rglob("*")) == before
    assert any(p.is_file() for p in cache.rglob("*"))


def _changed_copy(tmp_path: Path, bundle: Path, name: str, file: str, at: int) -> Path:
    """A copy of `bundle` (without its .sha256: the content hash still holds) with one bit of
    `file` flipped at byte `at`."""
    copy = tmp_path / name
    shutil.copytree(bundle, copy)
    data = bytearray((copy / file).read_bytes())
    data[at] ^= 1
    (copy / file).chmod(0o644)
    (copy / file).write_bytes(bytes(data))
    return copy


def _image_middle(bundle: Path, arch: str) -> tuple[str, int]:
    """Module 0's fatbin and the byte in the middle of its `arch` image (wrpkg.reader.fatbin's reading)."""
    path = json.loads((bundle / "manifest.json").read_text())["modules"][0]["binary"]
    (image,) = [i for i in parse_fatbin((bundle / path).read_bytes(), path) if i.arch == arch]
    return path, image.offset + image.size // 2


@pytest.mark.parametrize("name", DEVICE_VIEW)
def test_a_load_that_verifies_what_it_uses_names_a_changed_wrp_chunk(tmp_path, name):
    bundle = LOADS[name]
    wrp = json.loads((bundle / "manifest.json").read_text())["wrp"]
    copy = _changed_copy(tmp_path, bundle, "wrp_chunk", wrp, CHUNK + 7)
    for flags in ([], ["--hash-first"]):  # after Warp's load; before it (hash_during_load off)
        proc = _run(START_BENCH, "--bundle", copy, *flags)
        assert proc.returncode != 0, flags
        assert f"(bytes {CHUNK} to " in proc.stdout + proc.stderr, flags


@pytest.mark.parametrize("name", DEVICE_VIEW)
def test_a_changed_image_of_the_devices_sm_is_refused_and_named(tmp_path, name):
    module, middle = _image_middle(LOADS[name], "sm_90")
    copy = _changed_copy(tmp_path, LOADS[name], "image_sm90", module, middle)
    proc = _run(START_BENCH, "--bundle", copy)
    assert proc.returncode != 0
    assert "its sm_90 image" in proc.stdout + proc.stderr


@pytest.mark.parametrize("name", DEVICE_VIEW)
def test_an_image_of_another_sm_is_not_read_by_the_load_but_named_by_a_full_verify(tmp_path, name):
    module, middle = _image_middle(LOADS[name], "sm_75")
    copy = _changed_copy(tmp_path, LOADS[name], "image_sm75", module, middle)
    proc = _run(START_BENCH, "--bundle", copy)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = _run(REPLAY, "--bundle", copy)  # verifies every file at open
    assert proc.returncode != 0
    named = [
        line for line in (proc.stdout + proc.stderr).splitlines() if module in line and "sha256 is" in line
    ]
    assert named, proc.stdout + proc.stderr


def test_the_deploy_example_runs_the_recorded_model_on_the_gpu():
    proc = _run(DEPLOY, "--device", "cuda", "--steps", "100")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "//models:sim_recorded_wrp on cuda: 100 replays, 2048 particles" in proc.stdout, proc.stdout
