"""The shared corpus of good and bad bundles (docs/bundles.md: "Bundle validity").

make_corpus(good_dir, good_tar, out) copies a real bundle and breaks each copy in one way.
Every case says what the policy expects; tests/test_validity_parity.py has wrpkg.reader.verify and
the C++ runtime judge each one and requires both to give that verdict.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Case:
    name: str
    kind: str  # "dir" or "tar"
    path: Path
    valid: bool


def _write_canonical(path: Path, raw: dict) -> None:
    # The canonical form wrpkg writes, so that only the edit itself differs.
    path.write_bytes((json.dumps(raw, sort_keys=True, indent=1, ensure_ascii=True) + "\n").encode("ascii"))


def _rehash(bundle: Path) -> None:
    """Rewrites <bundle>.sha256 and golden.json's content_hash for the current manifest.json:
    the case is then judged by what the manifest says, not by the content-hash checks that
    would otherwise catch it."""
    digest = hashlib.sha256((bundle / "manifest.json").read_bytes()).hexdigest()
    (bundle.parent / f"{bundle.name}.sha256").write_text(f"{digest}  {bundle.name}/manifest.json\n")
    golden = json.loads((bundle / "golden.json").read_bytes())
    if golden["content_hash"] != digest:
        golden["content_hash"] = digest
        _write_canonical(bundle / "golden.json", golden)


def _edit_manifest(bundle: Path, edit, rehash: bool = True) -> None:
    path = bundle / "manifest.json"
    raw = json.loads(path.read_bytes())
    edit(raw)
    _write_canonical(path, raw)
    if rehash:
        _rehash(bundle)


def _edit_golden(bundle: Path, edit) -> None:
    path = bundle / "golden.json"
    raw = json.loads(path.read_bytes())
    edit(raw)
    _write_canonical(path, raw)


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset % len(data)] ^= 0x01
    path.write_bytes(bytes(data))


def _tar(entries: list[tuple[str, bytes | None]], path: Path) -> None:
    """A ustar archive of (name, bytes) entries; None bytes is a directory entry."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in entries:
            info = tarfile.TarInfo(name)
            info.mtime = 0
            if data is None:
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tar.addfile(info)
            else:
                info.size = len(data)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))
    path.write_bytes(buffer.getvalue())


def make_corpus(good_dir: Path, good_tar: Path, out: Path) -> list[Case]:
    good_dir, out = Path(good_dir), Path(out)
    name = good_dir.name
    manifest = json.loads((good_dir / "manifest.json").read_bytes())
    golden_file = json.loads((good_dir / "golden.json").read_bytes())["golden"][0]["file"]
    module_binary = manifest["modules"][0]["binary"]
    cases: list[Case] = []
    outside = out / "outside"
    outside.mkdir(parents=True)

    def directory(case: str, valid: bool, mutate=None) -> None:
        bundle = out / case / name
        shutil.copytree(good_dir, bundle, symlinks=False)
        for path in bundle.rglob("*"):
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
        _rehash(bundle)
        if mutate:
            mutate(bundle)
        cases.append(Case(case, "dir", bundle, valid))

    directory("good", True)
    directory("good_without_hash_file", True, lambda b: (b.parent / f"{name}.sha256").unlink())

    def listed_file_via_symlink(b: Path) -> None:
        # Bazel's sandbox stages every input as a symlink: content is what counts.
        copy = outside / "same_golden.bin"
        shutil.copyfile(b / golden_file, copy)
        (b / golden_file).unlink()
        os.symlink(copy, b / golden_file)

    directory("listed_file_is_symlink_to_same_bytes", True, listed_file_via_symlink)
    directory("extra_file", False, lambda b: (b / "notes.txt").write_text("hello\n"))
    directory(
        "extra_file_in_modules_dir",
        False,
        lambda b: (b / Path(module_binary).parent / "apic_guest_cache.cubin").write_bytes(b"\0" * 16),
    )
    directory("missing_file", False, lambda b: (b / golden_file).unlink())
    directory("missing_manifest", False, lambda b: (b / "manifest.json").unlink())
    directory("flipped_byte", False, lambda b: _flip(b / module_binary, 100))
    directory(
        "truncated_file",
        False,
        lambda b: (b / golden_file).write_bytes((b / golden_file).read_bytes()[:-1]),
    )
    directory(
        "oversized_file",
        False,
        lambda b: (b / golden_file).write_bytes((b / golden_file).read_bytes() + b"\0"),
    )

    def edit_file_digest(raw):
        raw["files"][0]["sha256"] = "0" * 64

    directory("edited_manifest", False, lambda b: _edit_manifest(b, edit_file_digest, rehash=False))

    # The test manifest (golden.json): outside the content hash, but verified.
    directory("missing_golden_manifest", False, lambda b: (b / "golden.json").unlink())

    def other_content_hash(raw):
        raw["content_hash"] = "0" * 64

    directory("golden_manifest_of_other_bundle", False, lambda b: _edit_golden(b, other_content_hash))

    def edit_golden_digest(raw):
        raw["golden"][0]["sha256"] = "0" * 64

    directory("edited_golden_digest", False, lambda b: _edit_golden(b, edit_golden_digest))

    def golden_dotdot(raw):
        raw["golden"][0]["file"] = "../evil.bin"

    directory("dotdot_path_in_golden_manifest", False, lambda b: _edit_golden(b, golden_dotdot))

    def golden_listed_twice(raw):
        raw["golden"][0]["file"] = manifest["wrp"]

    directory("golden_file_listed_in_both_manifests", False, lambda b: _edit_golden(b, golden_listed_twice))

    def duplicate_entry(raw):
        raw["files"].append(dict(raw["files"][0]))
        raw["files"].sort(key=lambda f: f["path"])

    directory("duplicate_manifest_entry", False, lambda b: _edit_manifest(b, duplicate_entry))

    def path_entry(bad_path: str):
        def edit(raw):
            raw["files"].append({"path": bad_path, "size": 4, "sha256": hashlib.sha256(b"evil").hexdigest()})

        return edit

    directory("dotdot_path_in_manifest", False, lambda b: _edit_manifest(b, path_entry("../evil.bin")))
    directory("absolute_path_in_manifest", False, lambda b: _edit_manifest(b, path_entry("/tmp/evil.bin")))

    def oversized_size(raw):
        for f in raw["files"]:
            if f["path"] == module_binary:
                f["size"] = 2**62

    directory("oversized_size_in_manifest", False, lambda b: _edit_manifest(b, oversized_size))

    def binding_past_its_region(raw):
        # A reader addressing the array by shape and strides would leave the bound bytes.
        binding = raw["bindings"][0]
        binding["shape"] = [binding["shape"][0] + 1, *binding["shape"][1:]]

    directory("binding_array_past_its_region", False, lambda b: _edit_manifest(b, binding_past_its_region))

    def binding_without_dtype(raw):
        del raw["bindings"][0]["dtype"]

    directory("binding_without_dtype", False, lambda b: _edit_manifest(b, binding_without_dtype))

    def symlinked_directory(b: Path) -> None:
        # The same bytes, but reached through a directory outside the bundle.
        target = outside / "golden_elsewhere"
        shutil.copytree(b / Path(golden_file).parent, target)
        shutil.rmtree(b / Path(golden_file).parent)
        os.symlink(target, b / Path(golden_file).parent)

    directory("symlinked_directory_escaping_bundle", False, symlinked_directory)
    directory("extra_symlink_escaping_bundle", False, lambda b: os.symlink("/etc/hostname", b / "hostname"))

    def listed_file_symlink_to_other_bytes(b: Path) -> None:
        (b / golden_file).unlink()
        os.symlink("/etc/hostname", b / golden_file)

    directory("listed_file_is_symlink_to_other_bytes", False, listed_file_symlink_to_other_bytes)

    # Archives (the form embedded in binaries).
    with tarfile.open(good_tar) as tar:
        good_entries = [(m.name, None if m.isdir() else tar.extractfile(m).read()) for m in tar.getmembers()]

    def archive(case: str, valid: bool, entries) -> None:
        path = out / case / f"{name}.tar"
        path.parent.mkdir(parents=True)
        _tar(entries, path)
        cases.append(Case(case, "tar", path, valid))

    archive("tar_good", True, good_entries)
    archive("tar_extra_entry", False, good_entries + [(f"{name}/notes.txt", b"hello\n")])
    archive("tar_duplicate_entry", False, good_entries + [good_entries[-1]])
    archive("tar_dotdot_entry", False, good_entries + [(f"{name}/../evil.bin", b"evil")])
    archive("tar_absolute_entry", False, good_entries + [("/tmp/evil.bin", b"evil")])
    flipped = [
        (n, d if d is None or not n.endswith(module_binary) else bytes([d[0] ^ 1]) + d[1:])
        for n, d in good_entries
    ]
    archive("tar_flipped_byte", False, flipped)
    archive(
        "tar_without_golden_manifest",
        False,
        [(n, d) for n, d in good_entries if n != f"{name}/golden.json"],
    )
    truncated = out / "tar_truncated" / f"{name}.tar"
    truncated.parent.mkdir(parents=True)
    truncated.write_bytes(Path(good_tar).read_bytes()[: -1024 - 700])
    cases.append(Case("tar_truncated", "tar", truncated, False))
    return cases
