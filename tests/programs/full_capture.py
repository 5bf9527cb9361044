"""A CPU capture that exercises every operation kind the format tests check.

Run as a script: `python full_capture.py OUT_DIR` writes OUT_DIR/sim.wrp and
OUT_DIR/sim_modules/, and OUT_DIR/expected.npz (the outputs after one replay of
the graph from its saved initial state, computed eagerly in the same process).

Covers: several kernels in two Warp modules (prog_physics, prog_geometry), a
@wp.struct argument, memset (zero_), memtile (fill_ of a 4-byte dtype), a copy,
capture_if, capture_while, a mesh query (HANDLE relocation + mesh record) and an
adjoint launch.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import prog_geometry  # noqa: E402
import prog_physics  # noqa: E402
import warp as wp  # noqa: E402

N = 64
DEVICE = "cpu"


def build():
    rng = np.random.default_rng(0)
    s = {}
    s["x"], s["v"], s["e"], s["params"] = prog_physics.initial_state(N, DEVICE, rng)
    s["d"] = wp.zeros(N, dtype=float, device=DEVICE)
    s["x_copy"] = wp.zeros(N, dtype=wp.vec3, device=DEVICE)
    s["a"] = wp.array(
        rng.standard_normal(N).astype(np.float32), dtype=float, device=DEVICE, requires_grad=True
    )
    s["b"] = wp.zeros(N, dtype=float, device=DEVICE, requires_grad=True)
    s["flag"] = wp.array([1], dtype=wp.int32, device=DEVICE)
    s["counter"] = wp.array([3], dtype=wp.int32, device=DEVICE)
    s["log"] = wp.zeros(1, dtype=float, device=DEVICE)
    points = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32)
    tris = np.array([0, 1, 2, 0, 1, 3, 0, 2, 3, 1, 2, 3], dtype=np.int32)
    s["mesh_points"] = wp.array(points, dtype=wp.vec3, device=DEVICE)
    s["mesh_indices"] = wp.array(tris, dtype=wp.int32, device=DEVICE)
    s["mesh"] = wp.Mesh(points=s["mesh_points"], indices=s["mesh_indices"])
    s["mesh_ids"] = wp.array([s["mesh"].id], dtype=wp.handle, device=DEVICE)
    return s


def step(s):
    s["e"].zero_()  # memset
    s["d"].fill_(2.5)  # memtile (4-byte element)
    for _ in range(3):
        wp.launch(
            prog_physics.integrate, dim=N, inputs=[s["x"], s["v"], s["params"], 1.0 / 60.0], device=DEVICE
        )
    wp.launch(prog_physics.kinetic_energy, dim=N, inputs=[s["v"], s["e"]], device=DEVICE)
    wp.copy(s["x_copy"], s["x"])  # copy
    wp.launch(prog_geometry.closest_distance, dim=N, inputs=[s["mesh"].id, s["x"], s["d"]], device=DEVICE)
    wp.launch(
        prog_geometry.closest_distance_indirect, dim=N, inputs=[s["mesh_ids"], s["x"], s["d"]], device=DEVICE
    )

    # forward + adjoint launch of `square`
    s["b"].grad.fill_(1.0)
    wp.launch(prog_physics.square, dim=N, inputs=[s["a"], s["b"]], device=DEVICE)
    wp.launch(
        prog_physics.square,
        dim=N,
        inputs=[s["a"], s["b"]],
        adj_inputs=[s["a"].grad, s["b"].grad],
        adjoint=True,
        device=DEVICE,
    )

    def on_true():
        wp.launch(prog_geometry.add_constant, dim=N, inputs=[s["b"], 1.0], device=DEVICE)

    def on_false():
        wp.launch(prog_geometry.add_constant, dim=N, inputs=[s["b"], -1.0], device=DEVICE)

    wp.capture_if(s["flag"], on_true=on_true, on_false=on_false)

    def body():
        wp.launch(prog_geometry.count_down, dim=1, inputs=[s["counter"], s["log"]], device=DEVICE)

    wp.capture_while(s["counter"], while_body=body)


OUTPUTS = ("x", "e", "d", "x_copy", "b", "log")


def io(s):
    inputs = {"x": s["x"], "v": s["v"], "a": s["a"]}
    outputs = {name: s[name] for name in OUTPUTS}
    return inputs, outputs


def capture(out_dir):
    wp.config.quiet = True
    wp.init()
    s = build()
    wp.load_module(prog_physics, device=DEVICE)
    wp.load_module(prog_geometry, device=DEVICE)
    wp.capture_begin(device=DEVICE, apic=True)
    step(s)
    graph = wp.capture_end(device=DEVICE)
    os.makedirs(out_dir, exist_ok=True)
    inputs, outputs = io(s)
    wp.capture_save(graph, os.path.join(out_dir, "sim"), inputs=inputs, outputs=outputs)

    # The expected outputs of one replay from the saved state: run the same step eagerly.
    ref = build()
    step(ref)
    np.savez(os.path.join(out_dir, "expected.npz"), **{name: ref[name].numpy() for name in OUTPUTS})


if __name__ == "__main__":
    capture(sys.argv[1])
