"""The per-device view of a CUDA bundle: its .wrp with each module's digest pointing at the one
SASS image the device runs, and those images taken out of the multi-arch fatbins, so Warp's
per-load SHA-256 of a module covers one image, not every SM's (wrpkg.reader.bundle hands it to
`wp.capture_load_from_bytes`). A bundle opened with verify_all=False reads only what the view
needs, hashing the .wrp on another thread while the images are taken out and Warp parses.
"""

from __future__ import annotations

import _thread
import mmap
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from wrpkg.errors import BundleError, VerifyError
from wrpkg.manifest import MANIFEST_NAME, FileEntry, Manifest, ModuleEntry, SassEntry
from wrpkg.reader.device_fit import DeviceFit
from wrpkg.reader.fatbin import elf_problem, is_fatbin, sass_image
from wrpkg.reader.validity import DigestCheck, check_digests, digest_checks, rebuild_fix, verify_against_wrp

# A `bundle` below is a wrpkg.Bundle, unannotated: bundle.py imports this module, and an import of
# it here, even for type checking, would make the two Bazel libraries depend on each other.


class _Background:
    """Runs `work` on another thread, at once. `_thread`, not `threading`: Thread.start() waits
    for the new thread to signal it runs, 0.3-1 ms in a fresh process, longer than the work it
    would hide; a bare thread starts in under 0.1 ms. hashlib and file reads let go of the GIL,
    so the work runs while the loading thread takes images out of fatbins and Warp parses."""

    def __init__(self, work: Callable[[], None]):
        self._done = _thread.allocate_lock()
        self._done.acquire()
        self._failure: VerifyError | None = None
        self._error: Exception | None = None
        _thread.start_new_thread(self._run, (work,))

    def _run(self, work: Callable[[], None]) -> None:
        try:
            work()
        except VerifyError as exc:
            self._failure = exc
        except Exception as exc:  # noqa: BLE001 - raised again on the waiting thread
            self._error = exc
        finally:
            self._done.release()

    def wait(self) -> VerifyError | None:
        """Waits for the work; the VerifyError it raised, or None. Any other error is raised."""
        with self._done:
            pass
        if self._error is not None:
            raise self._error
        return self._failure


# A .wrp at least this large is read on the hashing thread, while the loading thread takes the images
# out of their fatbins; a smaller one is read first, on the loading thread: on the H200 host, handing
# sim's 0.3 MB .wrp to another thread took longer than reading it (tools/bench/load_profile.py).
_BACKGROUND_READ_BYTES = 1 << 20


class BackgroundWrp(_Background):
    """Reads a bundle's .wrp and checks its digests on another thread (a small .wrp is read before
    the thread starts: `_BACKGROUND_READ_BYTES`). `read()` waits only for the bytes, which the
    loading thread may then patch: the pieces overlapping METADATA (where the view patches) are
    hashed from copies taken before `read()` returns."""

    def __init__(self, bundle):
        self._read = _thread.allocate_lock()
        self._read.acquire()
        self.wrp: bytearray | mmap.mmap | None = None
        self.metadata: tuple[int, int] | None = None
        entry = bundle.entry(bundle.manifest.wrp)
        fix = bundle.rebuild_hint
        if entry.size >= _BACKGROUND_READ_BYTES:
            super().__init__(lambda: check_digests(self._read_stable(bundle, entry), MANIFEST_NAME, fix))
            return
        checks = self._read_stable(bundle, entry)
        super().__init__(lambda: check_digests(checks, MANIFEST_NAME, fix))

    def _read_stable(self, bundle, entry: FileEntry) -> list[DigestCheck]:
        """Reads the .wrp (`self.wrp`); its digest checks, stable against the view's patch."""
        try:
            wrp = bundle.read_unverified(entry.path)
            checks = digest_checks(bundle.describe(entry.path), wrp, entry, bundle.manifest.chunk_bytes)
            self.metadata = _metadata_span(wrp)
            if self.metadata is not None:
                piece_bytes = bundle.manifest.chunk_bytes if entry.chunk_sha256 else len(wrp)
                checks = _stable_against_patch(checks, self.metadata, piece_bytes)
            self.wrp = wrp
            return checks
        finally:
            self._read.release()

    def read(self) -> bytearray | mmap.mmap:
        """The .wrp's bytes, once read (the VerifyError naming it when it cannot be)."""
        with self._read:
            pass
        if self.wrp is None:
            failure = self.wait()
            if failure is not None:
                raise failure
        return self.wrp


@dataclass
class DeviceView:
    """What `wp.capture_load_from_bytes` is given: the .wrp with each module's binary digest
    pointing at the device's image, and those images by their recorded filenames. `pending`: the
    .wrp's digest checks, when they are still being hashed on another thread. The images are not
    hashed here: Warp checks each against the digest the view writes (`image_failure()` names the
    one it refused), as the C++ runtime's view does."""

    wrp: bytearray | mmap.mmap
    modules: dict[str, bytes]  # each module's image (a copy: the file may change)
    image_checks: list[DigestCheck] = field(default_factory=list)
    fix: str = ""  # what a VerifyError about these bytes tells the user to do
    pending: _Background | None = None

    def wrp_failure(self) -> VerifyError | None:
        """Waits for the .wrp's digests; the VerifyError naming the piece that differs, or None."""
        return self.pending.wait() if self.pending is not None else None

    def image_failure(self) -> VerifyError | None:
        """Hashes the images; the VerifyError naming one that differs from the manifest, or None."""
        try:
            check_digests(self.image_checks, MANIFEST_NAME, self.fix)
        except VerifyError as exc:
            return exc
        return None

    def verify(self) -> None:
        """Everything Warp is handed, checked here (where no Warp will check the images): the
        .wrp's digests, then the images'. Raises the VerifyError naming what differs."""
        failure = self.wrp_failure() or self.image_failure()
        if failure is not None:
            raise failure


# The .wrp's header and section table (Warp 1.19, format 18), just enough to find METADATA, the
# section holding the module records and their binary digests.
_WRP_HEADER = struct.Struct("<4sIIIQ")  # magic, format version, flags, section count, table offset
_WRP_SECTION = struct.Struct("<IIQQQ")  # type, flags, offset, size, uncompressed size
_METADATA = 1


def _metadata_span(wrp: bytearray) -> tuple[int, int] | None:
    """Where the METADATA section lies, or None when the header is not one Warp 1.19 writes."""
    if len(wrp) < _WRP_HEADER.size:
        return None
    magic, _, _, count, table = _WRP_HEADER.unpack_from(wrp, 0)
    if magic != b"WRP1" or table + count * _WRP_SECTION.size > len(wrp):
        return None
    for i in range(count):
        kind, _, offset, size, _ = _WRP_SECTION.unpack_from(wrp, table + i * _WRP_SECTION.size)
        if kind == _METADATA and offset + size <= len(wrp):
            return offset, offset + size
    return None


def _patch_digest(wrp: bytearray, old: str, new: str) -> bool:
    """Replaces the length-prefixed digest string `old` by `new` in place (same length, so no
    offset in the file moves). False unless `old` occurs exactly once in METADATA: the module
    records are there, and searching only there spares scanning megabytes of launches."""
    span = _metadata_span(wrp)
    if span is None:
        return False
    start, end = span
    needle = struct.pack("<I", len(old)) + old.encode("ascii")
    at = wrp.find(needle, start, end)
    if at < 0 or wrp.find(needle, at + 1, end) >= 0:
        return False
    wrp[at + 4 : at + len(needle)] = new.encode("ascii")
    return True


# One module's image for the device: (module, its SASS record, a copy of the image's bytes).
_DeviceImage = tuple[ModuleEntry, SassEntry, bytes]


def device_images(
    manifest: Manifest, fit: DeviceFit, fatbins: Mapping[str, bytes | memoryview]
) -> list[_DeviceImage] | None:
    """Each module's image for the device, taken out of its fatbin and copied (so what Warp gets
    is what gets checked even if the file changes meanwhile), checked against the manifest's size
    for that SM but not yet hashed. None when some module's image cannot be taken out on its own."""
    if fit.how != "sass" or len(fit.modules) != len(manifest.modules):
        return None
    images = []
    for module, choice in zip(manifest.modules, fit.modules, strict=True):
        # A bundle made from a single-arch capture keeps Warp's own cubin: it loads as it is.
        if not is_fatbin(fatbins[module.binary]):
            return None
        try:
            found = sass_image(fatbins[module.binary], choice.arch, what=module.binary)
        except BundleError as exc:  # a malformed fatbin: the VerifyError a load promises
            raise VerifyError(exc.message, fix=exc.fix) from exc
        if found is None:
            return None
        image = bytes(found)
        found.release()  # a view into the caller's (possibly mapped) file
        (record,) = [s for s in module.sass if s.arch == choice.arch]
        if len(image) != record.size:
            raise VerifyError(
                f"{module.binary}: its {choice.arch} image is {len(image)} bytes; manifest.json says {record.size}",
                fix=rebuild_fix(manifest),
            )
        # What the driver parses first, checked as verify checks it (verify_module_binaries).
        problem = elf_problem(image)
        if problem is not None:
            raise VerifyError(
                f"{module.binary}: its {choice.arch} image is not a CUDA ELF cubin: {problem}",
                fix=rebuild_fix(manifest),
            )
        images.append((module, record, image))
    return images


def _image_checks(images: Sequence[_DeviceImage]) -> list[DigestCheck]:
    return [
        (f"{module.binary}: its {record.arch} image", image, record.sha256)
        for module, record, image in images
    ]


def patched_view(
    manifest: Manifest, wrp: bytearray | mmap.mmap, images: Sequence[_DeviceImage]
) -> DeviceView | None:
    """The view: `wrp` with each module's digest replaced, in place, by its image's. None when a
    module's digest is not where expected (exactly once in METADATA)."""
    digests = {entry.path: entry.sha256 for entry in manifest.files}
    modules = {}
    for module, record, image in images:
        if not _patch_digest(wrp, digests[module.binary], record.sha256):
            return None
        modules[module.binary.rsplit("/", 1)[-1]] = image
    return DeviceView(wrp, modules, _image_checks(images), rebuild_fix(manifest))


def device_view(
    manifest: Manifest, fit: DeviceFit, wrp: bytes, fatbins: Mapping[str, bytes | memoryview]
) -> DeviceView | None:
    """The per-device view of a CUDA bundle whose every module has SASS for the device
    (`fit.how == "sass"`). `wrp`: the .wrp (a bytearray is patched in place, else copied; its
    own digests are the caller's to check); `fatbins`: each module binary's bytes by manifest
    path, not yet verified: the image taken out of each is copied, and the copy is checked
    against the manifest's size and sha256 for that SM (VerifyError when it differs). None when
    some module's image cannot be taken out on its own (no exact uncompressed entry, or its
    digest is not where expected): then load the bundle as it is.

    The view loads without source fallback (Warp's from-bytes loader has none), which is why
    it is only made when native code fits every module."""
    images = device_images(manifest, fit, fatbins)
    if images is None:
        return None
    check_digests(_image_checks(images), MANIFEST_NAME, rebuild_fix(manifest))
    return patched_view(manifest, wrp if isinstance(wrp, bytearray) else bytearray(wrp), images)


def read_view(bundle, fit: DeviceFit) -> DeviceView | None:
    """Reads what the per-device view hands Warp, and nothing else: the .wrp, read and then
    hashed on another thread from the start (`BackgroundWrp`), and each module's image, taken
    out of its fatbin meanwhile. The view patches the .wrp's module digests in place; the pieces
    holding them are hashed from a copy (with chunk digests, one 256 KiB chunk rather than the
    whole .wrp). `DeviceView.verify()` waits for that hash and checks the images too."""
    manifest = bundle.manifest
    wrp_job = BackgroundWrp(bundle)
    try:
        # Each fatbin is read once into memory of its own, never mapped: a mapped file that another
        # process shrinks kills the reader with SIGBUS at the first page past its new end (issue 40).
        # Read, a file that changes size is a VerifyError naming it (validity._read_entry).
        fatbins = {
            module.binary: memoryview(bundle.read_unverified(module.binary)) for module in manifest.modules
        }
        images = device_images(manifest, fit, fatbins)
        wrp = wrp_job.read()
        if images is not None:
            # The manifest against the .wrp as built (before the view patches its module digests), as
            # verify checks it: one verdict (issue 40). The bytes are not hashed yet: a .wrp that differs
            # from its digest is reported as that (the except below), not as what the parse found.
            verify_against_wrp(bundle.directory, manifest, wrp, operations=False)
        view = None if images is None else patched_view(manifest, wrp, images)
    except VerifyError as refusal:
        failure = wrp_job.wait()
        if failure is not None and failure is not refusal:
            raise failure from refusal
        raise
    if view is None:  # Bundle.load verifies every file instead
        wrp_job.wait()
        return None
    view.pending = wrp_job
    return view


def _stable_against_patch(
    checks: list[DigestCheck], span: tuple[int, int], piece_bytes: int
) -> list[DigestCheck]:
    """`checks` (consecutive pieces of the .wrp, `piece_bytes` each) with every piece that overlaps
    `span` (the METADATA section, which the view patches) replaced by a copy of its bytes now."""
    start, end = span
    stable = []
    for i, (what, piece, expected) in enumerate(checks):
        lo = i * piece_bytes
        hi = lo + len(piece)
        stable.append((what, bytes(piece) if lo < end and start < hi else piece, expected))
    return stable
