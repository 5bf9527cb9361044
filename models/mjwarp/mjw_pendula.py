"""MuJoCo Warp: pendula.xml from mujoco_warp's test data (no contacts).

Free, ball, slide and hinge joints, stacked joints and n-link chains with limits, armature,
damping and stiffness (contacts disabled in the XML). `mjw.put_model` / `mjw.put_data` on
the capture device; one captured graph is STEPS calls of `mjw.step(m, d)` (forward
dynamics, the constraint solver for the joint limits, Euler integration).

MuJoCo Warp's own solver loop (`opt.graph_conditional`, on by default): the solver iterates
until every world converges, at most ITERATIONS times (LS_ITERATIONS line-search steps each),
inside `wp.capture_while`, a conditional node of the captured graph. The CPU capture records
it, and the retargeted one records it as a GPU capture does (docs/retarget.md).

Switch: the CG solver (`mjSOL_CG`) instead of MuJoCo Warp's default Newton solver (its
Hessian factorization adds a MathDx `wp.tile_cholesky` kernel made at step time, which a CUDA
bundle can serve only for the capture's own SM: models/newton/README.md). The mass matrix's
dense blocks are factorized with such kernels anyway (`smooth.py`), so the CUDA bundle
(`mjw_pendula_wrp`) compiles for sm_90, the retargeted capture's SM, only.
"""

import os

import mujoco
import mujoco_warp as mjw
import warp as wp

from wrpkg.capture import CaptureSpec

XML = os.path.join(os.path.dirname(mjw.__file__), "test_data", "pendula.xml")
STEPS = 10
ITERATIONS = 10
LS_ITERATIONS = 5


def build(device):
    mjm = mujoco.MjModel.from_xml_path(XML)
    mjm.opt.iterations = ITERATIONS
    mjm.opt.ls_iterations = LS_ITERATIONS
    mjm.opt.solver = mujoco.mjtSolver.mjSOL_CG
    mjd = mujoco.MjData(mjm)
    with wp.ScopedDevice(device):
        m = mjw.put_model(mjm)
        d = mjw.put_data(mjm, mjd)

    def step():
        with wp.ScopedDevice(device):
            for _ in range(STEPS):
                mjw.step(m, d)

    return CaptureSpec(
        inputs={"qpos": d.qpos, "qvel": d.qvel},
        outputs={"qpos": d.qpos, "qvel": d.qvel, "qacc": d.qacc},
        step=step,
        keep_alive=[m, d],
    )
