"""Warp's built-in array operations (warp.utils) in the step: APIC records each as one operation,
the same record on the CPU and on CUDA, so a retargeted capture keeps it as recorded.
WRP_TEST_BUILTIN_OP picks one: radix_sort_pairs, segmented_sort_pairs, runlength_encode, array_sum,
array_inner, array_scan (inclusive, float32), array_scan_int (exclusive, int32)."""

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
    run_values = wp.zeros(N, dtype=wp.int32, device=device)
    run_lengths = wp.zeros(N, dtype=wp.int32, device=device)
    count = wp.zeros(1, dtype=wp.int32, device=device)
    total = wp.zeros(1, dtype=float, device=device)
    scanned = wp.zeros(N, dtype=float, device=device)
    prefix = wp.zeros(2 * N, dtype=wp.int32, device=device)
    starts = wp.array(np.array([0, 4, 8], dtype=np.int32), dtype=wp.int32, device=device)
    ends = wp.array(np.array([4, 8, 16], dtype=np.int32), dtype=wp.int32, device=device)

    def step():
        if OP == "radix_sort_pairs":
            wp.utils.radix_sort_pairs(keys, values, N)
        elif OP == "segmented_sort_pairs":
            wp.utils.segmented_sort_pairs(keys, values, N, starts, ends)
        elif OP == "runlength_encode":
            # Values and lengths in arrays of their own: aliased, the two devices write them in another
            # order (seen on an H100).
            wp.utils.runlength_encode(keys, run_values, run_lengths, count, value_count=N)
        elif OP == "array_sum":
            wp.utils.array_sum(floats, out=total)
        elif OP == "array_inner":
            wp.utils.array_inner(floats, floats, out=total)
        elif OP == "array_scan":
            wp.utils.array_scan(floats, scanned, inclusive=True)
        elif OP == "array_scan_int":
            wp.utils.array_scan(keys, prefix, inclusive=False)

    used = {
        "radix_sort_pairs": ({"keys": keys, "values": values}, {"keys": keys, "values": values}),
        "segmented_sort_pairs": (
            {"keys": keys, "values": values, "starts": starts, "ends": ends},
            {"keys": keys, "values": values},
        ),
        "runlength_encode": (
            {"keys": keys},
            {"run_values": run_values, "run_lengths": run_lengths, "count": count},
        ),
        "array_sum": ({"floats": floats}, {"total": total}),
        "array_inner": ({"floats": floats}, {"total": total}),
        "array_scan": ({"floats": floats}, {"scanned": scanned}),
        "array_scan_int": ({"keys": keys}, {"prefix": prefix}),
    }
    inputs, outputs = used[OP]
    return CaptureSpec(inputs=inputs, outputs=outputs, step=step)
