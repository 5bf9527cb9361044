"""Chunk digests (manifest/4): a large bundle file is also recorded as the sha256 of each 256 KiB
piece, which loads check on several threads at once. Checked on a multi-arch CUDA bundle built
here by the real pipeline (//models:sim_recorded_wrp); no GPU needed."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from wrpkg.errors import VerifyError
from wrpkg.manifest import CHUNK_BYTES, chunk_count, from_json_bytes
from wrpkg.reader.bundle import prepare_cuda_load
from wrpkg.reader.validity import read_verified, sha256_each
from wrpkg.reader.verify import verify_bundle

BUNDLE = Path(os.environ["WRP_SIM_BUNDLE"])


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "copy" / BUNDLE.name
    shutil.copytree(BUNDLE, copy)
    for path in copy.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return copy


def test_large_files_carry_the_digest_of_every_chunk():
    manifest = verify_bundle(BUNDLE)
    assert manifest.chunk_bytes == CHUNK_BYTES
    chunked = [e for e in manifest.files if e.size > CHUNK_BYTES]
    # The .wrp (2 chunks) and both multi-arch fatbins: the files a load hashes most.
    assert manifest.wrp in {e.path for e in chunked} and len(chunked) >= 3
    for entry in manifest.files:
        data = (BUNDLE / entry.path).read_bytes()
        expected = [
            hashlib.sha256(data[at : at + CHUNK_BYTES]).hexdigest() for at in range(0, len(data), CHUNK_BYTES)
        ]
        assert entry.chunk_sha256 == (expected if len(expected) > 1 else [])
        assert len(entry.chunk_sha256) == chunk_count(entry.size, CHUNK_BYTES)


def test_a_changed_byte_is_named_with_its_chunk(tmp_path):
    """Loads check chunks, not whole files: the error names the file and the bytes that differ."""
    manifest = verify_bundle(BUNDLE)
    copy = _copy(tmp_path)
    wrp = bytearray((copy / manifest.wrp).read_bytes())
    wrp[CHUNK_BYTES + 5] ^= 0x40  # inside the second chunk, past the module records
    (copy / manifest.wrp).write_bytes(wrp)
    second = f"(bytes {CHUNK_BYTES} to {len(wrp)})"
    for check in (
        lambda: read_verified(copy, manifest, manifest.wrp),
        lambda: prepare_cuda_load(copy, "cuda:0", "NVIDIA H200", 90, (13, 0)),
        lambda: verify_bundle(copy),
    ):
        with pytest.raises(VerifyError, match="sha256") as err:
            check()
        assert f"{manifest.wrp} {second}" in str(err.value)


def test_wrpkg_verify_also_checks_the_whole_file_digest(tmp_path):
    """A manifest whose chunk digests are right but whose whole-file sha256 is not is refused by
    `wrpkg verify` (the two must agree in a bundle as built), while a load, which checks chunks,
    accepts the bytes."""
    copy = _copy(tmp_path)
    (copy.parent / f"{copy.name}.sha256").unlink(missing_ok=True)
    raw = json.loads((copy / "manifest.json").read_bytes())
    (entry,) = [f for f in raw["files"] if f["path"] == raw["wrp"]]
    entry["sha256"] = "0" * 64
    text = json.dumps(raw, sort_keys=True, indent=1, ensure_ascii=True) + "\n"
    (copy / "manifest.json").write_text(text)
    golden = json.loads((copy / "golden.json").read_bytes())
    golden["content_hash"] = hashlib.sha256(text.encode()).hexdigest()
    (copy / "golden.json").write_text(json.dumps(golden, sort_keys=True, indent=1, ensure_ascii=True) + "\n")
    with pytest.raises(VerifyError, match=f"{raw['wrp']}: sha256 [0-9a-f]{{64}}, manifest.json says 0000"):
        verify_bundle(copy)
    _, view = prepare_cuda_load(copy, "cuda:0", "NVIDIA H200", 90, (13, 0))
    assert view is not None


def test_chunk_lists_must_fit_the_file_size():
    raw = json.loads((BUNDLE / "manifest.json").read_bytes())
    (entry,) = [f for f in raw["files"] if f["path"] == raw["wrp"]]
    entry["chunk_sha256"] = entry["chunk_sha256"][:-1]
    data = (json.dumps(raw, sort_keys=True, indent=1, ensure_ascii=True) + "\n").encode()
    with pytest.raises(VerifyError, match="chunk digests"):
        from_json_bytes(data)
    raw["chunk_bytes"] = 0
    data = (json.dumps(raw, sort_keys=True, indent=1, ensure_ascii=True) + "\n").encode()
    # The minimum is manifest.schema.json's (both readers walk it).
    with pytest.raises(VerifyError, match='field "chunk_bytes": expected at least 4096, got 0'):
        from_json_bytes(data)


def test_sha256_each_gives_each_piece_its_own_digest():
    rng = random.Random(7)
    pieces = [rng.randbytes(n) for n in (0, 1, 4095, CHUNK_BYTES, 3 * CHUNK_BYTES + 17, 100_000)]
    view = memoryview(pieces[4])
    pieces += [view[: CHUNK_BYTES // 2], view[CHUNK_BYTES:]]
    assert sha256_each(pieces) == [hashlib.sha256(p).hexdigest() for p in pieces]
    assert sha256_each([]) == []


def test_the_cpp_runtime_checks_chunks_too(tmp_path):
    """wrp::Bundle verifies chunked files piece by piece: a changed byte is named with its chunk,
    and the untouched bundle passes verification (this machine may have no GPU: it then stops at
    the device, after verification)."""
    manifest = verify_bundle(BUNDLE)
    replay = os.environ["WRP_REPLAY"]
    good = subprocess.run([replay, "--bundle", str(BUNDLE)], capture_output=True, text=True)
    assert "sha256" not in good.stderr, good.stderr
    copy = _copy(tmp_path)
    wrp = bytearray((copy / manifest.wrp).read_bytes())
    wrp[-1] ^= 0x01
    (copy / manifest.wrp).write_bytes(wrp)
    bad = subprocess.run([replay, "--bundle", str(copy)], capture_output=True, text=True)
    assert bad.returncode == 2, bad.stderr
    assert f"{manifest.wrp} (bytes {CHUNK_BYTES} to {len(wrp)}): sha256 is" in bad.stderr, bad.stderr
    assert "rebuild //models:sim_recorded_wrp" in bad.stderr


class _FakeWarp:
    """Stands in for warp in wrpkg.reader.bundle's from-bytes call: records what it is given, and fails
    the way Warp does on malformed bytes when asked to."""

    def __init__(self, fail: bool = False):
        self.fail = fail
        self.given = None

    def capture_load_from_bytes(self, wrp, modules, device=None):
        self.given = (bytes(wrp), dict(modules))
        if self.fail:
            raise RuntimeError("Failed to load APIC graph from bytes: Warp APIC error: bad section")
        return object()


def test_load_hashes_while_warp_parses_and_returns_only_verified_graphs(tmp_path):
    """wrpkg.reader.bundle hands Warp the view and hashes it on another thread meanwhile: a graph comes
    back only when every digest matched; a tampered .wrp is a VerifyError naming the file,
    whether Warp accepted the bytes or refused them; Warp's refusal of intact bytes is a VerifyError too."""
    from wrpkg.reader.bundle import _load_view_while_verifying

    _, view = prepare_cuda_load(BUNDLE, "cuda:0", "NVIDIA H200", 90, (13, 0), verify=False)
    warp = _FakeWarp()
    assert _load_view_while_verifying(warp, view, "cuda:0", "sim.wrp") is not None
    assert warp.given[0] == bytes(view.wrp) and set(warp.given[1]) == set(view.modules)

    copy = _copy(tmp_path)
    manifest = verify_bundle(BUNDLE)
    wrp = bytearray((copy / manifest.wrp).read_bytes())
    wrp[-3] ^= 0x10
    (copy / manifest.wrp).write_bytes(wrp)
    for fail in (False, True):
        _, tampered = prepare_cuda_load(copy, "cuda:0", "NVIDIA H200", 90, (13, 0), verify=False)
        with pytest.raises(VerifyError, match="sha256") as err:
            _load_view_while_verifying(_FakeWarp(fail=fail), tampered, "cuda:0", "sim.wrp")
        assert manifest.wrp in str(err.value)
        assert isinstance(err.value.__cause__, RuntimeError) == fail
    # Warp refuses a changed image (it checks each against the digest the view writes): the
    # error names the image, found by hashing the images only then.
    image = _copy(tmp_path / "image")
    module = manifest.modules[0]
    fatbin = bytearray((image / module.binary).read_bytes())
    name = module.binary.rsplit("/", 1)[-1]
    at = fatbin.find(bytes(view.modules[name][:64]))
    fatbin[at + len(view.modules[name]) // 2] ^= 0xFF
    (image / module.binary).write_bytes(fatbin)
    _, changed = prepare_cuda_load(image, "cuda:0", "NVIDIA H200", 90, (13, 0), verify=False)
    with pytest.raises(VerifyError, match="sm_90 image: sha256") as err:
        _load_view_while_verifying(_FakeWarp(fail=True), changed, "cuda:0", "sim.wrp")
    assert module.binary in str(err.value) and isinstance(err.value.__cause__, RuntimeError)
    # Warp's own refusal of intact bytes is the VerifyError a load promises (issue 40), naming the .wrp and
    # carrying Warp's words.
    _, intact = prepare_cuda_load(BUNDLE, "cuda:0", "NVIDIA H200", 90, (13, 0), verify=False)
    with pytest.raises(VerifyError, match="sim.wrp: Warp refused to load it on cuda:0: .*bad section") as err:
        _load_view_while_verifying(_FakeWarp(fail=True), intact, "cuda:0", "sim.wrp")
    assert isinstance(err.value.__cause__, RuntimeError)


@pytest.mark.parametrize("threshold", [0, 1 << 40], ids=["read-on-hash-thread", "read-first"])
def test_both_ways_of_reading_the_wrp_name_what_differs(tmp_path, monkeypatch, threshold):
    """A large .wrp is read on the hashing thread into an anonymous mapping, a small one on the
    loading thread into a bytearray (the bundle here is small: the thresholds are lowered to
    take the other road). Both hand Warp the same patched bytes, and both name a changed chunk,
    a changed image and a truncated .wrp."""
    import wrpkg.reader.device_view
    import wrpkg.reader.validity

    monkeypatch.setattr(wrpkg.reader.device_view, "_BACKGROUND_READ_BYTES", threshold)
    monkeypatch.setattr(wrpkg.reader.validity, "_MAPPED_READ_BYTES", threshold)
    _, view = prepare_cuda_load(BUNDLE, "cuda:0", "NVIDIA H200", 90, (13, 0))
    monkeypatch.undo()
    _, reference = prepare_cuda_load(BUNDLE, "cuda:0", "NVIDIA H200", 90, (13, 0))
    assert bytes(view.wrp) == bytes(reference.wrp) and view.modules == reference.modules
    assert bytes(view.wrp) != (BUNDLE / verify_bundle(BUNDLE).wrp).read_bytes()  # digests patched
    monkeypatch.setattr(wrpkg.reader.device_view, "_BACKGROUND_READ_BYTES", threshold)
    monkeypatch.setattr(wrpkg.reader.validity, "_MAPPED_READ_BYTES", threshold)

    manifest = verify_bundle(BUNDLE)
    changed = _copy(tmp_path / "changed")
    wrp = bytearray((changed / manifest.wrp).read_bytes())
    wrp[CHUNK_BYTES + 5] ^= 0x40
    (changed / manifest.wrp).write_bytes(wrp)
    with pytest.raises(VerifyError, match=rf"\(bytes {CHUNK_BYTES} to {len(wrp)}\): sha256"):
        prepare_cuda_load(changed, "cuda:0", "NVIDIA H200", 90, (13, 0))

    truncated = _copy(tmp_path / "truncated")
    (truncated / manifest.wrp).write_bytes(wrp[:-7])
    with pytest.raises(VerifyError, match=f"{len(wrp) - 7} bytes, manifest.json says {len(wrp)}") as err:
        prepare_cuda_load(truncated, "cuda:0", "NVIDIA H200", 90, (13, 0))
    assert manifest.wrp in str(err.value)

    image = _copy(tmp_path / "image")
    module = manifest.modules[0]
    (sm90,) = [s for s in module.sass if s.arch == "sm_90"]
    fatbin = bytearray((image / module.binary).read_bytes())
    at = fatbin.find(bytes(reference.modules[module.binary.rsplit("/", 1)[-1]][:64]))
    fatbin[at + sm90.size // 2] ^= 0xFF
    (image / module.binary).write_bytes(fatbin)
    with pytest.raises(VerifyError, match="sm_90 image: sha256") as err:
        prepare_cuda_load(image, "cuda:0", "NVIDIA H200", 90, (13, 0))
    assert module.binary in str(err.value)
