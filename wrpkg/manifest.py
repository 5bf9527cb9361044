"""manifest.json of a bundle: the records, their canonical JSON bytes, and parsing.

The bundle's content hash is the sha256 of manifest.json's exact bytes. The manifest lists
every other file of the bundle with its size and sha256 (except capture.json, the capture
machine's description, which must not change the hash), so hashing the manifest covers
them all. The JSON form is canonical (sorted keys, one-space indent, ASCII, trailing
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

MANIFEST_SCHEMA = "rules_warp.manifest/1"
MANIFEST_NAME = "manifest.json"
# Provenance of the capture machine (device name, driver): in the bundle, never hashed.
CAPTURE_INFO_NAME = "capture.json"
UNHASHED_FILES = frozenset({MANIFEST_NAME, CAPTURE_INFO_NAME})

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


@dataclass
class BindingEntry:
    name: str
    direction: str  # "in" | "out" | "inout"
    bytes: int
    region: int


@dataclass
class GoldenEntry:
    name: str
    file: str  # "golden/<name>.bin"
    bytes: int
    # float32 within atol + rtol * |golden| (wrpkg/golden.py); both None = bit-exact.
    atol: float | None
    rtol: float | None


@dataclass
class FileEntry:
    path: str
    size: int
    sha256: str


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
    # The device whose replay produced the golden outputs: "cpu" for a retargeted CUDA
    # capture (wrpkg/retarget.py), else the capture device.
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


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_entry(root: str | os.PathLike, relpath: str) -> FileEntry:
    path = Path(root) / relpath
    return FileEntry(path=relpath, size=path.stat().st_size, sha256=sha256_file(path))


def to_dict(manifest: Manifest) -> dict:
    return asdict(manifest)


def to_json_bytes(manifest: Manifest) -> bytes:
    """The canonical bytes: these are what the content hash is taken over."""
    text = json.dumps(to_dict(manifest), sort_keys=True, indent=1, ensure_ascii=True, allow_nan=False)
    return (text + "\n").encode("ascii")


def content_hash_of_bytes(manifest_bytes: bytes) -> str:
    return hashlib.sha256(manifest_bytes).hexdigest()


def _require(cond: bool, path, what: str) -> None:
    if not cond:
        raise VerifyError(
            f"{path}: not a valid {MANIFEST_SCHEMA} manifest: {what}",
            fix="rebuild the bundle's wrp_artifact target; do not edit manifest.json by hand",
        )


def from_json_bytes(
    data: bytes, path: str | os.PathLike = MANIFEST_NAME, *, canonical_check: bool = True
) -> Manifest:
    """Parses and shape-checks a manifest; any deviation is a VerifyError naming the file.
    `canonical_check=False` skips re-serializing it, for bytes already matched against the
    bundle's content hash (so they are the bundler's own)."""
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise VerifyError(
            f"{path}: not valid JSON ({exc})",
            fix="rebuild the bundle's wrp_artifact target; do not edit manifest.json by hand",
        ) from exc
    _require(isinstance(raw, dict), path, "the top level is not an object")
    _require(raw.get("schema") == MANIFEST_SCHEMA, path, f"schema is {raw.get('schema')!r}")
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
                )
            )
        manifest = Manifest(
            name=raw["name"],
            label=raw["label"],
            wrp=raw["wrp"],
            warp_version=raw["warp_version"],
            format_version=raw["format_version"],
            device=raw["device"],
            modules=modules,
            bindings=[BindingEntry(**b) for b in raw["bindings"]],
            golden=[GoldenEntry(**g) for g in raw["golden"]],
            files=[FileEntry(**f) for f in raw["files"]],
            toolchain=Toolchain(**raw["toolchain"]),
            ptx_min_driver=raw["ptx_min_driver"],
            golden_device=raw.get("golden_device"),
            schema=raw["schema"],
        )
    except (KeyError, TypeError) as exc:
        raise VerifyError(
            f"{path}: not a valid {MANIFEST_SCHEMA} manifest: missing or unexpected field {exc}",
            fix="rebuild the bundle's wrp_artifact target; do not edit manifest.json by hand",
        ) from exc
    _require(manifest.device in ("cpu", "cuda"), path, f"device is {manifest.device!r}")
    for b in manifest.bindings:
        _require(b.direction in DIRECTIONS, path, f"binding {b.name!r} has direction {b.direction!r}")
    for g in manifest.golden:
        tol = (g.atol, g.rtol)
        _require(
            tol == (None, None)
            or all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x < float("inf") for x in tol
            ),
            path,
            f"golden {g.name!r}: atol and rtol must both be null or both finite numbers >= 0",
        )
    seen_paths = set()
    for f in manifest.files:
        _require(
            isinstance(f.path, str) and _is_safe_relpath(f.path), path, f"file path {f.path!r} is not safe"
        )
        _require(f.path not in seen_paths, path, f"file path {f.path!r} is listed twice")
        seen_paths.add(f.path)
        _require(
            isinstance(f.size, int) and not isinstance(f.size, bool) and 0 <= f.size < 2**64,
            path,
            f"file {f.path!r} has size {f.size!r}",
        )
    # Re-serializing must give the same bytes: catches hand edits such as reordered keys,
    # added fields or changed whitespace, which would otherwise hash differently unnoticed.
    if canonical_check:
        _require(to_json_bytes(manifest) == data, path, "its bytes are not in canonical form")
    return manifest


def _is_safe_relpath(relpath: str) -> bool:
    parts = relpath.split("/")
    return bool(relpath) and not relpath.startswith("/") and all(p not in ("", ".", "..") for p in parts)
