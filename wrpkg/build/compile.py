"""Compile every captured CUDA module of a .wrp for one SM (or PTX) with the pinned NVRTC.

    python -m wrpkg.build.compile --wrp RAW/sim.wrp --modules-dir RAW/sim_modules \\
        --arch sm_90 --out-dir OUT/sm_90

Each CUDA module's retained `.cu` is compiled with the compile recipe recorded in its
module record (the NVRTC options Warp 1.19.0 derives from it, see wrpkg/recipe.py) and
written as `OUT/<module hash>.<arch>.cubin` (`.ptx` for `--arch compute_N`), next to
`OUT/compile.json`: the arch, the NVRTC version (that of the venv running this: 13.4.92
for SASS, 13.0.88 for the PTX compiler), and per module the output file,
its sha256 and size. Outputs are deterministic (no paths, times or host names) and
appear atomically: everything is written to a temporary sibling directory first.

Modules whose source Warp could not retain (fallback reason other than "available")
are listed under "skipped" with the reason; the bundle keeps their packaged binary.

MathDx modules (fallback reason "link_inputs", wrpkg.mathdx) have no source to compile: for an
SM they are rebuilt by Warp itself from the capture script (`--script`, imported as the capture
imported it; Warp's codegen for that SM, libmathdx LTO-IR, its NVRTC and nvJitLink), and their
entry says `"linked": true` with the MathDx functions linked in. They have no PTX: a compute_N
compile lists them under "skipped" with reason "link_inputs". Without `--script` (a recorded
capture) only the capture's own SM can be served (Warp's packaged cubin); any other SM is an error.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from wrpkg import WARP_VERSION, atomic, mathdx, warp_internals
from wrpkg.archs import Arch, parse_arch
from wrpkg.errors import CompileError
from wrpkg.files import sha256_bytes, sha256_file
from wrpkg.recipe import CompileRecipe, nvrtc_program_name

COMPILE_JSON = "compile.json"
COMPILE_JSON_FORMAT = "wrpkg.build.compile/1"
# Stands in for the absolute include path in compile.json, which must not depend on the host.
INCLUDE_DIR_PLACEHOLDER = "<warp>/native"


def configure_parser(parser) -> None:
    parser.add_argument("--wrp", required=True, help="the captured .wrp file")
    parser.add_argument(
        "--modules-dir", required=True, help="its modules folder (holds the retained .cu files)"
    )
    parser.add_argument("--arch", required=True, help="target: sm_<N>[a|f] for SASS, compute_<N> for PTX")
    parser.add_argument("--out-dir", required=True, help="output folder (replaced atomically)")
    parser.add_argument(
        "--include-dir",
        default=None,
        help="Warp's native headers (default: warp/native of the installed warp-lang)",
    )
    parser.add_argument(
        "--script",
        default=None,
        help="the capture script: Warp rebuilds MathDx (link-input) modules per SM from it",
    )
    parser.add_argument("--label", default=None, help="the Bazel target, named in errors")


def run(args) -> int:
    from wrpkg import cuda_tools  # noqa: PLC0415 - reads the wheel's version only

    # Validate against the SMs of the NVRTC in this venv (the PTX compiler's may differ).
    arch = parse_arch(args.arch, cuda_tools.pinned_nvrtc_version())
    result = compile_wrp(
        args.wrp,
        args.modules_dir,
        arch,
        args.out_dir,
        include_dir=args.include_dir,
        script=args.script,
        label=args.label,
    )
    compiled = result["modules"]
    print(
        f"compiled {len(compiled)} module(s) for {arch.name} with NVRTC {result['toolchain']['nvrtc']}"
        + (f", skipped {len(result['skipped'])}" if result["skipped"] else "")
        + f" -> {args.out_dir}",
        file=sys.stderr,
    )
    return 0


def output_filename(module_hash: str, target: Arch) -> str:
    return f"{module_hash}.{target.name}.{target.ext}"


def compile_wrp(
    wrp_path,
    modules_dir,
    arch: Arch | str,
    out_dir,
    *,
    include_dir: str | None = None,
    script: str | os.PathLike | None = None,
    label: str | None = None,
) -> dict:
    """Compiles every CUDA module of `wrp_path` for `arch` into `out_dir` (the module doc).

    Args:
      wrp_path: a raw capture's `.wrp`.
      modules_dir: the capture's `<stem>_modules/` directory, with each module's retained `.cu`.
      arch: an SM (`sm_90`, `sm_90a`) or a PTX target (`compute_75`), or an Arch.
      out_dir: where the cubins (or PTX) and compile.json are written, atomically.
      include_dir: Warp's native headers; default: those of the installed warp-lang.
      script: the capture script, from which Warp rebuilds MathDx modules for `arch`.
      label: the target named in errors (default: the .wrp's path).

    Returns:
      compile.json's data: the arch, the NVRTC version, and per module the output file, its
      sha256 and size (and the modules skipped, with why).

    Raises:
      CompileError: NVRTC rejected a module, or the arch is not supported, or a MathDx module
        cannot be rebuilt for it (wrpkg.mathdx).
    """
    from wrpkg import cuda_tools  # loads NVRTC: keep `wrpkg --help` light
    from wrpkg.wrpformat import FallbackReason, read_wrp

    arch = parse_arch(arch, cuda_tools.pinned_nvrtc_version())
    wrp_path, modules_dir = Path(wrp_path), Path(modules_dir)
    target = label or str(wrp_path)
    wrp = read_wrp(wrp_path)
    include_dir = include_dir or cuda_tools.warp_include_dir()
    # Only NVRTC: nvFatbin and cuobjdump are packing tools, absent from the PTX compiler's venv.
    versions = cuda_tools.nvrtc_versions()
    cuda_version = cuda_tools.nvrtc_cuda_version()

    modules = sorted(wrp.metadata.modules if wrp.is_cuda else [], key=lambda m: (m.name, m.hash))
    outputs: dict[str, bytes] = {}
    compiled, skipped = [], []
    # MathDx modules first: a compile that cannot rebuild them says so before compiling anything else.
    linked = [m for m in modules if mathdx.is_linked(m)]
    if linked and arch.is_ptx:
        skipped += [
            {"hash": m.hash, "name": m.name, "reason": "link_inputs", "note": mathdx.NO_PTX_NOTE}
            for m in linked
        ]
    elif linked:
        compiled += _compile_linked(
            wrp, wrp_path, modules_dir, linked, arch, Path(out_dir), script, target, outputs
        )
    for module in modules:
        if mathdx.is_linked(module):
            continue
        label = f"{module.name} ({module.hash[:12]}) of {wrp_path}"
        if module.fallback_reason != FallbackReason.AVAILABLE or not module.source_filename:
            reason = _reason_name(module.fallback_reason)
            skipped.append({"hash": module.hash, "name": module.name, "reason": reason})
            print(
                f"warning: {label}: no retained source ({reason}); it keeps only its packaged "
                f"{module.binary_filename} (capture with source_fallback=True to compile it per SM)",
                file=sys.stderr,
            )
            continue
        source = _read_source(modules_dir, module, label)
        recipe = CompileRecipe.from_bytes(module.compile_recipe, path=wrp_path)
        target = recipe.target_arch(arch, module=label)
        program_name = nvrtc_program_name(module.source_filename)
        started = time.perf_counter()
        data = cuda_tools.compile_module(
            source, recipe, target, module=label, program_name=program_name, include_dir=include_dir
        )
        seconds = time.perf_counter() - started
        name = output_filename(module.hash, target)
        outputs[name] = data
        entry = {
            "hash": module.hash,
            "name": module.name,
            "source_filename": module.source_filename,
            "source_sha256": module.source_sha256,
            "recipe": recipe.to_dict(),
            "nvrtc_arch": target.name,
            "nvrtc_program_name": program_name,
            "nvrtc_options": [
                o.decode().replace(str(include_dir), INCLUDE_DIR_PLACEHOLDER)
                for o in recipe.nvrtc_options(target, include_dir, cuda_version=cuda_version, module=label)
            ],
            "output": name,
            "sha256": sha256_bytes(data),
            "size": len(data),
        }
        if target.is_ptx:
            entry["ptx_isa_version"] = cuda_tools.ptx_isa_version(data)
        if _is_capture_target(module, target):
            # The capture SM: our cubin should be Warp's packaged one, byte for byte.
            entry["matches_packaged_binary"] = entry["sha256"] == module.binary_sha256
            if not entry["matches_packaged_binary"]:
                print(
                    f"warning: {label}: the {target.name} cubin differs from the packaged "
                    f"{module.binary_filename} (recipe with lineinfo/debug embeds Warp's install path)",
                    file=sys.stderr,
                )
        compiled.append(entry)
        print(f"  {module.name} {target.name}: {len(data)} bytes in {seconds:.2f} s", file=sys.stderr)

    compiled.sort(key=lambda entry: (entry["name"], entry["hash"]))
    result = {
        "format": COMPILE_JSON_FORMAT,
        "arch": arch.name,
        "kind": arch.ext,
        "warp_version": WARP_VERSION,
        "toolchain": versions,
        "wrp_sha256": sha256_file(wrp_path),
        "modules": compiled,
        "skipped": skipped,
    }
    outputs[COMPILE_JSON] = (json.dumps(result, indent=2, sort_keys=True) + "\n").encode()
    _write_dir_atomically(Path(out_dir), outputs)
    return result


def _compile_linked(
    wrp, wrp_path, modules_dir, linked, arch: Arch, out_dir: Path, script, label, outputs
) -> list:
    """compile.json entries of the MathDx modules for SM `arch` (their bytes go into `outputs`)."""
    label = label or str(wrp_path)
    entries = []
    for module in linked:
        if arch.suffix or module.recipe.arch_suffix:
            raise CompileError(
                f"{label}: module {module.name} ({module.hash[:12]}) links MathDx LTO-IR; wrpkg rebuilds such "
                f"modules through Warp's own compile, which builds sm_N without suffix, not {arch.name}",
                fix=f"list sm_{arch.sm} instead of {arch.name} in archs",
            )

    def serve_from_capture(modules) -> None:
        for module in modules:
            name = output_filename(module.hash, arch)
            if not _is_capture_target(module, arch):
                raise CompileError(
                    f"{label}: module {module.name} ({module.hash[:12]}) links MathDx LTO-IR (wp.tile_matmul, "
                    f"tile_fft, tile_cholesky, ...): Warp builds it per SM from the capture script, and this "
                    f"compile has none, so it can serve only the capture's sm_{module.target_arch}, not {arch.name}",
                    fix="build the artifact from its capture script (not a recorded_capture), or list only "
                    f"sm_{module.target_arch} in archs",
                )
            data = (Path(modules_dir) / module.binary_filename).read_bytes()
            if sha256_bytes(data) != module.binary_sha256:
                raise CompileError(f"{label}: {module.binary_filename} differs from its digest in {wrp_path}")
            outputs[name] = data
            entries.append(_linked_entry(module, arch, name, data, [], from_capture=True))

    if script is None:
        serve_from_capture(linked)
        return entries
    # Beside the output, whose folder may not exist yet (atomic.staging_dir makes it for the output itself).
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.mathdx-", dir=out_dir.parent))
    except OSError as exc:
        raise CompileError(
            f"{label}: cannot make a work folder beside {out_dir} ({exc.strerror}: {exc.filename})",
            fix=f"pass an --out-dir whose parent folder can be created and written ({out_dir.parent})",
        ) from exc
    try:
        # A module the script makes only when it runs (MuJoCo Warp's tile Cholesky kernels, made in its
        # step) cannot be rebuilt from an import: for the capture's own SM its packaged cubin is Warp's build.
        capture_sm = {m.hash for m in linked if _is_capture_target(m, arch)}
        built = _rebuild_linked(
            script, wrp, linked, arch.sm, work, label, from_capture_if_undefined=capture_sm
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    serve_from_capture([m for m in linked if m.hash not in built])
    for module in linked:
        if module.hash not in built:
            continue
        build = built[module.hash]
        name = output_filename(module.hash, arch)
        outputs[name] = build.data
        entry = _linked_entry(module, arch, name, build.data, build.lto_symbols, from_capture=False)
        if _is_capture_target(module, arch):
            entry["matches_packaged_binary"] = entry["sha256"] == module.binary_sha256
            if not entry["matches_packaged_binary"]:
                print(
                    f"warning: {label}: the {arch.name} cubin Warp rebuilt of {module.name} differs from the "
                    f"captured {module.binary_filename}",
                    file=sys.stderr,
                )
        entries.append(entry)
        print(
            f"  {module.name} {arch.name}: {len(build.data)} bytes (MathDx, linked) in {build.seconds:.2f} s",
            file=sys.stderr,
        )
    return entries


def _linked_entry(
    module, arch: Arch, name: str, data: bytes, symbols: list[str], *, from_capture: bool
) -> dict:
    return {
        "hash": module.hash,
        "name": module.name,
        "linked": True,
        "note": mathdx.NO_PTX_NOTE,
        "built_by": (
            "the capture (Warp's packaged cubin)"
            if from_capture
            else f"warp-lang {WARP_VERSION} Module._compile (libmathdx LTO-IR, NVRTC, nvJitLink)"
        ),
        "lto_symbols": symbols,
        "recipe": module.recipe.to_dict(),
        "nvrtc_arch": arch.name,
        "output": name,
        "sha256": sha256_bytes(data),
        "size": len(data),
    }


def _reason_name(reason) -> str:
    return reason.name.lower() if hasattr(reason, "name") else f"reason_{int(reason)}"


def _is_capture_target(module, target: Arch) -> bool:
    from wrpkg.wrpformat import BinaryKind

    captured_suffix = (
        module.binary_filename.rsplit(".", 2)[-2] if module.binary_filename.count(".") >= 2 else ""
    )
    return (
        not target.is_ptx
        and module.binary_kind == BinaryKind.CUBIN
        and module.target_arch == target.sm
        and captured_suffix == f"sm{target.sm}{target.suffix}"
    )


def _read_source(modules_dir: Path, module, label: str) -> bytes:
    path = modules_dir / module.source_filename
    try:
        source = path.read_bytes()
    except OSError as err:
        raise CompileError(
            f"module {label}: cannot read its retained source {path}: {err.strerror}",
            fix="pass the capture's modules folder (sim_modules/) with --modules-dir",
        ) from None
    digest = sha256_bytes(source)
    if digest != module.source_sha256:
        raise CompileError(
            f"module {label}: {path} has sha256 {digest}, the .wrp records {module.source_sha256}",
            fix="the source was changed after capture; re-run the capture",
        )
    return source


def _write_dir_atomically(out_dir: Path, files: dict[str, bytes]) -> None:
    """Writes `files` into a staging dir beside `out_dir`, then swaps it in (wrpkg.atomic).

    Bazel pre-creates a declared output directory: the swap replaces it."""
    staged = atomic.staging_dir(out_dir)
    try:
        os.chmod(staged, 0o755)
        for name, data in sorted(files.items()):
            atomic.write_staged(staged / name, data)
        atomic.publish_dir(staged, out_dir)
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise


@dataclass
class LinkedBuild:
    """One linked module rebuilt by Warp for one SM."""

    data: bytes
    binary_filename: str  # Warp's name for it (wp_<module>_<hash>.sm<N>.cubin)
    seconds: float
    lto_symbols: list[str]  # the MathDx functions linked in (their names carry the SM)


def _rebuild_linked(
    script: Path,
    wrp: object,
    records: list,
    sm: int,
    work: Path,
    label: str,
    from_capture_if_undefined=frozenset(),
) -> dict[str, LinkedBuild]:
    """Rebuilds each linked (MathDx) module of `records` for `sm` with Warp (see the module doc):
    imports the capture script as the capture did, finds each module by name and the block_dim
    its kernels were launched with, checks its hash, compiles it for `sm` (Module._compile: the
    generated source for that SM, libmathdx LTO-IR, NVRTC, nvJitLink), and checks each launched
    kernel's static shared memory on that SM against the recorded launches'.

    Modules in `from_capture_if_undefined` that the import does not define, or defines without a kernel
    the capture launched (made while the script ran), are left out of the result (the caller serves
    them from the capture).

    Raises CompileError naming the module (and kernel) where the rebuild cannot be the captured module.
    """
    import warp as wp  # noqa: PLC0415 - only a compile with MathDx modules needs Warp

    from wrpkg.capture import kernel_cache, source_paths  # noqa: PLC0415 - imports Warp
    from wrpkg.capture.capture_script import import_script  # noqa: PLC0415 - imports the script as the capture does

    kernel_cache.use_kernel_cache(wp, work, work / "kernel_cache")
    import_script(Path(script), label)
    source_paths.relocate(wp, Path(script).parent)
    user_modules = warp_internals.context().user_modules
    built: dict[str, LinkedBuild] = {}
    for record in records:
        what = f"module {record.name} ({record.hash[:12]})"
        kernels = [k for k in wrp.metadata.kernels if k.module_hash == record.hash]
        block_dims = sorted({k.block_dim for k in kernels})
        module = user_modules.get(record.name)
        # A kernel the script makes while it runs (NVIDIA's example_tile_block_cholesky: a factory called in
        # build(), its kernel added to the script's own module) is not there after the import: the module is
        # another one, whose hash would differ although nothing changed since the capture.
        made_later = sorted({k.key for k in kernels} - set(module.kernels)) if module is not None else []
        if (module is None or made_later) and record.hash in from_capture_if_undefined:
            continue  # the caller serves it from the capture (its packaged cubin is for this SM)
        if module is None or made_later or len(block_dims) != 1:
            raise CompileError(
                f"{label}: {what} links MathDx LTO-IR, which Warp builds per SM from the Python module; "
                + (
                    f"importing {Path(script).name} defines no Warp module '{record.name}'"
                    if module is None
                    else f"importing {Path(script).name} does not define its kernel(s) "
                    + ", ".join(f"'{key}'" for key in made_later)
                    + " (made while the script runs, e.g. by a factory called in build())"
                    if made_later
                    else f"its kernels were launched with block_dims {block_dims}, expected one"
                ),
                fix="define the kernel at import (a library that makes it while it runs, as MuJoCo Warp's tile "
                f"Cholesky does, cannot be rebuilt per SM), or list only the capture's sm_{record.target_arch} in "
                "archs: its packaged cubin serves that SM",
            )
        block_dim = block_dims[0]
        found = module.get_module_hash(block_dim).hex()
        if found != record.hash:
            raise CompileError(
                f"{label}: {what} links MathDx LTO-IR, which Warp builds per SM from the Python module, but "
                f"{Path(script).name} imported here gives it hash {found[:12]} (block_dim {block_dim}), not the "
                f"captured one ({mathdx.kernel_places([record.name])})",
                fix="rebuild the capture (the script or a module it imports changed), and define every kernel "
                "and wp.config setting at import, not in build() (generic kernels: use wp.overload)",
            )
        options = module.resolve_options(wp.config, block_dim=block_dim)
        build_dir = Path(tempfile.mkdtemp(prefix="mathdx-", dir=work))
        started = time.perf_counter()
        try:
            module._compile(None, str(build_dir), output_arch=sm, use_ptx=False, options=options)
        except Exception as exc:  # Warp's own compile error (libmathdx, NVRTC or nvJitLink)
            raise CompileError(f"{label}: {what}: Warp could not build it for sm_{sm}: {exc}") from exc
        seconds = time.perf_counter() - started
        binary_name = module._get_compile_output_name(None, sm, "", False, block_dim=block_dim)
        meta = json.loads((build_dir / module._get_meta_name(block_dim=block_dim)).read_text())
        source = (build_dir / f"{module.get_module_identifier(block_dim=block_dim)}.cu").read_text()
        for kernel in kernels:
            for entry, recorded in (
                (kernel.forward_name, kernel.forward_smem_bytes),
                (kernel.backward_name, kernel.backward_smem_bytes),
            ):
                if not entry:
                    continue
                needed = int(meta.get(f"{entry}_smem_bytes", -1))
                if needed != recorded:
                    defined = mathdx.kernel_places([record.name])
                    raise CompileError(
                        f"{label}: kernel '{kernel.key}' of {what} ({defined}) needs {needed} bytes of shared memory on "
                        f"sm_{sm}, but the capture's launches of it were recorded with {recorded} (the MathDx "
                        "implementation Warp picks differs between the two SMs): one .wrp cannot serve both",
                        fix=f"drop sm_{sm} from archs, or make a separate artifact captured for sm_{sm} (cuda_arch)",
                    )
        built[record.hash] = LinkedBuild(
            data=(build_dir / binary_name).read_bytes(),
            binary_filename=binary_name,
            seconds=seconds,
            lto_symbols=sorted(_lto_symbols(source)),
        )
        shutil.rmtree(build_dir, ignore_errors=True)
    return built


def _lto_symbols(source: str) -> set[str]:
    """The MathDx functions a generated module declares (Warp's LTO forward declarations)."""
    import re  # noqa: PLC0415

    return set(re.findall(r"\bvoid\s+((?:dot|fft|getrf|potrf|potrs|trsm)_\w+)\s*\(", source))


if __name__ == "__main__":
    from wrpkg.cli import tool_main

    tool_main("wrpkg.build.compile")
