"""Runs one capture in this process (`python compile_probe.py <wrpkg.capture arguments>`) and prints,
as JSON on its last line, every compile Warp started (its CPU compiler, warp-clang's build_cpu, and
its CUDA compiler, build_cuda, NVRTC) with the capture's phase at that moment
(wrpkg.capture.crash_watch.phase), and the capture's error, if it failed. For
tests/test_refusal_before_compile.py: a refusal must come before any compile."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from wrpkg.capture import crash_watch  # noqa: E402 - after the path


def main(argv: list[str]) -> int:
    phases = ["starting"]
    compiles = []
    crash_watch.phase = phases.append  # the capture names each phase as it enters it

    import warp  # noqa: F401, PLC0415 - before wrpkg.capture, to hook Warp's compilers

    from wrpkg import warp_internals  # noqa: PLC0415
    from wrpkg.capture import tool as capture  # noqa: PLC0415
    from wrpkg.errors import CaptureError  # noqa: PLC0415

    def counting(name: str, original):
        def counted(*args, **kwargs):
            compiles.append({"compiler": name, "phase": phases[-1], "output": str(args[0])})
            return original(*args, **kwargs)

        return counted

    build = warp_internals.private("build")
    for name in ("build_cpu", "build_cuda"):
        setattr(build, name, counting(name, getattr(build, name)))

    parser = argparse.ArgumentParser()
    capture.configure_parser(parser)
    args = parser.parse_args([*argv, "--in-process"])
    error = None
    try:
        capture.run(args)
    except CaptureError as exc:
        error = str(exc)
    print(json.dumps({"compiles": compiles, "phases": phases, "error": error}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
