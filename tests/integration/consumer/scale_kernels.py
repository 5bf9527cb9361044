import warp as wp


@wp.kernel
def scale(x: wp.array(dtype=float), factor: float, y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * factor
