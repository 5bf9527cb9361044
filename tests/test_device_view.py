"""wrpkg.reader.fatbin and wrpkg.reader.device_view on a multi-arch CUDA bundle built here by the real
pipeline (//models:sim_recorded_wrp). No GPU needed: what the view hands Warp is checked
byte for byte; tools/bench/bench_all.sh loads it on a GPU."""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from wrpkg import cuda_tools
from wrpkg.errors import BundleError, VerifyError
from wrpkg.reader.bundle import Bundle, prepare_cuda_load
from wrpkg.reader.device_fit import DeviceFit, device_fit
from wrpkg.reader.device_view import device_view, read_view
from wrpkg.reader.fatbin import KIND_ELF, KIND_PTX, is_fatbin, parse_fatbin, sass_image
from wrpkg.reader.verify import verify_bundle
from wrpkg.wrpformat import read_wrp

BUNDLE = Path(os.environ["WRP_SIM_BUNDLE"])


@pytest.fixture(scope="module")
def bundle():
    manifest = verify_bundle(BUNDLE)
    files = {p: (BUNDLE / p).read_bytes() for p in [manifest.wrp, *(m.binary for m in manifest.modules)]}
    return manifest, files


def view_of(manifest, fit, files):
    return device_view(manifest, fit, files[manifest.wrp], files)


def test_images_are_the_compiled_cubins_and_match_cuobjdump(bundle):
    manifest, files = bundle
    for module in manifest.modules:
        fatbin = files[module.binary]
        images = parse_fatbin(fatbin, module.binary)
        # The pinned cuobjdump lists the same entries in the same order.
        assert [i.arch for i in images] == cuda_tools.fatbin_contents(fatbin)
        for sass in module.sass:
            image = sass_image(fatbin, sass.arch, module.binary)
            assert image is not None
            assert (len(image), hashlib.sha256(image).hexdigest()) == (sass.size, sass.sha256)
        (ptx,) = [i for i in images if i.kind == KIND_PTX]
        assert ptx.arch == module.ptx.arch and ptx.compressed  # nvFatbin compresses PTX
        assert all(not i.compressed for i in images if i.kind == KIND_ELF)
        assert sass_image(fatbin, module.ptx.arch) is None
        assert sass_image(fatbin, "sm_90a") is None  # names match exactly


def test_malformed_fatbins_are_refused_with_their_name(bundle):
    manifest, files = bundle
    path = manifest.modules[0].binary
    fatbin = bytearray(files[path])
    with pytest.raises(BundleError, match="runs past the end") as err:
        parse_fatbin(fatbin[:-1], path)
    assert path in str(err.value)
    bad = bytearray(fatbin)
    bad[0] ^= 1
    with pytest.raises(BundleError, match="magic"):
        parse_fatbin(bad, path)
    bad = bytearray(fatbin)
    bad[16 + 8 : 16 + 16] = struct.pack("<Q", 1 << 40)  # the first entry's payload size
    with pytest.raises(BundleError, match="overruns"):
        parse_fatbin(bad, path)


def test_sm90_view_points_every_module_at_its_own_cubin(bundle):
    manifest, files = bundle
    fit = device_fit(manifest, 90, (13, 0))
    assert fit.how == "sass"
    view = view_of(manifest, fit, files)
    assert view is not None
    original = files[manifest.wrp]
    assert len(view.wrp) == len(original)
    changed = sum(a != b for a, b in zip(view.wrp, original, strict=True))
    assert 0 < changed <= 64 * len(manifest.modules)
    # Warp's own rules still hold for the copy, and each record names its image's digest.
    records = {r.binary_filename: r for r in read_wrp(view.wrp, operations=False).metadata.modules}
    assert sorted(records) == sorted(view.modules)
    for module in manifest.modules:
        name = module.binary.rsplit("/", 1)[-1]
        (sm90,) = [s for s in module.sass if s.arch == "sm_90"]
        assert hashlib.sha256(view.modules[name]).hexdigest() == sm90.sha256
        assert records[name].binary_sha256 == sm90.sha256
        assert records[name].source_sha256  # source fallback stays recorded


def test_single_arch_cubin_modules_load_as_they_are(bundle):
    # A bundle of a GPU capture without the per-SM fan-out keeps Warp's own cubin (an ELF file,
    # not a fatbin): no view, and no error, so Warp gets the bundle as it is.
    manifest, files = bundle
    fit = device_fit(manifest, 90, (13, 0))
    first = manifest.modules[0]
    (sm90,) = [s for s in first.sass if s.arch == "sm_90"]
    cubin = sass_image(files[first.binary], "sm_90", what=first.binary)
    assert cubin[:4] == b"\x7fELF" and not is_fatbin(cubin) and is_fatbin(files[first.binary])
    assert hashlib.sha256(cubin).hexdigest() == sm90.sha256
    assert view_of(manifest, fit, {**files, first.binary: cubin}) is None


def test_no_view_unless_every_module_runs_sass(bundle):
    manifest, files = bundle
    fit = device_fit(manifest, 90, (13, 0))
    assert view_of(manifest, DeviceFit("ptx", fit.modules), files) is None
    # An SM the bundle has no SASS for (sm_89 runs sm_86 SASS, if listed; compute PTX otherwise).
    for sm in (75, 80, 86, 89, 100, 120):
        fit = device_fit(manifest, sm, (13, 0))
        view = view_of(manifest, fit, files)
        assert (view is not None) == (fit.how == "sass")


def test_view_verifies_the_image_it_hands_over(bundle, tmp_path):
    """A changed byte in the device's image is refused by the view's checks, naming the file; a
    changed byte in another SM's image does not matter to this device (Warp never reads it)."""
    manifest, files = bundle
    fit = device_fit(manifest, 90, (13, 0))
    module = manifest.modules[0]
    images = {i.arch: i for i in parse_fatbin(files[module.binary])}
    for arch, refused in (("sm_90", True), ("sm_75", False)):
        copy = tmp_path / arch / BUNDLE.name
        shutil.copytree(BUNDLE, copy)
        for path in copy.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        damaged = bytearray(files[module.binary])
        damaged[images[arch].offset + images[arch].size // 2] ^= 0xFF
        (copy / module.binary).write_bytes(damaged)
        if refused:
            with pytest.raises(VerifyError, match="sm_90 image") as err:
                read_view(Bundle.open(copy, verify_all=False), fit).verify()
            assert module.binary in str(err.value)
        else:
            read_view(Bundle.open(copy, verify_all=False), fit).verify()
    # The .wrp itself is checked against its sha256.
    copy = tmp_path / "wrp" / BUNDLE.name
    shutil.copytree(BUNDLE, copy)
    (copy / manifest.wrp).chmod(0o644)
    wrp = bytearray(files[manifest.wrp])
    wrp[-1] ^= 1
    (copy / manifest.wrp).write_bytes(wrp)
    with pytest.raises(VerifyError, match="sha256"):
        read_view(Bundle.open(copy, verify_all=False), fit).verify()


def _copy(tmp_path, name="copy"):
    copy = tmp_path / name / BUNDLE.name
    shutil.copytree(BUNDLE, copy)
    for path in copy.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return copy


def test_prepare_cuda_load_hands_warp_only_verified_images(bundle, tmp_path):
    """What wrpkg.reader.bundle does before Warp's call, with the device faked: the view's images are
    the manifest's sm_90 images, and a truncated module file is named by its size."""
    manifest, files = bundle
    loaded, view = prepare_cuda_load(BUNDLE, "cuda:0", "NVIDIA H200", 90, (13, 0))
    assert loaded.label == manifest.label and view is not None
    for module in manifest.modules:
        (sm90,) = [s for s in module.sass if s.arch == "sm_90"]
        assert hashlib.sha256(view.modules[module.binary.rsplit("/", 1)[-1]]).hexdigest() == sm90.sha256
    _, no_view = prepare_cuda_load(BUNDLE, "cuda:0", "NVIDIA H200", 90, (13, 0), per_device_view=False)
    assert no_view is None
    copy = _copy(tmp_path)
    binary = copy / manifest.modules[1].binary
    binary.write_bytes(binary.read_bytes()[:-1])
    with pytest.raises(VerifyError, match="bytes, manifest.json says") as err:
        prepare_cuda_load(copy, "cuda:0", "NVIDIA H200", 90, (13, 0))
    assert manifest.modules[1].binary in str(err.value)


# The child opens the copy's module files through a hook that shrinks one right after it is opened (a writer
# racing the load, made deterministic), then makes the view; a signal or a traceback fails the test.
_SHRINK_AFTER_OPEN = r"""
import os, sys
import wrpkg.reader.validity
from wrpkg.reader import bundle
from wrpkg.errors import VerifyError

copy, victim = sys.argv[1], sys.argv[2]
real_open = wrpkg.reader.validity.open_regular


def shrinking_open(path, what, fix):
    fd, size = real_open(path, what, fix)
    if os.fspath(path).endswith(victim):
        os.truncate(path, size // 2)
    return fd, size


wrpkg.reader.validity.open_regular = shrinking_open
if hasattr(bundle, "open_regular"):
    bundle.open_regular = shrinking_open
try:
    bundle.prepare_cuda_load(copy, "cuda:0", "NVIDIA H200", 90, (13, 0))
except VerifyError as exc:
    print(exc.message)
"""


def test_a_module_file_shrunk_during_the_load_is_a_verify_error_not_sigbus(bundle, tmp_path):
    """Issue 40: the view memory-mapped each fatbin, and a file shrunk by another process while the load
    read it killed the process with SIGBUS (7 of 10 rounds of a writer racing the load). Each fatbin is
    read once into memory now: a file that changes size while read is a VerifyError naming it."""
    manifest, _ = bundle
    copy = _copy(tmp_path)
    victim = manifest.modules[0].binary
    proc = subprocess.run(
        [sys.executable, "-c", _SHRINK_AFTER_OPEN, str(copy), victim],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert f"{copy / victim}: changed size while it was read" in proc.stdout, proc.stdout + proc.stderr


def test_prepare_cuda_load_checks_the_manifest_against_the_content_hash(bundle, tmp_path):
    manifest, _ = bundle
    copy = _copy(tmp_path)
    sibling = copy.parent / f"{copy.name}.sha256"
    sibling.write_text("0" * 64 + f"  {copy.name}/manifest.json\n")
    with pytest.raises(VerifyError, match="content hash"):
        prepare_cuda_load(copy, "cuda:0", "NVIDIA H200", 90, (13, 0))
    # Older than every SASS and the PTX: Warp compiles the retained source from the directory.
    _, view = prepare_cuda_load(BUNDLE, "cuda:0", "NVIDIA GeForce GTX 1080", 61, (13, 0))
    assert view is None


def test_importing_wrpkg_load_does_not_import_the_wrp_parser():
    """wrpkg.reader.bundle runs in the loading program: what it imports is paid at every start."""
    code = "import sys, wrpkg.reader.bundle; print(sorted(m for m in sys.modules if m.startswith('wrpkg')))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert "wrpkg.wrpformat" not in out and "wrpkg.reader.bundle" in out
