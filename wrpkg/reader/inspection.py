"""Summarize a bundle or a .wrp file.

For a bundle (a directory with manifest.json, or the .wrp inside one) it leads with what a
user wants first: label, content hash, SASS list, PTX and the driver it needs, whether
the CUDA source is kept, bindings with their direction, dtype and shape, golden outputs and
tolerances.
For every .wrp: device, target arch, Warp version, modules (binary kind, size, and what
a fatbin holds), kernels, bindings, memory regions and operation counts, and, from the
capture.json beside it, the `wp.uint64` parameters the capture recorded as `wp.handle`
relocations (a live mesh id; the .wrp alone cannot tell them from declared handles).
`--json` prints the same as one JSON object."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from pathlib import Path

from wrpkg import manifest as manifest_mod
from wrpkg import mathdx, strict_json
from wrpkg.errors import CompileError, VerifyError, WrpFormatError
from wrpkg.reader import fatbin
from wrpkg.reader.bundle import Bundle
from wrpkg.reader.validity import read_json_file, read_regular
from wrpkg.wrpformat import Direction, WrpFile, binding_infos, read_wrp

# manifest.json / interface.json spell directions as the capture does.
_DIRECTIONS = {"in": Direction.INPUT, "out": Direction.OUTPUT, "inout": Direction.BOTH}


def module_contents(data: bytes) -> list[str] | None:
    """What a fatbin holds as the pinned cuobjdump reads it ('sm_90a', 'sm_100f',
    'compute_75', suffixes exact), None when `data` is no fatbin."""
    # Anything but a fatbin (a plain cubin, PTX, a CPU object) is listed as what its record says it is.
    if not fatbin.is_fatbin(data):
        return None
    from wrpkg.cuda_tools import fatbin_contents

    return fatbin_contents(data)


def find_wrp(path: Path) -> Path:
    """`path` itself when it is a file, else the one .wrp inside the directory `path`."""
    if path.is_dir():
        found = sorted(path.glob("*.wrp"))
        if len(found) != 1:
            names = ", ".join(p.name for p in found) or "none"
            raise WrpFormatError(
                path,
                "directory",
                0,
                f"expected exactly one .wrp file in the directory, found {len(found)} ({names})",
                fix="pass the .wrp file itself",
            )
        return found[0]
    if not path.exists():
        raise WrpFormatError(path, "file", 0, "no such file or directory")
    return path


def _recorded_bindings(wrp_path: Path, bundle: Bundle | None = None) -> tuple[dict[str, dict] | None, str]:
    """Bindings recorded beside the file (bundle manifest or raw capture): direction and,
    from captures that record it, the array layout."""
    if bundle is not None:
        recorded = {b.name: asdict(b) for b in bundle.manifest.bindings}
        for b in recorded.values():
            b["direction"] = _DIRECTIONS[b["direction"]]
        return recorded, manifest_mod.MANIFEST_NAME
    for name in (manifest_mod.MANIFEST_NAME, "interface.json"):
        sidecar = wrp_path.parent / name
        if not sidecar.is_file():
            continue
        try:
            doc = strict_json.strict_json_loads(read_json_file(sidecar, name, ""), sidecar, name)
            recorded = {b["name"]: dict(b) for b in doc["bindings"]}
            for b in recorded.values():
                b["direction"] = _DIRECTIONS[b["direction"]]
            return recorded, name
        except (VerifyError, KeyError, TypeError):
            # A sidecar is a hint for directions only; the .wrp's own records stand without it.
            continue
    return None, "the .wrp alone"


def _array_text(b: dict) -> str:
    """ "vec3f[2048]", "float32[4, 3] strides [24, 4] at byte 12"; "" when not recorded."""
    if not b.get("dtype") or b.get("shape") is None:
        return ""
    text = f"{b['dtype']}[{', '.join(str(n) for n in b['shape'])}]"
    if b.get("contiguous") is False:
        text += f" strides {b['strides']}"
    if b.get("offset"):
        text += f" at byte {b['offset']}"
    return text


def _fatbin_holds(binary: Path, data: bytes | None = None) -> tuple[list[str] | None, str | None]:
    """What the module binary holds (module_contents): `data`, its verified bytes, or else the file."""
    if data is None and not binary.is_file():
        return None, None
    try:
        if data is None:
            data = read_regular(binary, "a module binary", "rebuild the capture")
        return module_contents(data), None
    except VerifyError as err:
        return None, f"not read: {err.message}"
    except CompileError as err:
        # The pinned cuobjdump comes with the `cuda` extra (pip install 'wrpkg[cuda]').
        return None, f"not read: {err.message}"


def _uint64_mesh_ids_as_handles(wrp_path: Path) -> list[dict]:
    """capture.json's record of wp.uint64 parameters recorded as handles (wrpkg.capture.stale_pointers.relocations):
    kernel, parameter, meshes, launches. Provenance, not verified: a missing or unreadable file says none."""
    info = wrp_path.parent / manifest_mod.CAPTURE_INFO_NAME
    if not info.is_file():
        return []
    try:
        doc = strict_json.strict_json_loads(read_json_file(info, info.name, ""), info, info.name)
        return [
            {
                "kernel": str(r["kernel"]),
                "parameter": str(r["parameter"]),
                "meshes": [str(m) for m in r["meshes"]],
                "launches": int(r["launches"]),
            }
            for r in doc.get("uint64_mesh_ids_as_handles", [])
        ]
    except (VerifyError, KeyError, TypeError, ValueError, AttributeError):
        return []


def summarize(wrp_path: Path, wrp: WrpFile | None = None, bundle: Bundle | None = None) -> dict:
    """The facts of a .wrp and its modules (what `wrpkg inspect --json` prints under "wrp").

    Args:
      wrp_path: the .wrp file.
      wrp: the parsed .wrp, when the caller has it.
      bundle: the opened Bundle `wrp_path` belongs to: then the .wrp and its modules are what
        the Bundle verified and holds, and the directions are its manifest's.

    Returns:
      A dict: device, target arch, Warp version, modules, kernels, bindings, memory, operations.
    """
    held = {}
    if bundle is not None:
        held = {entry.path: bundle.file(entry.path) for entry in bundle.manifest.files}
        wrp_data = held[bundle.manifest.wrp]
    else:
        # read_regular: a FIFO or /dev/zero named *.wrp is refused, not read forever.
        wrp_data = read_regular(wrp_path, "the .wrp", "pass a .wrp file")
    wrp = wrp or read_wrp(bytes(wrp_data), path=wrp_path)
    modules_dir = wrp_path.with_name(wrp_path.stem + "_modules")
    modules = []
    for module in wrp.metadata.modules:
        binary = modules_dir / module.binary_filename
        in_bundle = f"{modules_dir.name}/{module.binary_filename}"
        if bundle is not None:
            data = held.get(in_bundle)
            size = None if data is None else len(data)
            contents, unread = _fatbin_holds(binary, b"" if data is None else bytes(data))
        else:
            size = binary.stat().st_size if binary.is_file() else None
            contents, unread = _fatbin_holds(binary)
        source = modules_dir / module.source_filename if module.source_filename else None
        if bundle is not None:
            source_present = source is not None and f"{modules_dir.name}/{source.name}" in held
        else:
            source_present = bool(source and source.is_file())
        modules.append(
            {
                "hash": module.hash,
                "name": module.name,
                "binary_filename": module.binary_filename,
                "binary_kind": module.binary_kind.name,
                "binary_size": size,
                "binary_sha256": module.binary_sha256 or None,
                "fatbin": contents,
                "fatbin_unread": unread,
                "target_arch": module.target_arch,
                "source_filename": module.source_filename or None,
                "source_present": source_present,
                "fallback_reason": module.fallback_reason.name,
                # A MathDx module: linked cubins only (wrpkg.mathdx).
                "linked": mathdx.NO_PTX_NOTE if mathdx.is_linked(module) else None,
            }
        )
    module_names = {m.hash: m.name for m in wrp.metadata.modules}
    recorded, directions_from = _recorded_bindings(wrp_path, bundle)
    bindings = []
    for b in binding_infos(wrp):
        record = recorded.get(b.name, {}) if recorded is not None else {}
        direction = record.get("direction", Direction.UNKNOWN) if recorded is not None else b.direction
        bindings.append(
            {
                "name": b.name,
                "region_id": b.region_id,
                "direction": direction.value,
                "bytes": b.byte_size,
                **manifest_mod.binding_layout(record),
            }
        )
    regions = wrp.memory.regions
    return {
        "path": str(wrp_path),
        "file_size": len(wrp_data),
        "format_version": wrp.header.version,
        "warp_version": wrp.metadata.producer_version,
        "device": getattr(wrp.device, "name", str(wrp.device)).lower(),
        "target_arch": wrp.header.target_arch,
        "modules": modules,
        "kernels": [
            {
                "key": k.key,
                "module": module_names.get(k.module_hash, k.module_hash),
                "module_hash": k.module_hash,
                "block_dim": k.block_dim,
            }
            for k in wrp.metadata.kernels
        ],
        "bindings": bindings,
        "directions_from": directions_from,
        "meshes": len(wrp.metadata.meshes),
        "uint64_mesh_ids_as_handles": _uint64_mesh_ids_as_handles(wrp_path),
        "memory": {
            "regions": len(regions),
            "total_bytes": sum(r.size for r in regions),
            "initial_data_bytes": sum(len(r.initial_data) for r in regions if r.initial_data is not None),
        },
        "operations": dict(sorted(wrp.op_counts().items())),
    }


def summarize_bundle(bundle_dir: Path) -> dict:
    """The bundle-level facts `wrpkg inspect` shows: `wrpkg.Bundle.open(bundle_dir).inspect()`.

    Args:
      bundle_dir: the bundle directory.

    Returns:
      What `wrpkg inspect --json` prints for a bundle: label, content hash, SASS and PTX
      targets, the driver the PTX needs, source fallback, bindings, golden outputs.

    Raises:
      VerifyError: the bundle does not verify (`wrpkg verify`'s message).
    """
    return Bundle.open(bundle_dir).inspect()


def _human(n: int | None) -> str:
    if n is None:
        return "missing"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def render_bundle_text(b: dict) -> str:
    if b["device"] == "cuda":
        sass = ", ".join(b["sass"]) or "none"
        ptx = (
            f"{', '.join(b['ptx'])} (NVRTC {b['ptx_nvrtc']}; JIT needs a driver for CUDA {b['ptx_min_driver']}+)"
            if b["ptx"]
            else "none"
        )
        code = [f"SASS: {sass} (NVRTC {b['sass_nvrtc']})", f"PTX: {ptx}"]
        code += [f"  {name}: {why}" for name, why in sorted(b.get("no_ptx", {}).items())]
        code.append(
            "CUDA source: kept (Warp compiles it on a GPU that no SASS or PTX fits)"
            if b["source_kept"]
            else "CUDA source: not kept"
        )
    else:
        code = ["code: CPU objects (no SASS/PTX)"]
    lines = [
        f"bundle {b['label']}  ({b['bundle']})",
        f"content sha256: {b['content_sha256']}",
        f"device: {b['device']}   Warp {b['warp_version']}",
        *code,
        f"bindings ({len(b['bindings'])}):",
    ]
    for x in b["bindings"]:
        lines.append(f"  {x['name']:<20} {x['direction']:<6} {_array_text(x):<24} {_human(x['bytes'])}")
    lines.append(f"golden outputs ({len(b['golden'])}):")
    for g in b["golden"]:
        tolerance = (
            "bit-exact" if g["rtol"] is None else f"atol {g['atol']:g} + rtol {g['rtol']:g} * |golden|"
        )
        lines.append(f"  {g['name']:<20} {_human(g['bytes']):<10} {tolerance}")
    return "\n".join(lines)


def _target_arch_text(s: dict) -> str:
    """The .wrp header's target arch, or, when its modules are multi-arch fatbins (a bundle's),
    what they hold: a bundle's header carries one canonical arch that no device runs as such."""
    if s["device"] != "cuda":
        return "-"
    header = f"sm_{s['target_arch']}"
    held = list(dict.fromkeys(arch for m in s["modules"] for arch in m["fatbin"] or []))
    return f"{', '.join(held)} (module fatbins; the header records {header})" if held else header


def render_text(s: dict) -> str:
    arch = _target_arch_text(s)
    lines = [
        f"{s['path']}  ({_human(s['file_size'])}, format {s['format_version']}, Warp {s['warp_version']})",
        f"device: {s['device']}   target arch: {arch}",
        f"modules ({len(s['modules'])}):",
    ]
    for m in s["modules"]:
        holds = f"  holds {', '.join(m['fatbin'])}" if m["fatbin"] else ""
        if m["fatbin_unread"]:
            holds = f"  fatbin {m['fatbin_unread']}"
        source = f"  source {m['source_filename']}" if m["source_filename"] else ""
        linked = f"  [{m['linked']}]" if m.get("linked") else ""
        lines.append(
            f"  {m['name']} {m['hash'][:12]}  {m['binary_filename']}  {m['binary_kind']}  "
            f"{_human(m['binary_size'])}{holds}{source}{linked}"
        )
    lines.append(f"kernels ({len(s['kernels'])}):")
    for k in s["kernels"]:
        lines.append(f"  {k['module']}.{k['key']}  block_dim {k['block_dim']}")
    lines.append(f"bindings ({len(s['bindings'])}, directions from {s['directions_from']}):")
    for b in s["bindings"]:
        array = f"  {_array_text(b)}" if b.get("dtype") else ""
        lines.append(
            f"  {b['name']:<20} {b['direction']:<8} region {b['region_id']:<4} {_human(b['bytes'])}{array}"
        )
    mem = s["memory"]
    lines.append(
        f"memory: {mem['regions']} regions, {_human(mem['total_bytes'])} total, "
        f"{_human(mem['initial_data_bytes'])} initial data; meshes: {s['meshes']}"
    )
    relocated = s.get("uint64_mesh_ids_as_handles") or []
    if relocated:
        lines.append(f"wp.uint64 parameters saved as wp.handle relocations ({len(relocated)}):")
        for r in relocated:
            launches = f"{r['launches']} launch" + ("" if r["launches"] == 1 else "es")
            lines.append(
                f"  kernel '{r['kernel']}', parameter '{r['parameter']}': {'; '.join(r['meshes'])} ({launches})"
            )
    ops = ", ".join(f"{name} {count}" for name, count in s["operations"].items()) or "none"
    lines.append(f"operations ({sum(s['operations'].values())}): {ops}")
    return "\n".join(lines)


def configure_parser(parser) -> None:
    parser.add_argument("path", type=Path, help="a .wrp file, or a directory holding exactly one")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def run(args) -> int:
    wrp_path = find_wrp(args.path)
    bundle = None
    # lexists: a manifest.json that is a FIFO or a dangling link is refused, not passed over.
    if os.path.lexists(wrp_path.parent / manifest_mod.MANIFEST_NAME):
        # A bundle is opened as `wrpkg verify` opens it, and what is shown is what it verified.
        bundle = Bundle.open(wrp_path.parent)
    facts = bundle.inspect() if bundle is not None else None
    summary = summarize(wrp_path, bundle=bundle)
    if args.json:
        json.dump({"bundle": facts, "wrp": summary}, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        if facts:
            print(render_bundle_text(facts))
            print()
        print(render_text(summary))
    return 0


if __name__ == "__main__":
    from wrpkg.cli import tool_main

    tool_main(__name__)
