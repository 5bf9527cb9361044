"""Newton: a small box pyramid (newton/examples/contacts/example_pyramid.py, scaled down), SolverXPBD.

PYRAMID_SIZE rows of boxes (10 boxes for 4 rows) stacked on a ground plane, a sphere dropped
on top; contacts through Newton's CollisionPipeline with its default broad phase
("explicit": the precomputed shape-pair list). One captured graph is one frame of SUBSTEPS
substeps (clear_forces + collide + XPBD step, then the two states swap).
"""

import newton
import warp as wp

from wrpkg.capture import CaptureSpec

PYRAMID_SIZE = 4
CUBE_HALF = 0.4
CUBE_SPACING = 2.1 * CUBE_HALF
BALL_RADIUS = 0.5
FPS = 100
SUBSTEPS = 10  # even: the final state is back in state_0
DT = 1.0 / FPS / SUBSTEPS
XPBD_ITERATIONS = 2
XPBD_CONTACT_RELAXATION = 0.8


def build(device, broad_phase=None):
    """The pyramid on `device`; `broad_phase` is CollisionPipeline's (None: its default)."""
    builder = newton.ModelBuilder()
    builder.add_shape_plane(xform=wp.transform_identity(), width=0.0, length=0.0)
    for level in range(PYRAMID_SIZE):
        count = PYRAMID_SIZE - level
        row_width = (count - 1) * CUBE_SPACING
        for i in range(count):
            body = builder.add_body(
                xform=wp.transform(
                    p=wp.vec3(-row_width / 2 + i * CUBE_SPACING, 0.0, level * CUBE_SPACING + CUBE_HALF),
                    q=wp.quat_identity(),
                )
            )
            builder.add_shape_box(body, hx=CUBE_HALF, hy=CUBE_HALF, hz=CUBE_HALF)
    ball = builder.add_body(
        xform=wp.transform(p=wp.vec3(0.1, 0.0, PYRAMID_SIZE * CUBE_SPACING + 1.0), q=wp.quat_identity())
    )
    builder.add_shape_sphere(ball, radius=BALL_RADIUS)
    model = builder.finalize(device=device)

    pipeline = newton.CollisionPipeline(model, broad_phase=broad_phase)
    solver = newton.solvers.SolverXPBD(
        model, iterations=XPBD_ITERATIONS, rigid_contact_relaxation=XPBD_CONTACT_RELAXATION
    )
    contacts = pipeline.contacts()
    state_0 = model.state()
    state_1 = model.state()
    control = model.control()
    newton.eval_fk(model, model.joint_q, model.joint_qd, state_0)

    states = [state_0, state_1]

    def step():
        for _ in range(SUBSTEPS):
            a, b = states
            a.clear_forces()
            pipeline.collide(a, contacts)
            solver.step(a, b, control, contacts, DT)
            states.reverse()

    assert SUBSTEPS % 2 == 0  # the step ends in state_0: body_q/body_qd are in place
    return CaptureSpec(
        inputs={"body_q": state_0.body_q, "body_qd": state_0.body_qd},
        outputs={
            "body_q": state_0.body_q,
            "body_qd": state_0.body_qd,
            "rigid_contact_count": contacts.rigid_contact_count,
        },
        step=step,
        keep_alive=[model, solver, state_1, control, pipeline, contacts],
    )
