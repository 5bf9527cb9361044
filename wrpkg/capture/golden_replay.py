"""Golden values: the saved capture loaded and replayed as a user would, and the replays of its
variants that tell which unwritten bytes the step reads (wrpkg.capture.initial_state).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from wrpkg import warp_internals, wrpformat
from wrpkg.capture import crash_watch, initial_state
from wrpkg.errors import CaptureError
from wrpkg.golden import as_tolerance, first_disagreement


def replay_golden(wp, wrp_path: Path, modules_dir: Path, golden_dir: Path, spec, device, target: str):
    """Golden values: load the saved file as a user would and replay it from its saved initial
    state, twice, each from a fresh load. An output the two replays disagree on (atomics,
    order across blocks) has no golden value to hold a replay to: it is refused unless it
    declares a tolerance the two replays meet. Files Warp may add while loading (a
    guest-compile cache) are not part of the capture: they are removed. Returns the golden
    files by name and their records."""
    saved_module_files = set(os.listdir(modules_dir)) if modules_dir.exists() else set()
    first = replay_outputs(wp, wrp_path, spec, device, target)
    crash_watch.phase(f"golden replay 2/2 of the saved {wrp_path.name}")
    second = replay_outputs(wp, wrp_path, spec, device, target)
    tolerances = {
        name: as_tolerance(spec.tolerances[name]) for name in spec.outputs if name in spec.tolerances
    }
    dtypes = {name: warp_internals.types().type_repr(arr.dtype) for name, arr in spec.outputs.items()}
    disagreement = first_disagreement(first, second, tolerances, dtypes)
    if disagreement is not None:
        name, verdict = disagreement
        declared = tolerances.get(name)
        raise CaptureError(
            f"{target}: output '{name}' differs between two replays of the saved graph on {device.alias} "
            f"({verdict.detail}): the step is not deterministic on this device (float atomics, or an order "
            "that depends on scheduling), so no golden value can hold a replay to it"
            + (
                f"; its declared tolerance (atol {declared.atol}, rtol {declared.rtol}) is too tight"
                if declared
                else ""
            ),
            fix=f"declare a tolerance for '{name}' in the CaptureSpec (tolerances={{'{name}': Tolerance(atol=..., "
            "rtol=...)}}) that covers the run-to-run spread, or make the step deterministic",
        )
    golden_dir.mkdir()
    golden_files = {}
    golden_records = []
    for name in sorted(spec.outputs):
        data = first[name]
        path = golden_dir / f"{name}.bin"
        path.write_bytes(data)
        golden_files[name] = path
        tol = tolerances.get(name)
        golden_records.append(
            {
                "name": name,
                "file": f"golden/{name}.bin",
                "bytes": len(data),
                "atol": None if tol is None else tol.atol,
                "rtol": None if tol is None else tol.rtol,
            }
        )
    if modules_dir.exists():
        for extra in set(os.listdir(modules_dir)) - saved_module_files:
            extra_path = modules_dir / extra
            if extra_path.is_dir():
                shutil.rmtree(extra_path)
            else:
                extra_path.unlink()
    return golden_files, golden_records, first


def outputs_differ(wp, spec, outputs: dict[str, bytes], golden: dict[str, bytes]) -> bool:
    """Whether `outputs` and the golden replay's differ by more than the declared tolerances."""
    tolerances = {
        name: as_tolerance(spec.tolerances[name]) for name in spec.outputs if name in spec.tolerances
    }
    dtypes = {name: warp_internals.types().type_repr(arr.dtype) for name, arr in spec.outputs.items()}
    return first_disagreement(outputs, golden, tolerances, dtypes) is not None


def replay_variant(wp, variant, wrp_path: Path, spec, device, target: str) -> dict[str, bytes]:
    """Outputs of one replay of `variant` (a changed copy of the capture), saved beside it."""
    folder = wrp_path.parent / ".variant"
    folder.mkdir()
    try:
        path = folder / wrp_path.name
        wrpformat.write_wrp(variant, path)
        modules = wrp_path.with_name(f"{wrp_path.stem}_modules")
        if modules.exists():
            (folder / modules.name).symlink_to(modules.resolve(), target_is_directory=True)
        return replay_outputs(wp, path, spec, device, target)
    finally:
        shutil.rmtree(folder)


def unwritten_note(target: str, regions) -> str:
    return (
        f"{target}: note: step() reads bytes that nothing wrote before it (allocated with wp.empty or "
        "its like, and left as they were): the capture saves them as zeros, and its golden values are "
        "what a replay from zeros computes, while the program run directly reads whatever memory "
        "held. The arrays: "
        + "; ".join(initial_state.describe(r) for r in regions)
        + ". To make the program itself deterministic, allocate them with wp.zeros or write them in build()."
    )


def replay_outputs(wp, wrp_path: Path, spec, device, target: str) -> dict[str, bytes]:
    """One fresh load and replay of the saved graph: each output's bytes."""
    try:
        loaded = wp.capture_load(str(wrp_path), device=device)
        return warp_internals.replay_outputs(loaded, sorted(spec.outputs), device)
    except RuntimeError as exc:
        raise CaptureError(f"{target}: the saved graph does not load or replay: {exc}") from exc
