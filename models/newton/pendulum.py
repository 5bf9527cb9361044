"""Newton: the double pendulum of newton/examples/basic/example_basic_pendulum.py, SolverXPBD.

Two box links on revolute joints over a ground plane, contacts through Newton's collision
pipeline (default broad phase). One captured graph is one frame: SUBSTEPS substeps of
clear_forces + collide + XPBD step, swapping the two states after each substep.
"""

import newton
import warp as wp

from wrpkg.capture import CaptureSpec

FPS = 100
SUBSTEPS = 10  # even: the final state is back in state_0 (see build)
DT = 1.0 / FPS / SUBSTEPS


def build(device):
    builder = newton.ModelBuilder()
    hx, hy, hz = 1.0, 0.1, 0.1
    link_0 = builder.add_link()
    builder.add_shape_box(link_0, hx=hx, hy=hy, hz=hz)
    link_1 = builder.add_link()
    builder.add_shape_box(link_1, hx=hx, hy=hy, hz=hz)
    rot = wp.quat_from_axis_angle(wp.vec3(0.0, 0.0, 1.0), -wp.pi * 0.5)
    j0 = builder.add_joint_revolute(
        parent=-1,
        child=link_0,
        axis=wp.vec3(0.0, 1.0, 0.0),
        parent_xform=wp.transform(p=wp.vec3(0.0, 0.0, 5.0), q=rot),
        child_xform=wp.transform(p=wp.vec3(-hx, 0.0, 0.0), q=wp.quat_identity()),
    )
    j1 = builder.add_joint_revolute(
        parent=link_0,
        child=link_1,
        axis=wp.vec3(0.0, 1.0, 0.0),
        parent_xform=wp.transform(p=wp.vec3(hx, 0.0, 0.0), q=wp.quat_identity()),
        child_xform=wp.transform(p=wp.vec3(-hx, 0.0, 0.0), q=wp.quat_identity()),
    )
    builder.add_articulation([j0, j1], label="pendulum")
    builder.add_ground_plane()
    model = builder.finalize(device=device)

    solver = newton.solvers.SolverXPBD(model)
    state_0 = model.state()
    state_1 = model.state()
    control = model.control()
    newton.eval_fk(model, model.joint_q, model.joint_qd, state_0)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()

    states = [state_0, state_1]

    def step():
        for _ in range(SUBSTEPS):
            a, b = states
            a.clear_forces()
            pipeline.collide(a, contacts)
            solver.step(a, b, control, contacts, DT)
            states.reverse()

    # SUBSTEPS is even, so the step ends in state_0 and body_q/body_qd are in place.
    assert SUBSTEPS % 2 == 0
    return CaptureSpec(
        inputs={"body_q": state_0.body_q, "body_qd": state_0.body_qd},
        outputs={"body_q": state_0.body_q, "body_qd": state_0.body_qd},
        step=step,
        keep_alive=[model, solver, state_1, control, pipeline, contacts],
    )
