"""A Warp kernel cache made once per pinned toolchain and shared by every capture that seeds from it.

    python -m wrpkg.capture.kernel_cache --package newton [--package mujoco_warp] --out-dir DIR \\
        [--cuda-arch 90] [--label //models/newton:kernels]

A capture compiles every Warp module its step launches (on the CPU, and for a retargeted
capture also for the CUDA SM it writes), and under Bazel each capture action starts from an
empty cache in its sandbox: six Newton targets compiled Newton's modules six times. This tool
imports the named packages (every submodule that imports), compiles each Warp module they
define with the capture's own settings (`use_kernel_cache`: its CPU flags, its
machine-independent source paths), and writes Warp's kernel cache folder (`DIR/<warp version>/`)
plus `DIR/kernel_cache.json`, which lists what it compiled and what it left to the captures.

A capture given `--seed-cache DIR` (`wrp_artifact(kernel_cache = ...)`) starts from a copy of
that folder made of links (`seed()`), so it compiles only what the seed lacks: kernels made at
run time, generic kernels' new overloads, modules of other packages. The seed changes no byte
of a bundle: Warp names a module's cache folder by its module hash, which covers the source and
options and no path, and what the capture retains is read back from it as if it had compiled
it itself (tests/test_kernel_cache.py holds a seeded capture equal to an unseeded one).

Retargeted CUDA compiles (no GPU, `compile_cuda_variant`) live beside Warp's in
`<cache>/wrpkg_retarget/<module id>.sm<arch>/`, so a seeded or repeated retarget compiles a
module once too.
"""

from __future__ import annotations

import fnmatch
import importlib
import json
import os
import pkgutil
import shutil
import sys
import tempfile
import traceback
from pathlib import Path

from wrpkg import atomic, warp_internals
from wrpkg.capture import call_sites, crash_watch
from wrpkg.errors import WrpError
from wrpkg.warp_init import init_warp

KERNEL_CACHE_SCHEMA = "rules_warp.kernel_cache/1"
RETARGET_DIR = "wrpkg_retarget"
MANIFEST = "kernel_cache.json"

# Submodules whose import runs a program or needs what a step never imports: test folders and
# test modules (MuJoCo Warp's collision_driver_test.py sits beside the code it tests).
_SKIPPED_PARTS = {"tests", "test", "examples", "viewer", "__main__"}


def _is_skipped(name: str) -> bool:
    parts = name.split(".")[1:]
    return bool(_SKIPPED_PARTS & set(parts)) or parts[-1].endswith("_test") or parts[-1].startswith("test_")


class KernelCacheError(WrpError):
    """A kernel cache cannot be made, or a seed does not fit this Warp."""


def _warp_cache_dir() -> Path:
    import warp as wp  # noqa: PLC0415

    return Path(wp.config.kernel_cache_dir)


# Warp 1.19's default CPU flags start with -march=native: the .o would use the build host's
# ISA extensions (and not run on an older CPU), and its file name carries a hash of the
# host's CPU features, so the bundle's content hash would depend on the machine. A generic
# target with Warp's other default flags makes CPU bundles portable and reproducible.
PORTABLE_CPU_COMPILER_FLAGS = "-mllvm=-inline-threshold=9000 -mllvm=-inline-cold-callsite-threshold=3000 -mllvm=-slp-recursion-max-depth=4"


def cache_path(work: Path, cache_dir) -> Path:
    """The kernel cache use_kernel_cache() points Warp at."""
    return work / ".kernel_cache" if cache_dir is None else Path(cache_dir)


def use_kernel_cache(wp, work: Path, cache_dir) -> Path | None:
    """Points Warp's kernel cache at `cache_dir`, or at a temp dir inside the work dir (never
    $HOME), which it returns for removal before publishing."""
    own_cache = cache_dir is None
    cache = cache_path(work, cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    # Warp's greeting and per-module load lines are noise in a build log.
    wp.config.log_level = wp.LOG_WARNING
    wp.config.cpu_compiler_flags = PORTABLE_CPU_COMPILER_FLAGS
    if warp_internals.context().runtime is None:
        wp.config.kernel_cache_dir = str(cache)
        init_warp(wp)
    else:
        warp_internals.private("build").init_kernel_cache(str(cache))
    from wrpkg.capture import source_paths  # noqa: PLC0415 - imports Warp

    source_paths.install_stable_header_paths()
    return cache if own_cache else None


# --- seeding a capture's own cache -------------------------------------------------------------


def seed(seeds: list[str | os.PathLike], target: str) -> int:
    """Links every file of each seed's Warp cache folder into Warp's current kernel cache (which
    must be this process's own, writable one): folders are made, files are symbolic links, and
    a file the cache already has is kept. Returns the number of files linked."""
    import warp as wp  # noqa: PLC0415

    cache = _warp_cache_dir()
    linked = 0
    for seed_dir in seeds:
        root = Path(seed_dir)
        version_dir = root / wp.config.version
        if not version_dir.is_dir():
            made_with = _manifest_warp(root)
            raise KernelCacheError(
                f"{target}: kernel cache seed {root} has no folder for Warp {wp.config.version}"
                + (
                    f" (it was made with Warp {made_with})" if made_with else " (it is no wrpkg kernel cache)"
                ),
                fix="rebuild the wrp_kernel_cache target with the toolchain the capture runs with, "
                "or drop kernel_cache from the wrp_artifact",
            )
        for dirpath, _dirnames, filenames in os.walk(version_dir):
            relative = Path(dirpath).relative_to(version_dir)
            (cache / relative).mkdir(parents=True, exist_ok=True)
            for name in filenames:
                link = cache / relative / name
                if link.is_symlink() and not link.exists():
                    link.unlink()  # a link left by an earlier seed that is gone
                if not link.exists():
                    os.symlink(os.path.abspath(os.path.join(dirpath, name)), link)
                    linked += 1
    return linked


def _manifest_warp(root: Path) -> str | None:
    try:
        return json.loads((root / MANIFEST).read_text())["warp"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


# --- retargeted CUDA compiles -----------------------------------------------------------------


def compile_cuda_variant(module, block_dim: int, arch: int, options: dict) -> Path:
    """The folder holding Warp's compile of `module` for sm_<arch> (its binary, `.meta` and
    `.cu`, as `Module._compile` writes them), compiled now unless the kernel cache has it."""
    folder = (
        _warp_cache_dir() / RETARGET_DIR / f"{module.get_module_identifier(block_dim=block_dim)}.sm{arch}"
    )
    if folder.is_dir():
        return folder
    crash_watch.phase(f"compiling CUDA module {module.name} for sm_{arch}")
    folder.parent.mkdir(parents=True, exist_ok=True)
    build_dir = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
    try:
        module._compile(None, str(build_dir), output_arch=arch, use_ptx=False, options=options)
        try:
            os.rename(build_dir, folder)
        except OSError:
            if not folder.is_dir():  # another process filled it first otherwise
                raise
    finally:
        shutil.rmtree(build_dir, ignore_errors=True)
    return folder


def stabilize_sources(cache: Path, paths: dict[str, str]) -> list[dict]:
    """Rewrites the absolute source paths of `paths` left in the generated code of every module
    folder under `cache` (as a capture's canonicalize_sources does for its own modules), and
    removes a folder whose code or binary still names a machine path: a capture seeded with it
    would refuse itself ("still names the machine-specific path"); without it, it compiles that
    module itself. Returns the removed folders, with why."""
    from wrpkg.capture import source_paths  # noqa: PLC0415 - imports Warp

    dropped = []
    folders = [p for p in cache.glob("wp_*") if p.is_dir()] + [
        p for p in (cache / RETARGET_DIR).glob("wp_*") if p.is_dir()
    ]
    for folder in sorted(folders):
        left = None
        for path in sorted(folder.iterdir()):
            if path.suffix in (".cu", ".cpp"):
                text, left = source_paths.stable_text(path.read_text(encoding="utf-8"), paths)
                path.write_text(text, encoding="utf-8")
            elif path.suffix in (".o", ".cubin", ".ptx"):
                left = source_paths.binary_machine_path(
                    path.read_bytes(), paths, cpu_object=path.suffix == ".o"
                )
            if left is not None:
                break
        if left is not None:
            shutil.rmtree(folder)
            dropped.append(
                {"folder": str(folder.relative_to(cache)), "reason": f"names a machine path: {left[:200]}"}
            )
    return dropped


# --- making a kernel cache --------------------------------------------------------------------


def _import_all(package: str, target: str) -> tuple[list[str], list[dict]]:
    """Imports `package` and its submodules; returns (imported, skipped with the reason)."""
    try:
        root = importlib.import_module(package)
    except Exception as exc:  # the library's own import
        raise KernelCacheError(
            f"{target}: importing {package} raised {type(exc).__name__}: {exc}",
            fix=f"add {package} (and what it needs) to the pinned requirements, or drop it from packages",
        ) from exc
    imported, skipped = [package], []
    for info in pkgutil.walk_packages(
        getattr(root, "__path__", []), package + ".", onerror=lambda _name: None
    ):
        if _is_skipped(info.name):
            continue
        try:
            importlib.import_module(info.name)
            imported.append(info.name)
        except Exception as exc:  # an optional dependency the pinned venv lacks
            skipped.append({"module": info.name, "reason": f"{type(exc).__name__}: {exc}"[:300]})
    return imported, skipped


def build(
    packages: list[str],
    out_dir: str | os.PathLike,
    cuda_arch: int | None = None,
    label: str | None = None,
    with_cpu: bool = True,
    exclude: tuple[str, ...] = (),
) -> dict:
    """Compiles every Warp module that `packages` define into a new kernel cache at `out_dir`
    (replaced as a whole, or left as it was): for the CPU unless `with_cpu` is False, and for
    sm_<cuda_arch> as a retargeted capture compiles (wrp_kernel_cache runs the two as two actions,
    so that CPU captures need not wait for NVRTC). Modules whose name matches a glob of `exclude`
    are left to the captures. Returns the manifest it wrote."""
    target = label or "wrpkg.capture.kernel_cache"
    if not packages:
        raise KernelCacheError(f"{target}: no package named", fix="name at least one, e.g. --package newton")
    if not with_cpu and cuda_arch is None:
        raise KernelCacheError(
            f"{target}: nothing to compile (--no-cpu without --cuda-arch)", fix="add --cuda-arch N"
        )
    out_dir = Path(out_dir)
    with atomic.staged(
        out_dir,
        KernelCacheError,
        f"{target}: writing the kernel cache",
        f"{out_dir} was left as it was",
        "run it again",
    ) as tmp_dir:
        manifest = _build_into(packages, Path(tmp_dir), cuda_arch, with_cpu, target, tuple(exclude))
        atomic.publish_dir(tmp_dir, out_dir)
    return manifest


def _build_into(
    packages: list[str],
    work: Path,
    cuda_arch: int | None,
    with_cpu: bool,
    target: str,
    exclude: tuple[str, ...],
) -> dict:
    import warp as wp  # noqa: PLC0415

    from wrpkg.capture import source_paths  # noqa: PLC0415 - imports Warp

    use_kernel_cache(wp, work, work)
    before = set(warp_internals.context().user_modules)
    skipped_imports = []
    for package in packages:
        crash_watch.phase(f"importing {package} and its submodules")
        skipped_imports += _import_all(package, target)[1]
    # Before any code is generated, as a capture does: the same module sources, the same objects.
    paths = source_paths.relocate(wp, None)
    # A package's modules by name, and the modules its factories made at import (named after
    # their kernel), by the files their kernels come from.
    package_dirs = [os.path.join(os.path.dirname(sys.modules[p].__file__), "") for p in packages]
    modules = [
        m
        for name, m in sorted(warp_internals.context().user_modules.items())
        if name not in before
        and (
            any(name == p or name.startswith(p + ".") for p in packages)
            or any(f.startswith(tuple(package_dirs)) for f in call_sites.module_source_files(m))
        )
    ]
    excluded = sorted(m.name for m in modules if any(fnmatch.fnmatchcase(m.name, g) for g in exclude))
    modules = [m for m in modules if m.name not in excluded]
    cpu = wp.get_device("cpu")
    compiled, failed = [], []
    for number, module in enumerate(modules, 1):
        crash_watch.phase(f"compiling module {number}/{len(modules)}: {module.name}")
        entry = {"module": module.name}
        try:
            if with_cpu:
                # An ordinary CPU launch's block_dim (Warp's _resolve_launch_block_dim): another is another module hash.
                module.load(cpu, block_dim=1)
                entry["cpu_hash"] = module.get_module_hash(1).hex()
            if cuda_arch is not None:
                block_dim = module.options["block_dim"]
                options = module.resolve_options(wp.config, block_dim=block_dim)
                compile_cuda_variant(module, block_dim, cuda_arch, options)
                entry["cuda_hash"] = module.get_module_hash(block_dim).hex()
            compiled.append(entry)
        except Exception as exc:  # a module this toolchain cannot build: left to the captures
            last = traceback.extract_tb(exc.__traceback__)[-1:] or []
            where = f" ({last[0].filename.rsplit('/', 1)[-1]}:{last[0].lineno})" if last else ""
            failed.append({**entry, "reason": f"{type(exc).__name__}: {exc}"[:300] + where})
    # Warp's per-process build folders of failed compiles: not cache content.
    cache = _warp_cache_dir()
    for leftover in cache.glob("*_p[0-9]*_t[0-9]*"):
        shutil.rmtree(leftover, ignore_errors=True)
    # Functions Warp made while generating code (generic overloads) still name this sandbox's paths.
    dropped = stabilize_sources(cache, source_paths.relocate(wp, None, paths))
    for stray in cache.parent.iterdir():
        if stray != cache:
            shutil.rmtree(stray) if stray.is_dir() else stray.unlink()
    manifest = {
        "schema": KERNEL_CACHE_SCHEMA,
        "warp": wp.config.version,
        "packages": sorted(packages),
        "cuda_arch": cuda_arch,
        "cpu": with_cpu,
        "cpu_compiler_flags": wp.config.cpu_compiler_flags,
        "compiled": compiled,
        "not_compiled": failed,
        "excluded": excluded,
        "not_kept": dropped,
        "not_imported": skipped_imports,
    }
    (work / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    print(
        f"{target}: compiled {len(compiled)} Warp modules of {', '.join(packages)}"
        + " for "
        + " and ".join(
            (["the CPU"] if with_cpu else []) + ([f"sm_{cuda_arch}"] if cuda_arch is not None else [])
        )
        + (f"; {len(failed)} left to the captures (see {MANIFEST})" if failed else ""),
        file=sys.stderr,
    )
    return manifest


def configure_parser(parser) -> None:
    parser.add_argument(
        "--package", action="append", required=True, help="a Python package whose Warp modules to compile"
    )
    parser.add_argument("--out-dir", required=True, help="the kernel cache to write")
    parser.add_argument(
        "--cuda-arch",
        type=int,
        default=None,
        help="also compile each module for this SM, as a retargeted capture",
    )
    parser.add_argument("--no-cpu", action="store_true", help="compile only for --cuda-arch, not for the CPU")
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        help="a glob of Warp module names to leave to the captures (a module no capture uses that is slow to build)",
    )
    parser.add_argument("--label", default=None, help="the Bazel target, named in errors")


def run(args) -> int:
    crash_watch.tool_name = "kernel_cache"
    crash_watch.phase("starting Warp")
    build(
        args.package, args.out_dir, args.cuda_arch, args.label, with_cpu=not args.no_cpu, exclude=args.exclude
    )
    return 0


if __name__ == "__main__":
    from wrpkg.cli import tool_main

    tool_main("wrpkg.capture.kernel_cache")
