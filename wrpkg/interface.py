"""The bindings of a raw capture's interface.json, as the bundle's manifest lists them.

The .wrp names each binding's region but not how the binding was used or what array it
holds; the capture harness records both (wrpkg/capture/tool.py). A recorded capture
(`recorded_capture`) brings its own interface.json, so everything here comes from the
files, never from running the script.
"""

from __future__ import annotations

from pathlib import Path

from wrpkg import wrpformat
from wrpkg.errors import BundleError
from wrpkg.manifest import DIRECTIONS, BindingEntry, binding_layout_problem

INTERFACE_NAME = "interface.json"
# /2 added each binding's array layout (dtype, dtype_bytes, shape, strides, offset).
INTERFACE_SCHEMA = "rules_warp.capture_interface/2"
_LAYOUT_FIELDS = ("dtype", "dtype_bytes", "shape", "strides", "offset")


def manifest_bindings(
    interface: dict, wrp: wrpformat.WrpFile, raw_dir: Path, label: str
) -> list[BindingEntry]:
    """One entry per binding, sorted by name: region and its size from the .wrp, direction
    and array layout from interface.json. Any disagreement is a BundleError naming the file."""
    path = raw_dir / INTERFACE_NAME
    rebuild = f"rebuild {label}" if label else "capture it again"
    schema = interface.get("schema")
    if schema != INTERFACE_SCHEMA:
        raise BundleError(
            f"{path}: schema is {schema!r}, expected {INTERFACE_SCHEMA!r} (it records each binding's "
            "dtype, shape and strides, which the bundle's manifest lists)",
            fix=f"{rebuild}; a recorded capture must be captured again with this wrpkg "
            "(tools/gpu/capture_cuda.sh for models/recorded)",
        )
    recorded = {b.get("name"): b for b in interface.get("bindings", []) if isinstance(b, dict)}
    infos = wrpformat.binding_infos(wrp)
    found = sorted(info.name for info in infos)
    if sorted(recorded) != found:
        raise BundleError(
            f"{path}: bindings {sorted(recorded, key=str)} differ from the .wrp's {found}",
            fix=rebuild,
        )
    entries = []
    for info in sorted(infos, key=lambda i: i.name):
        record = recorded[info.name]
        if info.byte_size is None:
            raise BundleError(
                f"{raw_dir}: binding {info.name} names region {info.region_id}, which is not in the .wrp",
                fix=rebuild,
            )
        missing = [key for key in ("direction", *_LAYOUT_FIELDS) if key not in record]
        if missing or record["direction"] not in DIRECTIONS:
            what = f"lacks {missing}" if missing else f"has direction {record['direction']!r}"
            raise BundleError(f"{path}: binding {info.name!r} {what}", fix=rebuild)
        entry = BindingEntry(
            name=info.name,
            direction=record["direction"],
            bytes=info.byte_size,
            region=info.region_id,
            **{key: record[key] for key in _LAYOUT_FIELDS},
        )
        problem = binding_layout_problem(entry)
        if problem:
            raise BundleError(f"{path}: binding {info.name!r}: {problem}", fix=rebuild)
        entries.append(entry)
    return entries
