"""The pinned Warp release (must equal warp-lang in toolchains/python/requirements.in)."""

WARP_VERSION = "1.19.0"
