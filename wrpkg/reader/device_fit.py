"""Does a CUDA device run a bundle, and with what: per module the closest SASS, else PTX the
driver can JIT, else the retained source (runtime/internal/arch.cc's twin), and the message, word
for word the C++ runtime's, when some module can run none of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from wrpkg.archs import split_arch
from wrpkg.errors import ArchMismatchError
from wrpkg.manifest import Manifest


@dataclass
class ModuleFit:
    """How the device runs one module: `how` is "sass", "ptx", "source" or None (it cannot)."""

    module: str
    how: str | None
    arch: str | None = None
    problem: str | None = None


@dataclass
class DeviceFit:
    """How a device runs a bundle: "sass" when every module has native code, "ptx" or "source"
    when some module compiles at load time, None when some module cannot run at all."""

    how: str | None
    modules: list[ModuleFit]


def _same_family_or_later(sm: int, device_sm: int) -> bool:
    return sm // 10 == device_sm // 10 and sm % 10 <= device_sm % 10


def sass_runs_on(arch: str, device_sm: int) -> bool:
    """CUDA's SASS compatibility: a cubin for sm_XY runs on sm_XZ with Z >= Y (same major);
    `a` (arch-specific) runs on exactly that SM; `f` (family) likewise within its major."""
    parsed = split_arch(arch)
    if parsed is None or parsed.is_ptx:
        return False
    if parsed.suffix == "a":
        return parsed.sm == device_sm
    return _same_family_or_later(parsed.sm, device_sm)


def ptx_runs_on(arch: str, device_sm: int) -> bool:
    """PTX for compute_XY is JIT-compiled for any SM >= XY; `a` PTX only for that SM and
    `f` PTX only within its family."""
    parsed = split_arch(arch)
    if parsed is None or not parsed.is_ptx:
        return False
    if parsed.suffix == "a":
        return parsed.sm == device_sm
    if parsed.suffix == "f":
        return _same_family_or_later(parsed.sm, device_sm)
    return parsed.sm <= device_sm


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:2])


def _format_version(version) -> str:
    return "unknown" if version is None else ".".join(str(v) for v in tuple(version)[:2])


def driver_can_jit(manifest: Manifest, driver_version: tuple[int, int] | None) -> bool:
    """A driver JIT-compiles PTX only from a toolkit no newer than itself (ptx_min_driver)."""
    if manifest.ptx_min_driver is None or driver_version is None:
        return True
    return tuple(driver_version[:2]) >= _version_tuple(manifest.ptx_min_driver)


def device_fit(
    manifest: Manifest, device_sm: int, driver_version: tuple[int, int] | None = None
) -> DeviceFit:
    """Per module, the best code the device can run: the closest SASS, else PTX (when the
    driver can JIT it), else the retained source. The same decision as runtime/internal/arch.cc."""
    device = f"sm_{device_sm}"
    modules = []
    for module in manifest.modules:
        runnable = [s.arch for s in module.sass if sass_runs_on(s.arch, device_sm)]
        if runnable:
            best = max(runnable, key=lambda a: split_arch(a).sm)
            modules.append(ModuleFit(module.name, "sass", best))
            continue
        why = ""
        if module.ptx is not None:
            if not ptx_runs_on(module.ptx.arch, device_sm):
                why = f"PTX {module.ptx.arch} is newer than {device}"
            elif not driver_can_jit(manifest, driver_version):
                why = (
                    f"PTX {module.ptx.arch} needs driver CUDA >= "
                    f"{_format_version(_version_tuple(manifest.ptx_min_driver))}, "
                    f"the device's driver is CUDA {_format_version(driver_version)}"
                )
            else:
                modules.append(ModuleFit(module.name, "ptx", module.ptx.arch))
                continue
        if module.source is not None:
            modules.append(ModuleFit(module.name, "source"))
            continue
        problem = f"module {module.name} ({module.hash[:8]}): no SASS for {device}"
        held = [s.arch for s in module.sass]
        if held:
            problem += f" (has {_join(held)})"
        if module.ptx is None:
            problem += ", no PTX"
        if module.source is None:
            problem += ", no CUDA source"
        if why:
            problem += f"; {why}"
        modules.append(ModuleFit(module.name, None, problem=problem))
    hows = [m.how for m in modules]
    if not modules or None in hows:
        how = None
    elif all(h == "sass" for h in hows):
        how = "sass"
    else:
        how = "ptx" if "ptx" in hows and "source" not in hows else "source"
    return DeviceFit(how, modules)


def _join(items: list[str]) -> str:
    """ "a, b and c", as runtime/internal/arch.cc's JoinList writes lists."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def bundle_title(label: str, content_hash: str) -> str:
    """How a bundle is named in messages (runtime/bundle.cc's Bundle::Title)."""
    return f"bundle {label} (content sha256 {content_hash[:16]}...)"


def arch_mismatch_message(
    manifest: Manifest,
    content_hash: str,
    device_alias: str,
    device_name: str,
    device_sm: int,
    driver_version: tuple[int, int] | None,
    fit: DeviceFit | None = None,
) -> str:
    """The error text when a bundle holds nothing the device can run: word for word what
    the C++ runtime says (runtime/internal/arch.cc), so a user sees one message from either side."""
    fit = fit or device_fit(manifest, device_sm, driver_version)
    sass = sorted({s.arch for m in manifest.modules for s in m.sass})
    ptx = sorted({m.ptx.arch for m in manifest.modules if m.ptx is not None})
    holds = "SASS " + (_join(sass) if sass else "none") + ", PTX " + (_join(ptx) if ptx else "none")
    if ptx and manifest.ptx_min_driver:
        holds += f" (needs driver CUDA >= {_format_version(_version_tuple(manifest.ptx_min_driver))})"
    holds += ", CUDA source" if any(m.source is not None for m in manifest.modules) else ", no CUDA source"
    lines = [
        f"{bundle_title(manifest.label, content_hash)} has no code that runs on {device_alias} "
        f'"{device_name}" (sm_{device_sm}, driver CUDA {_format_version(driver_version)}).',
        f"  the bundle holds: {holds}",
        *(f"  {m.problem}" for m in fit.modules if m.how is None),
        f'fix: add "sm_{device_sm}" to the archs attribute of {manifest.label} and rebuild it',
    ]
    return "\n".join(lines)


def check_device(
    manifest: Manifest,
    content_hash: str,
    device_alias: str,
    device_name: str,
    device_sm: int,
    driver_version: tuple[int, int] | None = None,
) -> DeviceFit:
    """Raises ArchMismatchError when some module can run neither SASS, PTX nor its source."""
    fit = device_fit(manifest, device_sm, driver_version)
    if fit.how is None:
        raise ArchMismatchError(
            arch_mismatch_message(
                manifest, content_hash, device_alias, device_name, device_sm, driver_version, fit
            )
        )
    return fit
