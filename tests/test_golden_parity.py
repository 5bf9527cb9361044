"""wrpkg.golden.compare and the C++ runtime's CompareWithGolden give the same verdict, element
count for element count, on outputs chosen to sit on every edge of atol + rtol * |golden|."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

from wrpkg.golden import Tolerance, compare

GOLDEN_COMPARE = os.environ["WRP_GOLDEN_COMPARE"]

nan, inf = np.float32("nan"), np.float32("inf")
GOLDEN = np.array([0.0, 0.0, 1.0, -200.0, 1e-30, 3.0, nan, inf, -inf, 1e30, 5.0, 0.0], dtype=np.float32)
CASES = {
    "same": GOLDEN.copy(),
    "tiny_near_zero": GOLDEN + np.array([1e-9, -1e-12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], dtype=np.float32),
    "relative_edge": GOLDEN * np.float32(1 + 1e-5),
    "nan_for_number": np.where(np.arange(GOLDEN.size) == 2, nan, GOLDEN).astype(np.float32),
    "number_for_inf": np.where(np.isinf(GOLDEN), np.float32(3e38), GOLDEN).astype(np.float32),
    "flipped_inf": np.where(np.isinf(GOLDEN), -GOLDEN, GOLDEN).astype(np.float32),
    "far": GOLDEN + np.float32(0.01),
    "random": GOLDEN + np.random.default_rng(7).normal(0, 1e-6, GOLDEN.size).astype(np.float32),
}
TOLERANCES = [
    None,
    Tolerance(atol=0.0, rtol=1e-5),
    Tolerance(atol=1e-8, rtol=0.0),
    Tolerance(atol=1e-6, rtol=1e-5),
    Tolerance(atol=0.02, rtol=0.0),
    Tolerance(atol=1e-9, rtol=1e-5 * (1 + 2**-20)),
]


def cpp_run(
    golden: bytes, actual: bytes, tol: Tolerance | None, tmp_path, dtype: str | None = None
) -> list[str]:
    (tmp_path / "g.bin").write_bytes(golden)
    (tmp_path / "a.bin").write_bytes(actual)
    # repr() round-trips a float exactly, so both sides use the same atol and rtol.
    tol_json = "null" if tol is None else f'{{"atol": {tol.atol!r}, "rtol": {tol.rtol!r}}}'
    json.loads(tol_json)
    proc = subprocess.run(
        [GOLDEN_COMPARE, str(tmp_path / "g.bin"), str(tmp_path / "a.bin"), tol_json]
        + ([dtype] if dtype else []),
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout.splitlines()


def cpp_verdict(golden: bytes, actual: bytes, tol: Tolerance | None, tmp_path) -> tuple[bool, int]:
    match, mismatches = cpp_run(golden, actual, tol, tmp_path)[0].split()[:2]
    return match == "1", int(mismatches)


@pytest.mark.parametrize("case", sorted(CASES))
def test_python_and_cpp_agree(case, tmp_path):
    golden = GOLDEN.tobytes()
    actual = CASES[case].tobytes()
    verdicts = []
    for tol in TOLERANCES:
        py = compare(golden, actual, tol)
        cpp = cpp_verdict(golden, actual, tol, tmp_path)
        assert (py.match, py.mismatches) == cpp, f"{case} with {tol}: Python {py}, C++ {cpp}"
        verdicts.append(py.match)
    if case == "same":
        assert all(verdicts)


def test_the_cases_discriminate():
    """The table exercises both outcomes of each part of the rule, so agreement means something."""
    g = GOLDEN.tobytes()
    assert not compare(g, CASES["tiny_near_zero"].tobytes(), Tolerance(rtol=1e-5)).match
    assert compare(g, CASES["tiny_near_zero"].tobytes(), Tolerance(atol=1e-8)).match
    assert not compare(g, CASES["far"].tobytes(), Tolerance(atol=1e-6, rtol=1e-5)).match
    assert not compare(g, CASES["nan_for_number"].tobytes(), Tolerance(atol=1.0, rtol=0.5)).match
    assert not compare(g, CASES["flipped_inf"].tobytes(), Tolerance(atol=1.0, rtol=0.5)).match
    assert compare(g, CASES["same"].tobytes(), None).match


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dtype", ["vec3f", "int32"])
def test_mismatch_reports_agree(case, dtype, tmp_path):
    """A float32 output that fails its bit-exact check gets the same error report from both readers:
    how many values differ, max abs and rel error, and the tolerance that would pass."""
    golden, actual = GOLDEN.tobytes(), CASES[case].tobytes()
    py = compare(golden, actual, None, dtype)
    lines = cpp_run(golden, actual, None, tmp_path, dtype)
    fields = lines[0].split()
    assert (fields[0] == "1", int(fields[1])) == (py.match, py.mismatches)
    if py.errors is None:
        assert len(fields) == 2, f"{case}: C++ reported float errors Python did not: {lines}"
        assert py.match or dtype == "int32"
        return
    e = py.errors
    differ, nonfinite, max_abs, max_rel = fields[2:]
    assert (int(differ), int(nonfinite)) == (e.differ, e.nonfinite)
    assert float(max_abs) == e.max_abs_error
    assert (None if max_rel == "none" else float(max_rel)) == e.max_rel_error
    assert lines[1] == e.passing_tolerance()


GOLDEN64 = np.array([0.0, 1.0, -200.0, 1e-300, 3.0, np.nan, np.inf, 1e300], dtype=np.float64)


@pytest.mark.parametrize("dtype", ["float64", "vec2d", "int64"])
def test_float64_mismatch_reports_agree(dtype, tmp_path):
    """Issue 40: a float64 output that fails its bit-exact check is reported with its error size too
    (before, only its count of differing bytes), by both readers alike; no tolerance is suggested, as
    tolerances apply to float32 outputs."""
    golden = GOLDEN64.tobytes()
    actual = (GOLDEN64 + np.array([0, 1e-12, 0.5, 0, 0, 0, 0, 0])).tobytes()
    py = compare(golden, actual, None, dtype)
    lines = cpp_run(golden, actual, None, tmp_path, dtype)
    fields = lines[0].split()
    assert (fields[0] == "1", int(fields[1])) == (py.match, py.mismatches) == (False, py.mismatches)
    if dtype == "int64":
        assert py.errors is None and len(fields) == 2
        return
    e = py.errors
    assert (e.kind, e.elements, e.differ, e.nonfinite, e.max_abs_error) == ("float64", 8, 2, 0, 0.5)
    assert e.max_rel_error == 0.5 / 200
    described = "2 of 8 float64 differ, max abs error 0.5, max rel error 0.0025; no tolerance applies"
    assert described in py.detail
    differ, nonfinite, max_abs, max_rel = fields[2:]
    assert (int(differ), int(nonfinite), float(max_abs), float(max_rel)) == (2, 0, 0.5, 0.5 / 200)
    assert lines[-1].endswith(e.describe()), lines


def test_the_suggested_tolerance_passes_and_is_tight():
    """The report's tolerance passes the replay it was computed from; a tenth of it does not."""
    rng = np.random.default_rng(3)
    golden = rng.normal(0, 10, 4096).astype(np.float32)
    actual = (golden + rng.normal(0, 1e-3, golden.size)).astype(np.float32)
    report = compare(golden.tobytes(), actual.tobytes(), None, "float32")
    assert not report.match and report.errors.differ > 4000
    atol = float(report.errors.passing_tolerance().split("atol=")[1].split(")")[0])
    assert compare(golden.tobytes(), actual.tobytes(), Tolerance(atol=atol)).match
    assert not compare(golden.tobytes(), actual.tobytes(), Tolerance(atol=atol / 10)).match
    assert "passes with Tolerance(atol=" in report.detail
    with_nan = golden.copy()
    with_nan[5] = np.nan
    assert (
        "no tolerance (1 differ in NaN or infinity)"
        in compare(golden.tobytes(), with_nan.tobytes(), None, "float32").detail
    )
