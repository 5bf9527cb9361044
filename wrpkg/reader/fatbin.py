"""Read the images of a CUDA fatbin: what wrpkg.reader.bundle hands Warp in place of the whole fatbin.

A bundle's module binary is a fatbin with SASS for every listed SM plus PTX. Warp 1.19
SHA-256-checks a packaged module's whole file before every load (when the record carries a
digest, that is when source fallback is kept), at well below memory speed; the driver then
picks one image. Handing Warp only the device's image, already verified, skips both.

Layout (little-endian, as nvFatbin writes it and cuobjdump reads it): a 16-byte container
header (magic 0xBA55ED50, u16 version 1, u16 header size, u64 size of the entries that
follow), then entries, each a header of at least 64 bytes (u16 kind: 1 PTX, 2 ELF; u16
version; u32 header size; u64 payload size; u32 compressed size; ...; u32 SM at byte 28;
u32 name offset and u32 name length at 32 and 36, the name inside the header; u64 flags at
40; u64 uncompressed size at 56) followed by its payload. nvFatbin compresses PTX but not
SASS; an entry with any compression marker is reported as compressed and never extracted.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from wrpkg.errors import BundleError

MAGIC = 0xBA55ED50
KIND_PTX = 1
KIND_ELF = 2
_CONTAINER = struct.Struct("<IHHQ")
_ENTRY = struct.Struct("<HHIQIIHHIIIQQQ")  # the 64 bytes every entry header starts with
# Flag bits that mark a compressed payload (older and newer fatbin writers use different ones).
_COMPRESSED_FLAGS = 0x2000 | 0x8000


@dataclass(frozen=True)
class FatbinImage:
    """One entry: `arch` is its name ("sm_90", "sm_90a", "compute_75"); `offset` and `size`
    locate its payload in the fatbin."""

    kind: int
    arch: str
    sm: int
    compressed: bool
    offset: int
    size: int

    @property
    def is_sass(self) -> bool:
        return self.kind == KIND_ELF


def is_fatbin(data: bytes | memoryview) -> bool:
    """True when `data` starts with a fatbin container header (a plain cubin or PTX does not)."""
    return len(data) >= 4 and struct.unpack_from("<I", data, 0)[0] == MAGIC


def _bad(what: str, offset: int, rule: str) -> BundleError:
    return BundleError(
        f"{what}: fatbin at byte {offset}: {rule}",
        fix="rebuild the wrp_artifact target that produced this bundle",
    )


def parse_fatbin(data: bytes | memoryview, what: str = "<fatbin>") -> list[FatbinImage]:
    """Every entry of every container in `data`, in file order. Raises BundleError naming
    `what` when the bytes are not a well-formed fatbin."""
    view = memoryview(data)
    images = []
    offset = 0
    while offset < len(view):
        if len(view) - offset < _CONTAINER.size:
            raise _bad(what, offset, "truncated container header")
        magic, version, header_size, body_size = _CONTAINER.unpack_from(view, offset)
        if magic != MAGIC:
            raise _bad(what, offset, f"magic {magic:#x}, expected {MAGIC:#x}")
        if version != 1 or header_size < _CONTAINER.size:
            raise _bad(what, offset, f"unknown container version {version} / header size {header_size}")
        start = offset + header_size
        end = start + body_size
        if end > len(view):
            raise _bad(what, offset, f"container of {body_size} bytes runs past the end ({len(view)} bytes)")
        entry = start
        while entry < end:
            if end - entry < _ENTRY.size:
                raise _bad(what, entry, "truncated entry header")
            fields = _ENTRY.unpack_from(view, entry)
            kind, _, entry_header, payload, compressed_size = fields[:5]
            sm, name_offset, name_length, flags, _, uncompressed = fields[8:]
            if kind not in (KIND_PTX, KIND_ELF):
                raise _bad(what, entry, f"unknown entry kind {kind}")
            if entry_header < _ENTRY.size or entry + entry_header + payload > end:
                raise _bad(
                    what, entry, f"entry (header {entry_header}, payload {payload}) overruns its container"
                )
            if name_length and name_offset + name_length > entry_header:
                raise _bad(what, entry, "entry name lies outside its header")
            raw_name = bytes(view[entry + name_offset : entry + name_offset + name_length]).rstrip(b"\0")
            try:
                name = raw_name.decode("ascii")
            except UnicodeDecodeError:
                raise _bad(what, entry, f"entry name {raw_name!r} is not ASCII") from None
            compressed = bool(flags & _COMPRESSED_FLAGS) or compressed_size != 0 or uncompressed != 0
            images.append(FatbinImage(kind, name, sm, compressed, entry + entry_header, payload))
            entry += entry_header + payload
        offset = end
    return images


def sass_image(data: bytes | memoryview, arch: str, what: str = "<fatbin>") -> memoryview | None:
    """The payload of the SASS entry named exactly `arch` ("sm_90" is not "sm_90a"), or None
    when there is none or it is compressed (the caller then hands over the whole fatbin)."""
    view = memoryview(data)
    for image in parse_fatbin(view, what):
        if image.is_sass and image.arch == arch and not image.compressed:
            payload = view[image.offset : image.offset + image.size]
            if bytes(payload[:4]) != b"\x7fELF":
                raise _bad(what, image.offset, f"the {arch} entry is not an ELF cubin")
            return payload
    return None


# ELF64 as a cubin is written: little-endian, e_machine EM_CUDA; runtime/internal/module_binaries.cc's ElfProblem, rule for rule.
_ELF_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
_ELF_SECTION = struct.Struct("<IIQQQQIIQQ")
_EM_CUDA = 190
_SHT_NOBITS = 8


def elf_problem(image: bytes | memoryview) -> str | None:
    """Why `image` is not a well-formed CUDA ELF (a cubin), or None: its header (ELF64, little-endian,
    version 1, EM_CUDA, header and table entry sizes) and every program and section header within it,
    and each section's bytes (but NOBITS ones) inside the image. What a driver parses before it runs a
    byte of code; a changed instruction inside a section is no structural fault (docs/security.md)."""
    size = len(image)
    if size < _ELF_HEADER.size:
        return f"{size} bytes, shorter than an ELF header"
    ident, _, machine, version, _, phoff, shoff, _, ehsize, phentsize, phnum, shentsize, shnum, shstrndx = (
        _ELF_HEADER.unpack_from(image, 0)
    )
    if ident[:4] != b"\x7fELF":
        return "no ELF magic"
    if ident[4] != 2 or ident[5] != 1 or ident[6] != 1 or version != 1:
        return "not a little-endian ELF64 of version 1"
    if machine != _EM_CUDA:
        return f"ELF machine {machine}, not CUDA ({_EM_CUDA})"
    if ehsize != _ELF_HEADER.size:
        return f"ELF header size {ehsize}, not {_ELF_HEADER.size}"
    if phnum and (phentsize != 56 or phoff > size or phnum * 56 > size - phoff):
        return f"{phnum} program headers at byte {phoff} lie outside the image"
    if shnum and (shentsize != _ELF_SECTION.size or shoff > size or shnum * _ELF_SECTION.size > size - shoff):
        return f"{shnum} section headers at byte {shoff} lie outside the image"
    if shnum and shstrndx >= shnum:
        return f"section-name table index {shstrndx} is not below the section count {shnum}"
    for i in range(shnum):
        kind, offset, length = _section_span(image, shoff + i * _ELF_SECTION.size)
        if kind != _SHT_NOBITS and (offset > size or length > size - offset):
            return f"section {i} ({length} bytes at byte {offset}) lies outside the image"
    return None


def _section_span(image, at: int) -> tuple[int, int, int]:
    """(sh_type, sh_offset, sh_size) of the section header at byte `at`."""
    _, kind, _, _, offset, length, *_ = _ELF_SECTION.unpack_from(image, at)
    return kind, offset, length
