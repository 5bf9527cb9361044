"""Summaries of a file's bindings (names, directions, sizes) for `wrpkg inspect` and other tools."""

from __future__ import annotations

from dataclasses import dataclass

from wrpkg.wrpformat.enums import Direction
from wrpkg.wrpformat.metadata import BindingRecord
from wrpkg.wrpformat.wrpfile import WrpFile


@dataclass
class BindingInfo:
    name: str
    region_id: int
    direction: Direction
    byte_size: int | None  # the region's size, when the region is in the file


def binding_directions(bindings: list[BindingRecord]) -> list[Direction]:
    """Directions derivable from the file alone.

    capture_save registers every input, then every output, and names are unique within
    each, so a name that appears twice is both; records before the latest first-occurrence
    of such a name are inputs, records at or after the earliest second occurrence are
    outputs. Anything else is UNKNOWN (the file cannot tell; pass the capture's own lists).
    """
    first: dict[str, int] = {}
    second: dict[str, int] = {}
    for i, b in enumerate(bindings):
        if b.name in first:
            second.setdefault(b.name, i)
        else:
            first[b.name] = i
    if not second:
        return [Direction.UNKNOWN] * len(bindings)
    inputs_end = max(first[name] for name in second)  # inputs reach at least this index
    outputs_start = min(second.values())  # outputs start at or before this index
    result = []
    for i, b in enumerate(bindings):
        if b.name in second:
            result.append(Direction.BOTH)
        elif i <= inputs_end:
            result.append(Direction.INPUT)
        elif i >= outputs_start:
            result.append(Direction.OUTPUT)
        else:
            result.append(Direction.UNKNOWN)
    return result


def binding_infos(
    wrp: WrpFile, *, inputs: list[str] | None = None, outputs: list[str] | None = None
) -> list[BindingInfo]:
    """One entry per distinct binding name, with its direction and its region's byte size.

    `inputs`/`outputs` (e.g. from capture.json) override what the file alone can tell.
    """
    sizes = {region.region_id: region.size for region in wrp.memory.regions}
    derived = binding_directions(wrp.metadata.bindings)
    infos: dict[str, BindingInfo] = {}
    for binding, direction in zip(wrp.metadata.bindings, derived, strict=True):
        if inputs is not None or outputs is not None:
            is_in = binding.name in (inputs or [])
            is_out = binding.name in (outputs or [])
            direction = (
                Direction.BOTH
                if is_in and is_out
                else Direction.INPUT
                if is_in
                else Direction.OUTPUT
                if is_out
                else direction
            )
        if binding.name not in infos:
            infos[binding.name] = BindingInfo(
                binding.name, binding.region_id, direction, sizes.get(binding.region_id)
            )
    return list(infos.values())
