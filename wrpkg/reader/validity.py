"""Bundle validity (docs/bundles.md): every file against the manifest, and the manifest against
the .wrp. What `wrpkg.Bundle` (wrpkg/reader/bundle.py) runs when it opens a bundle, and so what
`wrpkg verify` (wrpkg/reader/verify.py) runs; runtime/bundle.cc is the C++ reader of the same policy.

A bundle passes only when every file manifest.json or golden.json (the test manifest) lists exists
with its size and sha256, golden.json belongs to manifest.json's content hash, no other
file is present (capture.json aside), and the manifest agrees with the `.wrp` it describes
(modules, their binaries' digests, bindings, golden sizes). Any failure is a VerifyError
that names the file and says which target to rebuild.

What is read, and how (issue 26; runtime/bundle.cc reads the same way): only regular files,
opened with O_NONBLOCK (a FIFO cannot block the reader) and judged by fstat of the open
descriptor, their size checked against the manifest, or against MAX_JSON_BYTES (16 MiB) for
manifest.json, golden.json and `<dir>.sha256`, before a byte is read. Both manifests are JSON
in the strict profile (strict_json.strict_json_loads) and every path they name is a plain
relative path, refused before any file is read. The sibling `<dir>.sha256` is looked up
beside the name given and beside the resolved directory (hash_file_candidates), so `DIR/.` and
`.` inside DIR meet DIR's hash, and a symlink to a bundle meets the hash pinned beside the link.

golden.json is not covered by the content hash, by design: it holds test data (golden outputs,
their tolerances, the target's name and label), not deployed bytes, and keeping it out lets a
retargeted capture and a native one of the same program share one content hash although their
golden values differ. What guards it instead is that it names the content hash it belongs to,
and gets the manifest's limits and checks: the size limit, strict JSON, field types, plain
relative paths for the golden files, and their size and sha256.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import re
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from wrpkg.errors import BundleError, VerifyError, WrpFormatError
from wrpkg.files import relative_files
from wrpkg.manifest import (
    CAPTURE_INFO_NAME,
    GOLDEN_NAME,
    MANIFEST_NAME,
    UNHASHED_FILES,
    FileEntry,
    Manifest,
    attach_golden,
    check_capture_info,
    content_hash_of_bytes,
    from_json_bytes,
)
from wrpkg.names import shown
from wrpkg.reader.fatbin import elf_problem, is_fatbin, parse_fatbin
from wrpkg.reader.ustar import ustar_entries
from wrpkg.strict_json import MAX_CAPTURE_INFO_BYTES, MAX_JSON_BYTES

# (what, bytes, expected sha256): one piece of a listed file and the digest the manifest records.
DigestCheck = tuple[str, bytes | bytearray | memoryview, str]

_FILE_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


def open_regular(path: str | os.PathLike, what: str, fix: str) -> tuple[int, int]:
    """An open descriptor of the regular file `path` (symlinks followed: Bazel stages inputs
    as symlinks) and its size, both from the descriptor, so the file judged is the file read.
    O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever. Anything
    but a regular file (a FIFO, /dev/zero, a directory) is a VerifyError naming `path`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError as exc:
        raise VerifyError(f"{path}: cannot read {what}: missing ({exc.strerror})", fix=fix) from exc
    except OSError as exc:
        raise VerifyError(f"{path}: cannot read {what} ({exc.strerror})", fix=fix) from exc
    try:
        info = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise VerifyError(f"{path}: cannot read {what} ({exc.strerror})", fix=fix) from exc
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        kind = _FILE_KINDS.get(stat.S_IFMT(info.st_mode), "not a regular file")
        raise VerifyError(
            f"{path}: {what} is {kind}, not a regular file; only regular files are read", fix=fix
        )
    return fd, info.st_size


def read_regular(path: str | os.PathLike, what: str, fix: str, max_bytes: int | None = None) -> bytearray:
    """The bytes of the regular file `path` (open_regular), refused before any read when fstat
    says it holds more than `max_bytes`, and refused when it changes size while being read."""
    fd, size = open_regular(path, what, fix)
    with open(fd, "rb", buffering=0, closefd=True) as handle:
        if max_bytes is not None and size > max_bytes:
            raise VerifyError(f"{path}: {what} is {size} bytes, more than the {max_bytes} allowed", fix=fix)
        data = bytearray(size)
        got = 0
        try:
            with memoryview(data) as view:
                while got < size and (step := handle.readinto(view[got:])):
                    got += step
            grew = got == size and handle.read(1)
        except OSError as exc:
            raise VerifyError(f"{path}: cannot read {what} ({exc.strerror})", fix=fix) from exc
    if got != size or grew:
        raise VerifyError(f"{path}: {what} changed size while it was read", fix=fix)
    return data


def read_json_file(path: str | os.PathLike, what: str, fix: str) -> bytes:
    """manifest.json's or golden.json's bytes: a regular file of at most MAX_JSON_BYTES."""
    return read_regular(path, what, fix, MAX_JSON_BYTES)


def sha256_each(pieces: Sequence[bytes | bytearray | memoryview]) -> list[str]:
    """Lowercase hex sha256 of each piece, on the calling thread: in a fresh process, starting a
    thread costs about as much as hashing a 256 KiB chunk, so splitting a bundle's hash over
    threads gained nothing measurable (tools/bench/hash_threads_probe.py). wrpkg.reader.bundle overlaps
    the hash with Warp's load instead; the C++ runtime does use threads."""
    return [hashlib.sha256(piece).hexdigest() for piece in pieces]


def digest_checks(
    where: str, data: bytes | bytearray | memoryview, entry: FileEntry, chunk_bytes: int
) -> list[DigestCheck]:
    """What proves `data` is the listed file: its chunk digests when the manifest has them (an
    error then names the bytes that differ), else its whole sha256."""
    if not entry.chunk_sha256:
        return [(where, data, entry.sha256)]
    view = memoryview(data)
    return [
        (
            f"{where} (bytes {i * chunk_bytes} to {min((i + 1) * chunk_bytes, len(data))})",
            view[i * chunk_bytes : (i + 1) * chunk_bytes],
            expected,
        )
        for i, expected in enumerate(entry.chunk_sha256)
    ]


def check_digests(checks: Sequence[DigestCheck], lister: str, fix: str) -> None:
    """Hashes every piece and raises a VerifyError naming the first that differs."""
    digests = sha256_each([piece for _, piece, _ in checks])
    for (what, _, expected), digest in zip(checks, digests, strict=True):
        if digest != expected:
            raise VerifyError(f"{what}: sha256 {digest}, {lister} says {expected}", fix=fix)


def check_content(
    where: str,
    content,
    entry: FileEntry,
    lister: str,
    chunk_bytes: int,
    fix: str,
    *,
    whole_digests: bool = True,
) -> None:
    """A listed file's bytes against its size and digests: the chunk digests, and with
    `whole_digests` the whole sha256 too (the two agree in a bundle as built; `wrpkg verify`
    checks that, a load needs only one of them)."""
    if len(content) != entry.size:
        raise VerifyError(f"{where}: {len(content)} bytes, {lister} says {entry.size}", fix=fix)
    checks = digest_checks(where, content, entry, chunk_bytes)
    if whole_digests and entry.chunk_sha256:
        checks.append((where, content, entry.sha256))
    check_digests(checks, lister, fix)


def bundle_content_hash(bundle_dir: str | os.PathLike) -> str:
    """The bundle's content hash: sha256 of manifest.json's bytes (not verified here)."""
    path = Path(bundle_dir) / MANIFEST_NAME
    data = read_json_file(path, "the manifest", "pass a bundle directory made by a wrp_artifact target")
    return content_hash_of_bytes(data)


def rebuild_fix(manifest: Manifest | None) -> str:
    """The fix a VerifyError names: rebuild the bundle's target."""
    if manifest is None:
        return "rebuild the wrp_artifact target that produced this bundle"
    return f"rebuild {manifest.label} (bazel build {manifest.label}); do not edit bundle files"


def listed_files(manifest: Manifest) -> list[tuple[FileEntry, str]]:
    """Every file the bundle must hold, with the manifest file that lists it: the deployed
    files (manifest.json) and the golden outputs (golden.json)."""
    listed = [(entry, MANIFEST_NAME) for entry in manifest.files]
    listed += [(FileEntry(g.file, g.bytes, g.sha256), GOLDEN_NAME) for g in manifest.golden]
    return listed


def _refuse_unlisted(present, listed: list[tuple[FileEntry, str]], where: str, fix: str) -> None:
    """Nothing may be in a bundle that neither manifest lists (capture.json aside)."""
    paths = {entry.path for entry, _ in listed}
    for rel in sorted(present):
        if rel not in paths and rel not in UNHASHED_FILES:
            raise VerifyError(
                f"{where}{shown(rel)}: file not listed in {MANIFEST_NAME} or {GOLDEN_NAME}", fix=fix
            )


def _present_files(bundle_dir: Path, fix: str) -> list[str]:
    """relative_files, with a directory that cannot be listed refused: what it holds could be
    a file no manifest lists."""
    try:
        return relative_files(bundle_dir)
    except OSError as exc:
        raise VerifyError(
            f"{shown(exc.filename)}: cannot list this directory of the bundle ({exc.strerror}), so a file in it "
            "that no manifest lists could not be refused",
            fix=fix + "; make every directory of the bundle readable",
        ) from exc


def verify_files(
    bundle_dir: Path, manifest: Manifest, *, whole_digests: bool = True, keep: frozenset[str] = frozenset()
) -> dict[str, bytearray | mmap.mmap]:
    """Every listed file, and nothing else, is there with its size and digests (check_content).
    Returns the verified bytes of the files in `keep` (by manifest path): whoever uses them then
    uses what was checked, not what a second read of the file would find."""
    fix = rebuild_fix(manifest)
    listed = listed_files(manifest)
    _refuse_unlisted(_present_files(bundle_dir, fix), listed, f"{bundle_dir}/", fix)
    kept = {}
    for entry, lister in listed:
        # A symlink to a file is fine (Bazel's runfiles are symlinks): its content is what is hashed.
        data = _read_entry(bundle_dir, entry, lister, fix)
        check_content(
            str(bundle_dir / entry.path),
            data,
            entry,
            lister,
            manifest.chunk_bytes,
            fix,
            whole_digests=whole_digests,
        )
        if entry.path in keep:
            kept[entry.path] = data
    return kept


def parse_loadable_wrp(wrp_bytes, where: str | os.PathLike, fix: str, *, operations: bool = True):
    """The .wrp parsed whole, its operation stream included: every rule Warp's loader applies before it
    allocates or runs anything (apic_validate_operation_stream, the metadata and memory parsers), with
    the bounds of wrpkg/schemas/wrp_limits.json, which the C++ runtime applies too (runtime/internal/wrp_check.cc).
    A VerifyError naming `where`, the section, the byte and the rule (an operation's index among them)
    otherwise: verify refuses what a load would. `operations=False` (a load, which leaves the operation
    stream to Warp's own validator) parses the header, metadata and memory only."""
    # Imported here: `import wrpkg.reader.bundle` (which imports this module) stays cheap until a .wrp is checked.
    from wrpkg import wrpformat  # noqa: PLC0415

    try:
        return wrpformat.read_wrp(memoryview(wrp_bytes), path=where, operations=operations)
    except WrpFormatError as exc:
        raise VerifyError(exc.message, fix=exc.fix or fix) from exc


def verify_module_binaries(
    where: Callable[[str], str], manifest: Manifest, files: Mapping[str, bytes]
) -> None:
    """Each CUDA module binary as a load would take it: a fatbin's structure (container and entry headers,
    sizes inside the file), and every SASS image the manifest lists for it (what the per-device view hands
    the driver) there, uncompressed, of its recorded size and sha256, and an ELF cubin whose headers and
    sections lie inside it; a lone cubin (a single-SM capture) is that ELF itself. `where(path)` names a
    listed file in messages; runtime/internal/module_binaries.cc's CheckModuleBinaries, rule for rule."""
    fix = rebuild_fix(manifest)
    for module in manifest.modules:
        if manifest.device != "cuda" or module.binary_kind == "ptx":
            continue
        data = memoryview(files[module.binary])
        name = where(module.binary)
        if not is_fatbin(data):
            problem = elf_problem(data)
            if problem is not None:
                raise VerifyError(f"{name}: not a CUDA ELF cubin: {problem}", fix=fix)
            continue
        try:
            images = parse_fatbin(data, name)
        except BundleError as exc:
            raise VerifyError(exc.message, fix=fix) from exc
        for record in module.sass:
            found = [i for i in images if i.is_sass and i.arch == record.arch and not i.compressed]
            if len(found) != 1:
                raise VerifyError(
                    f"{name}: holds {len(found)} uncompressed SASS images for {record.arch}; {MANIFEST_NAME} "
                    "lists one",
                    fix=fix,
                )
            image = data[found[0].offset : found[0].offset + found[0].size]
            what = f"{name}: its {record.arch} image"
            if len(image) != record.size:
                raise VerifyError(
                    f"{what} is {len(image)} bytes; {MANIFEST_NAME} says {record.size}", fix=fix
                )
            check_digests([(what, image, record.sha256)], MANIFEST_NAME, fix)
            problem = elf_problem(image)
            if problem is not None:
                raise VerifyError(f"{what} is not a CUDA ELF cubin: {problem}", fix=fix)


def verify_against_wrp(
    bundle_dir: Path, manifest: Manifest, wrp_bytes: bytes | None = None, *, operations: bool = True
) -> None:
    """The manifest must describe the .wrp it ships: modules, digests, bindings, golden sizes; and the
    .wrp must be one Warp loads (parse_loadable_wrp). `wrp_bytes`: the .wrp's verified bytes (the module
    digests as built, not a device view's); `operations`: as for parse_loadable_wrp."""
    from wrpkg import wrpformat  # noqa: PLC0415 - see parse_loadable_wrp

    fix = rebuild_fix(manifest)
    wrp_path = bundle_dir / manifest.wrp
    if wrp_bytes is None:
        wrp_bytes = read_listed(bundle_dir, manifest, manifest.wrp)
    wrp = parse_loadable_wrp(wrp_bytes, wrp_path, fix, operations=operations)
    files = {entry.path: entry for entry in manifest.files}
    if manifest.wrp not in files:
        raise VerifyError(f"{wrp_path}: the .wrp is not listed in {MANIFEST_NAME}", fix=fix)

    def mismatch(what: str) -> VerifyError:
        return VerifyError(f"{bundle_dir / MANIFEST_NAME}: disagrees with {wrp_path}: {what}", fix=fix)

    wrp_device = "cuda" if wrp.is_cuda else "cpu"
    if wrp_device != manifest.device:
        raise mismatch(f"device {manifest.device} vs {wrp_device}")
    if wrp.metadata.producer_version != manifest.warp_version:
        raise mismatch(f"Warp version {manifest.warp_version} vs {wrp.metadata.producer_version}")
    if wrp.header.version != manifest.format_version:
        raise mismatch(f"format version {manifest.format_version} vs {wrp.header.version}")

    modules_dir = wrp_path.name[: -len(".wrp")] + "_modules"
    by_hash = {m.hash: m for m in manifest.modules}
    if sorted(by_hash) != sorted(m.hash for m in wrp.metadata.modules) or len(by_hash) != len(
        manifest.modules
    ):
        raise mismatch(
            f"modules {sorted(by_hash)} vs {sorted(m.hash for m in wrp.metadata.modules)} (by module hash)"
        )
    for record in wrp.metadata.modules:
        entry = by_hash[record.hash]
        binary = f"{modules_dir}/{record.binary_filename}"
        if entry.binary != binary or binary not in files:
            raise mismatch(f"module {record.name}: binary {entry.binary} vs {binary}")
        # CUDA records carry the binary's digest (Warp's loader checks it); CPU ones do not.
        if record.binary_sha256 and record.binary_sha256 != files[binary].sha256:
            raise VerifyError(
                f"{bundle_dir / binary}: sha256 {files[binary].sha256} but {wrp_path} "
                f"records {record.binary_sha256} for module {record.name}",
                fix=fix,
            )
        source = f"{modules_dir}/{record.source_filename}" if record.source_filename else None
        if entry.source != source or (source is not None and source not in files):
            raise mismatch(f"module {record.name}: source {entry.source} vs {source}")
        if source is not None and record.source_sha256 != files[source].sha256:
            raise VerifyError(
                f"{bundle_dir / source}: sha256 {files[source].sha256} but {wrp_path} "
                f"records {record.source_sha256} for module {record.name}",
                fix=fix,
            )

    wrp_bindings = {b.name: b for b in wrpformat.binding_infos(wrp)}
    man_bindings = {b.name: b for b in manifest.bindings}
    if sorted(wrp_bindings) != sorted(man_bindings):
        raise mismatch(f"bindings {sorted(man_bindings)} vs {sorted(wrp_bindings)}")
    for name, entry in man_bindings.items():
        record = wrp_bindings[name]
        if entry.bytes != record.byte_size:
            raise mismatch(f"binding {name}: {entry.bytes} bytes vs {record.byte_size} bytes")

    # Which names alias one allocation. Region numbers are the capture's labels, which the C++ runtime
    # cannot see (Warp does not expose them): both readers compare the aliasing, not the numbers.
    def partition(region_of: dict) -> set[frozenset]:
        groups: dict = {}
        for binding_name, region in region_of.items():
            groups.setdefault(region, set()).add(binding_name)
        return {frozenset(names) for names in groups.values()}

    manifest_regions = partition({n: e.region for n, e in man_bindings.items()})
    wrp_regions = partition({n: r.region_id for n, r in wrp_bindings.items()})
    if manifest_regions != wrp_regions:
        raise mismatch(
            f"bindings that share a region: {sorted(sorted(g) for g in manifest_regions if len(g) > 1)} vs "
            f"{sorted(sorted(g) for g in wrp_regions if len(g) > 1)}, alone: "
            f"{sorted(n for g in manifest_regions if len(g) == 1 for n in g)} vs "
            f"{sorted(n for g in wrp_regions if len(g) == 1 for n in g)}"
        )
    # Golden outputs against the bindings: attach_golden (golden.json's own checks, as in C++).


# The one grammar of a `<name>.sha256` file (runtime/bundle.cc's ParseHashFile): 64 lowercase hex digits,
# optionally two spaces and a name of printable ASCII (sha256sum's "<hex>  <name>/manifest.json"), then at
# most one final newline. A leading space, a tab or other control character as the separator, CRLF or a
# second line are refused (str.split took any of them, C++ some).
_HASH_FILE = re.compile(rb"([0-9a-f]{64})(?:  [\x20-\x7e]+)?\n?")


def parse_hash_file(data: bytes | bytearray, path: str | os.PathLike) -> str:
    """The content hash a `<name>.sha256` file's bytes `data` hold (_HASH_FILE), or a VerifyError naming `path`."""
    match = _HASH_FILE.fullmatch(data)
    if match is None:
        raise VerifyError(
            f"{path}: the content-hash file is not one line of 64 lowercase hex digits, optionally followed by "
            'two spaces and a name ("<sha256>  <name>/manifest.json")',
            fix=rebuild_fix(None),
        )
    # bytes.decode: a text-mode open looks the codec up (an import, in a fresh process).
    return match[1].decode("ascii")


def read_hash_file(path: str | os.PathLike) -> str:
    """The content hash from a `<name>.sha256` file (`HEX  <name>/manifest.json`): parse_hash_file."""
    return parse_hash_file(
        read_regular(path, "the content-hash file", rebuild_fix(None), MAX_JSON_BYTES), path
    )


def hash_file_candidates(bundle_dir: str | os.PathLike) -> list[Path]:
    """Where a `<dir>.sha256` pins the bundle reached as `bundle_dir`: beside the name the user
    gave (a symlink to the bundle included: the hash pinned beside the link must hold, else a
    link to a tampered bundle would carry the tampered bundle's own hash file, or none) and
    beside the resolved directory (`DIR/.`, `DIR/` and `.` run inside DIR all name DIR, and each
    must meet DIR's hash file). Both, without repeats; runtime/bundle.cc's HashFileCandidates."""
    parts = os.fspath(bundle_dir).split("/")
    while len(parts) > 1 and parts[-1] in ("", "."):
        parts.pop()
    candidates = []
    if parts[-1] not in ("", ".", ".."):
        head = "/".join(parts[:-1]) or ("/" if len(parts) > 1 else ".")
        candidates.append(Path(os.path.realpath(head)) / f"{parts[-1]}.sha256")
    resolved = Path(os.path.realpath(bundle_dir))
    if resolved != resolved.parent:
        candidates.append(resolved.parent / f"{resolved.name}.sha256")
    return list(dict.fromkeys(candidates))


def read_manifest(bundle_dir: str | os.PathLike, expected_hash: str | None = None) -> Manifest:
    """The bundle's manifest, checked against its content hash: `expected_hash`, or else the
    `<dir>.sha256` file next to the bundle directory when there is one (the layout the bundle
    action writes): that is what catches an edited manifest of a CPU bundle, whose .wrp holds
    no digests. Without either, the manifest must at least be in canonical form.

    Args:
      bundle_dir: the bundle directory.
      expected_hash: the content hash manifest.json must have; None: `<dir>.sha256` if present.

    Returns:
      The Manifest, golden.json's entries attached (no other file is read).

    Raises:
      VerifyError: manifest.json or golden.json is missing, malformed or not the expected one.
    """
    return read_manifest_and_hash(bundle_dir, expected_hash)[0]


def read_manifest_and_hash(
    bundle_dir: str | os.PathLike, expected_hash: str | None = None
) -> tuple[Manifest, str]:
    """read_manifest, and the content hash of the bytes it read (manifest.json is read once)."""
    bundle_dir = Path(bundle_dir)
    manifest_path = bundle_dir / MANIFEST_NAME
    if not bundle_dir.is_dir():
        raise VerifyError(
            f"{bundle_dir}: not a directory", fix="pass a bundle directory (e.g. bazel-bin/<pkg>/<name>)"
        )
    data = read_json_file(manifest_path, "the manifest", rebuild_fix(None))
    content_hash = content_hash_of_bytes(data)
    pinned = [(None, expected_hash)] if expected_hash is not None else []
    if expected_hash is None:
        # Anything there counts, not only a regular file: a FIFO or a dangling link must not turn
        # the check off; read_hash_file refuses it.
        pinned = [(p, read_hash_file(p)) for p in hash_file_candidates(bundle_dir) if os.path.lexists(p)]
        expected_hash = pinned[0][1] if pinned else None
    for where, pinned_hash in pinned:
        if content_hash != pinned_hash:
            raise VerifyError(
                f"{manifest_path}: content hash {content_hash} differs from the expected {pinned_hash}"
                + (f" (pinned in {where})" if where is not None else ""),
                fix=rebuild_fix(None) + "; the manifest was changed after the build",
            )
    manifest = from_json_bytes(data, manifest_path, canonical_check=expected_hash is None)
    golden_path = bundle_dir / GOLDEN_NAME
    golden_bytes = read_json_file(
        golden_path, "the test manifest", rebuild_fix(None) + " and copy the whole bundle directory"
    )
    manifest = attach_golden(manifest, golden_bytes, content_hash, golden_path)
    capture_info = bundle_dir / CAPTURE_INFO_NAME
    # Anything there counts (a FIFO, a device, a dangling link, a directory): only a regular file is read.
    if os.path.lexists(capture_info):
        fix = rebuild_fix(manifest) + " and copy the whole bundle directory"
        check_capture_info(
            read_regular(capture_info, "the capture provenance", fix, MAX_CAPTURE_INFO_BYTES), capture_info
        )
    return manifest, content_hash


# Files at least this large are read into an anonymous mapping (_fresh_buffer).
_MAPPED_READ_BYTES = 1 << 20


def _fresh_buffer(size: int) -> bytearray | mmap.mmap:
    """Writable memory for a file of `size` bytes. Large ones come from an anonymous mapping with
    MAP_POPULATE, whose pages are faulted in by one call: a bytearray is zero-filled and then
    faulted page by page by read(), about twice the time for a multi-megabyte .wrp."""
    if size < _MAPPED_READ_BYTES:
        return bytearray(size)
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_POPULATE", 0)
    return mmap.mmap(-1, size, flags=flags)


def read_listed(bundle_dir: str | os.PathLike, manifest: Manifest, path: str) -> bytearray | mmap.mmap:
    """The bytes of one listed file, of the manifest's size (not yet hashed: see read_verified),
    in writable memory of their own (wrpkg.reader.bundle patches the .wrp's digests in place, without a
    copy): a bytearray, or for a large file an anonymous mapping (`_fresh_buffer`)."""
    found = next(((e, lister) for e, lister in listed_files(manifest) if e.path == path), None)
    if found is None:
        raise VerifyError(
            f"{Path(bundle_dir) / path}: not listed in {MANIFEST_NAME}", fix=rebuild_fix(manifest)
        )
    return _read_entry(Path(bundle_dir), found[0], found[1], rebuild_fix(manifest))


def _read_entry(bundle_dir: Path, entry: FileEntry, lister: str, fix: str) -> bytearray | mmap.mmap:
    """read_listed's work: a regular file (open_regular) whose fstat size is the manifest's,
    checked before a byte is read, and which neither shrinks nor grows while read."""
    full = bundle_dir / entry.path
    fd, got = open_regular(full, f"a file listed in {lister}", fix)
    sized_right = got == entry.size
    with open(fd, "rb", buffering=0, closefd=True) as handle:
        try:
            if sized_right:
                data = _fresh_buffer(entry.size)
                view = memoryview(data)
                got = 0
                while got < entry.size and (step := handle.readinto(view[got:])):
                    got += step
                view.release()
                # A file that grew since fstat shows as too long.
                got += len(handle.read(1)) if got == entry.size else 0
        except OSError as exc:
            raise VerifyError(
                f"{full}: listed in {lister} but cannot be read ({exc.strerror})", fix=fix
            ) from exc
    if got != entry.size and sized_right:
        raise VerifyError(
            f"{full}: changed size while it was read ({'more than' if got > entry.size else 'only'} {got} "
            f"bytes, {lister} says {entry.size}); another process is writing the bundle",
            fix=fix,
        )
    if got != entry.size:
        raise VerifyError(f"{full}: {got} bytes, {lister} says {entry.size}", fix=fix)
    return data


def read_verified(bundle_dir: str | os.PathLike, manifest: Manifest, path: str) -> bytearray | mmap.mmap:
    """read_listed, checked against the manifest's digests (its chunks, when it has them)."""
    data = read_listed(bundle_dir, manifest, path)
    entry, lister = next((e, lister) for e, lister in listed_files(manifest) if e.path == path)
    where = str(Path(bundle_dir) / path)
    check_digests(digest_checks(where, data, entry, manifest.chunk_bytes), lister, rebuild_fix(manifest))
    return data


def read_bundle(
    bundle_dir: str | os.PathLike, expected_hash: str | None = None
) -> tuple[Manifest, str, dict[str, bytearray | mmap.mmap]]:
    """Runs every check of `wrpkg verify` (read_manifest_and_hash, verify_files,
    verify_against_wrp) and keeps what was checked: `wrpkg.Bundle.open`'s work.

    Args:
      bundle_dir: the bundle directory.
      expected_hash: the content hash manifest.json must have; None: `<dir>.sha256` beside the
        directory when there is one, else the manifest must be in canonical form.

    Returns:
      `(manifest, content_hash, files)`: the Manifest, the sha256 of the manifest.json bytes it
      was read from, and the verified bytes of every file either manifest lists, by manifest path.

    Raises:
      VerifyError: the bundle breaks a rule of docs/bundles.md ("Bundle validity").
    """
    manifest, content_hash = read_manifest_and_hash(bundle_dir, expected_hash)
    everything = frozenset(entry.path for entry, _ in listed_files(manifest))
    verified = verify_files(Path(bundle_dir), manifest, keep=everything)
    verify_against_wrp(Path(bundle_dir), manifest, verified[manifest.wrp])
    verify_module_binaries(lambda path: str(Path(bundle_dir) / path), manifest, verified)
    return manifest, content_hash, verified


def read_tar(
    tar_path: str | os.PathLike, expected_hash: str | None = None
) -> tuple[Manifest, str, dict[str, bytes]]:
    """A bundle's `<name>.tar` under the same policy as a directory (docs/bundles.md: bundle validity), as
    the C++ runtime reads an embedded bundle: the one `<name>/` holding manifest.json, every listed
    file with its size and sha256, nothing unlisted but capture.json. `wrpkg.Bundle.from_tar`'s work.

    Args:
      tar_path: the bundle's `<name>.tar`.
      expected_hash: the content hash manifest.json must have; None: the manifest must be in
        canonical form.

    Returns:
      `(manifest, content_hash, files)`: the Manifest, the sha256 of its manifest.json entry, and
      the verified bytes of every listed file, by manifest path.

    Raises:
      VerifyError: the archive or a file in it breaks a rule of docs/bundles.md.
    """
    tar_path = Path(tar_path)
    fd, _ = open_regular(tar_path, "the bundle archive", rebuild_fix(None))
    with open(fd, "rb", closefd=True) as handle:
        try:
            data = handle.read()
        except OSError as exc:
            raise VerifyError(f"{tar_path}: cannot read ({exc.strerror})", fix=rebuild_fix(None)) from exc
    entries, directories = ustar_entries(data, str(tar_path))
    manifests = [p for p in entries if p.count("/") >= 1 and p.split("/", 1)[1] == MANIFEST_NAME]
    if len(manifests) != 1:
        raise VerifyError(
            f"{tar_path}: holds {len(manifests)} <name>/{MANIFEST_NAME} entries, expected exactly one",
            fix=rebuild_fix(None),
        )
    manifest_bytes = entries[manifests[0]]
    prefix = manifests[0].split("/", 1)[0] + "/"
    origin = f"{tar_path}:{manifests[0]}"
    content_hash = content_hash_of_bytes(manifest_bytes)
    if expected_hash is not None and content_hash != expected_hash:
        raise VerifyError(
            f"{origin}: content hash {content_hash} differs from the expected {expected_hash}",
            fix=rebuild_fix(None) + "; the manifest was changed after the build",
        )
    manifest = from_json_bytes(manifest_bytes, origin)
    golden_path = f"{prefix}{GOLDEN_NAME}"
    if golden_path not in entries:
        raise VerifyError(f"{tar_path}:{golden_path}: missing", fix=rebuild_fix(None))
    manifest = attach_golden(manifest, entries[golden_path], content_hash, f"{tar_path}:{golden_path}")
    fix = rebuild_fix(manifest)
    capture_path = f"{prefix}{CAPTURE_INFO_NAME}"
    if capture_path in entries:
        size = len(entries[capture_path])
        if size > MAX_CAPTURE_INFO_BYTES:
            raise VerifyError(
                f"{tar_path}:{capture_path}: the capture provenance is {size} bytes, more than the "
                f"{MAX_CAPTURE_INFO_BYTES} allowed",
                fix=fix,
            )
        check_capture_info(entries[capture_path], f"{tar_path}:{capture_path}")
    if prefix != f"{manifest.name}/":
        raise VerifyError(
            f"{origin}: archive directory {prefix!r} does not match the name {manifest.name!r}", fix=fix
        )
    for directory in directories:
        if directory != manifest.name and not directory.startswith(prefix):
            raise VerifyError(
                f"{tar_path}: directory entry {shown(directory)}/ lies outside {prefix}", fix=fix
            )
    files = {}
    for path, content in entries.items():
        if not path.startswith(prefix):
            raise VerifyError(f"{tar_path}: entry {shown(path)} lies outside {prefix}", fix=fix)
        rel = path[len(prefix) :]
        if rel != MANIFEST_NAME:
            files[rel] = content
    listed = listed_files(manifest)
    _refuse_unlisted(files, listed, f"{tar_path}:{prefix}", fix)
    for entry, lister in listed:
        where = f"{tar_path}:{prefix}{entry.path}"
        if entry.path not in files:
            raise VerifyError(f"{where}: listed in {lister} but missing", fix=fix)
        check_content(where, files[entry.path], entry, lister, manifest.chunk_bytes, fix)
    # What a load of the archive would refuse, as for a directory (runtime/bundle.cc's VerifyAll checks the same).
    verify_against_wrp(Path(f"{tar_path}:{manifest.name}"), manifest, files[manifest.wrp])
    verify_module_binaries(lambda path: f"{tar_path}:{prefix}{path}", manifest, files)
    return manifest, content_hash, {e.path: files[e.path] for e, _ in listed}
