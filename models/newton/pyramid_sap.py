"""Newton: the box pyramid of pyramid.py with the sweep-and-prune broad phase
(CollisionPipeline(model, broad_phase="sap")): one world, so Newton sorts the shapes' projections
with wp.utils.radix_sort_pairs inside the step (broad_phase_sap.py), a Warp built-in operation
that the capture keeps as APIC records it, on the CPU and retargeted to CUDA alike.
"""

import pyramid  # the harness puts this script's folder first on sys.path


def build(device):
    return pyramid.build(device, broad_phase="sap")
