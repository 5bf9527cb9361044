"""A backward launch (adjoint=True), as wp.Tape.backward() makes them: retargeted to the CUDA backward entry."""

import warp as wp

from wrpkg.capture import CaptureSpec


@wp.kernel
def double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]


def build(device):
    x = wp.ones(4, dtype=float, device=device)
    y = wp.zeros(4, dtype=float, device=device)
    adj_x = wp.zeros(4, dtype=float, device=device)
    adj_y = wp.ones(4, dtype=float, device=device)

    def step():
        wp.launch(double, dim=4, inputs=[x], outputs=[y], device=device)
        wp.launch(
            double,
            dim=4,
            inputs=[x],
            outputs=[y],
            adj_inputs=[adj_x],
            adj_outputs=[adj_y],
            adjoint=True,
            device=device,
        )

    return CaptureSpec(inputs={"x": x}, outputs={"y": y, "adj_x": adj_x}, step=step)
