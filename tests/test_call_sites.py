"""Refusals of what a library did inside the step name the user's line and the library's
(wrpkg.capture.call_sites): a host read-back in Warp's own library code and in an installed package."""

from __future__ import annotations

import os

import pytest
from test_capture import PROGRAMS, assert_refused, run_capture

from wrpkg.capture import call_sites

READBACK = PROGRAMS / "library_readback.py"


def _line(text: str) -> int:
    return next(i for i, line in enumerate(READBACK.read_text().splitlines(), 1) if text in line)


def test_a_read_back_inside_warps_library_code_is_refused_naming_both_lines(tmp_path):
    out = tmp_path / "raw"
    proc = run_capture(READBACK, out, env_extra={"WRP_TEST_READBACK": "warp"})
    assert_refused(
        proc,
        out,
        "step() reads an array's values on the host",
        f"at tests/programs_capture/library_readback.py:{_line('cubes.surface(')} (cubes.surface(field, 0.0))",
        "inside warp/_src/geometry/marching_cubes.py:",
    )


def test_a_read_back_inside_an_installed_package_names_its_line_as_the_package_spells_it(tmp_path):
    package = tmp_path / "venv" / "lib" / "site-packages" / "minilib"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("def largest(x):\n    return float(x.numpy().max())\n")
    out = tmp_path / "raw"
    env = {
        "WRP_TEST_READBACK": "installed",
        "PYTHONPATH": os.pathsep.join([str(package.parent), os.environ.get("PYTHONPATH", "")]),
    }
    proc = run_capture(READBACK, out, env_extra=env)
    assert_refused(
        proc,
        out,
        f"at tests/programs_capture/library_readback.py:{_line('minilib.largest(')} (factor = minilib.largest(x))",
        "inside minilib/__init__.py:2 (return float(x.numpy().max()))",
    )


@pytest.mark.parametrize(
    "imported, called",
    [
        ("import warp.sparse as sparse", "sparse.bsr_set_from_triplets"),
        # As warp.fem's integrate() does (Newton's implicit MPM reaches it so): a call through the
        # library's own name for the function named no library line before.
        ("from warp.sparse import bsr_set_from_triplets", "bsr_set_from_triplets"),
    ],
)
def test_a_retarget_refusal_of_a_library_operation_names_both_lines(tmp_path, imported, called):
    """An operation a library made through warp.sparse (a BSR update, which retarget refuses) names
    the script's line and the library's, as a Newton or MuJoCo Warp call would."""
    package = tmp_path / "venv" / "lib" / "site-packages" / "minilib"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        f"import numpy as np\nimport warp as wp\nimport warp.sparse as sparse\n{imported}\n\n"
        "class Triplets:\n"
        "    def __init__(self, device):\n"
        "        index = wp.array(np.arange(3, dtype=np.int32), dtype=wp.int32, device=device)\n"
        "        self.args = (index, index, wp.ones(3, dtype=float, device=device))\n"
        "        self.matrix = sparse.bsr_zeros(3, 3, block_type=float, device=device)\n"
        f"        {called}(self.matrix, *self.args)\n\n"
        "    def rebuild(self):\n"
        f"        {called}(self.matrix, *self.args)\n"
    )
    out = tmp_path / "raw"
    env = {
        "WRP_TEST_READBACK": "installed_sparse",
        "PYTHONPATH": os.pathsep.join([str(package.parent), os.environ.get("PYTHONPATH", "")]),
    }
    proc = run_capture(READBACK, out, device="cuda", mode="retarget", env_extra=env)
    assert_refused(
        proc,
        out,
        f"cannot retarget operation 1 (bsr_from_triplets) at library_readback.py:{_line('triplets.rebuild(')}, inside",
        f"inside minilib/__init__.py:14 ({called}(self.matrix, *self.args))",
    )


def test_call_site_of_a_frame_splits_user_and_installed_code():
    site = call_sites.here()
    assert site.library is None
    assert site.user is not None and site.user[0].endswith("test_call_sites.py")
    assert call_sites.describe(call_sites.CallSite(None, None)) == "in step()"


def test_a_library_line_in_newtons_implicit_mpm_names_the_switch_newton_offers():
    mpm = os.path.join(
        "venv", "lib", "site-packages", "newton", "_src", "solvers", "implicit_mpm", "solver.py"
    )
    switch = call_sites.library_switch(call_sites.CallSite(("model.py", 3), (os.path.abspath(mpm), 10)))
    assert switch is not None and 'grid_type = "fixed"' in switch and 'capture_mode = "gpu"' in switch
    other = os.path.join("venv", "lib", "site-packages", "newton", "_src", "geometry", "broad_phase_sap.py")
    assert (
        call_sites.library_switch(call_sites.CallSite(("model.py", 3), (os.path.abspath(other), 10))) is None
    )
    assert call_sites.library_switch(call_sites.CallSite(("model.py", 3), None)) is None


def test_a_read_back_inside_newtons_implicit_mpm_names_the_switch_newton_offers(tmp_path):
    # Files as an installed Newton's would be named (newton/_src/solvers/implicit_mpm/...), as a package
    # of its own so that the real Newton stays importable.
    folder = tmp_path / "venv" / "lib" / "site-packages" / "newton" / "_src" / "solvers" / "implicit_mpm"
    package = folder / "minilib"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("def largest(x):\n    return float(x.numpy().max())\n")
    out = tmp_path / "raw"
    env = {
        "WRP_TEST_READBACK": "installed",
        "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")]),
    }
    proc = run_capture(READBACK, out, env_extra=env)
    assert_refused(
        proc,
        out,
        "inside newton/_src/solvers/implicit_mpm/minilib/__init__.py:2 (return float(x.numpy().max()))",
        'grid_type = "fixed"',
        'capture on a GPU (capture_mode = "gpu")',
    )
