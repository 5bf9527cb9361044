"""Summarize a .wrp file (or a directory holding exactly one): device, target arch, Warp
version, modules (binary kind, size, and the SMs/PTX a fatbin holds), kernels, bindings,
memory regions and operation counts. `--json` prints the same as one JSON object."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

from wrpkg.errors import WrpFormatError
from wrpkg.format import WrpFile, binding_infos, read_wrp

# NVIDIA fatbin container (the payload of a `.nv_fatbin` section, and what nvFatbin writes).
# Not documented by NVIDIA; this layout is the one used by every reverse-engineered reader
# (and matches nvFatbin's output for CUDA 12/13):
#   header: u32 magic 0xBA55ED50, u16 version, u16 header_size, u64 entries_size
#   entry:  u16 kind (1 PTX, 2 ELF/cubin, 4? LTO-IR), u16 version, u32 header_size,
#           u64 payload_size, ..., u32 arch at entry offset 28; payload follows the entry
#           header, the next entry follows the payload.
FATBIN_MAGIC = 0xBA55ED50
_FATBIN_HEADER = struct.Struct("<IHHQ")
_FATBIN_ENTRY = struct.Struct("<HHIQ")
_FATBIN_KINDS = {1: "compute", 2: "sm", 8: "lto"}


def fatbin_contents(data: bytes) -> list[str] | None:
    """What a fatbin holds: 'sm_90' per cubin, 'compute_75' per PTX, sorted and unique.

    None when `data` is not a fatbin container (e.g. a plain cubin, PTX or a CPU object).
    Malformed containers list what could be read before the damage.
    """
    if len(data) < _FATBIN_HEADER.size:
        return None
    magic, _version, header_size, entries_size = _FATBIN_HEADER.unpack_from(data, 0)
    if magic != FATBIN_MAGIC or header_size < _FATBIN_HEADER.size:
        return None
    found: set[str] = set()
    # A file may hold several containers back to back (nvFatbin writes one).
    container = 0
    while container + _FATBIN_HEADER.size <= len(data):
        magic, _version, header_size, entries_size = _FATBIN_HEADER.unpack_from(data, container)
        if magic != FATBIN_MAGIC or header_size < _FATBIN_HEADER.size:
            break
        pos = container + header_size
        end = min(len(data), pos + entries_size)
        while pos + 32 <= end:
            kind, _ver, entry_header_size, payload_size = _FATBIN_ENTRY.unpack_from(data, pos)
            (arch,) = struct.unpack_from("<I", data, pos + 28)
            if entry_header_size < 32:
                break
            prefix = _FATBIN_KINDS.get(kind, f"kind{kind}")
            found.add(f"{prefix}_{arch}")
            pos += entry_header_size + payload_size
        container += header_size + entries_size
        # containers are 8-byte aligned
        container = (container + 7) & ~7
    return sorted(found, key=lambda s: (s.split("_")[0], int(s.rsplit("_", 1)[1]) if s[-1].isdigit() else 0))


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


def _io_names(wrp_path: Path) -> tuple[list[str] | None, list[str] | None]:
    """Input/output names from a capture.json or manifest.json beside the file, if any."""
    for name in ("capture.json", "manifest.json"):
        sidecar = wrp_path.parent / name
        if not sidecar.is_file():
            continue
        try:
            doc = json.loads(sidecar.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and ("inputs" in doc or "outputs" in doc):

            def names(value):
                if isinstance(value, dict):
                    return list(value)
                if isinstance(value, list):
                    return [v if isinstance(v, str) else v.get("name") for v in value if v]
                return None

            return names(doc.get("inputs")), names(doc.get("outputs"))
    return None, None


def summarize(wrp_path: Path, wrp: WrpFile | None = None) -> dict:
    wrp = wrp or read_wrp(wrp_path)
    modules_dir = wrp_path.with_name(wrp_path.stem + "_modules")
    modules = []
    for module in wrp.metadata.modules:
        binary = modules_dir / module.binary_filename
        size = binary.stat().st_size if binary.is_file() else None
        contents = fatbin_contents(binary.read_bytes()) if binary.is_file() else None
        source = modules_dir / module.source_filename if module.source_filename else None
        modules.append(
            {
                "hash": module.hash,
                "name": module.name,
                "binary_filename": module.binary_filename,
                "binary_kind": module.binary_kind.name,
                "binary_size": size,
                "binary_sha256": module.binary_sha256 or None,
                "fatbin": contents,
                "target_arch": module.target_arch,
                "source_filename": module.source_filename or None,
                "source_present": bool(source and source.is_file()),
                "fallback_reason": module.fallback_reason.name,
            }
        )
    module_names = {m.hash: m.name for m in wrp.metadata.modules}
    inputs, outputs = _io_names(wrp_path)
    regions = wrp.memory.regions
    return {
        "path": str(wrp_path),
        "file_size": wrp_path.stat().st_size if wrp_path.is_file() else None,
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
        "bindings": [
            {"name": b.name, "region_id": b.region_id, "direction": b.direction.value, "bytes": b.byte_size}
            for b in binding_infos(wrp, inputs=inputs, outputs=outputs)
        ],
        "meshes": len(wrp.metadata.meshes),
        "memory": {
            "regions": len(regions),
            "total_bytes": sum(r.size for r in regions),
            "initial_data_bytes": sum(len(r.initial_data) for r in regions if r.initial_data is not None),
        },
        "operations": dict(sorted(wrp.op_counts().items())),
    }


def _human(n: int | None) -> str:
    if n is None:
        return "missing"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def render_text(s: dict) -> str:
    arch = f"sm_{s['target_arch']}" if s["device"] == "cuda" else "-"
    lines = [
        f"{s['path']}  ({_human(s['file_size'])}, format {s['format_version']}, Warp {s['warp_version']})",
        f"device: {s['device']}   target arch: {arch}",
        f"modules ({len(s['modules'])}):",
    ]
    for m in s["modules"]:
        holds = f"  holds {', '.join(m['fatbin'])}" if m["fatbin"] else ""
        source = f"  source {m['source_filename']}" if m["source_filename"] else ""
        lines.append(
            f"  {m['name']} {m['hash'][:12]}  {m['binary_filename']}  {m['binary_kind']}  "
            f"{_human(m['binary_size'])}{holds}{source}"
        )
    lines.append(f"kernels ({len(s['kernels'])}):")
    for k in s["kernels"]:
        lines.append(f"  {k['module']}.{k['key']}  block_dim {k['block_dim']}")
    lines.append(f"bindings ({len(s['bindings'])}):")
    for b in s["bindings"]:
        lines.append(f"  {b['name']:<20} {b['direction']:<8} region {b['region_id']:<4} {_human(b['bytes'])}")
    mem = s["memory"]
    lines.append(
        f"memory: {mem['regions']} regions, {_human(mem['total_bytes'])} total, "
        f"{_human(mem['initial_data_bytes'])} initial data; meshes: {s['meshes']}"
    )
    ops = ", ".join(f"{name} {count}" for name, count in s["operations"].items()) or "none"
    lines.append(f"operations ({sum(s['operations'].values())}): {ops}")
    return "\n".join(lines)


def configure_parser(parser) -> None:
    parser.add_argument("path", type=Path, help="a .wrp file, or a directory holding exactly one")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def run(args) -> int:
    wrp_path = find_wrp(args.path)
    summary = summarize(wrp_path)
    if args.json:
        json.dump(summary, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        print(render_text(summary))
    return 0


if __name__ == "__main__":
    from wrpkg.cli import tool_main

    tool_main(__name__)
