"""cuobjdump: listing what a fatbin holds."""

from __future__ import annotations

import functools
import hashlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from wrpkg.cuda_tools.pinning import CUOBJDUMP_DIST, INSTALL_FIX, dist_files, pinned_distribution
from wrpkg.errors import CompileError


@functools.cache
def cuobjdump_path() -> Path:
    """The cuobjdump executable of the pinned nvidia-cuda-cuobjdump wheel."""
    dist = pinned_distribution(*CUOBJDUMP_DIST)
    candidates = [p for p in dist_files(dist, r"^cuobjdump$") if p.parent.name == "bin"]
    if len(candidates) != 1 or not os.access(candidates[0], os.X_OK):
        raise CompileError(
            f"{CUOBJDUMP_DIST[0]} does not hold one executable bin/cuobjdump (found {candidates})",
            fix=INSTALL_FIX,
        )
    return candidates[0]


@dataclass(frozen=True)
class FatbinEntry:
    kind: str  # "elf" (SASS) or "ptx"
    arch: str  # "sm_90a" for SASS, "compute_75" for PTX
    code_version: str  # "1.8" for ELF; the PTX ISA ("9.4") for PTX
    identifier: str
    compressed: bool


def fatbin_entries(data: bytes) -> list[FatbinEntry]:
    """What cuobjdump (pinned wheel) sees in a fatbin, in file order."""
    with tempfile.TemporaryDirectory(prefix="wrpkg-cuobjdump-") as tmp:
        path = Path(tmp) / f"{hashlib.sha256(data).hexdigest()[:16]}.fatbin"
        path.write_bytes(data)
        try:
            done = subprocess.run(
                [str(cuobjdump_path()), str(path)],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
                env={"PATH": os.defpath, "LC_ALL": "C"},
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            raise CompileError(f"cuobjdump could not run: {err}", fix=INSTALL_FIX) from None
    if done.returncode != 0:
        raise CompileError(f"cuobjdump rejected the fatbin ({len(data)} bytes): {done.stderr.strip()}")
    return _parse_cuobjdump(done.stdout)


def _parse_cuobjdump(text: str) -> list[FatbinEntry]:
    entries = []
    block: dict | None = None

    def flush():
        if block is not None:
            arch = block.get("arch", "?")
            if block["kind"] == "ptx":
                arch = arch.replace("sm_", "compute_", 1)
            version = block.get("code version", "").strip("[]").replace(",", ".")
            entries.append(
                FatbinEntry(block["kind"], arch, version, block.get("identifier", ""), block["compressed"])
            )

    for raw in text.splitlines():
        line = raw.strip()
        header = re.fullmatch(r"Fatbin (elf|ptx) code:", line)
        if header:
            flush()
            block = {"kind": header.group(1), "compressed": False}
        elif block is not None and line == "compressed":
            block["compressed"] = True
        elif block is not None and " = " in line:
            key, _, value = line.partition(" = ")
            block.setdefault(key.strip(), value.strip())
    flush()
    return entries


def fatbin_contents(data: bytes) -> list[str]:
    """Arch names in a fatbin, e.g. ['sm_75', 'sm_90', 'compute_75'] (cuobjdump's order)."""
    return [entry.arch for entry in fatbin_entries(data)]
