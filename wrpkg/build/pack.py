"""Pack a raw capture into a canonical, content-hashed bundle, its deterministic tar and hash.

    python -m wrpkg.build.pack --raw-dir RAW --stem sim --name sim_wrp --label //models:sim_wrp \\
        [--arch-dir sm_90=DIR ...] [--ptx-dir DIR] \\
        --out-dir OUT/sim_wrp --tar OUT/sim_wrp.tar --hash OUT/sim_wrp.sha256

Bundle layout (`<name>/`):
    manifest.json        the deployed files; the content hash is the sha256 of these exact bytes
    golden.json          test manifest: name, label, golden outputs with sha256 and tolerances,
                         golden_device, and the content hash it belongs to; not hashed
    capture.json         capture provenance (device name, driver): not hashed, not in "files"
    <stem>.wrp           canonical form (wrpkg.wrpformat.canonicalize)
    <stem>_modules/...   module binaries (+ the generated .cu sources of a CUDA capture)
    golden/<output>.bin  golden outputs, one replay of the captured graph

The hash covers what is deployed (the canonical .wrp, module binaries and sources, bindings,
toolchain versions) and nothing about the machine that ran the capture, the target's label or
the golden outputs: a retargeted capture (CPU goldens) and a GPU capture (CUDA goldens) of one
program deploy the same bytes and so share the content hash.
Everything is written into a temp dir next to the outputs and renamed into place at the end,
so a failure never leaves a half-written bundle.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from wrpkg import atomic, mathdx, wrpformat
from wrpkg.errors import BundleError, WrpFormatError
from wrpkg.files import relative_entries, relative_files, sha256_bytes, sha256_file
from wrpkg.interface import INTERFACE_NAME, manifest_bindings
from wrpkg.manifest import (
    CAPTURE_INFO_NAME,
    GOLDEN_NAME,
    MANIFEST_NAME,
    UNHASHED_FILES,
    GoldenEntry,
    Manifest,
    ModuleEntry,
    PtxEntry,
    SassEntry,
    Toolchain,
    content_hash_of_bytes,
    file_entry,
    golden_to_json_bytes,
    to_json_bytes,
)

# Tar entries get this mtime: a fixed constant, so two builds give the same bytes.
TAR_MTIME = 0


@dataclass
class BundleResult:
    """What `pack_bundle` wrote.

    Attributes:
      out_dir: the bundle directory.
      tar_path: its deterministic tar.
      hash_path: the content hash file (sha256sum format).
      content_hash: sha256 of the bundle's manifest.json.
      manifest: the manifest written.
    """

    out_dir: Path
    tar_path: Path
    hash_path: Path
    content_hash: str
    manifest: Manifest


def _load_json(path: Path, what: str) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BundleError(
            f"{path}: cannot read the {what} ({exc})",
            fix="pass --raw-dir the directory written by `wrpkg capture` for this target",
        ) from exc


def _binary_kind(wrp: wrpformat.WrpFile, record: wrpformat.ModuleRecord) -> str:
    if not wrp.is_cuda:
        return "cpu_object"
    if record.binary_kind == wrpformat.BinaryKind.PTX or record.binary_filename.endswith(".ptx"):
        return "ptx"
    return "cubin"


@dataclass
class ModuleArtifacts:
    """What a module ships: the binary bytes and the SASS/PTX entries the manifest lists."""

    binary_filename: str
    binary: bytes
    sass: list[SassEntry]
    ptx: PtxEntry | None


def captured_module_artifacts(
    wrp: wrpformat.WrpFile, raw_record: wrpformat.ModuleRecord, modules_dir: Path
) -> ModuleArtifacts:
    """The binary exactly as Warp packaged it at capture time (one SM: the capture device's).

    `raw_record` is the record *before* canonicalization: canonical CUDA records carry a
    fixed target_arch, while the cubin really is SASS for the capture device's SM.
    """
    path = modules_dir / raw_record.binary_filename
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BundleError(f"{path}: module binary of {raw_record.name} is missing ({exc.strerror})") from exc
    digest = sha256_bytes(data)
    if raw_record.binary_sha256 and raw_record.binary_sha256 != digest:
        raise BundleError(f"{path}: sha256 {digest} differs from the .wrp's {raw_record.binary_sha256}")
    kind = _binary_kind(wrp, raw_record)
    sass, ptx = [], None
    if kind == "cubin":
        sass = [SassEntry(arch=f"sm_{raw_record.target_arch}", size=len(data), sha256=digest)]
    elif kind == "ptx":
        ptx = PtxEntry(
            arch=f"compute_{raw_record.target_arch}", size=len(data), sha256=digest, nvrtc_version=None
        )
    return ModuleArtifacts(raw_record.binary_filename, data, sass, ptx)


def multiarch_module_artifacts(
    raw_record: wrpformat.ModuleRecord, arch_dirs: dict[str, Path], ptx_dir: Path | None
) -> tuple[ModuleArtifacts, str | None, str | None] | None:
    """The per-SM seam: one fatbin per module from the compile actions' outputs.

    Each --arch-dir/--ptx-dir DIR is a `wrpkg compile` output: `compile.json` (format
    wrpkg.build.compile/1) lists per module hash the output file, its sha256 and size, and the
    NVRTC version. Every SASS must come from one NVRTC; the PTX may come from another (an
    older one, so that older drivers can JIT it). Returns the fatbin's artifacts, the SASS
    NVRTC version and the PTX NVRTC version (None for either without such outputs), or
    None when every compile skipped the module (no retained source): it then keeps its
    packaged binary.
    """
    from wrpkg import cuda_tools  # noqa: PLC0415 - loads nvFatbin; only multi-arch bundles need it

    cubins: dict[str, bytes] = {}
    sass: list[SassEntry] = []
    sass_nvrtc_versions = set()
    ptx_nvrtc = None
    skipped = []
    for arch, directory in sorted(arch_dirs.items()):
        found = _compiled_output(directory, raw_record, arch)
        if found is None:
            skipped.append(arch)
            continue
        entry, data, nvrtc = found
        cubins[entry["nvrtc_arch"]] = data
        sass.append(SassEntry(arch=entry["nvrtc_arch"], size=len(data), sha256=sha256_bytes(data)))
        sass_nvrtc_versions.add(nvrtc)
    ptx_entry = None
    ptx_pair = None
    if ptx_dir is not None:
        found = _compiled_output(ptx_dir, raw_record, None)
        if found is None and mathdx.is_linked(raw_record):
            pass  # a MathDx module has no PTX (wrpkg.mathdx): its fatbin holds the per-SM linked cubins
        elif found is None:
            skipped.append("ptx")
        else:
            entry, data, ptx_nvrtc = found
            ptx_pair = (entry["nvrtc_arch"], data)
            ptx_entry = PtxEntry(entry["nvrtc_arch"], len(data), sha256_bytes(data), ptx_nvrtc)
    if skipped and (cubins or ptx_pair):
        raise BundleError(
            f"module {raw_record.name} ({raw_record.hash}): compiled for some targets but skipped for {skipped}"
        )
    if not cubins and ptx_pair is None:
        return None
    if len(sass_nvrtc_versions) > 1:
        raise BundleError(
            f"module {raw_record.name}: its SASS was compiled by several NVRTC versions "
            f"{sorted(map(str, sass_nvrtc_versions))}",
            fix="build every SM of the target with one CUDA toolchain (the PTX may use another)",
        )
    fatbin = cuda_tools.pack_fatbin(cubins, ptx_pair, module=raw_record.name)
    stem = raw_record.binary_filename.split(".", 1)[0]
    # Warp decides CUBIN vs PTX by the extension; a fatbin loads through the CUBIN path.
    filename = f"{stem}.fatbin.cubin"
    sass_nvrtc = next(iter(sass_nvrtc_versions)) if sass_nvrtc_versions else None
    return ModuleArtifacts(filename, fatbin, sass, ptx_entry), sass_nvrtc, ptx_nvrtc


def _compiled_output(directory: Path, raw_record: wrpformat.ModuleRecord, arch: str | None):
    """(compile.json entry, output bytes, NVRTC version) of one module, or None if skipped."""
    index_path = directory / "compile.json"
    index = _load_json(index_path, "compile index")
    if index.get("format") != "wrpkg.build.compile/1":
        raise BundleError(f"{index_path}: not a wrpkg.build.compile/1 index")
    if arch is not None and index.get("arch") != arch:
        raise BundleError(f"{index_path}: compiled for {index.get('arch')}, but given as --arch-dir {arch}")
    entries = {m["hash"]: m for m in index.get("modules", [])}
    entry = entries.get(raw_record.hash)
    if entry is None:
        if any(m.get("hash") == raw_record.hash for m in index.get("skipped", [])):
            return None
        raise BundleError(f"{index_path}: no output for module {raw_record.name} ({raw_record.hash})")
    path = directory / entry["output"]
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BundleError(f"{path}: compiled module is missing ({exc.strerror})") from exc
    if entry.get("sha256") != sha256_bytes(data):
        raise BundleError(f"{path}: sha256 differs from {index_path}")
    return entry, data, index.get("toolchain", {}).get("nvrtc")


def build_bundle_dir(
    raw_dir: Path,
    stem: str,
    name: str,
    label: str,
    work: Path,
    arch_dirs: dict[str, Path] | None = None,
    ptx_dir: Path | None = None,
    keep_source: bool = True,
) -> tuple[Manifest, bytes]:
    """Writes the bundle's files into `work` (an empty dir); returns the manifest and its bytes."""
    raw_wrp_path = raw_dir / f"{stem}.wrp"
    interface = _load_json(raw_dir / INTERFACE_NAME, "capture interface")
    capture_info = _load_json(raw_dir / CAPTURE_INFO_NAME, "capture provenance")
    try:
        raw = wrpformat.read_wrp(raw_wrp_path)
    except WrpFormatError as exc:
        raise BundleError(f"{raw_wrp_path}: not a valid .wrp: {exc}", fix=f"rebuild {label}") from exc

    toolchain = Toolchain(warp=raw.metadata.producer_version)
    # Compile outputs given for a CUDA capture: every module becomes a multi-arch fatbin.
    multiarch = raw.is_cuda and (bool(arch_dirs) or ptx_dir is not None)
    if raw.is_cuda and not multiarch:
        # The captured cubin came from the NVRTC inside the pinned Warp: the toolkit Warp reports.
        toolchain.nvrtc = capture_info.get("cuda_toolkit_version")
    modules = _ModulePacking(raw, raw_dir / f"{stem}_modules", work, f"{stem}_modules", label, keep_source)
    (work / modules.dir_name).mkdir()
    canonical = wrpformat.canonicalize(raw)
    module_entries = []
    for raw_record in sorted(raw.metadata.modules, key=lambda m: m.hash):
        packed = multiarch_module_artifacts(raw_record, arch_dirs, ptx_dir) if multiarch else None
        if packed is None:
            canonical, entry = modules.pack_captured(canonical, raw_record)
        else:
            canonical, entry = modules.pack_compiled(canonical, raw_record, packed, toolchain)
        module_entries.append(entry)
    if multiarch:
        from wrpkg import cuda_tools  # noqa: PLC0415

        toolchain.nvfatbin = cuda_tools.toolchain_versions()["nvfatbin"]

    wrp_name = f"{stem}.wrp"
    (work / wrp_name).write_bytes(canonical.to_bytes())
    # Bindings: regions and sizes from the .wrp; directions and array layouts from the
    # capture (the .wrp stores neither).
    bindings = manifest_bindings(interface, canonical, raw_dir, label)
    golden = _copy_golden(interface, raw_dir, work, {b.name: b.bytes for b in bindings}, label)
    golden_files = {g.file for g in golden}
    files = [
        file_entry(work, rel)
        for rel in relative_files(work)
        if rel not in UNHASHED_FILES and rel not in golden_files
    ]
    manifest = Manifest(
        name=name,
        label=label,
        wrp=wrp_name,
        warp_version=raw.metadata.producer_version,
        format_version=raw.header.version,
        device="cuda" if raw.is_cuda else "cpu",
        modules=module_entries,
        bindings=bindings,
        golden=golden,
        files=files,
        toolchain=toolchain,
        ptx_min_driver=_ptx_min_driver(module_entries),
        golden_device=interface.get("golden_device", interface["device"]),
    )
    manifest_bytes = to_json_bytes(manifest)
    (work / MANIFEST_NAME).write_bytes(manifest_bytes)
    (work / GOLDEN_NAME).write_bytes(golden_to_json_bytes(manifest, content_hash_of_bytes(manifest_bytes)))
    shutil.copyfile(raw_dir / CAPTURE_INFO_NAME, work / CAPTURE_INFO_NAME)
    return manifest, manifest_bytes


@dataclass
class _ModulePacking:
    """Puts each module's binary (and, with keep_source, its CUDA source) into the bundle,
    and points the canonical .wrp's record at what was put there."""

    raw: wrpformat.WrpFile
    raw_modules_dir: Path
    work: Path
    dir_name: str  # <stem>_modules, inside work
    label: str
    keep_source: bool

    def pack_compiled(self, canonical, raw_record, packed, toolchain: Toolchain):
        """The fatbin of the per-SM compile outputs (multiarch_module_artifacts) stands in
        for the captured binary."""
        artifacts, sass_nvrtc, ptx_nvrtc = packed
        for field_name, version in (("nvrtc", sass_nvrtc), ("nvrtc_ptx", ptx_nvrtc)):
            known = getattr(toolchain, field_name)
            if version and known and version != known:
                raise BundleError(
                    f"{self.raw.path}: modules were compiled by different NVRTC versions ({known}, {version})",
                    fix=f"rebuild {self.label} with one CUDA toolchain",
                )
            setattr(toolchain, field_name, version or known)
        source_name = ""
        if self.keep_source and raw_record.source_filename:
            # Warp names the source after the capture SM (x.sm90.cu); a multi-arch bundle
            # must be the same whichever GPU model ran the capture.
            source_name = artifacts.binary_filename.split(".", 1)[0] + ".cu"
        canonical = wrpformat.replace_module_binary(
            canonical,
            raw_record.hash,
            artifacts.binary_filename,
            sha256_bytes(artifacts.binary),
            wrpformat.BinaryKind.CUBIN,
            # A MathDx module has no source: its record keeps its reason (link_inputs).
            new_source_filename=source_name if raw_record.source_filename else None,
        )
        return canonical, self._entry(raw_record, artifacts, "cubin", source_name)

    def pack_captured(self, canonical, raw_record):
        """The captured binary as it is; without keep_source the record drops its source."""
        artifacts = captured_module_artifacts(self.raw, raw_record, self.raw_modules_dir)
        source_name = raw_record.source_filename if self.keep_source else ""
        if raw_record.source_filename and not self.keep_source:
            canonical = wrpformat.replace_module_binary(
                canonical,
                raw_record.hash,
                raw_record.binary_filename,
                raw_record.binary_sha256,
                raw_record.binary_kind,
                new_source_filename="",
            )
        return canonical, self._entry(raw_record, artifacts, _binary_kind(self.raw, raw_record), source_name)

    def _entry(
        self, raw_record, artifacts: ModuleArtifacts, binary_kind: str, source_name: str
    ) -> ModuleEntry:
        (self.work / self.dir_name / artifacts.binary_filename).write_bytes(artifacts.binary)
        return ModuleEntry(
            name=raw_record.name,
            hash=raw_record.hash,
            binary=f"{self.dir_name}/{artifacts.binary_filename}",
            binary_kind=binary_kind,
            source=self._copy_source(raw_record, source_name) if source_name else None,
            sass=artifacts.sass,
            ptx=artifacts.ptx,
            no_ptx=mathdx.NO_PTX_NOTE if mathdx.is_linked(raw_record) else None,
        )

    def _copy_source(self, raw_record, source_name: str) -> str:
        src_path = self.raw_modules_dir / raw_record.source_filename
        if not src_path.is_file():
            raise BundleError(f"{src_path}: retained CUDA source of {raw_record.name} is missing")
        if sha256_file(src_path) != raw_record.source_sha256:
            raise BundleError(f"{src_path}: sha256 differs from the .wrp's {raw_record.source_sha256}")
        shutil.copyfile(src_path, self.work / self.dir_name / source_name)
        return f"{self.dir_name}/{source_name}"


def _copy_golden(
    interface: dict, raw_dir: Path, work: Path, binding_bytes: dict[str, int], label: str
) -> list[GoldenEntry]:
    (work / "golden").mkdir()
    golden = []
    for record in sorted(interface["golden"], key=lambda g: g["name"]):
        src = raw_dir / record["file"]
        dst_rel = f"golden/{record['name']}.bin"
        shutil.copyfile(src, work / dst_rel)
        size = (work / dst_rel).stat().st_size
        if size != binding_bytes.get(record["name"]):
            raise BundleError(
                f"{src}: golden output has {size} bytes, binding {record['name']} holds "
                f"{binding_bytes.get(record['name'])}",
                fix=f"rebuild {label}",
            )
        atol, rtol = _golden_tolerance(record)
        digest = file_entry(work, dst_rel).sha256
        golden.append(GoldenEntry(record["name"], dst_rel, size, atol, rtol, sha256=digest))
    return golden


def _golden_tolerance(record: dict) -> tuple[float | None, float | None]:
    """(atol, rtol) of an interface.json golden record; captures recorded before atol existed
    carry a relative "tolerance" alone."""
    if "rtol" in record:
        return record["atol"], record["rtol"]
    legacy = record.get("tolerance")
    return (None, None) if legacy is None else (0.0, float(legacy))


def _ptx_min_driver(modules: list[ModuleEntry]) -> str | None:
    """The oldest driver that can JIT the bundle's PTX: the CUDA release of the NVRTC that
    wrote it (a driver JITs PTX from toolkits up to its own CUDA version)."""
    versions = {m.ptx.nvrtc_version for m in modules if m.ptx and m.ptx.nvrtc_version}
    if not versions:
        return None
    major, minor = max(tuple(int(p) for p in v.split(".")[:2]) for v in versions)
    return f"{major}.{minor}"


# ustar header fields (POSIX.1-1988): name 100, prefix 155 bytes; octal numbers of 11 digits at most.
_TAR_BLOCK = 512
_TAR_RECORD = 20 * _TAR_BLOCK  # the archive is padded to a multiple of this, as Python's tarfile does
_USTAR_NAME, _USTAR_PREFIX = 100, 155
# The pax extended header's own name: what Python's tarfile (and star) write.
PAX_HEADER_NAME = "././@PaxHeader"


def _ustar_split(name: bytes) -> tuple[bytes, bytes] | None:
    """(prefix, name) fields for a path, as Python's tarfile (USTAR_FORMAT) splits it: the whole path as
    the name when it fits, else at the first '/' that leaves a prefix and a name that fit; None when no
    split fits."""
    if len(name) <= _USTAR_NAME:
        return b"", name
    parts = name.split(b"/")
    for i in range(1, len(parts)):
        prefix, rest = b"/".join(parts[:i]), b"/".join(parts[i:])
        if len(prefix) <= _USTAR_PREFIX and len(rest) <= _USTAR_NAME:
            return prefix, rest
    return None


def _octal_field(value: int, width: int) -> bytes:
    return b"%0*o\0" % (width - 1, value)


def _ustar_header(name: bytes, prefix: bytes, mode: int, size: int, typeflag: bytes) -> bytes:
    """One ustar header block, byte for byte as Python 3.11's tarfile writes it for these fields (uid, gid
    0, mtime TAR_MTIME, empty uname, gname and device fields, magic "ustar\\0" version "00")."""
    header = b"".join(
        [
            name.ljust(_USTAR_NAME, b"\0"),
            _octal_field(mode, 8),
            _octal_field(0, 8),  # uid
            _octal_field(0, 8),  # gid
            _octal_field(size, 12),
            _octal_field(TAR_MTIME, 12),
            b" " * 8,  # the checksum, counted as spaces
            typeflag,
            bytes(100),  # linkname
            b"ustar\x0000",
            bytes(32 + 32 + 8 + 8),  # uname, gname, devmajor, devminor
            prefix.ljust(_USTAR_PREFIX, b"\0"),
        ]
    ).ljust(_TAR_BLOCK, b"\0")
    return header[:148] + b"%06o\0 " % sum(header) + header[156:]


def _pax_path_header(arcname: str) -> bytes:
    """A pax extended header (type 'x') holding only the `path` record of `arcname`, padded to blocks;
    what Python's tarfile (PAX_FORMAT) writes for a long ASCII or UTF-8 name. The path must pass both
    readers' pax rule (wrpkg.reader.ustar._pax_path: strict UTF-8, no control character)."""
    try:
        value = arcname.encode("utf-8")
    except UnicodeEncodeError:
        raise BundleError(
            f"{arcname!r}: a path too long for a ustar header is stored in a pax header, as UTF-8, "
            "and this one is not valid UTF-8",
            fix="rename the file",
        ) from None
    # wrpkg.reader.ustar.pax_path_problem's rule (not imported: the pack tool's Bazel target does not depend on
    # wrpkg.reader.ustar); tests/test_pax_archives.py holds the two to it.
    if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in arcname):
        raise BundleError(
            f"{arcname!r}: cannot be stored in a pax header: its path holds a control character",
            fix="rename the file",
        )
    rest = len(b"path") + len(value) + 3  # ' ', '=' and '\n'
    length = rest + 1
    while len(str(length)) + rest != length:
        length = len(str(length)) + rest
    record = b"%d path=%s\n" % (length, value)
    header = _ustar_header(PAX_HEADER_NAME.encode("ascii"), b"", 0, len(record), b"x")
    return header + record + bytes(-len(record) % _TAR_BLOCK)


def write_deterministic_tar(bundle_dir: Path, arc_root: str, tar_path: Path) -> None:
    """A tar whose bytes depend only on the files' names and contents.

    POSIX ustar, byte for byte what Python 3.11's tarfile writes with USTAR_FORMAT: entries sorted by
    path with their directories first, mtime TAR_MTIME, uid/gid 0, empty user/group names, mode 0755 for
    directories and 0644 for files, no extended records. A path that ustar's name and prefix fields
    cannot hold (one component over 100 bytes, as Warp's files of Newton's modules are) is preceded by
    a pax extended header holding only its `path` record (_pax_path_header), and the entry's own name
    field holds the path cut to 100 bytes, non-ASCII characters as '?' (what tarfile's PAX_FORMAT writes
    there); an archive whose paths all fit has no pax header, as before. Both readers
    (wrpkg.reader.ustar.ustar_entries, runtime/internal/ustar.cc) accept exactly this.
    """
    entries: list[tuple[str, Path | None]] = [(arc_root, None)]
    for rel, is_dir in relative_entries(bundle_dir):
        entries.append((f"{arc_root}/{rel}", None if is_dir else bundle_dir / rel))
    entries.sort(key=lambda entry: entry[0])
    with open(tar_path, "wb") as out:
        written = 0
        for arcname, path in entries:
            name = f"{arcname}/" if path is None else arcname  # tarfile spells a directory "a/b/"
            data = b"" if path is None else path.read_bytes()
            if len(data) >= 8**11:
                raise BundleError(
                    f"{arcname}: {len(data)} bytes, more than a ustar header can record (8 GiB)"
                )
            # The file system's bytes for the name, as tarfile encodes it (utf-8, surrogateescape).
            split = _ustar_split(os.fsencode(name))
            if split is None:
                block = _pax_path_header(name)
                split = (b"", name.encode("ascii", "replace")[:_USTAR_NAME])
            else:
                block = b""
            mode, typeflag = (0o755, b"5") if path is None else (0o644, b"0")
            block += _ustar_header(split[1], split[0], mode, len(data), typeflag)
            out.write(block)
            out.write(data)
            out.write(bytes(-len(data) % _TAR_BLOCK))
            written += len(block) + len(data) + -len(data) % _TAR_BLOCK
        written += 2 * _TAR_BLOCK  # the end-of-archive marker
        out.write(bytes(2 * _TAR_BLOCK + -written % _TAR_RECORD))


def pack(
    raw_dir: str | os.PathLike,
    stem: str,
    name: str,
    label: str,
    out_dir: str | os.PathLike,
    tar_path: str | os.PathLike,
    hash_path: str | os.PathLike,
    arch_dirs: dict[str, str | os.PathLike] | None = None,
    ptx_dir: str | os.PathLike | None = None,
    keep_source: bool = True,
) -> BundleResult:
    """Packs a raw capture and its compiled outputs into a bundle, its tar and its content hash.

    What `wrp_artifact`'s bundle action runs (`python -m wrpkg.build.pack`), from Python. The three
    outputs are published atomically: a failure leaves the previous ones.

    Args:
      raw_dir: the raw capture directory (`run_capture`'s out_dir).
      stem: the `.wrp` file's name without `.wrp`.
      name: the bundle's name: its directory inside the tar.
      label: the Bazel target, recorded in golden.json and named in errors.
      out_dir: the bundle directory to write.
      tar_path: the deterministic tar to write.
      hash_path: the content hash file to write.
      arch_dirs: SM -> the `compile_wrp` output directory for it (CUDA bundles).
      ptx_dir: the `compile_wrp` output directory of the PTX target, if any.
      keep_source: keep each module's retained CUDA source (Warp's load-time fallback).

    Returns:
      A BundleResult: the paths written, the content hash and the manifest.

    Raises:
      BundleError: the inputs do not fit together (a module without its compiled output, ...).
    """
    raw_dir, out_dir, tar_path, hash_path = Path(raw_dir), Path(out_dir), Path(tar_path), Path(hash_path)
    arch_dirs = {arch: Path(d) for arch, d in (arch_dirs or {}).items()}
    ptx_dir = Path(ptx_dir) if ptx_dir is not None else None
    with atomic.staged(
        out_dir,
        BundleError,
        f"{label}: writing the bundle",
        f"{out_dir}, {tar_path.name} and {hash_path.name} were left as they were",
        "run the bundle step again",
    ) as staging:
        work = staging / name
        work.mkdir()
        manifest, manifest_bytes = build_bundle_dir(
            raw_dir, stem, name, label, work, arch_dirs, ptx_dir, keep_source=keep_source
        )
        content_hash = content_hash_of_bytes(manifest_bytes)
        staged_tar = staging / "bundle.tar"
        write_deterministic_tar(work, name, staged_tar)
        staged_hash = staging / "bundle.sha256"
        # sha256sum format, so `sha256sum -c` run next to the bundle dir checks the manifest.
        staged_hash.write_text(f"{content_hash}  {name}/{MANIFEST_NAME}\n", encoding="ascii")
        _make_readable(work)
        # Publish each output atomically: the directory, then the tar, then the hash last (it
        # vouches for the directory's manifest, so a kill in between is caught by verify).
        atomic.publish_dir(work, out_dir)
        atomic.publish_file(staged_tar, tar_path)
        atomic.publish_file(staged_hash, hash_path)
    return BundleResult(out_dir, tar_path, hash_path, content_hash, manifest)


def _make_readable(root: Path) -> None:
    os.chmod(root, 0o755)
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            os.chmod(os.path.join(dirpath, d), 0o755)
        for f in filenames:
            os.chmod(os.path.join(dirpath, f), 0o644)


def _parse_arch_dir(value: str) -> tuple[str, str]:
    arch, sep, directory = value.partition("=")
    if not sep or not arch or not directory:
        raise BundleError(f"--arch-dir {value!r}: expected ARCH=DIR, e.g. sm_90=bazel-out/.../sm_90")
    return arch, directory


def configure_parser(parser) -> None:
    parser.add_argument("--raw-dir", required=True, help="the directory `wrpkg capture` wrote")
    parser.add_argument("--stem", required=True, help="file stem of the .wrp (sim -> sim.wrp)")
    parser.add_argument("--name", required=True, help="the bundle's name (its directory name)")
    parser.add_argument("--label", required=True, help="the wrp_artifact target, recorded in the manifest")
    parser.add_argument(
        "--arch-dir", action="append", default=[], metavar="ARCH=DIR", help="per-SM compile output"
    )
    parser.add_argument("--ptx-dir", default=None, help="PTX compile output")
    parser.add_argument(
        "--no-source",
        action="store_true",
        help="leave out the retained CUDA source (no load-time compile fallback on newer GPUs)",
    )
    parser.add_argument("--out-dir", required=True, help="the bundle directory to write")
    parser.add_argument("--tar", required=True, help="the deterministic tar to write")
    parser.add_argument("--hash", required=True, help="the content-hash file to write")


def run(args) -> int:
    arch_dirs = dict(_parse_arch_dir(value) for value in args.arch_dir)
    result = pack(
        args.raw_dir,
        args.stem,
        args.name,
        args.label,
        args.out_dir,
        args.tar,
        args.hash,
        arch_dirs=arch_dirs,
        ptx_dir=args.ptx_dir,
        keep_source=not args.no_source,
    )
    print(f"bundled {result.manifest.label} -> {result.out_dir} (content hash {result.content_hash})")
    return 0


if __name__ == "__main__":
    from wrpkg.cli import tool_main

    tool_main("wrpkg.build.pack")
