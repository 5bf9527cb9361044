"""Fuzz the .wrp reader: >=100,000 truncated, bit-flipped, overwritten and spliced variants of
real captures. Each must parse or raise WrpFormatError: no other exception, no hang, and
memory bounded by a small multiple of the input's size."""

from __future__ import annotations

import multiprocessing
import os
import random
import time
import tracemalloc

import pytest
from wrp_testing import FIXTURE_WRP, fuzz_chunk, mutate, shared_capture, structural_positions

from wrpkg.errors import WrpFormatError
from wrpkg.wrpformat import read_wrp

TOTAL_VARIANTS = int(os.environ.get("WRP_FUZZ_VARIANTS", "100000"))
SEED = 20261129


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> list[bytes]:
    return [FIXTURE_WRP.read_bytes(), shared_capture(tmp_path_factory).read_bytes()]


def test_fuzz_reader_parses_or_raises_format_error(corpus):
    workers = max(1, min(2, os.cpu_count() or 1))
    per_chunk = 5000
    chunks = [
        (SEED + i, min(per_chunk, TOTAL_VARIANTS - i * per_chunk), corpus)
        for i in range((TOTAL_VARIANTS + per_chunk - 1) // per_chunk)
    ]
    start = time.perf_counter()
    # spawn: the test process may have Warp (and its threads) loaded; forking that is unsafe.
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        results = pool.map(fuzz_chunk, chunks)
    elapsed = time.perf_counter() - start

    parsed = sum(r["parsed"] for r in results)
    rejected: dict[str, int] = {}
    by_kind: dict[str, int] = {}
    for r in results:
        for rule, n in r["rejected"].items():
            rejected[rule] = rejected.get(rule, 0) + n
        for kind, n in r["by_kind"].items():
            by_kind[kind] = by_kind.get(kind, 0) + n
    total = parsed + sum(rejected.values())
    slowest = max(r["slowest_s"] for r in results)
    cpu = sum(r["cpu_s"] for r in results)

    print(
        f"\nfuzz: {total} variants in {elapsed:.1f} s wall on {workers} workers, {cpu:.1f} s CPU ({by_kind})"
    )
    print(f"fuzz: parsed {parsed}, rejected {total - parsed}, slowest single parse {slowest * 1e3:.1f} ms")
    for rule, n in sorted(rejected.items(), key=lambda kv: -kv[1]):
        print(f"  {n:>7}  {rule}")

    assert total == TOTAL_VARIANTS >= 100_000 or "WRP_FUZZ_VARIANTS" in os.environ
    # Both outcomes must occur, and the mutations must reach many distinct rules.
    assert parsed > 0 and total - parsed > 0
    assert len(rejected) >= 25, sorted(rejected)
    assert slowest < 2.0, f"one variant took {slowest:.2f} s to read"


def test_fuzz_memory_is_bounded_by_input_size(corpus):
    """tracemalloc over a sample (it slows reads ~3x, so not on the whole run): the peak
    stays under 16x the variant's size plus a small constant, including variants whose
    declared sizes and counts are huge."""
    structure = [structural_positions(d) for d in corpus]
    rng = random.Random(SEED ^ 0xA5A5)
    worst = 0.0
    for _ in range(2000):
        _, variant = mutate(rng, corpus, structure)
        tracemalloc.start()
        try:
            read_wrp(variant)
        except WrpFormatError:
            pass
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        bound = 16 * len(variant) + 256 * 1024
        worst = max(worst, peak / bound)
        assert peak < bound, f"peak {peak} bytes reading a {len(variant)}-byte variant"
    print(f"\nfuzz memory: worst peak / bound = {worst:.3f}")


def test_huge_declared_sizes_are_rejected_before_allocating():
    data = bytearray(FIXTURE_WRP.read_bytes())
    wrp = read_wrp(bytes(data))
    mem = next(e for e in wrp.sections if e.type == 2)
    # region count 0xFFFFFFFF and a region size of 2^63: both refused without allocating
    for pos, value in ((mem.offset, 0xFFFFFFFF), (mem.offset + 4 + 8, 1 << 63)):
        buf = bytearray(data)
        width = 4 if value < 1 << 32 else 8
        buf[pos : pos + width] = value.to_bytes(width, "little")
        tracemalloc.start()
        with pytest.raises(WrpFormatError) as err:
            read_wrp(bytes(buf))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert err.value.section == "MEMORY"
        assert peak < 4 * len(data) + 256 * 1024
