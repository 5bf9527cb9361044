"""build() fails on purpose with hash() of a fixed string in its message: the hash seed of the
process that runs the capture script (tests/test_step_refusals.py)."""


def build(device):
    raise RuntimeError(f"hash seed probe: {hash('wrpkg hash seed probe')}")
