"""Kernels whose result on the CPU is not what a CUDA GPU computes: their CPU goldens do not hold
a GPU replay.

A retargeted capture makes its golden outputs by replaying the CPU capture, and its bundle is
replayed on GPUs. For most kernels both compute the same values (up to rounding, which a
tolerance covers); for two kinds the CPU computes something else altogether:
- tile operations launched with block_dim > 1: on the CPU a block runs as one thread, so
  cooperative tile code (scans, compaction, reductions across the block) takes another path;
- atomics: the order in which threads meet an atomic is the CPU loop's, not the GPU
  scheduler's, so sums round differently and a slot handed out by atomic_add goes elsewhere.
Warp's floating-point reductions and scans (warp.utils) are the third: CUB adds in a tree, the
CPU in a loop, so their sums round differently.
The capture names them (capture.json `cpu_golden_caveats`, and a note), so the bundle's gpu
replay tests use goldens made on a GPU (//rules:gpu_goldens, wrpkg.reader.regolden).
"""

from __future__ import annotations

import hashlib
import re

from wrpkg import warp_internals

_ATOMIC = re.compile(r"\bwp::(atomic_\w+)")
_TILE = re.compile(r"\bwp::(tile_\w+)")
# Code whose values depend on the block size itself: wp.block_dim() (the CPU answers 1), and a tile
# made of one value per thread of the block (wp.tile(x), a 1-element tile on the CPU) or spread
# back over them (wp.untile).
_BLOCK_SIZED = {
    "wp.block_dim()": r"\b(wp::block_dim|builtin_block_dim)\(\)",
    "wp.tile()": r"\bwp::tile\s*[<(]",
    "wp.untile()": r"\bwp::untile\b",
}


def _forward_code(kernel) -> str:
    """A built kernel's forward code without its comment lines (Warp comments each line with its Python)."""
    return "\n".join(
        line for line in warp_internals.forward_code(kernel) if not line.lstrip().startswith("//")
    )


def kernel_caveats(kernel, block_dim: int) -> list[str]:
    """Why a kernel's CPU result is not a CUDA golden, one phrase each; empty when it is.

    Args:
      kernel: a built Warp kernel (its module loaded on the CPU).
      block_dim: the CUDA block size the step launches it with.
    Returns:
      Phrases naming the atomics and tile operations that make it differ.
    """
    code = _forward_code(kernel)
    reasons = []
    atomics = sorted(set(_ATOMIC.findall(code)))
    if atomics:
        reasons.append(f"atomics ({', '.join(atomics)}): their order across threads is the CPU loop's")
    tiles = sorted(set(_TILE.findall(code)))
    if tiles and block_dim > 1:
        reasons.append(
            f"tile operations ({', '.join(tiles[:4])}{', ...' if len(tiles) > 4 else ''}) with block_dim "
            f"{block_dim}: the CPU runs a block as one thread"
        )
    return reasons


def written_parameters(kernel) -> set[str]:
    """The kernel's array parameters its code may write: every parameter whose generated name
    (var_<name>) appears in the forward code other than as the array of a read (wp::address(...)
    whose result Warp loads, wp::tile_load). Conservative: a store, an atomic, a wp.func call, a view
    or any form not known to be a read counts as a write."""
    code = _forward_code(kernel).splitlines()
    written = set()
    for param in getattr(kernel.adj, "args", ()):
        name = re.escape(f"var_{param.label}")
        read = re.compile(rf"^\s*var_\w+ = wp::address\({name}, |\bwp::tile_load(?:<[^()]*>)?\({name}, ")
        uses = re.compile(rf"\b{name}\b")
        for line in code:
            count = len(uses.findall(line))
            if count and (count > 1 or not read.search(line)):
                written.add(param.label)
                break
    return written


# Library kernels read and shown to compute the same values at any block size, though their code
# uses the block size: (kernel key, SHA-256 of the kernel's Python source) -> why. Any other version of
# such a kernel has another digest and is checked like every kernel.
BLOCK_SIZE_INDEPENDENT = {
    (
        "compute_shape_local_bounds",
        "2a22cb35f7ed5aecc8d3aa15222d38caaa3b2b58fca291c9c82f3352e2a3d67b",
    ): "Newton 1.8.0 (newton/_src/geometry/bvh.py), launched in model set-up: each lane takes the min and max "
    "of the points i = lane, lane + block_dim, ..., then wp.tile_reduce(wp.min / wp.max) over the lanes and "
    "lane 0 stores them. min and max are exact, so one lane over every point gives the same bounds "
    "(up to the sign of a zero at the extreme, where min(-0.0, 0.0) depends on the order)",
}


def reviewed_block_size_independent(kernel) -> str | None:
    """Why a kernel is in BLOCK_SIZE_INDEPENDENT, None when it is not."""
    source = getattr(getattr(kernel, "adj", None), "source", None)
    if not isinstance(source, str):
        return None
    return BLOCK_SIZE_INDEPENDENT.get((kernel.key, hashlib.sha256(source.encode("utf-8")).hexdigest()))


def block_sized_code(kernel) -> list[str]:
    """What in a built kernel's code computes with the block size itself (see _BLOCK_SIZED): launched
    with block_dim > 1, its result on the CPU, which runs a block as one thread, is another value.
    Empty for a kernel reviewed as block-size independent (BLOCK_SIZE_INDEPENDENT)."""
    if reviewed_block_size_independent(kernel):
        return []
    code = _forward_code(kernel)
    return [name for name, pattern in _BLOCK_SIZED.items() if re.search(pattern, code)]


def launch_caveats(calls) -> list[dict]:
    """The caveats of a retargeted step's launches (wrpkg.capture.retarget_recorder.LaunchCall), one record per
    kernel and block_dim, in launch order.

    Args:
      calls: the RetargetRecorder's calls.
    Returns:
      Records {"kernel", "block_dim", "where", "reasons"} for capture.json.
    """
    found: dict[tuple[str, int], dict] = {}
    for call in calls:
        key = (call.kernel.key, call.cuda_block_dim)
        if key in found:
            continue
        reasons = kernel_caveats(call.kernel, call.cuda_block_dim)
        found[key] = {
            "kernel": call.kernel.key,
            "block_dim": call.cuda_block_dim,
            "where": call.where,
            "reasons": reasons,
        }
    return [record for record in found.values() if record["reasons"]]


# warp.utils operations whose CPU result rounds differently from CUB's (wrpkg.capture.retarget_recorder.BUILTIN_ARRAY_OPS).
_FLOAT_SUMS = {
    "array_sum": "a reduction",
    "array_inner": "a reduction",
    "array_scan": "a scan",
}


def operation_caveats(builtin_calls) -> list[dict]:
    """The caveats of a retargeted step's warp.utils operations (wrpkg.capture.retarget_recorder.BuiltinCall), one
    record per operation and line: floating-point reductions and scans.

    Returns:
      Records {"operation", "where", "reasons"} for capture.json.
    """
    found: dict[tuple[str, str], dict] = {}
    for call in builtin_calls:
        kind = _FLOAT_SUMS.get(call.name)
        if kind is None or not call.dtype.startswith("float"):
            continue
        found.setdefault(
            (call.name, call.where),
            {
                "operation": call.name,
                "where": call.where,
                "reasons": [f"{kind} of {call.dtype}: CUB adds in a tree, the CPU in a loop"],
            },
        )
    return list(found.values())


def note(target: str, caveats: list[dict]) -> str:
    """The capture log's note on launch_caveats."""
    lines = [
        f"{target}: the CPU goldens of this retargeted capture may not match a GPU replay "
        "(the gpu replay tests compare with goldens made on a GPU under --config=gpu: //rules:gpu_goldens):"
    ]
    for record in caveats:
        what = (
            f"{record['kernel']} (block_dim {record['block_dim']}, {record['where']})"
            if "kernel" in record
            else f"wp.utils.{record['operation']} ({record['where']})"
        )
        lines.append(f"  {what}: {'; '.join(record['reasons'])}")
    return "\n".join(lines)
