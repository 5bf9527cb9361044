"""Make a bundle's golden outputs on a GPU: replay the unchanged bundle there and write its goldens.

A retargeted CUDA capture makes its goldens by replaying the CPU capture, and a GPU rounds
differently (fused multiply-adds, other math), orders atomics differently, and runs tile code
cooperatively: its replay need not match those goldens bit for bit, or at all
(wrpkg.capture.golden_caveats). This tool opens the built bundle (wrpkg.Bundle: verified once, its
bytes held), loads those bytes on a CUDA device, replays them twice from fresh loads, and writes
a copy of the bundle whose deployed files are those bytes (same content hash) and whose golden
files and golden.json come from that replay (golden_device "cuda"). A CPU bundle can be
replayed on the CPU the same way. The two replays must agree within each output's
declared tolerance, as at capture. The report compares the new goldens with the old ones per
output, so the CPU goldens' error is on record.

    python -m wrpkg.reader.regolden --bundle-dir B --content-hash B.sha256 --device cuda \
        --out-dir B_test --out-hash B_test.sha256 --tar B_test.tar --report B_test.golden_report.txt

Bazel runs it for wrp_artifact's replay tests under --//rules:gpu_goldens (set by --config=gpu),
on the gpu pool (rules/private/golden.bzl).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

from wrpkg import atomic, cli, warp_internals
from wrpkg.build.pack import write_deterministic_tar
from wrpkg.errors import CaptureError, VerifyError
from wrpkg.files import sha256_bytes
from wrpkg.golden import compare, first_disagreement, golden_tolerance
from wrpkg.manifest import CAPTURE_INFO_NAME, GOLDEN_NAME, MANIFEST_NAME, Manifest, golden_to_json_bytes
from wrpkg.reader.bundle import Bundle
from wrpkg.reader.validity import read_hash_file


def _replay_outputs(bundle: Bundle, device) -> dict[str, bytes]:
    """One fresh load of the bundle's verified bytes (this device's SASS) and replay: each golden output's bytes."""
    return warp_internals.replay_outputs(
        bundle.load(device), [g.name for g in bundle.manifest.golden], device
    )


def _dtypes(manifest: Manifest) -> dict[str, str]:
    return {b.name: b.dtype for b in manifest.bindings}


def regolden(
    bundle_dir: str | os.PathLike,
    content_hash_file: str | os.PathLike,
    device: str,
    out_dir: str | os.PathLike,
    out_hash: str | os.PathLike,
    tar_path: str | os.PathLike,
    report_path: str | os.PathLike | None = None,
) -> list[str]:
    """Replays the bundle on `device` and writes the copy with goldens made there.

    Args:
      bundle_dir: the built bundle directory (verified in full first).
      content_hash_file: its <name>.sha256.
      device: a CUDA device ("cuda", "cuda:1").
      out_dir: the bundle copy to write: the same deployed files, new golden files and golden.json.
      out_hash: a copy of the content hash file, beside out_dir (wrpkg.reader.bundle looks for it there).
      tar_path: the deterministic tar of out_dir (what C++ targets embed).
      report_path: where to write the per-output comparison of the old goldens with the new.
    Returns:
      The report's lines.
    Raises:
      VerifyError: the bundle does not verify. CaptureError: no CUDA device, or two replays disagree.
    """
    import warp as wp  # noqa: PLC0415 - only this tool's run needs Warp

    from wrpkg.warp_init import init_warp  # noqa: PLC0415

    bundle_dir, out_dir = Path(bundle_dir), Path(out_dir)
    expected = read_hash_file(content_hash_file)
    bundle = Bundle.open(bundle_dir, expected)
    manifest = bundle.manifest
    what = f"{manifest.label or bundle_dir}: making goldens on a GPU (--//rules:gpu_goldens)"
    init_warp(wp)
    if manifest.device == "cuda" and wp.get_cuda_device_count() == 0:
        raise CaptureError(
            f"{what}: no CUDA device is visible to this action",
            fix="run it on a GPU runner (bazel test --config=gpu, or --config=remote with a gpu pool), "
            "or leave --//rules:gpu_goldens off to test against the capture's own goldens",
        )
    try:
        dev = wp.get_device(device)
    except (RuntimeError, ValueError) as exc:
        raise CaptureError(
            f"{what}: device {device!r}: {exc}", fix=f"pass --device {manifest.device}"
        ) from exc
    if ("cuda" if dev.is_cuda else "cpu") != manifest.device:
        raise CaptureError(
            f"{what}: the bundle is a {manifest.device} bundle and {device!r} is not a {manifest.device} device",
            fix=f"pass --device {'cuda' if manifest.device == 'cuda' else 'cpu'}",
        )
    first = _replay_outputs(bundle, dev)
    second = _replay_outputs(bundle, dev)
    dtypes = _dtypes(manifest)
    tolerances = {g.name: golden_tolerance(g) for g in manifest.golden if golden_tolerance(g) is not None}
    disagreement = first_disagreement(first, second, tolerances, dtypes)
    if disagreement is not None:
        name, verdict = disagreement
        raise CaptureError(
            f"{what}: output '{name}' differs between two replays on {dev} ({verdict.detail}): the "
            "step is not deterministic on this GPU, so no golden value can hold a replay to it",
            fix=f"declare a tolerance for '{name}' in the capture's CaptureSpec that covers the "
            f"run-to-run spread, or make the step deterministic; then {bundle.rebuild_hint}",
        )

    where = f"{dev} ({dev.name}, sm_{dev.arch})" if dev.is_cuda else str(dev)
    report = [f"goldens of {manifest.label} made on {where}; before: {manifest.golden_device}"]
    new_golden = []
    for golden in manifest.golden:
        old = bytes(bundle.file(golden.file))
        data = first[golden.name]
        verdict = compare(old, data, golden_tolerance(golden), dtypes.get(golden.name))
        report.append(f"  {golden.name}: {manifest.golden_device} golden vs {dev}: {verdict.detail}")
        new_golden.append(replace(golden, bytes=len(data), sha256=sha256_bytes(data)))
    regoldened = replace(manifest, golden=new_golden, golden_device="cuda" if dev.is_cuda else "cpu")

    with atomic.staged(
        out_dir, VerifyError, what, f"{out_dir} and its tar were left as they were", "run the build again"
    ) as staging:
        work = staging / bundle_dir.name
        work.mkdir()
        # The deployed files from the bytes that were verified and replayed; manifest.json (checked
        # against the content hash below) and capture.json (unhashed provenance) as they are.
        for entry in manifest.files:
            (work / entry.path).parent.mkdir(parents=True, exist_ok=True)
            (work / entry.path).write_bytes(bundle.file(entry.path))
        shutil.copyfile(bundle_dir / MANIFEST_NAME, work / MANIFEST_NAME)
        if (bundle_dir / CAPTURE_INFO_NAME).is_file():
            shutil.copyfile(bundle_dir / CAPTURE_INFO_NAME, work / CAPTURE_INFO_NAME)
        (work / "golden").mkdir()
        for golden in new_golden:
            (work / golden.file).write_bytes(first[golden.name])
        (work / GOLDEN_NAME).write_bytes(golden_to_json_bytes(regoldened, expected))
        staged_tar = staging / "bundle.tar"
        write_deterministic_tar(work, manifest.name, staged_tar)
        staged_hash = staging / "bundle.sha256"
        shutil.copyfile(content_hash_file, staged_hash)
        atomic.publish_dir(work, out_dir)
        atomic.publish_file(staged_tar, Path(tar_path))
        atomic.publish_file(staged_hash, Path(out_hash))
    # The copy must be the same bundle: same content hash, and it verifies with its new goldens.
    Bundle.open(out_dir, expected)
    if report_path is not None:
        atomic.write_file(Path(report_path), ("\n".join(report) + "\n").encode())
    return report


def configure_parser(parser) -> None:
    parser.add_argument("--bundle-dir", required=True, help="the built bundle directory")
    parser.add_argument("--content-hash", required=True, help="its <name>.sha256")
    parser.add_argument("--device", default="cuda", help="the CUDA device to replay on (default: cuda)")
    parser.add_argument("--out-dir", required=True, help="the bundle copy with goldens made on the GPU")
    parser.add_argument("--out-hash", required=True, help="the content hash file beside --out-dir")
    parser.add_argument("--tar", required=True, help="the deterministic tar of --out-dir")
    parser.add_argument("--report", help="per output: the old goldens against the new")


def run(args) -> int:
    report = regolden(
        args.bundle_dir, args.content_hash, args.device, args.out_dir, args.out_hash, args.tar, args.report
    )
    print("\n".join(report))
    return 0


if __name__ == "__main__":
    cli.tool_main("wrpkg.reader.regolden")
