"""A script that branches on its device, as Newton's narrow phase does (block_dim 1 on the CPU, 128
on CUDA). Retargeted with a device model (the default, h200: wrpkg/capture/device_model.py), the line
that asks is told it runs on CUDA, so the capture launches with 128 as a GPU capture does, and the
answer is recorded (capture.json device_model_answers). With --device-model none it runs the CPU
branch (block_dim 1) and the capture names the line that asked (capture.json cpu_device_branches and
a note).

WRP_TEST_BRANCH=readback: the step's CPU branch reads a value back to the host, as Newton's implicit
MPM solver does where a GPU loops with wp.capture_while; with --device-model none the refusal comes
with a note naming the line that asked. WRP_TEST_BRANCH=queries: the step's launch also takes
max_blocks from the SM count and asks Warp whether conditional graphs and memory pools are there.
WRP_TEST_BRANCH=occupancy: max_blocks from wp.get_suggested_block_size, which the model computes for its GPU.
WRP_TEST_BRANCH=context (caught_context): the CUDA branch asks for the device's CUDA context, which a
run on the CPU cannot give: refused (also when the script catches the refusal).
WRP_TEST_BRANCH=fork: the CUDA branch makes a second stream and forks work onto it with events, as
Newton's narrow phase does; the capture records the launches in the order the step issues them.
WRP_TEST_BRANCH=pinned: the CUDA branch reads a value back in build() through pinned host memory, as
Newton's implicit MPM solver does; the CPU run, with no CUDA driver to pin with, gets ordinary host
memory."""

import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 256
BRANCH = os.environ.get("WRP_TEST_BRANCH")


@wp.kernel
def scale(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * 2.0


def build(device):
    x = wp.array(np.arange(N, dtype=np.float32), dtype=float, device=device)
    block_dim = 1 if wp.get_device(device).is_cpu else 128  # asks here
    max_blocks = 0
    if BRANCH == "queries":
        max_blocks = wp.get_device(device).sm_count  # asks the SM count
        assert wp.is_conditional_graph_supported() and wp.is_mempool_enabled(device)
    if BRANCH == "occupancy":
        block_size, min_grid_size = wp.get_suggested_block_size(scale, device)  # occupancy
        max_blocks = block_size * min_grid_size
    if BRANCH in ("context", "caught_context") and wp.get_device(device).is_cuda:
        try:
            print(wp.get_device(device).context)  # asks for the context
        except Exception:  # noqa: BLE001
            if BRANCH == "context":
                raise
    if BRANCH == "pinned":
        is_cuda = wp.get_device(device).is_cuda
        host = wp.zeros(N, dtype=float, device="cpu", pinned=is_cuda)  # pinned read-back
        wp.copy(host, x)
        wp.synchronize_device(device)
        assert host.numpy()[N - 1] == N - 1
    y = wp.array(np.arange(N, dtype=np.float32), dtype=float, device=device)
    side = events = None
    if BRANCH == "fork" and wp.get_device(device).is_cuda:
        side = wp.Stream(device)  # a second stream
        events = (wp.Event(device), wp.Event(device))
        wp.synchronize_stream(side)  # outside the capture, as a GPU allows
        wp.synchronize_event(side.record_event(events[0]))

    def step():
        if side is not None:
            main = wp.get_stream(device)  # the current stream
            side.wait_event(main.record_event(events[0]))
            wp.launch(scale, dim=N, inputs=[y], device=device, stream=side)
        wp.launch(scale, dim=N, inputs=[x], block_dim=block_dim, max_blocks=max_blocks, device=device)
        if side is not None:
            main.wait_event(side.record_event(events[1]))
            with wp.ScopedStream(side, sync_enter=False):
                wp.launch(scale, dim=N, inputs=[y], device=device)
            main.wait_stream(side)
        if BRANCH == "readback" and x.device.is_cpu:
            print(float(x.numpy().max()))  # read back on the CPU branch only

    outputs = {"x": x, "y": y} if side is not None else {"x": x}
    return CaptureSpec(inputs=dict(outputs), outputs=outputs, step=step)
