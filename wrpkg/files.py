"""Digests and directory listings of bundle and capture files, the one implementation of each."""

from __future__ import annotations

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


def _raise(error: OSError) -> None:
    raise error


def relative_entries(root: str | os.PathLike) -> list[tuple[str, bool]]:
    """Every entry under `root` as ('/'-joined relative path, is_directory), sorted by path.

    Symlinks are not followed: a link to a directory is listed as a non-directory entry, so
    a check that refuses anything but regular files sees it. A directory that cannot be listed
    raises its OSError (os.walk would skip it silently, and hide what it holds)."""
    root = Path(root)
    found = []
    for dirpath, dirnames, filenames in os.walk(root, onerror=_raise):
        dirnames.sort()
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        for name in dirnames:
            is_link = os.path.islink(os.path.join(dirpath, name))
            found.append((name if rel_dir == "." else f"{rel_dir}/{name}", not is_link))
        for name in filenames:
            found.append((name if rel_dir == "." else f"{rel_dir}/{name}", False))
    return sorted(found)


def relative_files(root: str | os.PathLike) -> list[str]:
    """Every non-directory entry under `root`, as sorted '/'-joined relative paths."""
    return [rel for rel, is_dir in relative_entries(root) if not is_dir]
