"""Load a bundle with Warp, after verifying it and checking the device can run its code.

    graph, manifest = wrpkg.load.load("bazel-bin/models/sim_wrp", device="cuda:0")
    wp.capture_launch(graph)

Use this in place of a bare `wp.capture_load`: it checks every file against the manifest
(so a tampered or truncated file is named, instead of failing deep inside Warp), and on CUDA
it compares the device's SM with what the bundle holds before Warp tries to load it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from wrpkg.errors import ArchMismatchError
from wrpkg.manifest import Manifest
from wrpkg.verify import bundle_content_hash, verify_bundle

_SASS_RE = re.compile(r"sm_([0-9]+)([af]?)$")
_PTX_RE = re.compile(r"compute_([0-9]+)([af]?)$")


@dataclass
class DeviceFit:
    """How a device can run a bundle: `how` is "sass", "ptx", "source" or None (it cannot)."""

    how: str | None
    arch: str | None = None


def sass_runs_on(arch: str, device_sm: int) -> bool:
    """CUDA's SASS compatibility: a cubin for sm_XY runs on sm_XZ with Z >= Y (same major);
    `a` (arch-specific) runs on exactly that SM; `f` (family) on that SM and later members
    of its family (same major)."""
    match = _SASS_RE.match(arch)
    if not match:
        return False
    sm, suffix = int(match.group(1)), match.group(2)
    if suffix == "a":
        return sm == device_sm
    return sm // 10 == device_sm // 10 and sm % 10 <= device_sm % 10


def ptx_runs_on(arch: str, device_sm: int) -> bool:
    """PTX for compute_XY is JIT-compiled by the driver for any SM >= XY (plain PTX only:
    `a`/`f` PTX carries the same restrictions as the SASS)."""
    match = _PTX_RE.match(arch)
    if not match:
        return False
    sm, suffix = int(match.group(1)), match.group(2)
    if suffix:
        return sass_runs_on(f"sm_{sm}{suffix}", device_sm)
    return sm <= device_sm


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:2])


def driver_can_jit(manifest: Manifest, driver_version: tuple[int, int] | None) -> bool:
    """A driver JIT-compiles PTX only from a toolkit no newer than itself (ptx_min_driver)."""
    if manifest.ptx_min_driver is None or driver_version is None:
        return True
    return tuple(driver_version[:2]) >= _version_tuple(manifest.ptx_min_driver)


def device_fit(
    manifest: Manifest, device_sm: int, driver_version: tuple[int, int] | None = None
) -> DeviceFit:
    """The best way the device can run every module of the bundle.

    `driver_version` (major, minor) of the CUDA driver; None skips the PTX driver check."""
    sass = [a for a in manifest.sass_archs() if sass_runs_on(a, device_sm)]
    if sass:
        return DeviceFit("sass", sass[-1])
    ptx = [a for a in manifest.ptx_archs() if ptx_runs_on(a, device_sm)]
    if ptx and driver_can_jit(manifest, driver_version):
        return DeviceFit("ptx", ptx[-1])
    if manifest.has_source_fallback():
        return DeviceFit("source")
    return DeviceFit(None)


def arch_mismatch_message(
    label: str,
    content_hash: str,
    sass_archs: list[str],
    ptx_archs: list[str],
    has_source: bool,
    device_name: str,
    device_sm: int,
) -> str:
    """The error text when a bundle holds nothing the device can run (pure, for tests and C++ parity)."""
    holds_sass = ", ".join(sass_archs) if sass_archs else "none"
    holds_ptx = ", ".join(ptx_archs) if ptx_archs else "none"
    return (
        f"bundle {label} (content hash {content_hash}) has no code for this device.\n"
        f"  bundle holds: SASS {holds_sass}; PTX {holds_ptx}; CUDA source {'yes' if has_source else 'no'}\n"
        f"  device: {device_name} (sm_{device_sm})\n"
        f'  fix: add "sm_{device_sm}" to the archs attribute of {label} and rebuild it'
    )


def check_device(
    manifest: Manifest,
    content_hash: str,
    device_name: str,
    device_sm: int,
    driver_version: tuple[int, int] | None = None,
) -> DeviceFit:
    """Raises ArchMismatchError when the device can run neither SASS, PTX nor the source."""
    fit = device_fit(manifest, device_sm, driver_version)
    if fit.how is None:
        raise ArchMismatchError(
            arch_mismatch_message(
                manifest.label,
                content_hash,
                manifest.sass_archs(),
                manifest.ptx_archs(),
                manifest.has_source_fallback(),
                device_name,
                device_sm,
            )
            + _driver_note(manifest, driver_version)
        )
    return fit


def _driver_note(manifest: Manifest, driver_version: tuple[int, int] | None) -> str:
    if manifest.ptx_archs() and not driver_can_jit(manifest, driver_version):
        have = ".".join(map(str, driver_version[:2]))
        return (
            f"\n  note: its PTX needs a CUDA {manifest.ptx_min_driver} driver or newer to JIT; "
            f"this driver is CUDA {have}"
        )
    return ""


def load(bundle_dir: str | os.PathLike, device=None):
    """Verifies the bundle, checks the device, and returns `(wp.capture_load(...), manifest)`."""
    import warp as wp  # noqa: PLC0415 - keep `import wrpkg.load` cheap

    bundle_dir = Path(bundle_dir)
    manifest = verify_bundle(bundle_dir)
    dev = wp.get_device(device)
    if (manifest.device == "cuda") != dev.is_cuda:
        raise ArchMismatchError(
            f"bundle {manifest.label} was captured for {manifest.device}, but the load device is {dev}",
            fix=f"load it on a {manifest.device} device, or build a {'cpu' if dev.is_cpu else 'cuda'} "
            f"variant of {manifest.label}",
        )
    if dev.is_cuda:
        check_device(
            manifest, bundle_content_hash(bundle_dir), dev.name, dev.arch, wp.get_cuda_driver_version()
        )
    graph = wp.capture_load(str(bundle_dir / manifest.wrp), device=dev)
    return graph, manifest
