"""Newton: a 4-link pendulum chain in generalized coordinates, SolverFeatherstone.

The chain of newton/examples/basic/example_basic_multi_solver_overlay.py (newton_chain.py),
stepped by the Featherstone articulated-body solver (mass matrix, Cholesky factorization
and joint-space integration every substep). The chain stays clear of the ground in one
frame, so the step passes no contacts. One captured graph is one frame of SUBSTEPS
substeps, the states swapping after each.
"""

import newton
import newton_chain  # the harness puts this script's folder first on sys.path

from wrpkg.capture import CaptureSpec

NUM_LINKS = 4
FPS = 100
SUBSTEPS = 10  # even: the final state is back in state_0
DT = 1.0 / FPS / SUBSTEPS


def build(device):
    model = newton_chain.chain_builder(NUM_LINKS).finalize(device=device)
    solver = newton.solvers.SolverFeatherstone(model)
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
