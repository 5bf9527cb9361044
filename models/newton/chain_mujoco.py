"""Newton: a 3-link pendulum chain stepped by MuJoCo Warp inside Newton, SolverMuJoCo.

The chain of newton/examples/basic/example_basic_multi_solver_overlay.py (newton_chain.py)
converted to a MuJoCo Warp model by SolverMuJoCo, which runs mujoco_warp's full step
(kinematics, MuJoCo's own collision detection against the ground, the constraint
solver, implicitfast integration) and writes the result back to Newton's state.

MuJoCo Warp's own solver loop (`opt.graph_conditional`, on by default): the solver iterates
until every world converges, at most ITERATIONS times (LS_ITERATIONS line-search steps each),
inside `wp.capture_while`, a conditional node of the captured graph. The CPU capture records
it, and the retargeted one records it as a GPU capture does (docs/retarget.md).

Switch: the CG solver (`mjSOL_CG`) instead of MuJoCo Warp's default Newton solver, whose
dense-Hessian step factorizes with `wp.tile_cholesky` (MathDx) in a kernel made by a factory
at step time (`_update_gradient_cholesky(nv)`): a CUDA bundle compiles a MathDx module per
SM by rebuilding it from the Python module that importing the capture script defines, and
such a factory kernel is not defined at import ("importing ... defines no Warp module
'_update_gradient_cholesky__locals__kernel_...'"). CG needs no factorization.
"""

import newton
import newton_chain  # the harness puts this script's folder first on sys.path

from wrpkg.capture import CaptureSpec

NUM_LINKS = 3
FPS = 100
SUBSTEPS = 4  # even: the final state is back in state_0
DT = 1.0 / FPS / SUBSTEPS
ITERATIONS = 10
LS_ITERATIONS = 5


def build(device):
    model = newton_chain.chain_builder(NUM_LINKS).finalize(device=device)
    solver = newton.solvers.SolverMuJoCo(
        model, solver="cg", iterations=ITERATIONS, ls_iterations=LS_ITERATIONS
    )
    state_0 = model.state()
    state_1 = model.state()
    control = model.control()
    newton.eval_fk(model, model.joint_q, model.joint_qd, state_0)

    states = [state_0, state_1]

    def step():
        for _ in range(SUBSTEPS):
            a, b = states
            a.clear_forces()
            solver.step(a, b, control, None, DT)
            states.reverse()

    assert SUBSTEPS % 2 == 0  # the step ends in state_0: the bound arrays are in place
    return CaptureSpec(
        inputs={"joint_q": state_0.joint_q, "joint_qd": state_0.joint_qd},
        outputs={"joint_q": state_0.joint_q, "joint_qd": state_0.joint_qd, "body_q": state_0.body_q},
        step=step,
        keep_alive=[model, solver, state_1, control],
    )
