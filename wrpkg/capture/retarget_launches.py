"""The launch configuration a CUDA launch would have, taken from the Warp launch API while a
retargeted capture runs on the CPU (whose records keep a block_dim of 1): launch commands build()
makes (record_cmd=True) are tagged with it, and the forward launches a wp.Tape records are noted,
so that Tape.backward()'s replay of one gets its CUDA block_dim too (wrpkg.capture.retarget_recorder).
"""

from __future__ import annotations

import contextlib
import functools

from wrpkg import warp_internals

# Warp's CUDA default when a launch gives no positive block_dim (context.py
# _resolve_launch_block_dim, and wp_cuda_launch_kernel in warp.cu).
CUDA_DEFAULT_BLOCK_DIM = 256


# Set on a wp.Launch made while rules_warp watches (record_cmd=True): (CUDA block_dim, tiled). A CPU
# launch command keeps the CPU's block_dim (1), not the one the script asked for.
COMMAND_TAG = "_wrpkg_cuda_launch"


def cuda_launch_block_dim(tiled_block_dim, block_dim) -> int:
    """The block_dim a CUDA launch runs with, for a launch_tiled's or a wp.launch's request."""
    requested = tiled_block_dim if tiled_block_dim is not None else block_dim
    return CUDA_DEFAULT_BLOCK_DIM if requested is None or requested <= 0 else int(requested)


def tag_command(command, tiled_block_dim, block_dim) -> None:
    """Notes on a launch command what its CUDA launch will be."""
    if command is not None:
        setattr(
            command,
            COMMAND_TAG,
            (cuda_launch_block_dim(tiled_block_dim, block_dim), tiled_block_dim is not None),
        )


# The CUDA launch of each forward launch a wp.Tape recorded while rules_warp watched: Tape.backward()
# replays a launch with the block_dim the CPU resolved (1, passed as a _ResolvedBlockDim), where a GPU's
# tape replays the forward launch's CUDA block_dim (256 unless asked). id(inputs) -> [(tape entry, CUDA
# block_dim, tiled)]: backward passes the entry's own inputs list.
_tape_forwards: dict[int, list[tuple[list, int, bool]]] = {}
# (CUDA block_dim, tiled) of each watched wp.launch running now, innermost last.
_launching: list[tuple[int, bool]] = []


def tape_patch(wp) -> tuple[object, str, object]:
    """Tape.record_launch, noting the CUDA launch of the watched wp.launch that records."""
    original = wp.Tape.record_launch

    def record_launch(tape, kernel, dim, max_blocks, inputs, outputs, device, block_dim=0, metadata=None):
        original(tape, kernel, dim, max_blocks, inputs, outputs, device, block_dim, metadata)
        if _launching:
            _tape_forwards.setdefault(id(inputs), []).append((tape.launches[-1], *_launching[-1]))

    return (wp.Tape, "record_launch", record_launch)


def tape_forward_launch(kernel, inputs, outputs) -> tuple[int, bool] | None:
    """(CUDA block_dim, tiled) of the forward launch a Tape.backward() launch replays, or None when no
    watched launch recorded it (or two recorded it with different CUDA launches)."""
    found = {
        (cuda_block_dim, tiled)
        for entry, cuda_block_dim, tiled in _tape_forwards.get(id(inputs), [])
        if entry[0] is kernel and entry[3] is inputs and entry[4] is outputs
    }
    return found.pop() if len(found) == 1 else None


@contextlib.contextmanager
def watched_launch(cuda_block_dim: int, tiled: bool):
    _launching.append((cuda_block_dim, tiled))
    try:
        yield
    finally:
        _launching.pop()


@contextlib.contextmanager
def watching_launch_commands():
    """While build() runs: launch commands it makes (record_cmd=True) are tagged for a later launch()
    in the step."""
    import warp as wp  # noqa: PLC0415

    ctx = warp_internals.context()
    original_launch, original_tiled = ctx.launch, ctx.launch_tiled
    tiled: list = []

    # __wrapped__: a module that imports one by name during build() is found (retarget_recorder).
    @functools.wraps(original_launch)
    def launch(kernel, dim, *args, **kwargs):
        tiled_block_dim = tiled.pop() if tiled else None
        block_dim = kwargs.get("block_dim", args[10] if len(args) > 10 else None)
        with watched_launch(cuda_launch_block_dim(tiled_block_dim, block_dim), tiled_block_dim is not None):
            result = original_launch(kernel, dim, *args, **kwargs)
        if kwargs.get("record_cmd", args[8] if len(args) > 8 else False):
            tag_command(result, tiled_block_dim, block_dim)
        return result

    @functools.wraps(original_tiled)
    def launch_tiled(*args, **kwargs):
        tiled.append(kwargs.get("block_dim"))
        try:
            return original_tiled(*args, **kwargs)
        finally:
            tiled.clear()

    patches = [
        (ctx, "launch", launch),
        (wp, "launch", launch),
        (ctx, "launch_tiled", launch_tiled),
        (wp, "launch_tiled", launch_tiled),
        tape_patch(wp),
    ]
    _tape_forwards.clear()
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    try:
        for owner, name, value in patches:
            setattr(owner, name, value)
        yield
    finally:
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)
