"""The capture corpus (tests/programs_corpus/): small Warp programs, one per kind of operation and
pattern APIC records (launches with scalars, structs, vectors, matrices and transforms; memsets
and fills; whole and ranged device copies; 2D and 3D launches; views as arguments and bindings;
tiles; generic overloads; two Warp modules; many launches; an array allocated in the step;
integer atomics; a mesh query through wp.handle). Each captures on the CPU, and its golden
outputs equal an independent NumPy computation of the same step (each program's `expected()`).
The same programs retargeted against native CUDA captures: //tests:retarget_gpu_test."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from test_capture import REPO, run_capture

CORPUS = REPO / "tests" / "programs_corpus"
# Not "_*": Bazel adds __init__.py files to py_test runfiles, which are the files themselves
# where runfiles are copied (a remote worker) rather than linked to the source tree.
PROGRAMS = sorted(p for p in CORPUS.glob("*.py") if p.stem != "corpus_helpers" and not p.stem.startswith("_"))
_SCALARS = {"f": np.float32, "d": np.float64, "h": np.float16, "i": np.int32}


def _scalar(dtype: str):
    """NumPy's scalar type of a Warp type name ("float32", "int32", "vec3f", "mat33d", ...)."""
    named = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "int32": np.int32}
    if dtype in named:
        return named[dtype]
    match = re.fullmatch(r"(vec\d+|mat\d+|quat|transform)([fdhi])", dtype)
    assert match, f"no NumPy type for {dtype}"
    return _SCALARS[match.group(2)]


def golden_array(raw: Path, interface: dict, name: str) -> np.ndarray:
    """An output's golden bytes, laid out as the named array (its view inside the binding)."""
    binding = next(b for b in interface["bindings"] if b["name"] == name)
    record = next(g for g in interface["golden"] if g["name"] == name)
    scalar = np.dtype(_scalar(binding["dtype"]))
    lanes = binding["dtype_bytes"] // scalar.itemsize
    data = (raw / record["file"]).read_bytes()
    shape = tuple(binding["shape"]) + ((lanes,) if lanes > 1 else ())
    strides = tuple(binding["strides"]) + ((scalar.itemsize,) if lanes > 1 else ())
    return np.ndarray(shape, dtype=scalar, buffer=data, offset=binding["offset"], strides=strides)


def load_program(script: Path):
    sys.path.insert(0, str(CORPUS))
    try:
        spec = importlib.util.spec_from_file_location(f"corpus_{script.stem}", script)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(CORPUS))


def test_the_corpus_is_whole():
    assert len(PROGRAMS) >= 14


@pytest.mark.parametrize("script", PROGRAMS, ids=lambda p: p.stem)
def test_goldens_equal_an_independent_numpy_computation(tmp_path, script):
    raw = tmp_path / "raw"
    proc = run_capture(script, raw, label=f"//tests:corpus_{script.stem}", stem=script.stem)
    assert proc.returncode == 0, proc.stderr
    interface = json.loads((raw / "interface.json").read_text())
    expected = load_program(script).expected()
    assert sorted(expected) == sorted(g["name"] for g in interface["golden"])
    for name, want in expected.items():
        got = golden_array(raw, interface, name)
        want = np.asarray(want)
        assert got.size == want.size, (name, got.shape, want.shape)
        got, want = got.reshape(want.shape), want
        if np.issubdtype(want.dtype, np.integer):
            np.testing.assert_array_equal(got, want, err_msg=name)
        else:
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6, err_msg=name)
