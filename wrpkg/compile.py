"""Compile every captured CUDA module of a .wrp for one SM (or PTX) with the pinned NVRTC.

    python -m wrpkg.compile --wrp RAW/sim.wrp --modules-dir RAW/sim_modules \\
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
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

from wrpkg import WARP_VERSION, atomic
from wrpkg.archs import Arch, parse_arch
from wrpkg.errors import CompileError
from wrpkg.files import sha256_bytes, sha256_file
from wrpkg.recipe import CompileRecipe, nvrtc_program_name

COMPILE_JSON = "compile.json"
COMPILE_JSON_FORMAT = "wrpkg.compile/1"
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


def run(args) -> int:
    from wrpkg import cuda_tools  # noqa: PLC0415 - reads the wheel's version only

    # Validate against the SMs of the NVRTC in this venv (the PTX compiler's may differ).
    arch = parse_arch(args.arch, cuda_tools.pinned_nvrtc_version())
    result = compile_wrp(args.wrp, args.modules_dir, arch, args.out_dir, include_dir=args.include_dir)
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


def compile_wrp(wrp_path, modules_dir, arch: Arch | str, out_dir, *, include_dir: str | None = None) -> dict:
    """Compiles every CUDA module of `wrp_path` for `arch` into `out_dir` (the module doc).

    Args:
      wrp_path: a raw capture's `.wrp`.
      modules_dir: the capture's `<stem>_modules/` directory, with each module's retained `.cu`.
      arch: an SM (`sm_90`, `sm_90a`) or a PTX target (`compute_75`), or an Arch.
      out_dir: where the cubins (or PTX) and compile.json are written, atomically.
      include_dir: Warp's native headers; default: those of the installed warp-lang.

    Returns:
      compile.json's data: the arch, the NVRTC version, and per module the output file, its
      sha256 and size (and the modules skipped, with why).

    Raises:
      CompileError: NVRTC rejected a module, or the arch is not supported.
    """
    from wrpkg import cuda_tools  # loads NVRTC: keep `wrpkg --help` light
    from wrpkg.wrpformat import FallbackReason, read_wrp

    arch = parse_arch(arch, cuda_tools.pinned_nvrtc_version())
    wrp_path, modules_dir = Path(wrp_path), Path(modules_dir)
    wrp = read_wrp(wrp_path)
    include_dir = include_dir or cuda_tools.warp_include_dir()
    # Only NVRTC: nvFatbin and cuobjdump are packing tools, absent from the PTX compiler's venv.
    versions = cuda_tools.nvrtc_versions()
    cuda_version = cuda_tools.nvrtc_cuda_version()

    modules = sorted(wrp.metadata.modules if wrp.is_cuda else [], key=lambda m: (m.name, m.hash))
    outputs: dict[str, bytes] = {}
    compiled, skipped = [], []
    for module in modules:
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


if __name__ == "__main__":
    from wrpkg.cli import tool_main

    tool_main("wrpkg.compile")
