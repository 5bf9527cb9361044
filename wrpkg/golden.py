"""Golden-output tolerances and the comparison both runtimes apply.

An output is compared bit for bit unless its capture spec declares a tolerance. A tolerance
has an absolute and a relative part and means, element by element over float32 values,

    |replay - golden| <= atol + rtol * |golden|      (numpy.isclose; NaN matches only NaN)

computed in float64. runtime/internal/golden.cc implements the same rule; tests/test_golden_parity.py
holds both to the same verdicts. A relative part alone cannot pass a value that should be
zero and comes back as 1e-9, hence the absolute part.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Tolerance:
    """How far a float32 output may be from its golden value: |replay - golden| <= atol + rtol * |golden|.

    Args:
      atol: the absolute part (>= 0); a value that should be 0 needs one.
      rtol: the relative part (>= 0, below 1).
    """

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


# Warp type names (capture.array_layout's "dtype") whose values are float32 lanes: the only data a
# tolerance applies to, and the data a mismatch report states float errors for.
_FLOAT32_TYPE = re.compile(
    r"^(float32|(vec[0-9]+|mat[0-9]+|quat|transform)f|(vector|matrix)\(.*dtype=float32\))$"
)


# ... and those made of float64 lanes ("float64", "vec3d", "mat33d", ...): no tolerance applies to them (they
# are compared bit for bit), but a mismatch report states their float errors too.
_FLOAT64_TYPE = re.compile(
    r"^(float64|(vec[0-9]+|mat[0-9]+|quat|transform)d|(vector|matrix)\(.*dtype=float64\))$"
)


def is_float64_type(dtype: str | None) -> bool:
    """True for a Warp type name made of float64 lanes ("float64", "vec3d", "mat33d", "quatd", ...)."""
    return bool(dtype) and _FLOAT64_TYPE.match(dtype) is not None


def is_float32_type(dtype: str | None) -> bool:
    """True for a Warp type name made of float32 lanes ("float32", "vec3f", "mat33f", "quatf", ...).

    Args:
      dtype: Warp's type name as the manifest's binding records it, or None when unknown.
    Returns:
      Whether a tolerance (and a float error report) applies to an output of that type.
    """
    return bool(dtype) and _FLOAT32_TYPE.match(dtype) is not None


@dataclass
class FloatErrors:
    """How far a replayed float32 (or float64) output is from its golden, element by element.

    runtime/internal/golden.cc's FloatErrors computes the same numbers (tests/test_golden_parity.py)."""

    elements: int  # float32 (float64) values compared
    differ: int  # values whose bits differ
    nonfinite: int  # of those, pairs where a NaN or an infinity is not matched: no tolerance passes them
    max_abs_error: float  # over differing finite pairs
    max_rel_error: float | None  # over differing finite pairs with golden != 0; None when one has golden 0
    kind: str = "float32"  # or "float64": a tolerance applies to float32 data only

    def passing_tolerance(self) -> str:
        """The smallest tolerance of each kind that would pass these values, as a CaptureSpec fix."""
        if self.differ == 0:
            return "bit-exact"
        if self.nonfinite:
            return f"no tolerance ({self.nonfinite} differ in NaN or infinity)"
        if self.max_abs_error == 0:
            return "any tolerance (only signed zeros or NaN payloads differ)"
        text = f"Tolerance(atol={_round_up(self.max_abs_error)})"
        if self.max_rel_error is not None and self.max_rel_error < 1:
            text += f" or Tolerance(rtol={_round_up(self.max_rel_error)})"
        return text

    def describe(self) -> str:
        passes = (
            f"passes with {self.passing_tolerance()}"
            if self.kind == "float32"
            else "no tolerance applies (float64 outputs are compared bit for bit)"
        )
        return (
            f"{self.differ} of {self.elements} {self.kind} differ, max abs error {self.max_abs_error:.3g}, "
            f"max rel error {'n/a' if self.max_rel_error is None else f'{self.max_rel_error:.3g}'}; {passes}"
        )


def _round_up(x: float) -> str:
    """x rounded up to two significant digits: a tolerance printed from it still passes."""
    exponent = math.floor(math.log10(x)) - 1
    value = math.ceil(x / 10.0**exponent) * 10.0**exponent
    if value < x:  # the float product can land a hair below
        value = math.nextafter(value, math.inf)
    return f"{value:.2g}" if float(f"{value:.2g}") >= x else repr(value)


def float_errors(golden: bytes, actual: bytes, kind: str = "float32") -> FloatErrors:
    """Element-wise errors of two equally long float32 (or float64) buffers (a whole number of values).

    Args:
      golden: the golden bytes.
      actual: the replayed bytes.
      kind: "float32" or "float64", the lanes the bytes hold.
    Returns:
      The FloatErrors of `actual` against `golden`.
    """
    width = 4 if kind == "float32" else 8
    g32 = np.frombuffer(golden, dtype=f"<f{width}")
    a32 = np.frombuffer(actual, dtype=f"<f{width}")
    differ = g32.view(f"<u{width}") != a32.view(f"<u{width}")
    g = g32[differ].astype(np.float64)
    a = a32[differ].astype(np.float64)
    finite = np.isfinite(g) & np.isfinite(a)
    both_nan = np.isnan(g) & np.isnan(a)
    nonfinite = int(np.count_nonzero(~finite & ~both_nan))
    err = np.abs(a[finite] - g[finite])
    gf = np.abs(g[finite])
    max_rel = (
        None if np.any((gf == 0) & (err > 0)) else float(np.max(err / np.where(gf == 0, 1, gf), initial=0.0))
    )
    return FloatErrors(
        elements=int(g32.size),
        differ=int(np.count_nonzero(differ)),
        nonfinite=nonfinite,
        max_abs_error=float(np.max(err, initial=0.0)),
        max_rel_error=max_rel,
        kind=kind,
    )


def first_disagreement(
    first: dict[str, bytes], second: dict[str, bytes], tolerances: dict, dtypes: dict[str, str]
) -> tuple[str, Comparison] | None:
    """The first output, by name, on which two replays disagree beyond its declared tolerance.

    Args:
      first: name -> bytes of one replay.
      second: name -> bytes of another replay of the same graph.
      tolerances: name -> Tolerance for the outputs that declare one.
      dtypes: name -> Warp type name (for the float error report).
    Returns:
      (name, its Comparison), or None when every output agrees.
    """
    for name in sorted(first):
        verdict = compare(first[name], second[name], tolerances.get(name), dtypes.get(name))
        if not verdict.match:
            return name, verdict
    return None


@dataclass
class Comparison:
    match: bool
    mismatches: int
    detail: str
    errors: FloatErrors | None = None  # for float32 data that does not match


def compare(
    golden: bytes, actual: bytes, tolerance: Tolerance | None, dtype: str | None = None
) -> Comparison:
    """Bit-exact when tolerance is None, else the float32 rule of the module doc.

    Args:
      golden: the golden bytes.
      actual: the replayed bytes.
      tolerance: the output's declared tolerance, or None for a bit-exact check.
      dtype: Warp's type name of the output, when known: a float32 output that does not match
        also gets its FloatErrors (max abs and rel error, the tolerance that would pass), and so
        does a float64 one (its errors; no tolerance applies to float64).
    Returns:
      The Comparison: verdict, mismatching bytes (exact) or float32 values (tolerance), one line.
    """
    if len(golden) != len(actual):
        return Comparison(False, 1, f"size differs: golden {len(golden)} bytes, replay {len(actual)} bytes")
    floats = (tolerance is not None or is_float32_type(dtype)) and len(golden) % 4 == 0
    if tolerance is None:
        g = np.frombuffer(golden, dtype=np.uint8)
        a = np.frombuffer(actual, dtype=np.uint8)
        bad = int(np.count_nonzero(g != a))
        if bad == 0:
            return Comparison(True, 0, f"{len(golden)} bytes, bit-exact")
        errors = (
            float_errors(golden, actual)
            if floats
            else float_errors(golden, actual, "float64")
            if is_float64_type(dtype) and len(golden) % 8 == 0
            else None
        )
        detail = f"{bad} of {len(golden)} bytes differ" + (f"; {errors.describe()}" if errors else "")
        return Comparison(False, bad, detail, errors)
    if len(golden) % 4:
        return Comparison(False, 1, f"{len(golden)} bytes is not a whole number of float32 values")
    g = np.frombuffer(golden, dtype="<f4").astype(np.float64)
    a = np.frombuffer(actual, dtype="<f4").astype(np.float64)
    ok = np.isclose(a, g, rtol=tolerance.rtol, atol=tolerance.atol, equal_nan=True)
    bad = int(np.count_nonzero(~ok))
    detail = f"{bad} of {g.size} float32 outside atol {tolerance.atol} + rtol {tolerance.rtol}"
    if bad == 0:
        return Comparison(True, 0, detail)
    errors = float_errors(golden, actual)
    return Comparison(False, bad, f"{detail}; {errors.describe()}", errors)
