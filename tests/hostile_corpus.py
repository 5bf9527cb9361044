"""Hostile bundles, each the good CPU bundle (WRP_GOOD_BUNDLE_DIR) with one defect and the verdict
the policy expects: tests/test_hostile_bundles.py holds the Python reader's messages to them, and
tests/test_validity_parity.py runs every one through both readers (wrpkg and the C++ runtime).

Where a defect is in manifest.json, the content hash (`<dir>.sha256`, golden.json's
content_hash) is redone, so the defect itself, not the hash check, is what is refused.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import struct
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bundle_corpus import _rehash, _write_canonical

from wrpkg.build.pack import _ustar_header, write_deterministic_tar
from wrpkg.strict_json import MAX_CAPTURE_INFO_BYTES, MAX_JSON_BYTES, MAX_JSON_DEPTH

GOOD_DIR = Path(os.environ["WRP_GOOD_BUNDLE_DIR"]).resolve()
# A CUDA bundle (PTX and SASS of several SMs), for the cases only a CUDA manifest can hold.
GOOD_CUDA_DIR = Path(os.environ.get("WRP_GOOD_CUDA_BUNDLE_DIR", "/nonexistent")).resolve()
GOOD_TAR = Path(os.environ["WRP_GOOD_BUNDLE_TAR"]).resolve()
NAME = GOOD_DIR.name
GOOD_MANIFEST = json.loads((GOOD_DIR / "manifest.json").read_bytes())
MODULE_BINARY = GOOD_MANIFEST["modules"][0]["binary"]
WRP = GOOD_MANIFEST["wrp"]


def copy_good(dest: Path, good: Path = GOOD_DIR) -> Path:
    """A writable copy of the good bundle at dest/<name>, with its <name>.sha256 beside it."""
    bundle = dest / good.name
    shutil.copytree(good, bundle, symlinks=False)
    for path in [bundle, *bundle.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    _rehash(bundle)
    return bundle


# --- how each case breaks the good bundle ------------------------------------------------


def manifest_edit(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    """Edits manifest.json as JSON (written canonically) and redoes the content hash."""

    def mutate(bundle: Path) -> None:
        raw = json.loads((bundle / "manifest.json").read_bytes())
        edit(raw)
        _write_canonical(bundle / "manifest.json", raw)
        _rehash(bundle)

    return mutate


def manifest_bytes(edit: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    """Edits manifest.json's bytes (for what json.dumps cannot write) and redoes the hash."""

    def mutate(bundle: Path) -> None:
        path = bundle / "manifest.json"
        data = path.read_bytes()
        edited = edit(data)
        assert edited != data, "the edit found nothing to change"
        path.write_bytes(edited)
        _rehash(bundle)

    return mutate


def golden_edit(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    """Edits golden.json, which is outside the content hash: a genuine bundle otherwise."""

    def mutate(bundle: Path) -> None:
        raw = json.loads((bundle / "golden.json").read_bytes())
        edit(raw)
        _write_canonical(bundle / "golden.json", raw)

    return mutate


def golden_bytes(edit: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def mutate(bundle: Path) -> None:
        path = bundle / "golden.json"
        data = path.read_bytes()
        edited = edit(data)
        assert edited != data, "the edit found nothing to change"
        path.write_bytes(edited)

    return mutate


def capture_edit(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    """Edits capture.json (provenance, outside the content hash): a genuine bundle otherwise."""

    def mutate(bundle: Path) -> None:
        path = bundle / "capture.json"
        raw = json.loads(path.read_bytes())
        edit(raw)
        path.write_text(json.dumps(raw, sort_keys=True, indent=1) + "\n")

    return mutate


def replace_once(old: bytes, new: bytes) -> Callable[[bytes], bytes]:
    return lambda data: data.replace(old, new, 1)


def set_field(*keys, value) -> Callable[[dict], None]:
    """Sets raw[k0][k1]... = value."""

    def edit(raw) -> None:
        target = raw
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return edit


def fifo_at(rel: str) -> Callable[[Path], None]:
    def mutate(bundle: Path) -> None:
        path = bundle / rel if not rel.startswith("../") else bundle.parent / rel[3:]
        path.unlink()
        os.mkfifo(path)

    return mutate


def symlink_at(rel: str, target: str) -> Callable[[Path], None]:
    def mutate(bundle: Path) -> None:
        path = bundle / rel if not rel.startswith("../") else bundle.parent / rel[3:]
        path.unlink()
        os.symlink(target, path)

    return mutate


def sparse_file(rel: str, size: int) -> Callable[[Path], None]:
    def mutate(bundle: Path) -> None:
        with open(bundle / rel, "r+b") as handle:
            handle.truncate(size)

    return mutate


def nested(depth: int) -> bytes:
    """A JSON value of `depth` nested arrays."""
    return b"[" * depth + b"]" * depth


def rewrite_listed(rel: str, edit: Callable[[bytes], bytes], chunk_bytes: int | None = None) -> Callable:
    """Rewrites a listed file and its manifest entry to match (size, sha256, chunk digests): a bundle
    whose integrity holds, judged by what it contains. `chunk_bytes` re-chunks every file."""

    def mutate(bundle: Path) -> None:
        path = bundle / rel
        path.write_bytes(edit(path.read_bytes()))
        raw = json.loads((bundle / "manifest.json").read_bytes())
        if chunk_bytes is not None:
            raw["chunk_bytes"] = chunk_bytes
        size = raw["chunk_bytes"]
        for entry in raw["files"]:
            data = (bundle / entry["path"]).read_bytes()
            entry["size"], entry["sha256"] = len(data), hashlib.sha256(data).hexdigest()
            entry["chunk_sha256"] = (
                [hashlib.sha256(data[at : at + size]).hexdigest() for at in range(0, len(data), size)]
                if len(data) > size
                else []
            )
        _write_canonical(bundle / "manifest.json", raw)
        _rehash(bundle)

    return mutate


def drop_hash_file(bundle: Path) -> None:
    (bundle.parent / f"{bundle.name}.sha256").unlink()


def behind_symlink(*mutations: Callable[[Path], None]) -> Callable[[Path], None]:
    """The bundle moved to elsewhere/<name>, `mutations` applied there (a manifest edit rehashes the hash
    file beside it), and <name> made a symlink to it: <name>.sha256, pinned beside the link where the user
    points, keeps the good bundle's hash."""

    def mutate(bundle: Path) -> None:
        moved = bundle.parent / "elsewhere" / bundle.name
        moved.parent.mkdir()
        bundle.rename(moved)
        for m in mutations:
            m(moved)
        os.symlink(moved, bundle, target_is_directory=True)

    return mutate


def edit_then_verify_as(spelling: str) -> Callable[[Path], None]:
    """The manifest is edited without redoing its hash; the case is verified as `spelling`."""

    def mutate(bundle: Path) -> None:
        raw = json.loads((bundle / "manifest.json").read_bytes())
        raw["files"][0]["sha256"] = "0" * 64
        _write_canonical(bundle / "manifest.json", raw)

    mutate.spelling = spelling
    return mutate


@dataclass
class Hostile:
    name: str
    mutate: Callable[[Path], None]
    file: str  # the file the error must name
    fragment: str  # what the error must say about the defect


FIELD = 'field "'
NOT_PLAIN = "is not a plain relative path inside the bundle"

CASES = [
    # Item 2: manifest paths, refused before any file is read.
    Hostile("wrp_absolute", manifest_edit(set_field("wrp", value="/etc/passwd")), "manifest.json",
            f'field "wrp": "/etc/passwd" {NOT_PLAIN}'),
    Hostile("wrp_dev_zero", manifest_edit(set_field("wrp", value="/dev/zero")), "manifest.json",
            f'field "wrp": "/dev/zero" {NOT_PLAIN}'),
    Hostile("wrp_dotdot", manifest_edit(set_field("wrp", value="../outside.wrp")), "manifest.json",
            f'field "wrp": "../outside.wrp" {NOT_PLAIN}'),
    Hostile("wrp_number", manifest_edit(set_field("wrp", value=7)), "manifest.json",
            'field "wrp": expected a string path, got number'),
    Hostile("wrp_not_listed", manifest_edit(set_field("wrp", value="other.wrp")), "manifest.json",
            'field "wrp": "other.wrp" is not listed in "files"'),
    Hostile("module_binary_dev_zero", manifest_edit(set_field("modules", 0, "binary", value="/dev/zero")),
            "manifest.json", f'field "modules[0].binary": "/dev/zero" {NOT_PLAIN}'),
    Hostile("module_binary_dotdot",
            manifest_edit(set_field("modules", 0, "binary", value="sim_modules/../../x.o")),
            "manifest.json", f'field "modules[0].binary": "sim_modules/../../x.o" {NOT_PLAIN}'),
    Hostile("module_binary_array", manifest_edit(set_field("modules", 0, "binary", value=["a.o"])),
            "manifest.json", 'field "modules[0].binary": expected a string path, got array'),
    Hostile("module_source_absolute", manifest_edit(set_field("modules", 0, "source", value="/etc/passwd")),
            "manifest.json", f'field "modules[0].source": "/etc/passwd" {NOT_PLAIN}'),
    Hostile("file_path_backslash", manifest_edit(set_field("files", 0, "path", value="sub\\sim.wrp")),
            "manifest.json", f'field "files[0].path": "sub\\x5csim.wrp" {NOT_PLAIN}'),
    Hostile("file_path_nul", manifest_edit(set_field("files", 0, "path", value="sim.wrp\0.txt")),
            "manifest.json", f'field "files[0].path": "sim.wrp\\x00.txt" {NOT_PLAIN}'),
    Hostile("file_path_dot", manifest_edit(set_field("files", 0, "path", value="./sim.wrp")),
            "manifest.json", f'field "files[0].path": "./sim.wrp" {NOT_PLAIN}'),
    Hostile("file_path_empty_component",
            manifest_edit(set_field("files", 1, "path", value=MODULE_BINARY.replace("/", "//"))),
            "manifest.json", f'field "files[1].path": "{MODULE_BINARY.replace("/", "//")}" {NOT_PLAIN}'),
    Hostile("file_path_empty", manifest_edit(set_field("files", 0, "path", value="")), "manifest.json",
            f'field "files[0].path": "" {NOT_PLAIN}'),
    Hostile("file_path_leading_slash", manifest_edit(set_field("files", 0, "path", value="/sim.wrp")),
            "manifest.json", f'field "files[0].path": "/sim.wrp" {NOT_PLAIN}'),
    Hostile("manifest_lists_golden_json", manifest_edit(set_field("files", 0, "path", value="golden.json")),
            "manifest.json", 'field "files[0].path": golden.json is not a deployed file'),
    # Item 6: wrong field types are refused by what they are, not by a TypeError.
    Hostile("file_size_string", manifest_edit(set_field("files", 0, "size", value="5007")), "manifest.json",
            'field "files[0].size": expected a non-negative integer, got "5007"'),
    Hostile("file_sha256_number", manifest_edit(set_field("files", 0, "sha256", value=12)), "manifest.json",
            'field "files[0].sha256": expected 64 lowercase hex digits, got 12'),
    Hostile("binding_name_array", manifest_edit(set_field("bindings", 0, "name", value=["e"])),
            "manifest.json", 'field "bindings[0].name": expected string, got array'),
    Hostile("binding_region_float", manifest_edit(set_field("bindings", 0, "region", value=1.5)),
            "manifest.json", 'field "bindings[0].region": expected an integer or a string, got number'),
    Hostile("binding_listed_twice", manifest_edit(lambda raw: raw["bindings"].append(dict(raw["bindings"][0]))),
            "manifest.json", 'field "bindings[3].name": binding "e" is listed twice'),
    Hostile("modules_object", manifest_edit(set_field("modules", value={})), "manifest.json",
            'field "modules": expected array, got object'),
    Hostile("module_string", manifest_edit(set_field("modules", value=["prog_physics"])), "manifest.json",
            'field "modules[0]": expected object, got string'),
    Hostile("toolchain_null", manifest_edit(set_field("toolchain", value=None)), "manifest.json",
            'field "toolchain": expected object, got null'),
    Hostile("format_version_bool", manifest_edit(set_field("format_version", value=True)), "manifest.json",
            'field "format_version": expected integer, got boolean'),
    # Items 6 and 7: the strict JSON profile.
    Hostile("duplicate_key", manifest_bytes(replace_once(b'"device": "cpu"', b'"device": "cpu", "device": "cpu"')),
            "manifest.json", 'duplicate key "device"'),
    Hostile("nan", manifest_bytes(replace_once(b'"offset": 0', b'"offset": NaN')), "manifest.json",
            "NaN is not a JSON number"),
    Hostile("negative_infinity", manifest_bytes(replace_once(b'"offset": 0', b'"offset": -Infinity')),
            "manifest.json", "-Infinity is not a JSON number"),
    Hostile("float_overflow", manifest_bytes(replace_once(b'"offset": 0', b'"offset": 1e400')),
            "manifest.json", "number 1e400 is out of range"),
    Hostile("integer_of_5000_digits",
            manifest_bytes(replace_once(b'"chunk_bytes": 262144', b'"chunk_bytes": ' + b"9" * 5000)),
            "manifest.json", f"integer {'9' * 24}... does not fit in 64 bits"),
    Hostile("integer_2_to_the_64",
            manifest_bytes(replace_once(b'"chunk_bytes": 262144', b'"chunk_bytes": 18446744073709551616')),
            "manifest.json", "integer 18446744073709551616 does not fit in 64 bits"),
    Hostile("nesting_of_100000",
            manifest_bytes(replace_once(b'"ptx_min_driver": null', b'"ptx_min_driver": ' + nested(100000))),
            "manifest.json", f"nested deeper than {MAX_JSON_DEPTH} levels"),
    # The top-level object is depth 1: 64 arrays in it make 65.
    Hostile("nesting_of_65",
            manifest_bytes(replace_once(b'"ptx_min_driver": null', b'"ptx_min_driver": ' + nested(64))),
            "manifest.json", f"nested deeper than {MAX_JSON_DEPTH} levels"),
    # 63 arrays make 64: inside the limit, so the value is refused for its type instead.
    Hostile("nesting_of_64_is_parsed",
            manifest_bytes(replace_once(b'"ptx_min_driver": null', b'"ptx_min_driver": ' + nested(63))),
            "manifest.json", 'field "ptx_min_driver": expected null, a CUDA version such as "13.4", or an integer'),
    Hostile("invalid_utf8", manifest_bytes(replace_once(b'"device": "cpu"', b'"device": "cp\xff"')),
            "manifest.json", "invalid UTF-8 at byte"),
    Hostile("lone_surrogate", manifest_bytes(replace_once(b'"warp": "1.19.0"', b'"warp": "\\ud800"')),
            "manifest.json", "holds a lone surrogate"),
    # Item 10: golden.json is outside the content hash; the manifest's checks guard it.
    Hostile("golden_file_dev_zero", golden_edit(set_field("golden", 0, "file", value="/dev/zero")),
            "golden.json", f'field "golden[0].file": "/dev/zero" {NOT_PLAIN}'),
    Hostile("golden_file_dotdot", golden_edit(set_field("golden", 0, "file", value="../../etc/passwd")),
            "golden.json", f'field "golden[0].file": "../../etc/passwd" {NOT_PLAIN}'),
    Hostile("golden_file_number", golden_edit(set_field("golden", 0, "file", value=5)), "golden.json",
            'field "golden[0].file": expected a string path, got number'),
    Hostile("golden_name_array", golden_edit(set_field("golden", 0, "name", value=["e"])), "golden.json",
            'field "golden[0].name": expected string, got array'),
    Hostile("golden_bytes_string", golden_edit(set_field("golden", 1, "bytes", value="768")), "golden.json",
            'field "golden[1].bytes": expected a non-negative integer, got "768"'),
    Hostile("golden_entry_null", golden_edit(set_field("golden", 0, value=None)), "golden.json",
            'field "golden[0]": expected object, got null'),
    Hostile("golden_duplicate_key", golden_bytes(replace_once(b'"golden_device": "cpu"',
                                                              b'"golden_device": "cpu", "golden_device": "cuda"')),
            "golden.json", 'duplicate key "golden_device"'),
    Hostile("golden_nan_tolerance", golden_bytes(replace_once(b'"atol": 1e-06', b'"atol": NaN')), "golden.json",
            "NaN is not a JSON number"),
    Hostile("golden_nesting_of_100000", golden_bytes(replace_once(b'"golden_device": "cpu"',
                                                                  b'"golden_device": ' + nested(100000))),
            "golden.json", f"nested deeper than {MAX_JSON_DEPTH} levels"),
    Hostile("golden_integer_of_5000_digits", golden_bytes(replace_once(b'"bytes": 4', b'"bytes": ' + b"4" * 5000)),
            "golden.json", "does not fit in 64 bits"),
    Hostile("golden_invalid_utf8", golden_bytes(replace_once(b'"label": "', b'"label": "\xc3\x28')),
            "golden.json", "invalid UTF-8 at byte"),
    # Item 5: special files are refused, never read.
    Hostile("manifest_fifo", fifo_at("manifest.json"), "manifest.json", "the manifest is a FIFO, not a regular file"),
    Hostile("golden_fifo", fifo_at("golden.json"), "golden.json", "the test manifest is a FIFO, not a regular file"),
    Hostile("hash_file_fifo", fifo_at(f"../{NAME}.sha256"), f"{NAME}.sha256",
            "the content-hash file is a FIFO, not a regular file"),
    Hostile("hash_file_dev_zero", symlink_at(f"../{NAME}.sha256", "/dev/zero"), f"{NAME}.sha256",
            "the content-hash file is a character device, not a regular file"),
    Hostile("hash_file_dangling_link", symlink_at(f"../{NAME}.sha256", "/nonexistent/x.sha256"),
            f"{NAME}.sha256", "cannot read the content-hash file: missing"),
    Hostile("manifest_dev_zero", symlink_at("manifest.json", "/dev/zero"), "manifest.json",
            "the manifest is a character device, not a regular file"),
    Hostile("golden_dev_zero", symlink_at("golden.json", "/dev/zero"), "golden.json",
            "the test manifest is a character device, not a regular file"),
    Hostile("wrp_fifo", fifo_at(WRP), WRP, "a file listed in manifest.json is a FIFO, not a regular file"),
    Hostile("module_dev_zero", symlink_at(MODULE_BINARY, "/dev/zero"), MODULE_BINARY,
            "a file listed in manifest.json is a character device, not a regular file"),
    Hostile("golden_output_fifo", fifo_at("golden/x.bin"), "golden/x.bin",
            "a file listed in golden.json is a FIFO, not a regular file"),
    Hostile("manifest_over_16_mib", sparse_file("manifest.json", MAX_JSON_BYTES + 1), "manifest.json",
            f"the manifest is {MAX_JSON_BYTES + 1} bytes, more than the {MAX_JSON_BYTES} allowed"),
    Hostile("golden_over_16_mib", sparse_file("golden.json", MAX_JSON_BYTES + 1), "golden.json",
            f"the test manifest is {MAX_JSON_BYTES + 1} bytes, more than the {MAX_JSON_BYTES} allowed"),
    Hostile("golden_json_missing", lambda b: (b / "golden.json").unlink(), "golden.json",
            "cannot read the test manifest: missing"),
    # Issue 40: capture.json (unhashed provenance) is held to a size bound, a schema and regular files, so
    # nothing rides along in it.
    Hostile("capture_json_fifo", fifo_at("capture.json"), "capture.json",
            "the capture provenance is a FIFO, not a regular file"),
    Hostile("capture_json_dev_zero", symlink_at("capture.json", "/dev/zero"), "capture.json",
            "the capture provenance is a character device, not a regular file"),
    Hostile("capture_json_dangling_link", symlink_at("capture.json", "/nonexistent/capture.json"), "capture.json",
            "cannot read the capture provenance: missing"),
    Hostile("capture_json_over_1_mib", sparse_file("capture.json", MAX_CAPTURE_INFO_BYTES + 1), "capture.json",
            f"the capture provenance is {MAX_CAPTURE_INFO_BYTES + 1} bytes, more than the {MAX_CAPTURE_INFO_BYTES} allowed"),
    Hostile("capture_json_payload", capture_edit(set_field("payload", value="x" * 100000)), "capture.json",
            "(wrpkg/schemas/capture.schema.json)"),
    Hostile("capture_json_not_json", lambda b: (b / "capture.json").write_bytes(b"\x7fELF"), "capture.json",
            "not valid JSON"),
    # Item 3: an edited manifest must meet DIR's hash file however DIR is spelled.
    Hostile("edited_manifest_as_dir_dot", edit_then_verify_as("DIR/."), "manifest.json",
            "differs from the expected"),
    Hostile("edited_manifest_as_dir_slash", edit_then_verify_as("DIR/"), "manifest.json",
            "differs from the expected"),
    Hostile("edited_manifest_as_dot_inside", edit_then_verify_as("."), "manifest.json",
            "differs from the expected"),
    # Issue 40: a symlink to a bundle meets the hash pinned beside the link, not only the target's own.
    Hostile("symlink_to_a_rehashed_bundle", behind_symlink(rewrite_listed(WRP, lambda d: d, chunk_bytes=4096)),
            f"{NAME}.sha256", "differs from the expected"),
    Hostile("symlink_to_a_bundle_without_hash_file",
            behind_symlink(rewrite_listed(WRP, lambda d: d, chunk_bytes=4096), drop_hash_file),
            f"{NAME}.sha256", "differs from the expected"),
]  # fmt: skip


# --- .wrp and module binaries an attacker rewrote, every digest redone (issue 40: verify = load) -----------
#
# What only a parse of the bytes can refuse: the .wrp is rewritten (its operations, its regions) and the
# manifest rehashed to match, as whoever can write manifest.json and the .wrp would. Warp's loader refuses
# each; verify must refuse it first, with the same verdict in both readers, and every load must refuse it too.

_OP_IF, _OP_WHILE = 7, 8


def wrp_rewrite(edit: Callable, rel: str = WRP) -> Callable[[Path], None]:
    """The .wrp at `rel` parsed (wrpkg.wrpformat), changed by edit(wrp) in place, written back as its
    objects say (no rule is checked on the way out), and every digest redone."""
    from wrpkg import wrpformat  # noqa: PLC0415 - hostile_corpus is imported before the parser is needed

    def changed(data: bytes) -> bytes:
        wrp = wrpformat.read_wrp(data)
        edit(wrp)
        return wrp.to_bytes()

    return rewrite_listed(rel, changed)


def wrp_patch(edit: Callable[[bytearray, dict], None], rel: str = WRP) -> Callable[[Path], None]:
    """The .wrp's bytes changed in place by edit(data, sections), `sections` mapping "METADATA", "MEMORY"
    and "OPERATIONS" to each section's byte offset; every digest redone."""

    def changed(data: bytes) -> bytes:
        out = bytearray(data)
        count, table = struct.unpack_from("<IQ", out, 12)
        names = {1: "METADATA", 2: "MEMORY", 3: "OPERATIONS"}
        sections = {}
        for i in range(count):
            kind, _, offset = struct.unpack_from("<IIQ", out, table + 32 * i)
            sections[names.get(kind, kind)] = offset
        edit(out, sections)
        return bytes(out)

    return rewrite_listed(rel, changed)


def put(fmt: str, at_section: str, offset: int, *values) -> Callable[[bytearray, dict], None]:
    return lambda data, sections: struct.pack_into(fmt, data, sections[at_section] + offset, *values)


def appended_op(op_type: int, body: bytes) -> Callable:
    """One more operation at the end of the stream: `body` after its 8-byte header."""
    from wrpkg.wrpformat import OpaqueOp  # noqa: PLC0415

    return lambda wrp: wrp.operations.ops.append(OpaqueOp(op_type, body))


def nested_ifs(depth: int) -> bytes:
    """`depth` capture_if records, each the whole then-branch of the one around it (the innermost empty),
    as the body of the outermost's record: built from the inside out, no recursion."""
    inner = b""
    for _ in range(depth - 1):
        record = struct.pack("<iIQIIII", 1, 0, 0, len(inner), 1 if inner else 0, 0, 0) + inner
        inner = struct.pack("<II", _OP_IF, 8 + len(record)) + record
    return struct.pack("<iIQIIII", 1, 0, 0, len(inner), 1 if inner else 0, 0, 0) + inner


def first_launch(edit: Callable) -> Callable:
    """edit(launch) on the first kernel launch of the stream."""
    from wrpkg.wrpformat import KernelLaunch  # noqa: PLC0415

    return lambda wrp: edit(next(op for op in wrp.operations.ops if isinstance(op, KernelLaunch)))


def _set_attr(obj, **values) -> None:
    for key, value in values.items():
        setattr(obj, key, value)


def added_mesh(
    indices=(0, 1, 2),
    points: int = 3,
    points_bytes: int | None = None,
    velocities_bytes: int | None = None,
    **fields,
) -> Callable:
    """A mesh record (3 points, one triangle, SAH with leaf size 4 unless `fields` say otherwise) over two
    new regions holding its points and indices: Warp builds it when it loads, trusting the record."""
    from wrpkg.wrpformat import MemoryRegion, MeshRecord  # noqa: PLC0415

    def edit(wrp) -> None:
        first = max(r.region_id for r in wrp.memory.regions) + 1
        size = points * 12 if points_bytes is None else points_bytes
        index_data = struct.pack(f"<{len(indices)}i", *indices)
        wrp.memory.regions += [
            MemoryRegion(first, 12, size, bytes(size)),
            MemoryRegion(first + 1, 4, len(index_data), index_data),
        ]
        record = dict(
            num_points=points,
            num_tris=len(indices) // 3,
            support_winding_number=0,
            bvh_constructor=0,
            bvh_leaf_size=4,
            points_region_id=first,
            indices_region_id=first + 1,
            velocities_region_id=0,
            original_ptr=0x5000,
        )
        if velocities_bytes is not None:
            wrp.memory.regions.append(MemoryRegion(first + 2, 12, velocities_bytes, bytes(velocities_bytes)))
            record["velocities_region_id"] = first + 2
        record.update(fields)
        wrp.metadata.meshes.append(MeshRecord(**record))

    return edit


def added_regions(*sizes: int) -> Callable:
    """Regions with no initial data and no binding (ids after the last), of these sizes: Warp allocates
    each when it loads."""
    from wrpkg.wrpformat import MemoryRegion  # noqa: PLC0415

    def edit(wrp) -> None:
        first = max(r.region_id for r in wrp.memory.regions) + 1
        wrp.memory.regions += [MemoryRegion(first + i, 1, size, None) for i, size in enumerate(sizes)]

    return edit


OPS = "OPERATIONS at byte"
# Past the shared table's bound (wrpkg/schemas/wrp_limits.json: 1 TiB) and past any address space a malloc
# could map, so that Warp's load fails wherever it runs.
HUGE_REGION = 1 << 50

WRP_CASES = [
    Hostile("wrp_op_count_huge", wrp_patch(put("<I", "OPERATIONS", 0, 0xFFFFFFFF)), WRP,
            "operation count 4294967295 cannot fit"),
    Hostile("wrp_op_size_past_its_stream", wrp_patch(put("<I", "OPERATIONS", 8, 0xFFFFFFF0)), WRP,
            "operation 0 declares size 4294967280, which overruns its stream"),
    Hostile("wrp_op_size_below_its_header", wrp_patch(put("<I", "OPERATIONS", 8, 4)), WRP,
            "operation 0 declares size 4, which overruns its stream or is too small"),
    Hostile("wrp_op_of_unknown_type", wrp_rewrite(appended_op(3, b"")), WRP,
            "operation 7: unknown or unsupported op type 3"),
    Hostile("wrp_reloc_past_its_value_blob",
            wrp_rewrite(first_launch(lambda op: _set_attr(op.relocs[0], value_byte_offset=op.params[0].value_size))),
            WRP, "operation 1: param 0 reloc at byte 56 is outside its value blob"),
    Hostile("wrp_reloc_of_unknown_kind", wrp_rewrite(first_launch(lambda op: _set_attr(op.relocs[1], kind=9))),
            WRP, "operation 1: reloc 1 has unknown kind 9"),
    Hostile("wrp_relocs_the_params_do_not_claim",
            wrp_rewrite(first_launch(lambda op: op.relocs.append(op.relocs[0]))), WRP,
            "operation 1: params claim 4 relocs but the table holds 5"),
    Hostile("wrp_param_slice_past_value_data",
            wrp_rewrite(first_launch(lambda op: _set_attr(op.params[3], value_offset=len(op.value_data)))), WRP,
            "operation 1: param 3 value slice is outside value_data"),
    Hostile("wrp_launch_value_data_past_its_record",
            wrp_patch(put("<I", "OPERATIONS", 4 + 32 + 76, 1 << 20)), WRP,
            "operation 1: kernel launch variable data (1048809 bytes) overflows the record"),
    Hostile("wrp_h2d_data_past_its_record", wrp_rewrite(appended_op(2, struct.pack("<iIQQ", 1, 0, 0, 4096))), WRP,
            "operation 7: H2D inline data of 4096 bytes overflows the record"),
    Hostile("wrp_memtile_of_zero_bytes", wrp_rewrite(appended_op(10, struct.pack("<iIQQ", 1, 0, 0, 1))), WRP,
            "operation 7: memtile source size is zero"),
    Hostile("wrp_alloc_record_short", wrp_rewrite(appended_op(6, bytes(8))), WRP,
            "operation 7: operation alloc record needs 16 bytes but only 8 remain"),
    Hostile("wrp_reduction_record_oversize", wrp_rewrite(appended_op(16, bytes(64))), WRP,
            "operation 7: REDUCTION record size is 72, not 64"),
    Hostile("wrp_scan_negative_stride",
            wrp_rewrite(appended_op(9, struct.pack("<iiQQIiiiBB2x", 1, 1, 0, 0, 4, -4, 4, 1, 5, 0))), WRP,
            "operation 7: scan has a negative stride"),
    Hostile("wrp_radix_sort_bits_past_the_key",
            wrp_rewrite(appended_op(12, struct.pack("<iiQQIiiiB3x", 1, 1, 0, 0, 4, 0, 40, 4, 1))), WRP,
            "operation 7: radix-sort value size 4 or key bits 0..40 out of range"),
    Hostile("wrp_bsr_negative_block_size", wrp_rewrite(appended_op(14, struct.pack("<i", -1) + bytes(148))), WRP,
            "operation 7: bsr-from-triplets has a negative size or count"),
    Hostile("wrp_bvh_refit", wrp_rewrite(appended_op(17, bytes(16))), WRP,
            "operation 7: BVH_REFIT records a process-local handle"),
    Hostile("wrp_while_with_an_else_branch",
            wrp_rewrite(appended_op(_OP_WHILE, struct.pack("<iIQIIII", 1, 0, 0, 0, 0, 8, 1)
                                    + struct.pack("<II", 5, 32) + bytes(24))), WRP,
            "operation 7: capture_while record has a non-empty second branch"),
    Hostile("wrp_branch_sizes_past_the_record",
            wrp_rewrite(appended_op(_OP_IF, struct.pack("<iIQIIII", 1, 0, 0, 64, 1, 0, 0))), WRP,
            "operation 7: conditional branch sizes overflow the record"),
    # Deeper than Warp's own limit (1024), so its load refuses too; the readers stop at the table's 128.
    Hostile("wrp_ifs_nested_1100_deep", wrp_rewrite(appended_op(_OP_IF, nested_ifs(1100))), WRP,
            "conditional nesting exceeds 128 levels"),
    # Within Warp's limit, past the table's: a load (which leaves the rest of the stream to Warp) refuses it as
    # verify does.
    Hostile("wrp_ifs_nested_129_deep", wrp_rewrite(appended_op(_OP_IF, nested_ifs(129))), WRP,
            "conditional nesting exceeds 128 levels"),
    Hostile("wrp_region_over_the_limit", wrp_rewrite(added_regions(HUGE_REGION)), WRP,
            f"region 4 asks for {HUGE_REGION} bytes, more than the 1099511627776 a region may have"),
    Hostile("wrp_regions_over_the_total_limit", wrp_rewrite(added_regions(*[(1 << 39) + 1] * 3)), WRP,
            "bytes in all, more than the 1099511627776 a .wrp may allocate"),
    Hostile("wrp_region_initial_data_past_the_section",
            wrp_patch(lambda data, sections: struct.pack_into("<Q", data, sections["MEMORY"] + 4 + 8, 1 << 30)), WRP,
            "region 1 declares 1073741824 bytes of initial data"),
    # Mesh records: Warp's loader builds each mesh from its record without checking it, and crashes
    # (SIGSEGV on the CPU: an index outside the points, more triangles than the region holds, no
    # triangles, leaf size 0) or reads past a region.
    Hostile("wrp_mesh_index_outside_its_points", wrp_rewrite(added_mesh(indices=(0, 1, 9))), WRP,
            "mesh 0 has triangle index 9 (triangle 0), outside its 3 points"),
    Hostile("wrp_mesh_negative_index", wrp_rewrite(added_mesh(indices=(0, -7, 2))), WRP,
            "mesh 0 has triangle index -7 (triangle 0), outside its 3 points"),
    Hostile("wrp_mesh_triangles_past_its_indices", wrp_rewrite(added_mesh(num_tris=1000)), WRP,
            "mesh 0 has 1000 triangles, more than its indices region"),
    Hostile("wrp_mesh_points_past_their_region", wrp_rewrite(added_mesh(points_bytes=24)), WRP,
            "mesh 0 has 3 points, more than its points region"),
    Hostile("wrp_mesh_velocities_short", wrp_rewrite(added_mesh(velocities_bytes=24)), WRP,
            "mesh 0 has 3 points, more than its velocities region"),
    Hostile("wrp_mesh_without_triangles", wrp_rewrite(added_mesh(indices=())), WRP, "mesh 0 has no triangles"),
    Hostile("wrp_mesh_leaf_size_0", wrp_rewrite(added_mesh(bvh_leaf_size=0)), WRP,
            "mesh 0 has BVH leaf size 0, less than 1"),
    Hostile("wrp_mesh_unknown_constructor", wrp_rewrite(added_mesh(bvh_constructor=9)), WRP,
            "mesh 0 has BVH constructor 9, which Warp does not build on the CPU"),
    Hostile("wrp_mesh_lbvh_on_the_cpu", wrp_rewrite(added_mesh(bvh_constructor=2)), WRP,
            "mesh 0 has BVH constructor 2, which Warp does not build on the CPU"),
    Hostile("wrp_mesh_winding_flag_2", wrp_rewrite(added_mesh(support_winding_number=2)), WRP,
            "mesh 0 has winding-number flag 2, expected 0 or 1"),
    Hostile("wrp_section_past_the_file", wrp_patch(lambda data, sections: struct.pack_into("<Q", data, 64 + 16, 1 << 40)),
            WRP, "overruns the"),
]  # fmt: skip


def _short_record_case(name: str, size: int, op_type: int) -> Hostile:
    """An operation of type `name` one byte shorter than the table's record size (or, for one whose size is
    exact, one byte longer): Warp's validator refuses it by the same bound."""
    from wrpkg.wrpformat.limits import EXACT_RECORD_BYTES  # noqa: PLC0415

    opaque = name not in (
        "KERNEL_LAUNCH",
        "MEMCPY_H2D",
        "MEMCPY_D2D",
        "MEMSET",
        "ALLOC",
        "IF",
        "WHILE",
        "MEMTILE",
    )
    if name in EXACT_RECORD_BYTES:
        total, fragment = size + 1, f"operation 7: {name} record size is {size + 1}, not {size}"
    elif opaque:
        total, fragment = size - 1, f"operation 7: {name} record of {size - 1} bytes is shorter than {size}"
    else:
        total, fragment = size - 1, f"record needs {size - 8} bytes but only {size - 9} remain"
    return Hostile(
        f"wrp_{name.lower()}_record_of_{total}_bytes",
        wrp_rewrite(appended_op(op_type, bytes(total - 8))),
        WRP,
        fragment,
    )


def _record_size_cases() -> list[Hostile]:
    """One case per entry of the shared table's record sizes (wrpkg/schemas/wrp_limits.json)."""
    from wrpkg.wrpformat import OpType  # noqa: PLC0415
    from wrpkg.wrpformat.limits import RECORD_BYTES  # noqa: PLC0415

    return [_short_record_case(name, size, OpType[name]) for name, size in sorted(RECORD_BYTES.items())]


WRP_CASES += _record_size_cases()
CASES += WRP_CASES


# --- the parity corpus: each case with the verdict both readers must give ----------------------------------
#
# CASES above are all refusals; these add what the two readers used to judge differently (unknown and
# missing fields, integer spellings, chunk digests, canonical form, .wrp contents, tars) and what they
# must both accept. tests/test_validity_parity.py runs CASES and these through both.


@dataclass
class Verdict:
    name: str
    mutate: Callable[[Path], Path | None]  # may return the path to judge instead (a tar it wrote)
    valid: bool
    file: str = ""  # a refusal must name it (both readers)
    cuda: bool = False  # made from GOOD_CUDA_DIR
    # C++ refuses it only at load, through Warp, which loads a CUDA graph only on a GPU: the C++ verdict is
    # held by //tests:validity_parity_gpu_test (tagged gpu); the CPU test holds Python's.
    gpu_load: bool = False


D = "0" * 64
# A bundle name no ustar header can hold (Bazel target names may be this long): every path gets a pax header.
LONG_NAME = "long_" + "n" * 195


def without(*keys) -> Callable[[dict], None]:
    def edit(raw) -> None:
        target = raw
        for key in keys[:-1]:
            target = target[key]
        del target[keys[-1]]

    return edit


def then(*mutations: Callable[[Path], Path | None]) -> Callable[[Path], Path | None]:
    """The mutations in turn; what the last returns (as_tar's archive) is what is judged."""

    def mutate(bundle: Path) -> Path | None:
        judged = None
        for m in mutations:
            judged = m(bundle)
        return judged

    return mutate


def reformatted(file_name: str, **dumps) -> Callable[[Path], None]:
    """The same JSON value in other bytes (indent, key order); the content hash follows."""

    def mutate(bundle: Path) -> None:
        raw = json.loads((bundle / file_name).read_bytes())
        (bundle / file_name).write_text(json.dumps(raw, **dumps))
        if file_name == "manifest.json":
            _rehash(bundle)

    return mutate


def write_hash_file(text: str) -> Callable[[Path], None]:
    def mutate(bundle: Path) -> None:
        (bundle.parent / f"{bundle.name}.sha256").write_text(text)

    return mutate


def pinned_hash_as(template: str) -> Callable[[Path], None]:
    """The bundle's own content hash, rewritten in `<dir>.sha256` as `template` spells it ({h}: the hash,
    {n}: the bundle's name)."""

    def mutate(bundle: Path) -> None:
        digest = hashlib.sha256((bundle / "manifest.json").read_bytes()).hexdigest()
        (bundle.parent / f"{bundle.name}.sha256").write_text(template.format(h=digest, n=bundle.name))

    return mutate


def as_tar(*extra: tuple[str, str, bytes | str | None]) -> Callable[[Path], Path]:
    """The (already mutated) bundle as a ustar archive, plus extra entries (kind, name, data): kind "file",
    "dir", "symlink" (data: its target) or "hardlink"."""

    def mutate(bundle: Path) -> Path:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
            for path in sorted([bundle, *bundle.rglob("*")]):
                rel = f"{bundle.name}/{path.relative_to(bundle)}" if path != bundle else bundle.name
                info = tarfile.TarInfo(rel)
                if path.is_dir():
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    tar.addfile(info)
                else:
                    data = path.read_bytes()
                    info.size, info.mode = len(data), 0o644
                    tar.addfile(info, io.BytesIO(data))
            for kind, name, data in extra:
                info = tarfile.TarInfo(name)
                if kind == "file":
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
                else:
                    info.type = {
                        "dir": tarfile.DIRTYPE,
                        "symlink": tarfile.SYMTYPE,
                        "hardlink": tarfile.LNKTYPE,
                    }[kind]
                    info.linkname = data or ""
                    tar.addfile(info)
        out = bundle.parent / f"{bundle.name}.tar"
        out.write_bytes(buffer.getvalue())
        return out

    return mutate


def renamed(name: str) -> Callable[[Path], None]:
    """The bundle under another name (golden.json's `name`: the content hash does not cover it); the
    directory keeps its name, an archive of it (pax_tar) takes the new one."""
    return golden_edit(set_field("name", value=name))


def pax_record(key: bytes, value: bytes) -> bytes:
    """One pax record, "<length> <key>=<value>\\n", its length counting the whole record."""
    rest = len(key) + len(value) + 3
    length = rest + 1
    while len(str(length)) + rest != length:
        length = len(str(length)) + rest
    return b"%d %s=%s\n" % (length, key, value)


def pax_header(records: bytes, typeflag: bytes = b"x", size: int | None = None) -> bytes:
    """A pax extended header ('x', or `typeflag`) holding `records` as they are; `size` (when given) is
    the size its header records, for one that lies."""
    header = _ustar_header(b"././@PaxHeader", b"", 0, len(records) if size is None else size, typeflag)
    return header + records + bytes(-len(records) % 512)


def miscounted(record: bytes, by: int) -> bytes:
    """A pax record whose length says `by` bytes more than it holds."""
    length, rest = record.split(b" ", 1)
    return b"%d %s" % (int(length) + by, rest)


# A regular file's ustar header, empty, whose name a pax header before it replaces.
EMPTY_FILE = _ustar_header(b"x", b"", 0o644, 0, b"0")


def pax_tar(
    before: str | None = None, insert: bytes | Callable[[str], bytes] = b""
) -> Callable[[Path], Path]:
    """The (already mutated) bundle as wrpkg.build.pack writes its archive (write_deterministic_tar, under
    golden.json's name: pax headers for paths over ustar's fields), with the bytes `insert` (a function of
    that name, or bytes) inserted before the entry `before` (a path inside the bundle: "" for its
    directory entry; None: after the last entry)."""

    def mutate(bundle: Path) -> Path:
        name = json.loads((bundle / "golden.json").read_bytes())["name"]
        out = bundle.parent / "archive.tar"
        write_deterministic_tar(bundle, name, out)
        data = out.read_bytes()
        extra = insert(name) if callable(insert) else insert
        if before is None and not extra:
            return out
        target = None if before is None else (f"{name}/{before}" if before else f"{name}/")
        chunks, offset = [], 0
        with tarfile.open(out) as tar:  # each entry's bytes, its pax header (if any) included
            members = tar.getmembers()
        for member in members:
            end = member.offset_data + (member.size + 511) // 512 * 512
            spelled = f"{member.name}/" if member.isdir() else member.name
            chunks.append((spelled, data[offset:end]))
            offset = end
        names = [spelled for spelled, _ in chunks]
        at = len(chunks) if target is None else names.index(target)
        body = b"".join(c for _, c in chunks[:at]) + extra + b"".join(c for _, c in chunks[at:])
        out.write_bytes(body + bytes(1024))
        return out

    return mutate


def raw_entry(name: bytes, typeflag: bytes) -> bytes:
    """One empty ustar entry whose name field holds `name`'s bytes as they are (a regular file '0', a
    directory '5'), for pax_tar to insert."""
    return _ustar_header(name, b"", 0o755 if typeflag == b"5" else 0o644, 0, typeflag)


def grow_binding_and_its_golden(index: int, extra: int) -> Callable[[Path], None]:
    """Binding `index` recorded `extra` bytes larger, its golden output padded to match: the manifests agree
    with each other and with every file, and only the .wrp says otherwise."""

    def mutate(bundle: Path) -> None:
        manifest_edit(
            lambda raw: raw["bindings"][index].update(bytes=raw["bindings"][index]["bytes"] + extra)
        )(bundle)
        golden = json.loads((bundle / "golden.json").read_bytes())
        name = json.loads((bundle / "manifest.json").read_bytes())["bindings"][index]["name"]
        entry = next(g for g in golden["golden"] if g["name"] == name)
        data = (bundle / entry["file"]).read_bytes() + bytes(extra)
        (bundle / entry["file"]).write_bytes(data)
        entry.update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
        _write_canonical(bundle / "golden.json", golden)

    return mutate


CUDA_WRP = (
    json.loads((GOOD_CUDA_DIR / "manifest.json").read_bytes())["wrp"] if GOOD_CUDA_DIR.is_dir() else "sim.wrp"
)
CUDA_MODULE_BINARY = (
    json.loads((GOOD_CUDA_DIR / "manifest.json").read_bytes())["modules"][0]["binary"]
    if GOOD_CUDA_DIR.is_dir()
    else "sim_modules/x.cubin"
)
# The SM whose image the cases change: the one a device view for an H100 hands out (prepare_cuda_load).
VIEW_SM = "sm_90"


def fatbin_rewrite(edit: Callable[[bytearray, dict], None], *, rehash_images: bool = False) -> Callable:
    """The first module's fatbin changed in place by edit(data, images) (`images`: each SASS entry's payload
    (offset, size) by arch), the .wrp's record of its digest patched to the new one, and every file's listing
    redone: an attacker who rewrites the files and the manifest alike. `rehash_images`: the manifest's record
    of each SASS image too (size and sha256), the one digest that still pinned the image."""
    from wrpkg.reader.fatbin import parse_fatbin  # noqa: PLC0415

    def mutate(bundle: Path) -> None:
        path = bundle / CUDA_MODULE_BINARY
        old = path.read_bytes()
        images = {i.arch: (i.offset, i.size) for i in parse_fatbin(old) if i.is_sass}
        data = bytearray(old)
        edit(data, images)
        path.write_bytes(bytes(data))
        wrp = bundle / CUDA_WRP
        old_digest, new_digest = hashlib.sha256(old).hexdigest(), hashlib.sha256(data).hexdigest()
        assert old_digest.encode() in wrp.read_bytes()
        wrp.write_bytes(wrp.read_bytes().replace(old_digest.encode(), new_digest.encode()))
        if rehash_images:
            raw = json.loads((bundle / "manifest.json").read_bytes())
            for record in raw["modules"][0]["sass"]:
                offset, size = images[record["arch"]]
                image = bytes(data[offset : offset + size])
                record.update(size=len(image), sha256=hashlib.sha256(image).hexdigest())
            _write_canonical(bundle / "manifest.json", raw)
        rewrite_listed(CUDA_WRP, lambda d: d)(bundle)

    return mutate


def in_image(arch: str, at: Callable[[int], int], fmt: str, value) -> Callable[[bytearray, dict], None]:
    """Writes `value` (struct format `fmt`) into the SASS image for `arch`, at at(image size)."""

    def edit(data: bytearray, images: dict) -> None:
        offset, size = images[arch]
        struct.pack_into(fmt, data, offset + at(size), value)

    return edit


def flip_in_image(arch: str) -> Callable[[bytearray, dict], None]:
    """One byte flipped in the middle of the SASS image for `arch`: inside its code, past every header."""

    def edit(data: bytearray, images: dict) -> None:
        offset, size = images[arch]
        data[offset + size // 2] ^= 0x01

    return edit


def _parity_cases() -> list[Verdict]:
    from wrpkg.wrpformat import OpType  # noqa: PLC0415
    from wrpkg.wrpformat.limits import RECORD_BYTES  # noqa: PLC0415

    M, G, H = "manifest.json", "golden.json", f"{NAME}.sha256"
    pdriver = b'"ptx_min_driver": null'
    cases = [
        # Both accept: what the content hash vouches for is judged by its content, not its spelling.
        Verdict("good", lambda b: None, True),
        Verdict("good_without_hash_file", drop_hash_file, True),
        Verdict("manifest_reindented_with_hash_file", reformatted(M, indent=2), True),
        Verdict("manifest_keys_reordered_with_hash_file", reformatted(M, indent=1, sort_keys=False), True),
        Verdict("golden_reindented", reformatted(G, indent=4), True),
        Verdict("golden_on_one_line", reformatted(G), True),
        Verdict("rechunked_at_4096_bytes", rewrite_listed(WRP, lambda d: d, chunk_bytes=4096), True),
        Verdict("capture_json_missing", lambda b: (b / "capture.json").unlink(), True),
        # capture.json: judged by content (its schema), not bytes; every field wrpkg.capture may write.
        Verdict("capture_json_on_one_line", reformatted("capture.json"), True),
        Verdict("capture_json_of_a_retarget_with_every_note", capture_edit(lambda raw: raw.update(
            mode="retarget", sm=90, device="cuda", device_name="none (retargeted from a CPU capture to sm_90)",
            cuda_toolkit_version="13.4",
            initial_state_from_build_kernels=[{"kernel": "k", "where": "a.py:3", "arrays": ["x"], "other_arrays": 1}],
            cpu_golden_caveats=[{"kernel": "k", "block_dim": 64, "where": "a.py:9", "reasons": ["atomics"]},
                                {"operation": "array_sum", "where": "a.py:10", "reasons": ["a reduction"]}],
            cpu_device_branches=["a.py:4"], device_model="h200",
            device_model_answers=[{"asked": "Device.is_cpu", "answer": False, "where": "a.py:5"},
                                  {"asked": "Device.sm_count", "answer": 132, "where": "a.py:6"}],
            mathdx_linked_modules=["m"], zeroed_unwritten_bytes=64,
            step_reads_unwritten=["an array"], direct_step_check={"bit_exact": ["x"], "within_tolerance": ["y"], "differs_run_to_run": ["z"]},
            uint64_mesh_ids_as_handles=[{"kernel": "k", "parameter": "p", "meshes": ["wp.Mesh"], "launches": 2}])),
            True),
        Verdict("capture_json_unknown_field", capture_edit(set_field("notes", value="x")), False, "capture.json"),
        Verdict("capture_json_without_device_name", capture_edit(without("device_name")), False, "capture.json"),
        Verdict("capture_json_sm_string", capture_edit(set_field("sm", value="90")), False, "capture.json"),
        Verdict("capture_json_of_another_schema", capture_edit(set_field("schema", value="rules_warp.capture/2")),
                False, "capture.json"),
        Verdict("capture_json_an_array", lambda b: (b / "capture.json").write_bytes(b"[]"), False, "capture.json"),
        Verdict("capture_json_duplicate_key", lambda b: (b / "capture.json").write_bytes(
            b'{"schema": "rules_warp.capture/1", "schema": "rules_warp.capture/1"}'), False, "capture.json"),
        Verdict("capture_json_a_directory", lambda b: ((b / "capture.json").unlink(), (b / "capture.json").mkdir()),
                False, "capture.json"),
        Verdict("capture_json_device_model_answer_unknown_field", capture_edit(set_field(
            "device_model_answers", value=[{"asked": "Device.arch", "answer": 90, "where": "a.py:1", "blob": "x"}])),
            False, "capture.json"),
        Verdict("capture_json_caveat_unknown_field", capture_edit(set_field(
            "cpu_golden_caveats", value=[{"kernel": "k", "where": "a.py:1", "reasons": [], "blob": "x"}])),
            False, "capture.json"),
        Verdict("tar_capture_json_unknown_field", then(capture_edit(set_field("notes", value="x")), as_tar()),
                False, "capture.json"),
        Verdict("tar_capture_json_over_1_mib", then(capture_edit(set_field("device_name", value="x" * (1 << 20))),
                                                    as_tar()), False, "capture.json"),
        Verdict("symlink_to_the_bundle_pinned_beside_the_link", behind_symlink(), True),
        Verdict("symlink_to_the_bundle_pinned_beside_both", behind_symlink(_rehash), True),
        Verdict("tar_good", as_tar(), True),
        Verdict("tar_golden_reindented", then(reformatted(G, indent=2), as_tar()), True),
        # Without a content hash, the bytes must be the canonical form wrpkg writes.
        Verdict(
            "manifest_reindented_without_hash_file", then(reformatted(M, indent=2), drop_hash_file), False, M
        ),
        Verdict("tar_manifest_reindented", then(reformatted(M, indent=2), as_tar()), False, M),
        # The schema: no unknown field, none missing, enums.
        Verdict("unknown_top_level_field", manifest_edit(set_field("notes", value="x")), False, M),
        Verdict("unknown_field_in_a_file", manifest_edit(set_field("files", 0, "mode", value=420)), False, M),
        Verdict(
            "unknown_field_in_a_module", manifest_edit(set_field("modules", 0, "flags", value=[])), False, M
        ),
        Verdict(
            "unknown_field_in_a_binding", manifest_edit(set_field("bindings", 0, "unit", value="m")), False, M
        ),
        Verdict(
            "unknown_field_in_toolchain", manifest_edit(set_field("toolchain", "clang", value="14")), False, M
        ),
        Verdict(
            "unknown_field_in_a_sass_entry",
            manifest_edit(
                set_field("modules", 0, "sass", value=[{"arch": "sm_90", "size": 1, "sha256": D, "x": 1}])
            ),
            False,
            M,
        ),
        Verdict("module_without_hash", manifest_edit(without("modules", 0, "hash")), False, M),
        Verdict("module_without_source_key", manifest_edit(without("modules", 0, "source")), False, M),
        Verdict("module_without_ptx_key", manifest_edit(without("modules", 0, "ptx")), False, M),
        Verdict("module_without_sass_key", manifest_edit(without("modules", 0, "sass")), False, M),
        Verdict("toolchain_without_nvrtc_ptx", manifest_edit(without("toolchain", "nvrtc_ptx")), False, M),
        Verdict("manifest_without_ptx_min_driver", manifest_edit(without("ptx_min_driver")), False, M),
        Verdict(
            "binary_kind_unknown",
            manifest_edit(set_field("modules", 0, "binary_kind", value="elf")),
            False,
            M,
        ),
        Verdict("device_unknown", manifest_edit(set_field("device", value="tpu")), False, M),
        Verdict(
            "schema_of_another_version",
            manifest_edit(set_field("schema", value="rules_warp.manifest/3")),
            False,
            M,
        ),
        Verdict("format_version_string", manifest_edit(set_field("format_version", value="18")), False, M),
        Verdict(
            "format_version_float",
            manifest_bytes(replace_once(b'"format_version": 18', b'"format_version": 18.0')),
            False,
            M,
        ),
        Verdict("chunk_bytes_4095", manifest_edit(set_field("chunk_bytes", value=4095)), False, M),
        Verdict(
            "file_size_float", manifest_bytes(replace_once(b'"size": 5007', b'"size": 5007.0')), False, M
        ),
        Verdict(
            "file_size_exponent", manifest_bytes(replace_once(b'"size": 5007', b'"size": 5.007e3')), False, M
        ),
        Verdict("file_size_true", manifest_edit(set_field("files", 0, "size", value=True)), False, M),
        Verdict("file_size_negative", manifest_edit(set_field("files", 0, "size", value=-1)), False, M),
        Verdict("file_size_2_to_the_63", manifest_edit(set_field("files", 0, "size", value=2**63)), False, M),
        Verdict(
            "file_size_2_to_the_64_minus_1",
            manifest_edit(set_field("files", 0, "size", value=2**64 - 1)),
            False,
            M,
        ),
        Verdict(
            "file_size_past_the_end", manifest_edit(set_field("files", 0, "size", value=5008)), False, WRP
        ),
        Verdict(
            "file_sha256_uppercase", manifest_edit(set_field("files", 0, "sha256", value="A" * 64)), False, M
        ),
        Verdict(
            "file_sha256_of_63_digits",
            manifest_edit(set_field("files", 0, "sha256", value="0" * 63)),
            False,
            M,
        ),
        Verdict(
            "chunk_digest_for_a_one_piece_file",
            manifest_edit(set_field("files", 0, "chunk_sha256", value=[D])),
            False,
            M,
        ),
        Verdict(
            "whole_sha256_wrong_chunks_right",
            then(
                rewrite_listed(WRP, lambda d: d, chunk_bytes=4096),
                manifest_edit(set_field("files", 0, "sha256", value=D)),
            ),
            False,
            WRP,
        ),
        Verdict(
            "chunk_digest_wrong",
            then(
                rewrite_listed(WRP, lambda d: d, chunk_bytes=4096),
                manifest_edit(set_field("files", 0, "chunk_sha256", 1, value=D)),
            ),
            False,
            WRP,
        ),
        Verdict("region_boolean", manifest_edit(set_field("bindings", 0, "region", value=True)), False, M),
        Verdict("shape_negative", manifest_edit(set_field("bindings", 0, "shape", value=[-1])), False, M),
        Verdict(
            "shape_float",
            manifest_bytes(replace_once(b'"shape": [\n    1\n   ]', b'"shape": [\n    1.0\n   ]')),
            False,
            M,
        ),
        Verdict(
            "direction_unknown", manifest_edit(set_field("bindings", 0, "direction", value="both")), False, M
        ),
        Verdict(
            "dtype_bytes_zero", manifest_edit(set_field("bindings", 0, "dtype_bytes", value=0)), False, M
        ),
        Verdict("no_bindings_but_goldens", manifest_edit(set_field("bindings", value=[])), False, G),
        Verdict("manifest_an_array", manifest_bytes(lambda d: b"[]\n"), False, M),
        Verdict("manifest_empty", manifest_bytes(lambda d: b""), False, M),
        Verdict("manifest_trailing_garbage", manifest_bytes(lambda d: d + b"x"), False, M),
        # Issue 40: a NUL byte anywhere is refused by both (C++'s nlohmann stopped reading at it: accepted).
        Verdict("manifest_nul_then_garbage", manifest_bytes(lambda d: d + b"\0{garbage"), False, M),
        Verdict("manifest_nul_as_whitespace", manifest_bytes(lambda d: d.replace(b"\n", b"\n\0", 1)), False, M),
        Verdict("golden_nul_then_garbage", golden_bytes(lambda d: d + b"\0[1]"), False, G),
        Verdict("capture_json_nul_then_garbage", lambda b: (b / "capture.json").write_bytes(
            (b / "capture.json").read_bytes() + b"\0" + b"x" * 100), False, "capture.json"),
        Verdict("tar_manifest_nul_then_garbage", then(manifest_bytes(lambda d: d + b"\0x"), as_tar()), False, M),
        Verdict("manifest_byte_order_mark", manifest_bytes(lambda d: b"\xef\xbb\xbf" + d), False, M),
        Verdict("manifest_utf16", manifest_bytes(lambda d: d.decode().encode("utf-16")), False, M),
        Verdict(
            "nesting_of_65_in_an_unknown_field",
            manifest_bytes(replace_once(pdriver, pdriver + b', "zz": ' + nested(64))),
            False,
            M,
        ),
        Verdict(
            "nesting_of_129_in_an_unknown_field",
            manifest_bytes(replace_once(pdriver, pdriver + b', "zz": ' + nested(128))),
            False,
            M,
        ),
        Verdict(
            "escaped_nul_in_a_binding_name",
            manifest_edit(set_field("bindings", 0, "name", value="e\0")),
            False,
            G,
        ),
        # The .wrp must be what the manifest says it is (Python parses it at verify; C++ through Warp at load).
        Verdict("wrp_truncated_and_rehashed", rewrite_listed(WRP, lambda d: d[:4000]), False, WRP),
        Verdict("wrp_of_zeros_rehashed", rewrite_listed(WRP, lambda d: bytes(len(d))), False, WRP),
        Verdict(
            "binding_size_differs_from_the_wrp",
            manifest_edit(set_field("bindings", 1, "bytes", value=780)),
            False,
            M,
        ),
        # Region numbers are labels (C++ cannot see them through Warp): both judge the aliasing.
        Verdict(
            "binding_region_renumbered", manifest_edit(set_field("bindings", 1, "region", value=7)), True
        ),
        Verdict(
            "bindings_aliased_that_the_wrp_keeps_apart",
            manifest_edit(set_field("bindings", 1, "region", value=2)),
            False,
            M,
        ),
        Verdict(
            "binding_the_wrp_lacks", manifest_edit(set_field("bindings", 1, "name", value="w")), False, M
        ),
        # golden.json: outside the content hash, judged by the schema and the manifest.
        Verdict("golden_unknown_field", golden_edit(set_field("seed", value=1)), False, G),
        Verdict(
            "golden_entry_unknown_field", golden_edit(set_field("golden", 0, "unit", value="m")), False, G
        ),
        Verdict("golden_without_golden_device", golden_edit(without("golden_device")), False, G),
        Verdict("golden_without_label", golden_edit(without("label")), False, G),
        Verdict("golden_entry_without_rtol", golden_edit(without("golden", 0, "rtol")), False, G),
        Verdict("golden_device_unknown", golden_edit(set_field("golden_device", value="tpu")), False, G),
        Verdict("golden_atol_string", golden_edit(set_field("golden", 0, "atol", value="1e-6")), False, G),
        Verdict("golden_atol_negative", golden_edit(set_field("golden", 0, "atol", value=-1.0)), False, G),
        Verdict(
            "golden_atol_without_rtol", golden_edit(set_field("golden", 0, "rtol", value=None)), False, G
        ),
        Verdict("golden_atol_true", golden_edit(set_field("golden", 0, "atol", value=True)), False, G),
        Verdict(
            "golden_name_not_a_binding", golden_edit(set_field("golden", 0, "name", value="q")), False, G
        ),
        Verdict(
            "golden_of_an_input_binding", golden_edit(set_field("golden", 1, "name", value="v")), False, G
        ),
        Verdict("golden_bytes_wrong", golden_edit(set_field("golden", 0, "bytes", value=5)), False, G),
        Verdict("golden_label_number", golden_edit(set_field("label", value=7)), False, G),
        Verdict("golden_name_with_a_slash", golden_edit(set_field("name", value="a/b")), False, G),
        Verdict(
            "golden_content_hash_uppercase",
            golden_edit(lambda raw: raw.update(content_hash=raw["content_hash"].upper())),
            False,
            G,
        ),
        Verdict(
            "golden_schema_of_another_version",
            golden_edit(set_field("schema", value="rules_warp.golden/2")),
            False,
            G,
        ),
        Verdict("golden_list_empty", golden_edit(set_field("golden", value=[])), False, "golden/"),
        Verdict("golden_an_array", golden_bytes(lambda d: b"[]"), False, G),
        Verdict("golden_byte_order_mark", golden_bytes(lambda d: b"\xef\xbb\xbf" + d), False, G),
        # Beside the bundle: the content-hash file.
        Verdict("hash_file_empty", write_hash_file(""), False, H),
        Verdict(
            "hash_file_uppercase", lambda b: write_hash_file((b.parent / H).read_text().upper())(b), False, H
        ),
        Verdict("hash_file_of_another_bundle", write_hash_file(f"{D}  {NAME}/manifest.json\n"), False, M),
        # Issue 40: one grammar, "<64 lowercase hex>[  <printable ASCII name>]" and at most one final newline.
        Verdict("hash_file_hash_alone", pinned_hash_as("{h}"), True),
        Verdict("hash_file_hash_and_newline", pinned_hash_as("{h}\n"), True),
        Verdict("hash_file_without_final_newline", pinned_hash_as("{h}  {n}/manifest.json"), True),
        Verdict("hash_file_leading_spaces", pinned_hash_as("  {h}  {n}/manifest.json\n"), False, H),
        Verdict("hash_file_tab_separator", pinned_hash_as("{h}\t{n}/manifest.json\n"), False, H),
        Verdict("hash_file_one_space_separator", pinned_hash_as("{h} {n}/manifest.json\n"), False, H),
        Verdict("hash_file_file_separator_control", pinned_hash_as("{h}\x1c{n}/manifest.json\n"), False, H),
        Verdict("hash_file_vertical_tab_separator", pinned_hash_as("{h}\x0b\n"), False, H),
        Verdict("hash_file_crlf", pinned_hash_as("{h}  {n}/manifest.json\r\n"), False, H),
        Verdict("hash_file_two_lines", pinned_hash_as("{h}  {n}/manifest.json\n{h}  x\n"), False, H),
        Verdict("hash_file_name_with_escape", pinned_hash_as("{h}  {n}\x1b[2J/manifest.json\n"), False, H),
        Verdict("hash_file_two_spaces_no_name", pinned_hash_as("{h}  \n"), False, H),
        Verdict("hash_file_65_digits", pinned_hash_as("{h}0  {n}/manifest.json\n"), False, H),
        Verdict("hash_file_latin1_name", lambda b: (b.parent / H).write_bytes(
            (b.parent / H).read_bytes().replace(b"  ", b"  \xe9", 1)), False, H),
        # What lies in the directory.
        Verdict("hidden_extra_file", lambda b: (b / ".DS_Store").write_bytes(b"\0"), False, ".DS_Store"),
        Verdict(
            "extra_file_in_golden_dir",
            lambda b: (b / "golden" / "y.bin").write_bytes(b"\0"),
            False,
            "golden/y.bin",
        ),
        # Tars: entry kinds a reader must not extract or follow.
        Verdict("tar_symlink_entry", as_tar(("symlink", f"{NAME}/link", "/etc/passwd")), False, "link"),
        Verdict("tar_hardlink_entry", as_tar(("hardlink", f"{NAME}/link", f"{NAME}/{WRP}")), False, "link"),
        Verdict("tar_dot_component", as_tar(("file", f"{NAME}/./notes.txt", b"x")), False, "notes.txt"),
        # Issue 40: each entry once, a directory's too (docs/bundles.md), and never a file's path.
        Verdict("tar_directory_entry_twice", as_tar(("dir", f"{NAME}/golden", None)), False,
                f"entry {NAME}/golden/ appears twice"),
        Verdict("tar_bundle_directory_entry_twice", as_tar(("dir", NAME, None)), False,
                f"entry {NAME}/ appears twice"),
        Verdict("tar_directory_entry_where_a_file_is", as_tar(("dir", f"{NAME}/{WRP}", None)), False,
                f"entry {NAME}/{WRP}/ appears twice"),
        Verdict(
            "tar_unknown_manifest_field",
            then(manifest_edit(set_field("notes", value="x")), as_tar()),
            False,
            M,
        ),
        Verdict(
            "tar_golden_unknown_field", then(golden_edit(set_field("seed", value=1)), as_tar()), False, G
        ),
        # Tars with pax headers (issue 38): wrpkg.build.pack gives a path that ustar's name and prefix cannot hold a
        # pax header with only a `path` record; both readers take that and nothing else. `file` is what both
        # messages must say.
        Verdict("tar_pax_long_bundle_name", then(renamed(LONG_NAME), pax_tar()), True),
        Verdict("tar_pax_path_of_a_short_name", pax_tar(M, lambda n: pax_header(pax_record(b"path", f"{n}/{M}".encode()))), True),
        *[
            Verdict(f"tar_pax_key_{key}", pax_tar(M, lambda n, key=key: pax_header(
                pax_record(b"path", f"{n}/{M}".encode()) + pax_record(key.encode(), b"1"))),
                False, f"key '{key}' is not allowed")
            for key in ("linkpath", "size", "uid", "mtime", "hdrcharset", "comment")
        ],
        Verdict("tar_pax_path_twice", pax_tar(M, lambda n: pax_header(
            pax_record(b"path", f"{n}/{M}".encode()) * 2)), False, "holds 'path' twice"),
        Verdict("tar_pax_without_records", pax_tar(M, pax_header(b"")), False, "holds no 'path' record"),
        Verdict("tar_pax_length_with_leading_zero", pax_tar(M, lambda n: pax_header(
            b"0" + pax_record(b"path", f"{n}/{M}".encode()))), False, "its length has a leading zero"),
        Verdict("tar_pax_length_with_sign", pax_tar(M, lambda n: pax_header(
            b"+" + pax_record(b"path", f"{n}/{M}".encode()))), False, "does not start with a decimal length"),
        Verdict("tar_pax_length_too_long", pax_tar(M, lambda n: pax_header(
            miscounted(pax_record(b"path", f"{n}/{M}".encode()), 1))), False, "runs past the end of the header"),
        Verdict("tar_pax_length_too_short", pax_tar(M, lambda n: pax_header(
            miscounted(pax_record(b"path", f"{n}/{M}".encode()), -1) + b"\n")), False, "does not end with a newline"),
        Verdict("tar_pax_record_without_equals", pax_tar(M, lambda n: pax_header(
            pax_record(b"path", f"{n}/{M}".encode()).replace(b"=", b" "))), False, "is not <key>=<value>"),
        Verdict("tar_pax_trailing_nul_bytes", pax_tar(M, lambda n: pax_header(
            pax_record(b"path", f"{n}/{M}".encode()) + bytes(12))), False, "does not start with a decimal length"),
        Verdict("tar_pax_path_with_nul", pax_tar(M, lambda n: pax_header(
            pax_record(b"path", f"{n}/{M}\0x".encode()))), False, "its path holds a NUL byte"),
        Verdict("tar_pax_path_with_newline", pax_tar(M, lambda n: pax_header(
            pax_record(b"path", f"{n}/{M}\nx".encode()))), False, "its path holds a control character"),
        Verdict("tar_pax_path_with_c1_control", pax_tar(M, lambda n: pax_header(
            pax_record(b"path", f"{n}/{M}\x85".encode()))), False, "its path holds a control character"),
        Verdict("tar_pax_path_latin1", pax_tar(M, lambda n: pax_header(
            pax_record(b"path", f"{n}/\xe9{M}".encode("latin-1")))), False, "its path is not valid UTF-8"),
        Verdict("tar_pax_path_overlong_slash", pax_tar(M, lambda n: pax_header(
            pax_record(b"path", n.encode() + b"\xc0\xaf" + M.encode()))), False, "its path is not valid UTF-8"),
        Verdict("tar_pax_path_surrogate", pax_tar(M, lambda n: pax_header(
            pax_record(b"path", n.encode() + b"/\xed\xa0\x80" + M.encode()))), False, "its path is not valid UTF-8"),
        Verdict("tar_pax_path_dotdot", pax_tar(M, lambda n: pax_header(
            pax_record(b"path", f"{n}/../{M}".encode()))), False, "entry path"),
        Verdict("tar_pax_path_absolute", pax_tar(M, lambda n: pax_header(
            pax_record(b"path", f"/{n}/{M}".encode()))), False, "entry path"),
        Verdict("tar_pax_path_empty", pax_tar(M, pax_header(pax_record(b"path", b""))), False, "entry path"),
        Verdict("tar_pax_path_duplicates_an_entry", pax_tar(G, lambda n: pax_header(
            pax_record(b"path", f"{n}/{M}".encode()))), False, "appears twice"),
        Verdict("tar_pax_path_outside_the_bundle", pax_tar(M, pax_header(
            pax_record(b"path", b"elsewhere/" + b"x" * 120)) + EMPTY_FILE), False, "lies outside"),
        Verdict("tar_pax_utf8_path_unlisted", pax_tar(M, lambda n: pax_header(
            pax_record(b"path", f"{n}/caf\u00e9_{'x' * 120}".encode())) + EMPTY_FILE), False, "caf\u00e9_xxx"),
        Verdict("tar_pax_followed_by_pax", pax_tar(M, lambda n: pax_header(pax_record(b"path", b"a")) + pax_header(
            pax_record(b"path", f"{n}/{M}".encode()))), False, "is followed by another pax header"),
        Verdict("tar_pax_followed_by_a_symlink", pax_tar(None, lambda n: pax_header(
            pax_record(b"path", f"{n}/link".encode())) + _ustar_header(b"link", b"", 0o777, 0, b"2")),
            False, "is followed by an entry of tar type"),
        Verdict("tar_pax_at_the_end", pax_tar(None, pax_header(pax_record(b"path", b"x"))),
                False, "is followed by no entry (end of archive)"),
        Verdict("tar_pax_global_header", pax_tar(M, pax_header(pax_record(b"path", b"x"), b"g")),
                False, "(a pax global header)"),
        Verdict("tar_gnu_long_name", pax_tar(M, lambda n: pax_header(f"{n}/{M}".encode() + b"\0", b"L")),
                False, "(a GNU long name)"),
        Verdict("tar_gnu_long_link_name", pax_tar(M, pax_header(b"x\0", b"K")), False, "(a GNU long link name)"),
        Verdict("tar_pax_over_64_kib", pax_tar(M, lambda n: pax_header(
            pax_record(b"comment", b"x" * 70000) + pax_record(b"path", f"{n}/{M}".encode()))),
            False, "over the limit of 65536"),
        Verdict("tar_pax_runs_past_the_archive", pax_tar(None, pax_header(b"", size=8**11 - 1)),
                False, "truncated archive"),
        # Issue 40: one decoding of every name: a tar name is strict UTF-8 (a latin-1 byte is refused, not
        # decoded another way by each reader), without a control character or backslash, in NFC; a name is
        # shown escaped (\xNN), the same by both, and a valid one as it is.
        Verdict("tar_directory_entry_utf8", pax_tar(M, raw_entry(f"{NAME}/caf\u00e9/".encode(), b"5")), True),
        Verdict("tar_directory_entry_latin1", pax_tar(M, raw_entry(f"{NAME}/caf\xe9/".encode("latin-1"), b"5")),
                False, "caf\\xe9/' is not valid UTF-8"),
        Verdict("tar_directory_entry_backslash", pax_tar(M, raw_entry(f"{NAME}/a\\b/".encode(), b"5")),
                False, "a\\x5cb"),
        Verdict("tar_directory_entry_nfd", pax_tar(M, raw_entry(f"{NAME}/cafe\u0301/".encode(), b"5")),
                False, "directory entry path"),
        Verdict("tar_directory_entry_escape", pax_tar(M, raw_entry(f"{NAME}/\x1b[2J/".encode(), b"5")),
                False, "\\x1b[2J"),
        Verdict("tar_directory_entry_c1_control", pax_tar(M, raw_entry(f"{NAME}/a\x85/".encode(), b"5")),
                False, "a\\xc2\\x85"),
        Verdict("tar_directory_entry_overlong_slash", pax_tar(M, raw_entry(NAME.encode() + b"/a\xc0\xafb/", b"5")),
                False, "a\\xc0\\xafb/' is not valid UTF-8"),
        Verdict("tar_file_entry_latin1", pax_tar(M, raw_entry(f"{NAME}/caf\xe9".encode("latin-1"), b"0")),
                False, "caf\\xe9' is not valid UTF-8"),
        Verdict("tar_file_entry_utf8_unlisted", pax_tar(M, raw_entry(f"{NAME}/caf\u00e9".encode(), b"0")),
                False, f"{NAME}/caf\u00e9: "),
        Verdict("tar_file_entry_newline", pax_tar(M, raw_entry(f"{NAME}/x\nerror: forged".encode(), b"0")),
                False, "x\\x0aerror: forged"),
        Verdict("tar_pax_path_nfd", pax_tar(M, lambda n: pax_header(
            pax_record(b"path", f"{n}/cafe\u0301_{'x' * 120}".encode())) + EMPTY_FILE), False, "entry path"),
        Verdict("tar_pax_path_backslash", pax_tar(M, lambda n: pax_header(
            pax_record(b"path", f"{n}/a\\{'x' * 120}".encode())) + EMPTY_FILE), False, "a\\x5cxxx"),
        Verdict("unlisted_file_named_with_an_escape", lambda b: (b / "\x1b[31mred").write_bytes(b"x"), False,
                "\\x1b[31mred: "),
        Verdict("unlisted_file_named_in_latin1", lambda b: open(os.fsencode(b) + b"/caf\xe9", "wb").close(),
                False, "caf\\xe9: "),
        Verdict("unlisted_file_named_nfd", lambda b: (b / "cafe\u0301").write_bytes(b"x"), False,
                "cafe\u0301: "),
        Verdict("manifest_path_with_an_escape", manifest_edit(set_field("files", 0, "path", value="sim\x1b.wrp")),
                False, "sim\\x1b.wrp"),
        Verdict("golden_name_with_an_escape", golden_edit(set_field("golden", 0, "name", value="\x1b[2Jx")),
                False, "\\x1b[2Jx"),
        Verdict("manifest_path_nfd", manifest_edit(set_field("files", 0, "path", value="cafe\u0301.wrp")),
                False, "plain relative path"),
        Verdict("manifest_path_c1_control", manifest_edit(set_field("files", 0, "path", value="sim\x9b.wrp")),
                False, "sim\\xc2\\x9b.wrp"),
        # CUDA manifests: PTX and SASS records.
        Verdict("cuda_good", lambda b: None, True, cuda=True),
        Verdict(
            "cuda_ptx_without_nvrtc_version",
            manifest_edit(without("modules", 0, "ptx", "nvrtc_version")),
            False,
            M,
            cuda=True,
        ),
        Verdict(
            "cuda_ptx_unknown_field",
            manifest_edit(set_field("modules", 0, "ptx", "sm", value=90)),
            False,
            M,
            cuda=True,
        ),
        Verdict(
            "cuda_sass_entry_unknown_field",
            manifest_edit(set_field("modules", 0, "sass", 0, "x", value=1)),
            False,
            M,
            cuda=True,
        ),
        Verdict(
            "cuda_sass_size_string",
            manifest_edit(set_field("modules", 0, "sass", 0, "size", value="1")),
            False,
            M,
            cuda=True,
        ),
        Verdict(
            "cuda_ptx_min_driver_float",
            manifest_edit(set_field("ptx_min_driver", value=13.0)),
            False,
            M,
            cuda=True,
        ),
        Verdict("cuda_good_loaded", lambda b: None, True, cuda=True, gpu_load=True),
        # C++ refuses it at verify now (runtime/internal/wrp_check.cc), without a GPU.
        Verdict("cuda_wrp_truncated_and_rehashed", rewrite_listed(CUDA_WRP, lambda d: d[: len(d) // 2]),
                False, CUDA_WRP, cuda=True),
        Verdict("cuda_binding_size_differs_from_the_wrp", grow_binding_and_its_golden(0, 16),
                False, M, cuda=True, gpu_load=True),
        # Issue 40: each module's fatbin and the image a device view hands out, as a load would take them, in
        # bundles whose every digest an attacker redid. Python's load (the device view for an H100) and C++
        # verify judge them without a GPU.
        Verdict("cuda_fatbin_truncated", fatbin_rewrite(lambda d, i: d.__delitem__(slice(len(d) // 2, None))),
                False, CUDA_MODULE_BINARY, cuda=True),
        Verdict("cuda_fatbin_size_field_past_its_end", fatbin_rewrite(lambda d, i: struct.pack_into(
            "<Q", d, 8, struct.unpack_from("<Q", d, 8)[0] + 4096)), False, CUDA_MODULE_BINARY, cuda=True),
        Verdict("cuda_fatbin_entry_past_its_container", fatbin_rewrite(lambda d, i: struct.pack_into(
            "<Q", d, 16 + 8, 1 << 40)), False, CUDA_MODULE_BINARY, cuda=True),
        Verdict("cuda_fatbin_bad_magic", fatbin_rewrite(lambda d, i: struct.pack_into("<I", d, 0, 0xBA55ED51)),
                False, CUDA_MODULE_BINARY, cuda=True),
        Verdict("cuda_sass_image_flipped_byte", fatbin_rewrite(flip_in_image(VIEW_SM)),
                False, f"{CUDA_MODULE_BINARY}: its {VIEW_SM} image", cuda=True),
        Verdict("cuda_sass_image_of_another_sm_flipped_byte", fatbin_rewrite(flip_in_image("sm_120")),
                False, f"{CUDA_MODULE_BINARY}: its sm_120 image", cuda=True),
        Verdict("cuda_sass_image_not_elf_all_rehashed",
                fatbin_rewrite(in_image(VIEW_SM, lambda n: 0, "<I", 0), rehash_images=True),
                False, f"{CUDA_MODULE_BINARY}: its {VIEW_SM} image", cuda=True),
        Verdict("cuda_sass_image_sections_past_its_end_all_rehashed",
                fatbin_rewrite(in_image(VIEW_SM, lambda n: 40, "<Q", 1 << 40), rehash_images=True),
                False, f"{CUDA_MODULE_BINARY}: its {VIEW_SM} image", cuda=True),
        Verdict("cuda_sass_image_of_another_machine_all_rehashed",
                fatbin_rewrite(in_image(VIEW_SM, lambda n: 18, "<H", 62), rehash_images=True),
                False, f"{CUDA_MODULE_BINARY}: its {VIEW_SM} image", cuda=True),
        # What no reader can tell without a hash pinned outside the bundle (docs/security.md): a changed
        # instruction, every digest redone, is a well-formed bundle.
        Verdict("cuda_sass_image_flipped_byte_all_rehashed",
                fatbin_rewrite(flip_in_image(VIEW_SM), rehash_images=True), True, cuda=True),
        Verdict("tar_cuda_fatbin_truncated", then(fatbin_rewrite(
            lambda d, i: d.__delitem__(slice(len(d) // 2, None))), as_tar()), False, CUDA_MODULE_BINARY, cuda=True),
        # The other side of each record-size bound (WRP_CASES holds each op one byte short): a record of
        # exactly the table's size, zero-filled where zeros are a record Warp accepts, is loadable in both
        # readers and loads through Warp.
        *[
            Verdict(f"wrp_{name.lower()}_record_of_its_size", wrp_rewrite(appended_op(
                OpType[name], bytes(RECORD_BYTES[name] - 8))), True)
            for name in ("MEMCPY_H2D", "MEMCPY_D2D", "MEMSET", "ALLOC", "RUNLENGTH_ENCODE", "BSR_FROM_TRIPLETS",
                         "BSR_TRANSPOSE")
        ],
        # The other side of the mesh-record rules (WRP_CASES): a well-formed mesh record, the SAH and median
        # trees the CPU builds with any leaf size, loads through Warp.
        Verdict("wrp_mesh_record_well_formed", wrp_rewrite(added_mesh()), True),
        Verdict("wrp_mesh_record_median_leaf_1", wrp_rewrite(added_mesh(bvh_constructor=1, bvh_leaf_size=1)), True),
        Verdict("tar_wrp_op_count_huge", then(wrp_patch(put("<I", "OPERATIONS", 0, 0xFFFFFFFF)), as_tar()),
                False, WRP),
        Verdict("cuda_module_hash_differs_from_the_wrp",
                manifest_edit(set_field("modules", 0, "hash", value="cd" * 32)), False, M, cuda=True, gpu_load=True),
    ]  # fmt: skip
    return cases


PARITY_CASES = _parity_cases()
