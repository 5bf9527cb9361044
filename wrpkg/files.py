"""Digests and directory listings of bundle and capture files, the one implementation of each."""

from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path


def sha256_bytes(data: bytes) -> str:
    """Lowercase hex sha256, the form .wrp records and manifests hold."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# A bundle's deepest entry is two folders down (<stem>_modules/..., golden/...); a tree much deeper is
# hostile, and is refused before it costs a walk (os.walk recurses: 1,000 levels raise RecursionError).
MAX_DEPTH = 64


def relative_entries(root: str | os.PathLike) -> list[tuple[str, bool]]:
    """Every entry under `root` as ('/'-joined relative path, is_directory), sorted by path.

    Symlinks are not followed: a link to a directory is listed as a non-directory entry, so
    a check that refuses anything but regular files sees it. A directory that cannot be listed
    raises its OSError (os.walk would skip it silently, and hide what it holds), and so does one
    nested deeper than MAX_DEPTH below `root`."""
    root = Path(root)
    found = []
    pending = [("", 0)]
    while pending:
        rel_dir, depth = pending.pop()
        directory = root / rel_dir if rel_dir else root
        if depth > MAX_DEPTH:
            raise OSError(errno.ELOOP, f"nested deeper than {MAX_DEPTH} directories", str(directory))
        with os.scandir(directory) as listing:
            entries = list(listing)
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            is_dir = entry.is_dir(follow_symlinks=False)
            found.append((rel, is_dir))
            if is_dir:
                pending.append((rel, depth + 1))
    return sorted(found)


def relative_files(root: str | os.PathLike) -> list[str]:
    """Every non-directory entry under `root`, as sorted '/'-joined relative paths."""
    return [rel for rel, is_dir in relative_entries(root) if not is_dir]
