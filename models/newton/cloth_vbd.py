"""Newton: a small hanging cloth (newton/examples/cloth/example_cloth_hanging.py --solver vbd), SolverVBD.

A CLOTH_X x CLOTH_Y triangle cloth fixed along its left edge falls under gravity toward a
ground plane; Vertex Block Descent over the builder's graph colouring, ITERATIONS sweeps per
substep, particle-ground contacts through Newton's CollisionPipeline. Self-contact stays
off (the example turns it on): it queries a BVH, which Warp's APIC cannot save.
"""

import newton
import warp as wp

from wrpkg.capture import CaptureSpec

CLOTH_X = 8
CLOTH_Y = 4
FPS = 60
SUBSTEPS = 4  # even: the final state is back in state_0
DT = 1.0 / FPS / SUBSTEPS
ITERATIONS = 5


def build(device):
    builder = newton.ModelBuilder()
    builder.add_ground_plane()
    builder.add_cloth_grid(
        pos=wp.vec3(0.0, 0.0, 1.0),
        rot=wp.quat_from_axis_angle(wp.vec3(0.0, 0.0, 1.0), wp.pi * 0.5),
        vel=wp.vec3(0.0, 0.0, 0.0),
        dim_x=CLOTH_X,
        dim_y=CLOTH_Y,
        cell_x=0.1,
        cell_y=0.1,
        mass=0.1,
        fix_left=True,
        edge_ke=1.0e1,
        edge_kd=0.0,
        particle_radius=0.05,
        tri_ke=1.0e3,
        tri_ka=1.0e3,
        tri_kd=1.0e2,
    )
    builder.color(include_bending=True)
    model = builder.finalize(device=device)
    model.soft_contact_ke = 1.0e2
    model.soft_contact_kd = 1.0e2
    model.soft_contact_mu = 1.0

    solver = newton.solvers.SolverVBD(model=model, iterations=ITERATIONS, particle_enable_self_contact=False)
    state_0 = model.state()
    state_1 = model.state()
    control = model.control()
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

    assert SUBSTEPS % 2 == 0  # the step ends in state_0: particle_q/particle_qd are in place
    return CaptureSpec(
        inputs={"particle_q": state_0.particle_q, "particle_qd": state_0.particle_qd},
        outputs={"particle_q": state_0.particle_q, "particle_qd": state_0.particle_qd},
        step=step,
        keep_alive=[model, solver, state_1, control, pipeline, contacts],
    )
