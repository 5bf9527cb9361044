"""The pinned Warp release, for the C++ runtime's version check: a copy of wrpkg.WARP_VERSION
(//tests:pins_test holds it, and the lock files, to that)."""

WARP_VERSION = "1.19.0"
