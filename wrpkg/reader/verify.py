"""Check a bundle: every file against the manifest, and the manifest against the .wrp.

    wrpkg verify bazel-bin/models/sim_wrp
    wrpkg verify bazel-bin/models/sim_wrp.tar --expect-hash bazel-bin/models/sim_wrp.sha256

`wrpkg verify` opens the bundle as `wrpkg.Bundle.open` does (a `<name>.tar` as
`wrpkg.Bundle.from_tar`, which is how the C++ runtime reads an embedded bundle), which runs every check of bundle
validity (docs/bundles.md; wrpkg/reader/validity.py holds them, runtime/bundle.cc the C++ reader's
side): it passes only when every file manifest.json or golden.json lists is there with its
size and sha256, golden.json belongs to manifest.json's content hash, no other file is present
(capture.json aside), and the manifest agrees with the `.wrp` it describes. Any failure is a
VerifyError that names the file and says which target to rebuild.
"""

from __future__ import annotations

import os

from wrpkg.manifest import Manifest
from wrpkg.reader.bundle import Bundle
from wrpkg.reader.validity import read_hash_file


def verify_bundle(bundle_dir: str | os.PathLike, expected_hash: str | None = None) -> Manifest:
    """Runs every check of `wrpkg verify`: `wrpkg.Bundle.open(bundle_dir, expected_hash).manifest`.

    Args:
      bundle_dir: the bundle directory.
      expected_hash: the content hash manifest.json must have; None: `<dir>.sha256` beside the
        directory when there is one, else the manifest must be in canonical form.

    Returns:
      The bundle's Manifest.

    Raises:
      VerifyError: the bundle breaks a rule of docs/bundles.md ("Bundle validity").
    """
    return Bundle.open(bundle_dir, expected_hash).manifest


def verify_tar(tar_path: str | os.PathLike, expected_hash: str | None = None) -> Manifest:
    """A bundle's `<name>.tar` under the same policy as a directory, as the C++ runtime reads an
    embedded bundle: `wrpkg.Bundle.from_tar(tar_path, expected_hash).manifest`.

    Args:
      tar_path: the bundle's `<name>.tar`.
      expected_hash: the content hash manifest.json must have; None: the manifest must be in
        canonical form.

    Returns:
      The bundle's Manifest.

    Raises:
      VerifyError: the archive or a file in it breaks a rule of docs/bundles.md.
    """
    return Bundle.from_tar(tar_path, expected_hash).manifest


def configure_parser(parser) -> None:
    parser.add_argument("bundle", help="a bundle directory (holds manifest.json), or its <name>.tar")
    parser.add_argument(
        "--expect-hash",
        default=None,
        help="the content hash (hex) or a .sha256 file; default: <bundle>.sha256 next to a bundle directory, "
        "if present (a .tar without it must hold its manifest in canonical form)",
    )


def run(args) -> int:
    expected = args.expect_hash
    if expected is not None and os.path.isfile(expected):
        expected = read_hash_file(expected)
    if args.bundle.endswith(".tar") and os.path.isfile(args.bundle):
        bundle = Bundle.from_tar(args.bundle, expected)
    else:
        bundle = Bundle.open(args.bundle, expected)
    print(
        f"ok: {args.bundle}: {bundle.manifest.label}, {len(bundle.manifest.files)} files, "
        f"content hash {bundle.content_hash}"
    )
    return 0


if __name__ == "__main__":
    from wrpkg.cli import tool_main

    tool_main("wrpkg.reader.verify")
