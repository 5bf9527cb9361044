"""Refused by the retarget mode, each naming the operation and its line: Warp's built-in array
operations that APIC records as opaque operations (not kernel launches), whose CUDA records hold
parameters only a CUDA run knows (temporary storage sizes, CUB's choices). WRP_TEST_BUILTIN_OP
picks one: radix_sort_pairs, segmented_sort_pairs, runlength_encode, array_sum, array_inner."""

import os

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

N = 16
OP = os.environ.get("WRP_TEST_BUILTIN_OP", "radix_sort_pairs")


def build(device):
    keys = wp.array(np.arange(2 * N, 0, -1, dtype=np.int32) % 7, dtype=wp.int32, device=device)
    values = wp.array(np.arange(2 * N, dtype=np.int32), dtype=wp.int32, device=device)
    floats = wp.array(np.linspace(0, 1, N, dtype=np.float32), dtype=float, device=device)
    out = wp.zeros(N, dtype=wp.int32, device=device)
    count = wp.zeros(1, dtype=wp.int32, device=device)
    total = wp.zeros(1, dtype=float, device=device)
    starts = wp.array(np.array([0, 4, 8], dtype=np.int32), dtype=wp.int32, device=device)
    ends = wp.array(np.array([4, 8, 16], dtype=np.int32), dtype=wp.int32, device=device)

    def step():
        if OP == "radix_sort_pairs":
            wp.utils.radix_sort_pairs(keys, values, N)  # refused here
        elif OP == "segmented_sort_pairs":
            wp.utils.segmented_sort_pairs(keys, values, N, starts, ends)  # refused here
        elif OP == "runlength_encode":
            wp.utils.runlength_encode(keys, out, out, count, value_count=N)  # refused here
        elif OP == "array_sum":
            wp.utils.array_sum(floats, out=total)  # refused here
        elif OP == "array_inner":
            wp.utils.array_inner(floats, floats, out=total)  # refused here

    used = {
        "radix_sort_pairs": ({"keys": keys, "values": values}, {"keys": keys, "values": values}),
        "segmented_sort_pairs": (
            {"keys": keys, "values": values, "starts": starts, "ends": ends},
            {"keys": keys, "values": values},
        ),
        "runlength_encode": ({"keys": keys}, {"out": out, "count": count}),
        "array_sum": ({"floats": floats}, {"total": total}),
        "array_inner": ({"floats": floats}, {"total": total}),
    }
    inputs, outputs = used[OP]
    return CaptureSpec(inputs=inputs, outputs=outputs, step=step)
