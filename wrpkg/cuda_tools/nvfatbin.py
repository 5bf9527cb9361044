"""nvFatbin: packing SASS and PTX images into one fatbin."""

from __future__ import annotations

import functools

from wrpkg.archs import Arch, parse_arch
from wrpkg.cuda_tools.pinning import INSTALL_FIX, load_pinned
from wrpkg.errors import CompileError


@functools.cache
def load_nvfatbin():
    library = load_pinned("nvfatbin")
    from cuda.bindings import nvfatbin

    api = nvfatbin.version()
    if ".".join(map(str, api)) != ".".join(library.version.split(".")[:2]):
        raise CompileError(
            f"{library.path} reports nvFatbin {api}, expected {library.version}", fix=INSTALL_FIX
        )
    return nvfatbin


def pack_fatbin(
    cubins: dict[Arch | str, bytes],
    ptx: tuple[Arch | str, bytes] | None = None,
    *,
    module: str = "<module>",
) -> bytes:
    """One fatbin holding every cubin (sorted by SM, for determinism) and optionally PTX.

    nvFatbin's defaults are kept: PTX is compressed, SASS is not. Each entry's identifier
    is its arch name, which cuobjdump shows.
    """
    entries = []
    for key, code in cubins.items():
        arch = parse_arch(key)
        if arch.is_ptx:
            raise CompileError(f"module {module}: {arch.name} given as a cubin", fix="pass PTX through `ptx`")
        if not code:
            raise CompileError(f"module {module}: the {arch.name} cubin is empty")
        entries.append((arch, bytes(code)))
    if len({a.name for a, _ in entries}) != len(entries):
        raise CompileError(f"module {module}: the same SM is given twice")
    entries.sort(key=lambda entry: (entry[0].sm, entry[0].suffix))
    ptx_entry = None
    if ptx is not None:
        ptx_arch, ptx_code = parse_arch(ptx[0]), bytes(ptx[1])
        if not ptx_arch.is_ptx:
            raise CompileError(f"module {module}: {ptx_arch.name} given as PTX", fix="name it compute_<N>")
        if not ptx_code:
            raise CompileError(f"module {module}: the {ptx_arch.name} PTX is empty")
        ptx_entry = (ptx_arch, ptx_code)
    if not entries and ptx_entry is None:
        raise CompileError(f"module {module}: nothing to pack into a fatbin")

    nvfatbin = load_nvfatbin()
    try:
        handle = nvfatbin.create([], 0)
    except nvfatbin.nvFatbinError as err:
        raise CompileError(f"module {module}: nvFatbinCreate failed: {err}") from None
    try:
        for arch, code in entries:
            nvfatbin.add_cubin(handle, code, len(code), arch.fatbin_arch, arch.name)
        if ptx_entry is not None:
            arch, code = ptx_entry
            nvfatbin.add_ptx(handle, code, len(code), arch.fatbin_arch, arch.name, "")
        size = nvfatbin.size(handle)
        out = bytearray(size)
        nvfatbin.get(handle, out)
    except nvfatbin.nvFatbinError as err:
        raise CompileError(f"module {module}: nvFatbin rejected the inputs: {err}") from None
    finally:
        nvfatbin.destroy(handle)
    return bytes(out)
