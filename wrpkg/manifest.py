"""manifest.json and golden.json of a bundle: the records, their canonical JSON bytes, and parsing
(in the strict JSON profile, with the field checks of wrpkg/strict_json.py).

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

from wrpkg.archs import split_arch
from wrpkg.errors import VerifyError
from wrpkg.names import shown
from wrpkg.strict_json import (
    FieldChecks,
    edit_fix,
    is_safe_relpath,
    is_size,
    json_type,
    strict_json_loads,
)

# /3 added each binding's array layout (dtype, dtype_bytes, shape, strides, offset); /4 the
# chunk digests (chunk_bytes, each file's chunk_sha256).
MANIFEST_SCHEMA = "rules_warp.manifest/4"
# SHA-256 is sequential within a file: a large file is also recorded as the digests of its
# consecutive pieces of this size. The C++ runtime checks them on several cores at once (a .wrp
# of thousands of launches is megabytes, and its hash would otherwise be a third of a load);
# wrpkg.reader.bundle copies only the chunk it patches, not the whole .wrp, to hash what it read.
CHUNK_BYTES = 1 << 18
MANIFEST_NAME = "manifest.json"
GOLDEN_SCHEMA = "rules_warp.golden/1"
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
# (capture.schema.json: no field but those wrpkg.capture writes) this bounds what can ride along in it.
MAX_CAPTURE_INFO_BYTES = 1 << 20
CAPTURE_INFO_SCHEMA = "rules_warp.capture/1"


# The one declaration of both files' structure (every field, its type, nothing else), which
# runtime/internal/manifest.cc enforces too (valijson, from the same files). The field checks here and
# there run first, for their messages; the schema then refuses whatever they do not name.
SCHEMA_DIR = Path(__file__).with_name("schemas")
_SCHEMA_FILES = {
    MANIFEST_NAME: "manifest.schema.json",
    GOLDEN_NAME: "golden.schema.json",
    CAPTURE_INFO_NAME: "capture.schema.json",
}
_validators: dict = {}


def _check_schema(raw: dict, path, file_name: str) -> None:
    # Imported and compiled on first use (24 ms and 21 ms): most wrpkg processes never read a manifest.
    import fastjsonschema  # noqa: PLC0415

    validate = _validators.get(file_name)
    if validate is None:
        schema = json.loads((SCHEMA_DIR / _SCHEMA_FILES[file_name]).read_bytes())
        validate = _validators[file_name] = fastjsonschema.compile(schema)
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


def _is_cuda_version(text: str) -> bool:
    """ "13.4": the form runtime/internal/manifest.cc's DriverVersion reads (1 to 3 digits, a dot, 1 or 2 digits)."""
    major, dot, minor = text.partition(".")
    return (
        bool(dot)
        and 1 <= len(major) <= 3
        and 1 <= len(minor) <= 2
        and (major + minor).isascii()
        and (major + minor).isdigit()
    )


def _check_manifest_fields(raw: dict, path) -> None:
    """Every field of manifest.json of the type runtime/internal/manifest.cc reads, every path plain and
    relative, and every path a module names listed in "files" (so it is verified before use)."""
    f = FieldChecks(path, MANIFEST_NAME)
    f.relpath(raw, "wrp", "")
    f.string(raw, "warp_version", "")
    f.expect(f.get(raw, "format_version", ""), int, "format_version")
    f.string(raw, "device", "")
    f.size(raw, "chunk_bytes", "")
    listed = set()
    for item, p in f.objects(raw, "files", ""):
        rel = f.relpath(item, "path", p)
        f.size(item, "size", p)
        f.sha256(f.get(item, "sha256", p), p + "sha256")
        chunks = f.expect(f.get(item, "chunk_sha256", p), list, p + "chunk_sha256")
        for i, digest in enumerate(chunks):
            f.sha256(digest, f"{p}chunk_sha256[{i}]")
        if rel in UNHASHED_FILES:
            f.fail(p + "path", f"{rel} is not a deployed file: manifest.json cannot list it")
        listed.add(rel)

    def require_listed(rel: str, field_name: str) -> None:
        if rel not in listed:
            f.fail(field_name, f'"{shown(rel)}" is not listed in "files", so it cannot be verified')

    require_listed(raw["wrp"], "wrp")
    module_hashes = set()
    for item, p in f.objects(raw, "modules", ""):
        f.string(item, "name", p)
        if f.string(item, "hash", p) in module_hashes:
            f.fail(p + "hash", f'module "{shown(item["hash"])}" is listed twice')
        module_hashes.add(item["hash"])
        require_listed(f.relpath(item, "binary", p), p + "binary")
        f.string(item, "binary_kind", p)
        if "no_ptx" in item:
            f.string(item, "no_ptx", p)
        source = f.relpath(item, "source", p, nullable=True)
        if source is not None:
            require_listed(source, p + "source")
        for sass, sp in f.objects(item, "sass", p):
            f.string(sass, "arch", sp)
            f.size(sass, "size", sp)
            f.sha256(f.get(sass, "sha256", sp), sp + "sha256")
        ptx = f.expect(f.get(item, "ptx", p), dict, p + "ptx", nullable=True)
        if ptx is not None:
            pp = p + "ptx."
            f.string(ptx, "arch", pp)
            f.size(ptx, "size", pp)
            f.sha256(f.get(ptx, "sha256", pp), pp + "sha256")
            f.string(ptx, "nvrtc_version", pp, nullable=True)
    names = set()
    region_bytes: dict = {}
    for item, p in f.objects(raw, "bindings", ""):
        name = f.string(item, "name", p)
        if name in names:
            f.fail(p + "name", f'binding "{shown(name)}" is listed twice')
        names.add(name)
        f.string(item, "direction", p)
        size = f.size(item, "bytes", p)
        region = f.get(item, "region", p)
        if not isinstance(region, (int, str)) or isinstance(region, bool):
            f.fail(p + "region", f"expected an integer or a string, got {json_type(region)}")
        # Names of one region alias one allocation, so they must agree on its capacity.
        if region_bytes.setdefault(region, (name, size))[1] != size:
            other, other_size = region_bytes[region]
            f.fail(
                "bindings",
                f'"{shown(other)}" and "{shown(name)}" share region {region} but record '
                f"different sizes ({other_size} and {size} bytes)",
            )
        f.string(item, "dtype", p)
        f.size(item, "dtype_bytes", p)
        for key in ("shape", "strides"):
            dims = f.expect(f.get(item, key, p), list, p + key)
            if not dims or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in dims):
                f.fail(p + key, "expected a non-empty array of non-negative integers")
        f.size(item, "offset", p)
    toolchain = f.expect(f.get(raw, "toolchain", ""), dict, "toolchain")
    f.string(toolchain, "warp", "toolchain.")
    for key in ("nvrtc", "nvfatbin", "nvrtc_ptx"):
        if key in toolchain:
            f.string(toolchain, key, "toolchain.", nullable=True)
    driver = f.get(raw, "ptx_min_driver", "")
    if not (driver is None or is_size(driver) or (isinstance(driver, str) and _is_cuda_version(driver))):
        f.fail(
            "ptx_min_driver",
            f'expected null, a CUDA version such as "13.4", or an integer such as 13040, got '
            f"{json.dumps(driver)[:40]}",
        )
    _check_schema(raw, path, MANIFEST_NAME)


def _check_golden_fields(raw: dict, path) -> None:
    """Every field of golden.json of the type runtime/internal/manifest.cc's ReadGolden reads, and every
    golden file a plain relative path: golden.json is outside the content hash (docs/bundles.md:
    bundle validity), so these checks, not a digest, are what stand between it and the reader."""
    f = FieldChecks(path, GOLDEN_NAME)
    f.sha256(f.get(raw, "content_hash", ""), "content_hash")
    f.string(raw, "name", "")
    f.string(raw, "label", "")
    f.string(raw, "golden_device", "", nullable=True)
    for item, p in f.objects(raw, "golden", ""):
        f.string(item, "name", p)
        f.relpath(item, "file", p)
        f.size(item, "bytes", p)
        f.sha256(f.get(item, "sha256", p), p + "sha256")
        for key in ("atol", "rtol"):
            f.get(item, key, p)
    _check_schema(raw, path, GOLDEN_NAME)


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
    # Fields, types, enums and unknown keys were checked (_check_manifest_fields and the schema): what
    # is left is how fields relate.
    for b in manifest.bindings:
        problem = binding_layout_problem(b)
        _require(problem is None, path, f"binding {b.name!r}: {problem}")
    _require(manifest.chunk_bytes >= 4096, path, f"chunk_bytes is {manifest.chunk_bytes!r}")
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
    _check_golden_fields(raw, path)
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
    _require_golden(
        isinstance(name, str) and is_safe_relpath(name) and "/" not in name, path, f"name {name!r}"
    )
    _require_golden(isinstance(label, str), path, f"label {label!r}")
    _require_golden(golden_device in (None, "cpu", "cuda"), path, f"golden_device is {golden_device!r}")
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
        _require_golden(
            isinstance(g.file, str) and is_safe_relpath(g.file), path, f"golden file {g.file!r} is not safe"
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
            isinstance(g.bytes, int) and not isinstance(g.bytes, bool) and 0 <= g.bytes < 2**64,
            path,
            f"golden {g.name!r} has size {g.bytes!r}",
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
