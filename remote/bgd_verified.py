"""BuildGrid's `bgd`, with its disk storage checking every blob it reads against its digest.

BuildGrid 0.4.4 checks an upload against its digest but reads a stored blob back as it lies on
disk, and has no setting to check it. A blob that rotted there (a bad sector, a partial write,
a hand) would be served for its digest: to a worker as an action's input, to Bazel as a cached
output. Here a read hashes the file first; a blob that does not match is logged naming it,
deleted, and answered as missing, so a client uploads it again (Bazel re-uploads what Execute
reports missing, and re-executes an action whose cached outputs are gone) and the cluster is
whole again without a hand step. Bazel checks what it downloads too (--remote_verify_downloads,
on by default); a worker's casd checks what it fetches.

    bgd_verified.py server start CONFIG     (as `bgd`; remote/cluster.py starts it so)
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import sys

from buildgrid.server.app import cli
from buildgrid.server.cas.storage.disk import DiskStorage
from buildgrid.server.logging import buildgrid_logger

LOGGER = buildgrid_logger(__name__)
CHUNK = 1 << 20


def _matches(path: str, digest) -> bool:
    hasher = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            hasher.update(chunk)
            size += len(chunk)
    return size == digest.size_bytes and hasher.hexdigest() == digest.hash


def _refuse(storage: DiskStorage, digest) -> None:
    LOGGER.error(
        f"CAS blob {digest.hash}/{digest.size_bytes} does not match its digest on disk: deleted, "
        "answered as missing (it is uploaded again)"
    )
    try:
        os.unlink(storage._get_object_path(digest))
    except OSError:
        pass


def get_blob(self: DiskStorage, digest):
    path = self._get_object_path(digest)
    try:
        if not _matches(path, digest):
            _refuse(self, digest)
            return None
        return io.BufferedReader(open(path, "rb"))
    except FileNotFoundError:
        return None


def bulk_read_blobs(self: DiskStorage, digests) -> dict[str, bytes]:
    result = {}
    for digest in digests:
        try:
            with open(self._get_object_path(digest), "rb") as f:
                data = f.read()
        except FileNotFoundError:
            continue  # reported as NOT_FOUND higher up
        if len(data) == digest.size_bytes and hashlib.sha256(data).hexdigest() == digest.hash:
            result[digest.hash] = data
        else:
            _refuse(self, digest)
    return result


DiskStorage.get_blob = get_blob
DiskStorage.bulk_read_blobs = bulk_read_blobs

if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\.pyw|\.exe)?$", "", sys.argv[0])
    sys.exit(cli())
