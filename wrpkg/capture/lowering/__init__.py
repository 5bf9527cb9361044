"""Warp operations a saved graph cannot hold as they are, recorded as kernel launches it can.

A wp.Bvh's and a wp.HashGrid's builds and refits, a wp.Mesh's refit, strided and indexed copies
and fills: each module here defines the kernels it records in their place, under a Warp module
name it sets itself (never this file's `__name__`), so a bundle's bytes do not depend on where
these files lie. mesh_builds builds each wp.Mesh's tree as a GPU would.
"""
