"""A step that reads an array's values on the host and launches with a value computed from
them: the value would be frozen into the graph. WRP_TEST_READBACK_MODE picks:
  numpy      x.numpy() (default)
  list       x.list()
  asarray    np.asarray(x) (NumPy reads __array_interface__ from C)
  swallowed  x.numpy() inside try/except Exception
  dlpack     np.from_dlpack(x) (a zero-copy view NumPy reads through x.__dlpack__)
  to_dlpack  wp.to_dlpack(x) handed to NumPy (as wp.to_torch does for torch)
  print      the step prints the array (Warp reads it, nothing is computed from it): captures
  kernel     the fix: the maximum is computed by a kernel on the device (captures)
"""

import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 64
MODE = os.environ.get("WRP_TEST_READBACK_MODE", "numpy")


@wp.kernel
def scale(x: wp.array(dtype=float), factor: float):
    i = wp.tid()
    x[i] = x[i] * factor


@wp.kernel
def max_of(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_max(out, 0, x[i])


@wp.kernel
def divide(x: wp.array(dtype=float), by: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] / by[0]


def build(device):
    x = wp.array(np.arange(1, N + 1, dtype=np.float32), dtype=float, device=device)
    peak = wp.zeros(1, dtype=float, device=device)

    def step():
        if MODE == "numpy":
            m = float(x.numpy().max())
        elif MODE == "list":
            m = max(x.list())
        elif MODE == "asarray":
            m = float(np.asarray(x).max())
        elif MODE == "dlpack":
            m = float(np.from_dlpack(x).max())
        elif MODE == "to_dlpack":

            class Capsule:  # NumPy takes a DLPack capsule through an object's __dlpack__
                def __dlpack__(self, stream=None):
                    return wp.to_dlpack(x)

                def __dlpack_device__(self):
                    return x.__dlpack_device__()

            m = float(np.from_dlpack(Capsule()).max())
        elif MODE == "swallowed":
            try:
                m = float(x.numpy().max())
            except Exception:
                m = 1.0
        else:
            if MODE == "print":
                print(x)
            peak.zero_()
            wp.launch(max_of, dim=N, inputs=[x, peak], device=device)
            wp.launch(divide, dim=N, inputs=[x, peak], device=device)
            return
        wp.launch(scale, dim=N, inputs=[x, 1.0 / m], device=device)

    return CaptureSpec(inputs={"x": x}, outputs={"x": x}, step=step)
