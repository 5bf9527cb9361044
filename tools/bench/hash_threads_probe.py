"""Benchmark (not a test): what hashing a bundle's .wrp costs a fresh Python process, on one
thread, split over 4 threads by chunk (the road wrpkg.reader.verify did not take: it gained nothing),
and on another thread while the main thread waits in a GIL-free call (as wrpkg.reader.bundle overlaps it
with Warp's load; time.sleep stands in).

    python tools/bench/hash_threads_probe.py BUNDLE_DIR [--repeat 7]

Prints medians (ms) of fresh processes as one JSON line."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

_CHILD = r"""
import hashlib, json, sys, threading, time
from pathlib import Path
t0 = time.perf_counter()
from wrpkg.reader.validity import read_manifest
t_import = time.perf_counter()
bundle = Path(sys.argv[1])
manifest = read_manifest(bundle)
data = bytearray((bundle / manifest.wrp).read_bytes())
view = memoryview(data)
chunks = [view[i : i + manifest.chunk_bytes] for i in range(0, len(data), manifest.chunk_bytes)]
out = {"import_ms": (t_import - t0) * 1e3, "bytes": len(data), "chunks": len(chunks)}
t = time.perf_counter(); hashlib.sha256(data).hexdigest(); out["one_thread_ms"] = (time.perf_counter() - t) * 1e3
def split_hash(pieces, threads=4):
    # hashlib lets go of the GIL while it hashes: each thread takes every threads-th chunk.
    def work(k):
        for piece in pieces[k::threads]:
            hashlib.sha256(piece).hexdigest()
    helpers = [threading.Thread(target=work, args=(k,)) for k in range(1, threads)]
    for h in helpers:
        h.start()
    work(0)
    for h in helpers:
        h.join()
t = time.perf_counter(); split_hash(chunks); out["chunks_parallel_ms"] = (time.perf_counter() - t) * 1e3
t = time.perf_counter(); [hashlib.sha256(c).hexdigest() for c in chunks]; out["chunks_one_thread_ms"] = (time.perf_counter() - t) * 1e3
t = time.perf_counter(); th = threading.Thread(target=lambda: None); th.start(); th.join(); out["thread_start_join_ms"] = (time.perf_counter() - t) * 1e3
t = time.perf_counter(); bytearray(data); out["copy_ms"] = (time.perf_counter() - t) * 1e3
# Overlap: hash on another thread while this one sleeps 4 ms without the GIL (Warp's call).
t = time.perf_counter()
th = threading.Thread(target=lambda: [hashlib.sha256(c).hexdigest() for c in chunks])
th.start(); time.sleep(0.004); th.join()
out["overlapped_with_4ms_call_ms"] = (time.perf_counter() - t) * 1e3
print(json.dumps(out))
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("bundle")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    runs = []
    for _ in range(args.repeat):
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, args.bundle], check=True, capture_output=True, text=True
        )
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(json.dumps({k: round(statistics.median(r[k] for r in runs), 3) for k in runs[0]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
