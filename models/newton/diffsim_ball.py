"""Newton: one differentiable optimisation step (newton/examples/diffsim/example_diffsim_ball.py).

A particle is thrown at a wall and bounces off it and the ground (SolverSemiImplicit,
soft contacts against a box and a ground plane, gradients through a wp.Tape). One captured
graph is one training iteration of the example: the forward rollout of FRAMES x SUBSTEPS
steps and the loss (squared distance of the final position to a target), the backward
pass (`tape.backward(loss)`), the gradient-descent update of the initial velocity, and the
tape's gradients zeroed for the next iteration (so the graph can be launched again). The
example rolls out 36 frames; this one 4.

The contacts are generated once in build() (the example does the same: with a contact gap
of 10 m every particle-shape pair is always a contact), so they are initial state.
"""

import newton
import warp as wp

from wrpkg.capture import CaptureSpec

FPS = 60
FRAMES = 4
SUBSTEPS = 8
DT = 1.0 / FPS / SUBSTEPS
TRAIN_RATE = 0.02
TARGET = wp.vec3(0.0, -2.0, 1.5)


@wp.kernel
def loss_kernel(pos: wp.array(dtype=wp.vec3), target: wp.vec3, loss: wp.array(dtype=float)):
    delta = pos[0] - target
    loss[0] = wp.dot(delta, delta)


@wp.kernel
def descend(
    x: wp.array(dtype=wp.vec3), grad: wp.array(dtype=wp.vec3), alpha: float, grad_out: wp.array(dtype=wp.vec3)
):
    tid = wp.tid()
    grad_out[tid] = grad[tid]
    x[tid] = x[tid] - grad[tid] * alpha


def build(device):
    scene = newton.ModelBuilder(up_axis=newton.Axis.Z)
    scene.add_particle(pos=wp.vec3(0.0, -0.5, 1.0), vel=wp.vec3(0.0, 5.0, -5.0), mass=1.0)
    ke, kf, kd, mu = 1.0e4, 0.0, 1.0e1, 0.2
    scene.add_shape_box(
        body=-1,
        xform=wp.transform(wp.vec3(0.0, 2.0, 1.0), wp.quat_identity()),
        hx=1.0,
        hy=0.25,
        hz=1.0,
        cfg=newton.ModelBuilder.ShapeConfig(ke=ke, kf=kf, kd=kd, mu=mu),
    )
    scene.add_ground_plane(cfg=newton.ModelBuilder.ShapeConfig(ke=ke, kf=kf, kd=kd, mu=mu))
    model = scene.finalize(device=device, requires_grad=True)
    model.soft_contact_ke = ke
    model.soft_contact_kf = kf
    model.soft_contact_kd = kd
    model.soft_contact_mu = mu
    model.soft_contact_restitution = 1.0

    solver = newton.solvers.SolverSemiImplicit(model)
    states = [model.state() for _ in range(FRAMES * SUBSTEPS + 1)]
    control = model.control()
    pipeline = newton.CollisionPipeline(
        model, broad_phase="explicit", soft_contact_gap=10.0, requires_grad=True
    )
    contacts = pipeline.contacts()
    pipeline.collide(states[0], contacts)

    loss = wp.zeros(1, dtype=float, requires_grad=True, device=device)
    velocity = states[0].particle_qd  # the parameter the example optimises
    grad = wp.zeros_like(velocity)

    def step():
        tape = wp.Tape()
        with tape:
            for t in range(FRAMES * SUBSTEPS):
                states[t].clear_forces()
                solver.step(states[t], states[t + 1], control, contacts, DT)
            wp.launch(loss_kernel, dim=1, inputs=[states[-1].particle_q, TARGET, loss], device=device)
        tape.backward(loss)
        wp.launch(
            descend, dim=len(velocity), inputs=[velocity, velocity.grad, TRAIN_RATE, grad], device=device
        )
        tape.zero()

    return CaptureSpec(
        inputs={"particle_qd": velocity},
        outputs={
            "particle_qd": velocity,
            "loss": loss,
            "grad": grad,
            "particle_q_final": states[-1].particle_q,
        },
        step=step,
        keep_alive=[model, solver, states, control, pipeline, contacts],
    )
