"""Golden-output tolerances and the comparison both runtimes apply.

An output is compared bit for bit unless its capture spec declares a tolerance. A tolerance
has an absolute and a relative part and means, element by element over float32 values,

    |replay - golden| <= atol + rtol * |golden|      (numpy.isclose; NaN matches only NaN)

computed in float64. runtime/golden.cc implements the same rule; tests/test_golden_parity.py
holds both to the same verdicts. A relative part alone cannot pass a value that should be
zero and comes back as 1e-9, hence the absolute part.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Tolerance:
    atol: float = 0.0
    rtol: float = 0.0


def as_tolerance(value) -> Tolerance:
    """A CaptureSpec.tolerances value: a Tolerance, or a bare number meaning rtol (atol 0).

    Raises ValueError naming what is wrong.
    """
    if isinstance(value, Tolerance):
        tol = value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        tol = Tolerance(atol=0.0, rtol=float(value))
    else:
        raise ValueError(f"{value!r} is neither a number nor wrpkg.golden.Tolerance(atol=..., rtol=...)")
    for part in ("atol", "rtol"):
        x = getattr(tol, part)
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
            raise ValueError(f"{part} is {x!r}; expected a finite number >= 0")
    if tol.rtol >= 1.0:
        raise ValueError(f"rtol is {tol.rtol!r}; a relative tolerance below 1 is expected")
    if tol.atol == 0 and tol.rtol == 0:
        raise ValueError("atol and rtol are both 0; leave the output out of tolerances for a bit-exact check")
    return Tolerance(atol=float(tol.atol), rtol=float(tol.rtol))


def golden_tolerance(record) -> Tolerance | None:
    """The tolerance of a manifest golden entry (a GoldenEntry or its JSON dict); None = bit-exact."""
    get = record.get if isinstance(record, dict) else lambda key: getattr(record, key)
    atol, rtol = get("atol"), get("rtol")
    return None if atol is None and rtol is None else Tolerance(atol=float(atol), rtol=float(rtol))


@dataclass
class Comparison:
    match: bool
    mismatches: int
    detail: str


def compare(golden: bytes, actual: bytes, tolerance: Tolerance | None) -> Comparison:
    """Bit-exact when tolerance is None, else the float32 rule of the module doc."""
    if len(golden) != len(actual):
        return Comparison(False, 1, f"size differs: golden {len(golden)} bytes, replay {len(actual)} bytes")
    if tolerance is None:
        g = np.frombuffer(golden, dtype=np.uint8)
        a = np.frombuffer(actual, dtype=np.uint8)
        bad = int(np.count_nonzero(g != a))
        return Comparison(
            bad == 0, bad, f"{len(golden)} bytes, {'bit-exact' if bad == 0 else f'{bad} differ'}"
        )
    if len(golden) % 4:
        return Comparison(False, 1, f"{len(golden)} bytes is not a whole number of float32 values")
    g = np.frombuffer(golden, dtype="<f4").astype(np.float64)
    a = np.frombuffer(actual, dtype="<f4").astype(np.float64)
    ok = np.isclose(a, g, rtol=tolerance.rtol, atol=tolerance.atol, equal_nan=True)
    bad = int(np.count_nonzero(~ok))
    return Comparison(
        bad == 0, bad, f"{bad} of {g.size} float32 outside atol {tolerance.atol} + rtol {tolerance.rtol}"
    )
