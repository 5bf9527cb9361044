#!/usr/bin/env python3
"""Downloads the .deb files of third_party/debian/repositories.bzl's DEBIAN_PACKAGES into a
directory, each checked against its pinned sha256: for a wheelhouse an offline machine
builds from (--repo_env=WRP_WHEELHOUSE=DIR). Stdlib only; skips a file already there with
the right hash.

    third_party/debian/fetch.py DIR
"""

from __future__ import annotations

import hashlib
import re
import sys
import urllib.request
from pathlib import Path

PINS = Path(__file__).with_name("repositories.bzl")
MIRROR = "https://deb.debian.org/debian/pool"


def pins() -> list[tuple[str, str, str]]:
    text = PINS.read_text()
    found = re.findall(r'file = "([^"]+)",\s*pool = "([^"]+)",\s*sha256 = "([0-9a-f]{64})"', text)
    # Each DEBIAN_PACKAGES entry is one struct(file, pool, sha256, build_file): a pin the pattern
    # misses (its fields reordered, say) must be an error here, not a package left out offline.
    entries = text.count(": struct(")
    if not found or len(found) != entries:
        raise SystemExit(
            f"fetch.py: read {len(found)} package pins (file, pool, sha256, in that order) of the "
            f"{entries} entries of DEBIAN_PACKAGES in {PINS}"
        )
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = Path(argv[0])
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, pool, sha256 in pins():
        out = out_dir / name
        if out.is_file() and hashlib.sha256(out.read_bytes()).hexdigest() == sha256:
            continue
        url = f"{MIRROR}/{pool}/{name}"
        data = urllib.request.urlopen(url, timeout=120).read()
        if hashlib.sha256(data).hexdigest() != sha256:
            raise SystemExit(f"fetch.py: {url} does not have the pinned sha256 {sha256} ({PINS})")
        partial = out.with_name(name + ".partial")
        partial.write_bytes(data)
        partial.replace(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
