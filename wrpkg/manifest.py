"""manifest.json and golden.json of a bundle: the records, their canonical JSON bytes, and parsing
(in the strict JSON profile of wrpkg/strict_json.py, with the field checks walked from wrpkg/schemas by
wrpkg/schema_fields.py).

The bundle's content hash is the sha256 of manifest.json's exact bytes. manifest.json
describes only what is deployed (the .wrp, module binaries and sources, bindings, toolchain)
and lists those files with size and sha256, so hashing it covers them all. What identifies
the build rather than the bytes (the target's name and label) and what only tests need (golden
outputs, the device that produced them, tolerances) live in golden.json, the test manifest:
it names the content hash it belongs to and lists the golden files with their sha256. So two
targets that deploy the same bytes (a retargeted and a GPU capture of one program) share a
content hash although their golden values differ. capture.json (the capture machine) is
hashed by neither. The JSON form is canonical (sorted keys, one-space indent, ASCII, trailing
newline) so the same content always gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NoReturn

from wrpkg.archs import split_arch
from wrpkg.errors import VerifyError
from wrpkg.names import shown
from wrpkg.schema_fields import SCHEMA_DIR, format_predicates, schema_fields, schema_name
from wrpkg.strict_json import edit_fix, is_safe_relpath, is_size, strict_json_loads

# /3 added each binding's array layout (dtype, dtype_bytes, shape, strides, offset); /4 the
# chunk digests (chunk_bytes, each file's chunk_sha256).
MANIFEST_SCHEMA = schema_name("manifest.schema.json")  # "rules_warp.manifest/4"
# SHA-256 is sequential within a file: a large file is also recorded as the digests of its
# consecutive pieces of this size. The C++ runtime checks them on several cores at once (a .wrp
# of thousands of launches is megabytes, and its hash would otherwise be a third of a load);
# wrpkg.reader.bundle copies only the chunk it patches, not the whole .wrp, to hash what it read.
CHUNK_BYTES = 1 << 18
MANIFEST_NAME = "manifest.json"
GOLDEN_SCHEMA = schema_name("golden.schema.json")  # "rules_warp.golden/1"
GOLDEN_NAME = "golden.json"
# Provenance of the capture machine (device name, driver): in the bundle, never hashed.
CAPTURE_INFO_NAME = "capture.json"
# Not listed in manifest.json's "files": the golden files are listed in golden.json instead.
UNHASHED_FILES = frozenset({MANIFEST_NAME, CAPTURE_INFO_NAME, GOLDEN_NAME})
# manifest.json's fields that are not part of the content hash; golden.json carries them.
_TEST_FIELDS = ("name", "label", "golden", "golden_device")

DIRECTIONS = ("in", "out", "inout")


@dataclass
class SassEntry:
    arch: str  # "sm_90"
    size: int
    sha256: str


@dataclass
class PtxEntry:
    arch: str  # "compute_75"
    size: int
    sha256: str
    nvrtc_version: str | None


@dataclass
class ModuleEntry:
    name: str
    hash: str
    binary: str  # path inside the bundle, e.g. "sim_modules/wp_sim_24c59f5.sm90.cubin"
    binary_kind: str  # "cpu_object" | "cubin" | "ptx"
    source: str | None  # path of the retained .cu (CUDA), else None
    sass: list[SassEntry] = field(default_factory=list)
    ptx: PtxEntry | None = None
    # Why the module has no PTX and no source, when that is by nature: a MathDx module (wrpkg.mathdx)
    # is linked per SM. Written only when set, so other manifests keep their bytes.
    no_ptx: str | None = None


@dataclass
class BindingEntry:
    name: str
    direction: str  # "in" | "out" | "inout"
    bytes: int  # the region: the whole base allocation of the named array
    region: int
    # The named array inside its region (wrpkg.capture.array_layout): Warp's type name and
    # its size, shape, byte strides and the byte offset of element 0.
    dtype: str
    dtype_bytes: int
    shape: list[int]
    strides: list[int]
    offset: int

    def extent(self) -> int:
        """Bytes from the region's start to just past the array's last element (`offset` for
        an empty array). Strides are >= 0: Warp has no negative strides."""
        if any(n == 0 for n in self.shape):
            return self.offset
        last = sum((n - 1) * stride for n, stride in zip(self.shape, self.strides, strict=True))
        return self.offset + last + self.dtype_bytes


def packed_strides(shape: list[int], dtype_bytes: int) -> list[int]:
    """Row-major byte strides with no gaps: the common layout, which `wrpkg inspect` shows without strides."""
    strides = []
    step = dtype_bytes
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return strides[::-1]


def binding_layout(record: dict) -> dict:
    """A binding's array layout as `wrpkg inspect` shows it: dtype, shape, strides, offset, and
    whether it is contiguous (None when `record`, a manifest or capture record, does not say)."""
    layout = {key: record.get(key) for key in ("dtype", "shape", "strides", "offset")}
    try:
        layout["contiguous"] = record["strides"] == packed_strides(record["shape"], record["dtype_bytes"])
    except (KeyError, TypeError):
        layout["contiguous"] = None
    return layout


def binding_layout_problem(b: BindingEntry) -> str | None:
    """What is wrong with a binding's layout, or None: the array must fit in its region."""
    if not isinstance(b.dtype, str) or not b.dtype:
        return f"dtype {b.dtype!r} is not a type name"
    if not is_size(b.dtype_bytes) or b.dtype_bytes == 0:
        return f"dtype_bytes {b.dtype_bytes!r} is not a positive integer"
    for field_name in ("shape", "strides"):
        value = getattr(b, field_name)
        if not isinstance(value, list) or not value or not all(is_size(n) for n in value):
            return f"{field_name} {value!r} is not a non-empty list of integers >= 0"
    if len(b.shape) != len(b.strides):
        return f"shape {b.shape} and strides {b.strides} differ in length"
    if not is_size(b.offset):
        return f"offset {b.offset!r} is not an integer >= 0"
    if b.extent() > b.bytes:
        return (
            f"its {b.dtype} array of shape {b.shape} (strides {b.strides}, offset {b.offset}) "
            f"reaches byte {b.extent()}, past its region's {b.bytes} bytes"
        )
    return None


@dataclass
class GoldenEntry:
    name: str
    file: str  # "golden/<name>.bin"
    bytes: int
    # float32 within atol + rtol * |golden| (wrpkg/golden.py); both None = bit-exact.
    atol: float | None
    rtol: float | None
    sha256: str = ""


@dataclass
class FileEntry:
    path: str
    size: int
    sha256: str
    # sha256 of each consecutive chunk_bytes piece; empty when the file is one piece or less.
    chunk_sha256: list[str] = field(default_factory=list)


@dataclass
class Toolchain:
    warp: str
    nvrtc: str | None = None  # the NVRTC of the SASS (Warp's own, 13.4.92)
    nvfatbin: str | None = None
    # The NVRTC of the PTX (13.0.88: older than the SASS one, so that older drivers can
    # JIT it); None when the bundle has no compiled PTX.
    nvrtc_ptx: str | None = None


@dataclass
class Manifest:
    """A bundle's manifest.json, with golden.json's entries (docs/bundles.md).

    Attributes:
      name: the bundle's name (golden.json).
      label: the Bazel target that built it (golden.json).
      wrp: the canonical `.wrp`'s path in the bundle.
      warp_version: the Warp release the bundle was captured with.
      format_version: the `.wrp` format version.
      device: "cpu" or "cuda".
      modules: a ModuleEntry per module: its SASS, PTX and source files.
      bindings: a BindingEntry per bound name: direction, region, dtype, shape, strides, offset.
      golden: a GoldenEntry per golden output (golden.json).
      files: a FileEntry (path, size, sha256, chunk sha256s) per deployed file.
      toolchain: the Warp, NVRTC and nvFatbin versions that made it.
      ptx_min_driver: the oldest CUDA driver that JITs its PTX; None without PTX.
      chunk_bytes: the chunk size of the files' chunk sha256s.
      golden_device: the device whose replay made the golden outputs (golden.json).
      schema: manifest.json's schema name.
    """

    # name, label, golden and golden_device are read from and written to golden.json (the
    # test manifest); the rest is manifest.json, whose bytes are the content hash.
    name: str
    label: str
    wrp: str
    warp_version: str
    format_version: int
    device: str  # "cpu" | "cuda"
    modules: list[ModuleEntry]
    bindings: list[BindingEntry]
    golden: list[GoldenEntry]
    files: list[FileEntry]
    toolchain: Toolchain
    ptx_min_driver: str | None = None
    chunk_bytes: int = CHUNK_BYTES
    # The device whose replay produced the golden outputs: "cpu" for a retargeted CUDA
    # capture (wrpkg/capture/retarget.py), else the capture device.
    golden_device: str | None = None
    schema: str = MANIFEST_SCHEMA

    # --- queries used by verify and load ---

    def sass_archs(self) -> list[str]:
        """SMs for which every module has SASS (a bundle is only as good as its worst module)."""
        if not self.modules:
            return []
        common = set.intersection(*({s.arch for s in m.sass} for m in self.modules))
        return sorted(common, key=_arch_number)

    def ptx_archs(self) -> list[str]:
        if not self.modules or any(m.ptx is None for m in self.modules):
            return []
        return sorted({m.ptx.arch for m in self.modules}, key=_arch_number)

    def has_source_fallback(self) -> bool:
        return bool(self.modules) and all(m.source is not None for m in self.modules)


def _arch_number(arch: str) -> int:
    parsed = split_arch(arch)
    return parsed.sm if parsed else 0


def chunk_count(size: int, chunk_bytes: int) -> int:
    """How many chunk digests a file of `size` bytes carries (none when it is one piece)."""
    return 0 if size <= chunk_bytes else -(-size // chunk_bytes)


def file_entry(root: str | os.PathLike, relpath: str, chunk_bytes: int = CHUNK_BYTES) -> FileEntry:
    data = (Path(root) / relpath).read_bytes()
    view = memoryview(data)
    chunks = []
    if chunk_count(len(data), chunk_bytes):
        chunks = [
            hashlib.sha256(view[at : at + chunk_bytes]).hexdigest() for at in range(0, len(data), chunk_bytes)
        ]
    return FileEntry(
        path=relpath, size=len(data), sha256=hashlib.sha256(data).hexdigest(), chunk_sha256=chunks
    )


def to_dict(manifest: Manifest) -> dict:
    """manifest.json's fields: the deployable part."""
    data = asdict(manifest)
    for key in _TEST_FIELDS:
        del data[key]
    for module in data["modules"]:
        if module["no_ptx"] is None:
            del module["no_ptx"]
    return data


def golden_to_dict(manifest: Manifest, content_hash: str) -> dict:
    """golden.json's fields: the target's identity and the golden outputs of `content_hash`."""
    return {
        "schema": GOLDEN_SCHEMA,
        "name": manifest.name,
        "label": manifest.label,
        "content_hash": content_hash,
        "golden_device": manifest.golden_device,
        "golden": [asdict(g) for g in manifest.golden],
    }


def _canonical_json(data: dict) -> bytes:
    text = json.dumps(data, sort_keys=True, indent=1, ensure_ascii=True, allow_nan=False)
    return (text + "\n").encode("ascii")


def to_json_bytes(manifest: Manifest) -> bytes:
    """manifest.json's canonical bytes: these are what the content hash is taken over."""
    return _canonical_json(to_dict(manifest))


def golden_to_json_bytes(manifest: Manifest, content_hash: str) -> bytes:
    """golden.json's canonical bytes."""
    return _canonical_json(golden_to_dict(manifest, content_hash))


def content_hash_of_bytes(manifest_bytes: bytes) -> str:
    return hashlib.sha256(manifest_bytes).hexdigest()


def _require(cond: bool, path, what: str) -> None:
    if not cond:
        raise VerifyError(
            f"{path}: not a valid {MANIFEST_SCHEMA} manifest: {what}",
            fix="rebuild the bundle's wrp_artifact target; do not edit manifest.json by hand",
        )


# capture.json (provenance, outside the content hash): a capture's is a few kilobytes. With its schema
# (capture.schema.json: no field but those wrpkg.capture writes) MAX_CAPTURE_INFO_BYTES
# (schemas/bundle_limits.json) bounds what can ride along in it.
CAPTURE_INFO_SCHEMA = schema_name("capture.schema.json")  # "rules_warp.capture/1"


# The one declaration of the three files' fields (every field, its type, nothing else): wrpkg/schemas, walked
# by wrpkg.schema_fields here and by runtime/internal/schema_fields.cc in C++, with the same messages. What is
# left in code below is how fields relate (a path listed in "files", names listed once, layouts, chunk counts).
_SCHEMA_FILES = {
    MANIFEST_NAME: "manifest.schema.json",
    GOLDEN_NAME: "golden.schema.json",
    CAPTURE_INFO_NAME: "capture.schema.json",
}
_validators: dict = {}


def _check_schema(raw: dict, path, file_name: str) -> None:
    """`raw`'s fields against the file's schema: the walker (wrpkg.schema_fields), then fastjsonschema, a
    standard validator's reading of the same schema, as a backstop (runtime/internal/manifest.cc: valijson)."""
    schema_fields(_SCHEMA_FILES[file_name], file_name).check(raw, path)
    # Imported and compiled on first use (24 ms and 21 ms): most wrpkg processes never read a manifest.
    import fastjsonschema  # noqa: PLC0415

    validate = _validators.get(file_name)
    if validate is None:
        schema = json.loads((SCHEMA_DIR / _SCHEMA_FILES[file_name]).read_bytes())
        validate = _validators[file_name] = fastjsonschema.compile(schema, formats=format_predicates())
    try:
        validate(raw)
    except fastjsonschema.JsonSchemaValueException as exc:
        # exc.name is "data.files[0].size": the field as both readers name it, after "data".
        field_name = exc.name[len("data.") :] if exc.name.startswith("data.") else "(top level)"
        what = exc.message[len(exc.name) :].strip()
        raise VerifyError(
            f'{path}: field "{field_name}": {what} (wrpkg/schemas/{_SCHEMA_FILES[file_name]})',
            fix=edit_fix(file_name),
        ) from exc


def _check_manifest_fields(raw: dict, path) -> None:
    """manifest.json's fields (its schema), then what relates them: every path a module names listed in
    "files" (so it is verified before use), no unhashed file listed, module hashes and binding names
    listed once, and names of one region agreeing on its size (runtime/internal/manifest.cc's Read)."""
    _check_schema(raw, path, MANIFEST_NAME)
    fix = edit_fix(MANIFEST_NAME)

    def fail(field_name: str, what: str) -> NoReturn:
        raise VerifyError(f'{path}: field "{field_name}": {what}', fix=fix)

    listed = set()
    for i, item in enumerate(raw["files"]):
        if item["path"] in UNHASHED_FILES:
            fail(f"files[{i}].path", f"{item['path']} is not a deployed file: manifest.json cannot list it")
        listed.add(item["path"])

    def require_listed(rel: str, field_name: str) -> None:
        if rel not in listed:
            fail(field_name, f'"{shown(rel)}" is not listed in "files", so it cannot be verified')

    require_listed(raw["wrp"], "wrp")
    module_hashes = set()
    for i, item in enumerate(raw["modules"]):
        if item["hash"] in module_hashes:
            fail(f"modules[{i}].hash", f'module "{shown(item["hash"])}" is listed twice')
        module_hashes.add(item["hash"])
        require_listed(item["binary"], f"modules[{i}].binary")
        if item["source"] is not None:
            require_listed(item["source"], f"modules[{i}].source")
    names = set()
    region_bytes: dict = {}
    for i, item in enumerate(raw["bindings"]):
        name, size, region = item["name"], item["bytes"], item["region"]
        if name in names:
            fail(f"bindings[{i}].name", f'binding "{shown(name)}" is listed twice')
        names.add(name)
        # Names of one region alias one allocation, so they must agree on its capacity.
        if region_bytes.setdefault(region, (name, size))[1] != size:
            other, other_size = region_bytes[region]
            fail(
                "bindings",
                f'"{shown(other)}" and "{shown(name)}" share region {region} but record '
                f"different sizes ({other_size} and {size} bytes)",
            )


def _json_object(data: bytes, path, schema: str, file_name: str) -> dict:
    """`data` parsed (strict_json_loads) as one JSON object whose "schema" is `schema`; a
    VerifyError naming `path` otherwise (both manifests are read this way)."""
    fix = edit_fix(file_name)
    raw = strict_json_loads(data, path, file_name)
    kind = {MANIFEST_SCHEMA: "manifest", CAPTURE_INFO_SCHEMA: "capture record"}.get(schema, "test manifest")
    if not isinstance(raw, dict):
        raise VerifyError(f"{path}: not a valid {schema} {kind}: the top level is not an object", fix=fix)
    if raw.get("schema") != schema:
        raise VerifyError(
            f"{path}: not a valid {schema} {kind}: schema is {json.dumps(raw.get('schema'))[:80]}", fix=fix
        )
    return raw


def check_capture_info(data: bytes | bytearray, path) -> None:
    """capture.json's bytes (a bundle's provenance, outside the content hash and never handed to Warp):
    strict JSON, one object of schema rules_warp.capture/1 that matches wrpkg/schemas/capture.schema.json,
    so it holds nothing but what wrpkg.capture writes. A VerifyError naming `path` otherwise;
    runtime/internal/manifest.cc's CheckCaptureInfo."""
    raw = _json_object(data, path, CAPTURE_INFO_SCHEMA, CAPTURE_INFO_NAME)
    _check_schema(raw, path, CAPTURE_INFO_NAME)


def from_json_bytes(
    data: bytes, path: str | os.PathLike = MANIFEST_NAME, *, canonical_check: bool = True
) -> Manifest:
    """Parses and shape-checks a manifest; any deviation is a VerifyError naming the file.
    `canonical_check=False` skips re-serializing it, for bytes already matched against the
    bundle's content hash (so they are the bundler's own)."""
    raw = _json_object(data, path, MANIFEST_SCHEMA, MANIFEST_NAME)
    _check_manifest_fields(raw, path)
    try:
        modules = []
        for m in raw["modules"]:
            ptx = m["ptx"]
            modules.append(
                ModuleEntry(
                    name=m["name"],
                    hash=m["hash"],
                    binary=m["binary"],
                    binary_kind=m["binary_kind"],
                    source=m["source"],
                    sass=[SassEntry(**s) for s in m["sass"]],
                    ptx=None if ptx is None else PtxEntry(**ptx),
                    no_ptx=m.get("no_ptx"),
                )
            )
        manifest = Manifest(
            name="",
            label="",
            wrp=raw["wrp"],
            warp_version=raw["warp_version"],
            format_version=raw["format_version"],
            device=raw["device"],
            modules=modules,
            bindings=[BindingEntry(**b) for b in raw["bindings"]],
            golden=[],
            files=[FileEntry(**f) for f in raw["files"]],
            toolchain=Toolchain(**raw["toolchain"]),
            ptx_min_driver=raw["ptx_min_driver"],
            chunk_bytes=raw["chunk_bytes"],
            golden_device=None,
            schema=raw["schema"],
        )
    except (KeyError, TypeError) as exc:
        raise VerifyError(
            f"{path}: not a valid {MANIFEST_SCHEMA} manifest: missing or unexpected field {exc}",
            fix="rebuild the bundle's wrp_artifact target; do not edit manifest.json by hand",
        ) from exc
    # Fields, types, enums and unknown keys were checked (the schema walk, then _check_manifest_fields): what
    # is left is how fields relate.
    for b in manifest.bindings:
        problem = binding_layout_problem(b)
        _require(problem is None, path, f"binding {b.name!r}: {problem}")
    seen_paths = set()
    for f in manifest.files:
        _require(f.path not in seen_paths, path, f"file path '{shown(f.path)}' is listed twice")
        seen_paths.add(f.path)
        _require(
            isinstance(f.chunk_sha256, list)
            and len(f.chunk_sha256) == chunk_count(f.size, manifest.chunk_bytes)
            and all(isinstance(d, str) for d in f.chunk_sha256),
            path,
            f"file {f.path!r} of {f.size} bytes has chunk digests {str(f.chunk_sha256)[:80]}, expected "
            f"{chunk_count(f.size, manifest.chunk_bytes)} of {manifest.chunk_bytes} bytes each",
        )
    # Re-serializing must give the same bytes: catches hand edits such as reordered keys,
    # added fields or changed whitespace, which would otherwise hash differently unnoticed.
    if canonical_check:
        _require(to_json_bytes(manifest) == data, path, "its bytes are not in canonical form")
    return manifest


def _require_golden(cond: bool, path, what: str) -> None:
    if not cond:
        raise VerifyError(
            f"{path}: not a valid {GOLDEN_SCHEMA} test manifest: {what}",
            fix="rebuild the bundle's wrp_artifact target; do not edit golden.json by hand",
        )


def attach_golden(
    manifest: Manifest,
    data: bytes,
    content_hash: str,
    path: str | os.PathLike = GOLDEN_NAME,
) -> Manifest:
    """Parses golden.json into `manifest` (name, label, golden outputs). It must belong to the
    manifest whose bytes hash to `content_hash`, match wrpkg/schemas/golden.schema.json, and list
    each golden file once under a safe path that manifest.json does not list; any deviation is a
    VerifyError naming the file. Unlike manifest.json it is judged by its content, not its bytes
    (no canonical form): it is outside the content hash, so no digest depends on its spelling, and
    the C++ runtime could not re-spell its floats as Python does. The golden files' bytes are
    checked by wrpkg.reader.validity (wrpkg.Bundle.open)."""
    raw = _json_object(data, path, GOLDEN_SCHEMA, GOLDEN_NAME)
    _check_schema(raw, path, GOLDEN_NAME)
    try:
        name, label, owner = raw["name"], raw["label"], raw["content_hash"]
        golden_device = raw["golden_device"]
        golden = [GoldenEntry(**g) for g in raw["golden"]]
    except (KeyError, TypeError) as exc:
        raise VerifyError(
            f"{path}: not a valid {GOLDEN_SCHEMA} test manifest: missing or unexpected field {exc}",
            fix="rebuild the bundle's wrp_artifact target; do not edit golden.json by hand",
        ) from exc
    _require_golden(
        owner == content_hash,
        path,
        f"it belongs to content hash {owner!r}, but manifest.json hashes to {content_hash}",
    )
    # The fields' types are golden.schema.json's (_check_schema); what is left is how they relate.
    _require_golden(is_safe_relpath(name) and "/" not in name, path, f"name {name!r}")
    listed = {f.path for f in manifest.files} | UNHASHED_FILES
    names = {b.name: b for b in manifest.bindings}
    for g in golden:
        tol = (g.atol, g.rtol)
        _require_golden(
            tol == (None, None)
            or all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x < float("inf") for x in tol
            ),
            path,
            f"golden {g.name!r}: atol and rtol must both be null or both finite numbers >= 0",
        )
        _require_golden(g.file not in listed, path, f"golden file '{shown(g.file)}' is listed twice")
        listed.add(g.file)
        _require_golden(g.name in names, path, f"golden '{shown(g.name)}' is not a binding")
        _require_golden(
            names[g.name].direction != "in",
            path,
            f"golden '{shown(g.name)}' is an input binding, not an output",
        )
        _require_golden(
            g.bytes == names[g.name].bytes,
            path,
            f"golden {g.name!r} has {g.bytes} bytes, but binding {g.name!r} holds {names[g.name].bytes}",
        )
    manifest.name, manifest.label, manifest.golden, manifest.golden_device = (
        name,
        label,
        golden,
        golden_device,
    )
    return manifest
