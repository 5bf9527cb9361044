"""MuJoCo Warp: collision.xml from mujoco_warp's test data (contacts).

Two spheres, two capsules and two boxes on slide joints (x and z) over a ground plane,
started as two touching stacks (sphere on the plane, capsule on the sphere, box on the
capsule: INITIAL_QPOS lowers the capsules and boxes 0.1 from their XML positions). `mjw.put_model` /
`mjw.put_data` on the capture device; one captured graph is STEPS calls of
`mjw.step(m, d)`: MuJoCo Warp's collision pipeline (broad phase, primitive narrow phase:
sphere, capsule and box against the plane and each other), the constraint solver,
Euler integration.

MuJoCo Warp's own solver loop (`opt.graph_conditional`, on by default): the solver iterates
until every world converges, at most ITERATIONS times (LS_ITERATIONS line-search steps each),
inside `wp.capture_while`, a conditional node of the captured graph. The CPU capture records
it, and the retargeted one records it as a GPU capture does (docs/retarget.md).

Switch: a sparse constraint Jacobian (`mjJAC_SPARSE`; "auto" picks dense for nv = 12). The
dense variant of MuJoCo Warp's tiled line-search kernel keeps a CPU tile shared-memory
check whose `_wp_assert(..., __FILE__, ...)` puts the absolute path of Warp's `tile.h` into
the CPU object file, which the CPU capture refuses (a machine-specific path in a binary).
The sparse variant does not, and the same script serves the CPU and the CUDA target.

Switch: the CG solver (`mjSOL_CG`) instead of MuJoCo Warp's default Newton solver, whose
dense-Hessian step factorizes with `wp.tile_cholesky` (MathDx) in a kernel made by a factory
at step time (`_update_gradient_cholesky(nv)`): a CUDA bundle compiles a MathDx module per
SM by rebuilding it from the Python module that importing the capture script defines, and
such a factory kernel is not defined at import ("importing ... defines no Warp module
'_update_gradient_cholesky__locals__kernel_...'"). CG needs no factorization.
"""

import os

import mujoco
import mujoco_warp as mjw
import warp as wp

from wrpkg.capture import CaptureSpec

XML = os.path.join(os.path.dirname(mjw.__file__), "test_data", "collision.xml")
STEPS = 10
ITERATIONS = 10
LS_ITERATIONS = 5
# (x, z) per body: spheres as in the XML, capsules and boxes 0.1 lower, so each stack touches.
INITIAL_QPOS = [0.0, 0.0, 0.0, 0.0, 0.0, -0.1, 0.0, -0.1, 0.0, -0.1, 0.0, -0.1]


def build(device):
    mjm = mujoco.MjModel.from_xml_path(XML)
    mjm.opt.iterations = ITERATIONS
    mjm.opt.ls_iterations = LS_ITERATIONS
    mjm.opt.solver = mujoco.mjtSolver.mjSOL_CG
    mjm.opt.jacobian = mujoco.mjtJacobian.mjJAC_SPARSE
    mjd = mujoco.MjData(mjm)
    mjd.qpos[:] = INITIAL_QPOS
    with wp.ScopedDevice(device):
        m = mjw.put_model(mjm)
        d = mjw.put_data(mjm, mjd)

    def step():
        with wp.ScopedDevice(device):
            for _ in range(STEPS):
                mjw.step(m, d)

    return CaptureSpec(
        inputs={"qpos": d.qpos, "qvel": d.qvel},
        outputs={"qpos": d.qpos, "qvel": d.qvel, "nacon": d.nacon},
        step=step,
        keep_alive=[m, d],
    )
