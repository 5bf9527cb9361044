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


def cpp_verdict(golden: bytes, actual: bytes, tol: Tolerance | None, tmp_path) -> tuple[bool, int]:
    (tmp_path / "g.bin").write_bytes(golden)
    (tmp_path / "a.bin").write_bytes(actual)
    # repr() round-trips a float exactly, so both sides use the same atol and rtol.
    tol_json = "null" if tol is None else f'{{"atol": {tol.atol!r}, "rtol": {tol.rtol!r}}}'
    json.loads(tol_json)
    proc = subprocess.run(
        [GOLDEN_COMPARE, str(tmp_path / "g.bin"), str(tmp_path / "a.bin"), tol_json],
        capture_output=True,
        text=True,
        check=True,
    )
    match, mismatches = proc.stdout.split()
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
