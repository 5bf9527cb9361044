"""The reader stage: open, verify, load and inspect a built bundle.

wrpkg.Bundle (bundle.py) opens a bundle once, verified (validity.py: every check a reader makes,
the C++ runtime's twin; fatbin.py: the fatbins it holds; ustar.py: the archive a `.tar` is), and loads it with Warp on a device that
runs it (device_fit.py), on CUDA through the per-device view (device_view.py). The tools
on top: `wrpkg verify` (verify.py), `wrpkg inspect` (inspection.py) and `wrpkg regolden`
(regolden.py: replays a bundle on a GPU and writes a copy whose goldens were made there).
"""
