"""A step that colors a graph (wp.utils.graph_coloring_assign) and launches over the colors. Warp
colors on the host in native code that APIC does not record: the colors would be saved as initial
state, computed from the edges as they were before the step's launches ran, and the color count
would be a constant of the graph. Before the refusal, the CPU capture saved colors that the direct step
does not give (those of the edges before the shift)."""

import numpy as np
import warp as wp

from wrpkg.capture import CaptureSpec

NODES = 6


@wp.kernel
def shift(edges: wp.array2d(dtype=wp.int32), by: int):
    i, j = wp.tid()
    edges[i, j] = (edges[i, j] + by) % NODES


@wp.kernel
def count(colors: wp.array(dtype=wp.int32), histogram: wp.array(dtype=wp.int32)):
    i = wp.tid()
    wp.atomic_add(histogram, colors[i], 1)


def build(device):
    # A triangle and an edge: shifted by one node, its coloring changes (an even ring's would not).
    graph = np.array([[0, 1], [1, 2], [2, 0], [3, 4]], dtype=np.int32)
    edges = wp.array(graph, dtype=wp.int32, device=device)
    colors = wp.zeros(NODES, dtype=wp.int32, device=device)
    histogram = wp.zeros(NODES, dtype=wp.int32, device=device)

    def step():
        histogram.zero_()
        wp.launch(shift, dim=edges.shape, inputs=[edges, 1], device=device)
        wp.utils.graph_coloring_assign(edges, colors)  # refused here
        wp.launch(count, dim=NODES, inputs=[colors, histogram], device=device)

    return CaptureSpec(inputs={"edges": edges}, outputs={"colors": colors, "histogram": histogram}, step=step)
