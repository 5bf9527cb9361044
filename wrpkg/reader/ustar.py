"""The POSIX ustar archives a bundle's `<name>.tar` is, read as runtime/internal/ustar.cc reads them:
regular files and directories only, each path once and plain, a long path only in a pax extended
header of one `path` record (wrpkg.reader.validity.read_tar checks the bundle inside).
"""

from __future__ import annotations

from wrpkg.errors import VerifyError
from wrpkg.names import decode_name, is_control, shown
from wrpkg.strict_json import plain_relpath_problem

_BLOCK = 512
# The largest pax extended header read: one path record of a few hundred bytes is what the bundler writes.
PAX_HEADER_MAX_BYTES = 65536
# Tar types a bundle archive never holds, named in the refusal (any other is refused as "tar type 'c'").
_TYPE_NAMES = {b"g": "a pax global header", b"L": "a GNU long name", b"K": "a GNU long link name"}


def _octal(field: bytes) -> int | None:
    """A ustar numeric field as runtime/internal/ustar.cc reads it: leading spaces, octal digits, NUL or space."""
    text = field.lstrip(b" ")
    end = min([i for i in (text.find(b"\0"), text.find(b" ")) if i >= 0], default=len(text))
    digits = text[:end]
    if not digits or any(c not in b"01234567" for c in digits) or len(digits) > 21:
        return None
    return int(digits, 8)


def _shown(raw: bytes) -> str:
    """Bytes of an archive that are no name (a pax key) for a message, as runtime/internal/ustar.cc's ShownBytes spells
    them: printable ASCII as it is, any other byte as \\xNN (a name: wrpkg.names.shown)."""
    return "".join(chr(b) if 0x20 <= b < 0x7F else f"\\x{b:02x}" for b in raw)


def pax_path_problem(path: str) -> str | None:
    """Why `path` (a pax path record's value, decoded as UTF-8) cannot name a bundle archive entry, or
    None: it holds a control character (U+0000-U+001F, U+007F-U+009F). runtime/internal/ustar.cc's rule too."""
    if any(is_control(ord(c)) for c in path):
        return "its path holds a control character"
    return None


def _pax_path(payload: bytes) -> str:
    """The path of a pax extended header's records ("<length> <key>=<value>\\n", the length in decimal
    without a leading zero, counting the whole record), which must be exactly one `path` record and
    nothing else, its value strict UTF-8 without NUL or control characters. Raises ValueError with the
    problem; runtime/internal/ustar.cc's PaxPath, check for check."""
    size = len(payload)
    path = None
    pos = 0
    while pos < size:
        at = f"record at byte {pos} of the header"
        i, length = pos, 0
        while i < size and 0x30 <= payload[i] <= 0x39:
            if i == pos and payload[i] == 0x30:
                raise ValueError(f"{at}: its length has a leading zero")
            length = length * 10 + payload[i] - 0x30
            if length > size:
                raise ValueError(f"{at} runs past the end of the header")
            i += 1
        if i == pos:
            raise ValueError(f"{at} does not start with a decimal length")
        if i == size or payload[i] != 0x20:
            raise ValueError(f"{at}: its length is not followed by a space")
        if length > size - pos:
            raise ValueError(f"{at} runs past the end of the header")
        end = pos + length
        if end < i + 2 or payload[end - 1] != 0x0A:
            raise ValueError(f"{at} does not end with a newline")
        record = payload[i + 1 : end - 1]
        equals = record.find(b"=")
        if equals <= 0:
            raise ValueError(f"{at} is not <key>=<value>")
        key, value = record[:equals], record[equals + 1 :]
        if key != b"path":
            raise ValueError(
                f"key '{_shown(key)}' is not allowed (a bundle archive's pax headers carry only 'path')"
            )
        if path is not None:
            raise ValueError("it holds 'path' twice")
        if b"\0" in value:
            raise ValueError("its path holds a NUL byte")
        try:
            path = value.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("its path is not valid UTF-8") from None
        problem = pax_path_problem(path)
        if problem is not None:
            raise ValueError(problem)
        pos = end
    if path is None:
        raise ValueError("it holds no 'path' record")
    return path


def ustar_entries(data: bytes, origin: str) -> tuple[dict[str, bytes], list[str]]:
    """Regular-file entries of a ustar archive, by path, and the directory entries' paths (without
    their trailing '/'), with runtime/internal/ustar.cc's rules: ustar magic, header checksums, sizes inside
    the archive, regular files and directories only, each path once. Every path, a directory's too,
    must be a plain relative path (strict_json.plain_relpath_problem), each path once (a directory's too,
    and none at a file's path), and a directory has no payload: an extractor would otherwise create or
    write what no check saw.

    A path too long for ustar's name and prefix fields comes in a pax extended header (type 'x') just
    before its entry: exactly one `path` record (strict UTF-8, no control character), at most
    PAX_HEADER_MAX_BYTES, followed by a regular file or directory (_pax_path). Every name, ustar or pax,
    is strict UTF-8 and a name by wrpkg.names (no control character or backslash, in NFC), so one decoded
    path is one byte string, as C++ compares them; messages show names escaped (wrpkg.names.shown)."""
    fix = "rebuild the wrp_artifact target that produced this archive"
    if len(data) % _BLOCK:
        raise VerifyError(
            f"{origin}: not a ustar archive: size {len(data)} is not a multiple of 512", fix=fix
        )
    entries: dict[str, bytes] = {}
    directories: list[str] = []
    seen_directories: set[str] = set()
    pax: tuple[int, str] | None = None  # (its header's offset, the path) for the entry that follows
    offset = 0
    while offset + _BLOCK <= len(data):
        header = data[offset : offset + _BLOCK]
        if header == bytes(_BLOCK):
            break
        where = f"{origin}: tar header at byte {offset}"
        if header[257:262] != b"ustar":
            raise VerifyError(f'{where}: missing "ustar" magic (only POSIX ustar archives are read)', fix=fix)
        recorded = _octal(header[148:156])
        if recorded is None or recorded != sum(header[:148]) + 8 * ord(" ") + sum(header[156:]):
            raise VerifyError(f"{where}: header checksum mismatch", fix=fix)
        typeflag = header[156:157]
        if pax is not None and typeflag not in (b"0", b"\0", b"5"):
            following = "another pax header" if typeflag == b"x" else f"an entry of tar type {typeflag!r}"
            raise VerifyError(
                f"{origin}: pax extended header at byte {pax[0]} is followed by {following}, "
                "not by the regular file or directory it names",
                fix=fix,
            )
        if pax is not None:
            path = pax[1]
            pax = None
        else:
            name = header[:100].split(b"\0", 1)[0]
            prefix = header[345:500].split(b"\0", 1)[0]
            raw = prefix + b"/" + name if prefix else name
            try:
                path = decode_name(raw)
            except ValueError as exc:
                raise VerifyError(f"{where}: entry name '{shown(raw)}' {exc}", fix=fix) from None
        size = _octal(header[124:136])
        if size is None:
            raise VerifyError(f"{where} ({shown(path)}): unreadable size field", fix=fix)
        offset += _BLOCK
        if size > len(data) - offset:
            raise VerifyError(
                f"{origin}: entry {shown(path)} claims {size} bytes but only {len(data) - offset} remain "
                "(truncated archive)",
                fix=fix,
            )
        if typeflag == b"x":
            if size > PAX_HEADER_MAX_BYTES:
                raise VerifyError(
                    f"{where}: pax extended header of {size} bytes, over the limit of {PAX_HEADER_MAX_BYTES}",
                    fix=fix,
                )
            try:
                pax = (offset - _BLOCK, _pax_path(data[offset : offset + size]))
            except ValueError as exc:
                raise VerifyError(
                    f"{origin}: pax extended header at byte {offset - _BLOCK}: {exc}", fix=fix
                ) from None
        elif typeflag in (b"0", b"\0"):
            problem = plain_relpath_problem(path)
            if problem is not None:
                raise VerifyError(f"{origin}: entry path {problem}", fix=fix)
            if path in entries or path in seen_directories:
                raise VerifyError(f"{origin}: entry {shown(path)} appears twice", fix=fix)
            entries[path] = data[offset : offset + size]
        elif typeflag == b"5":
            # ustar writes a directory as "a/b/"; only that one trailing '/' is its spelling.
            directory = path[:-1] if path.endswith("/") else path
            problem = plain_relpath_problem(directory)
            if problem is not None:
                raise VerifyError(f"{origin}: directory entry path {problem}", fix=fix)
            if size:
                raise VerifyError(
                    f"{origin}: directory entry {shown(path)} carries a {size}-byte payload; a directory has none",
                    fix=fix,
                )
            # Each entry once, directories too (docs/bundles.md): a second one is a second thing to extract there.
            if directory in entries or directory in seen_directories:
                raise VerifyError(f"{origin}: entry {shown(path)} appears twice", fix=fix)
            seen_directories.add(directory)
            directories.append(directory)
        else:
            what = f" ({_TYPE_NAMES[typeflag]})" if typeflag in _TYPE_NAMES else ""
            raise VerifyError(
                f"{origin}: entry {shown(path)} has tar type {typeflag!r}{what}; bundles hold only regular files "
                "and directories",
                fix=fix,
            )
        offset += (size + _BLOCK - 1) // _BLOCK * _BLOCK
    if pax is not None:
        raise VerifyError(
            f"{origin}: pax extended header at byte {pax[0]} is followed by no entry (end of archive)",
            fix=fix,
        )
    return entries, directories
