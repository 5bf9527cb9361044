"""The toolchain works end to end inside the sandbox: capture on the CPU with
apic=True, save, load back with wp.capture_load, replay, and check the output."""

import numpy as np
import warp as wp

wp.config.quiet = True


@wp.kernel
def axpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


def test_cpu_capture_save_load_replay(tmp_path):
    wp.init()
    assert wp.__version__ == "1.19.0"
    n = 64
    x = wp.array(np.arange(n, dtype=np.float32), dtype=float, device="cpu")
    y = wp.array(np.ones(n, dtype=np.float32), dtype=float, device="cpu")
    wp.load_module(device="cpu")
    wp.capture_begin(device="cpu", apic=True)
    for _ in range(3):
        wp.launch(axpy, dim=n, inputs=[2.0, x, y], device="cpu")
    graph = wp.capture_end(device="cpu")
    wp.capture_save(graph, str(tmp_path / "smoke"), inputs={"x": x, "y": y}, outputs={"y": y})
    assert (tmp_path / "smoke.wrp").is_file()

    loaded = wp.capture_load(str(tmp_path / "smoke.wrp"), device="cpu")
    wp.capture_launch(loaded)
    out = wp.zeros(n, dtype=float, device="cpu")
    loaded.get_param("y", out)
    expected = np.ones(n, dtype=np.float32) + 3 * 2.0 * np.arange(n, dtype=np.float32)
    np.testing.assert_array_equal(out.numpy(), expected)
