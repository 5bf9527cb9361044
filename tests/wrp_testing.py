"""Test helpers for .wrp tests: CPU captures in subprocesses, and replays.

Captures run in a fresh Python process each (two captures = two processes, so the
addresses baked into a raw capture differ), with Warp's kernel cache in a temp folder.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
PROGRAMS_DIR = TESTS_DIR / "programs"
FIXTURE_DIR = TESTS_DIR / "fixtures" / "cuda-sm90-particles"
FIXTURE_WRP = FIXTURE_DIR / "sim.wrp"

# Process-wide cache of captures: {(program, index): out_dir}. Several test files need the
# same captures; making each once per pytest session keeps the suite inside its budget.
_CAPTURES: dict[tuple[str, int], Path] = {}


def kernel_cache_dir(base: Path) -> Path:
    path = Path(base) / "warp-kernel-cache"
    path.mkdir(parents=True, exist_ok=True)
    return path


def run_python(
    *argv: str,
    python: str | Path = sys.executable,
    env: dict[str, str] | None = None,
    env_extra: dict[str, str] | None = None,
    cwd: str | Path = REPO_ROOT,
    timeout: float = 300,
) -> subprocess.CompletedProcess:
    """`python ARGV...` in a fresh process, its output kept as text, its exit status not checked.

    `env` is the whole environment when given (a hermetic one, as an action has); otherwise
    this process's, plus `env_extra`, with this checkout first on PYTHONPATH."""
    if env is None:
        env = dict(os.environ, **(env_extra or {}))
        env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run(
        [str(python), *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def capture_cpu(
    program: str | Path, out_dir: str | Path, *, cache_dir: str | Path, timeout: float = 300
) -> Path:
    """Run `tests/programs/<program>` (a script taking OUT_DIR) in a subprocess; returns OUT_DIR/sim.wrp."""
    script = Path(program)
    if not script.is_absolute():
        script = PROGRAMS_DIR / (script.name if script.suffix else f"{script.name}.py")
    out_dir = Path(out_dir)
    result = run_python(
        str(script),
        str(out_dir),
        env_extra={"WARP_CACHE_PATH": str(cache_dir)},
        cwd=os.getcwd(),
        timeout=timeout,
    )
    if result.returncode != 0:
        raise AssertionError(
            f"capture {script.name} failed (exit {result.returncode}):\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        )
    wrp = out_dir / "sim.wrp"
    assert wrp.is_file(), f"{script.name} wrote no {wrp}"
    return wrp


def shared_capture(tmp_path_factory, program: str = "full_capture", index: int = 0) -> Path:
    """The `index`-th capture of `program` in this pytest session (made once, in its own process)."""
    key = (program, index)
    if key not in _CAPTURES:
        base = tmp_path_factory.getbasetemp()
        out = base / f"capture-{program}-{index}"
        if out.exists():
            shutil.rmtree(out)
        _CAPTURES[key] = capture_cpu(program, out, cache_dir=kernel_cache_dir(base)).parent
    return _CAPTURES[key] / "sim.wrp"


def place_wrp(data: bytes, modules_from: Path, dest_dir: Path, stem: str = "sim") -> Path:
    """Write `data` as dest_dir/<stem>.wrp with a copy of the modules folder beside it."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    wrp = dest_dir / f"{stem}.wrp"
    wrp.write_bytes(data)
    modules = dest_dir / f"{stem}_modules"
    if modules.exists():
        shutil.rmtree(modules)
    shutil.copytree(modules_from, modules)
    return wrp


def replay_cpu(wrp_path: Path, launches: int = 1, *, cache_dir: Path) -> dict[str, bytes]:
    """Load a CPU .wrp with wp.capture_load, launch it, and return every binding's bytes."""
    import warp as wp

    from wrpkg.warp_init import init_warp

    wp.config.quiet = True
    wp.config.kernel_cache_dir = str(cache_dir)
    init_warp(wp)
    from wrpkg.wrpformat import read_wrp

    wrp = read_wrp(wrp_path)
    sizes = {region.region_id: region.size for region in wrp.memory.regions}
    graph = wp.capture_load(str(wrp_path), device="cpu")
    for _ in range(launches):
        wp.capture_launch(graph)
    outputs = {}
    for binding in wrp.metadata.bindings:
        buf = wp.empty(sizes[binding.region_id], dtype=wp.uint8, device="cpu")
        graph.get_param(binding.name, buf)
        outputs[binding.name] = buf.numpy().tobytes()
    return outputs


# ---------------------------------------------------------------------------------------
# Fuzzing: seeded mutations of real captures through the reader
# ---------------------------------------------------------------------------------------

_INTERESTING = (0, 1, 0x7F, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF)


def structural_positions(data: bytes) -> list[tuple[int, int]]:
    """Byte ranges of a valid .wrp that are not region initial data (where mutations bite)."""
    from wrpkg.wrpformat import read_wrp

    wrp = read_wrp(data)
    ranges = []
    mem = next(e for e in wrp.sections if e.type == 2)
    ranges.append((0, mem.offset))
    pos = mem.offset + 4
    for region in wrp.memory.regions:
        ranges.append((pos, pos + 24))
        pos += 24 + (region.size if region.initial_data is not None else 0)
    ranges.append((mem.offset + mem.size, len(data)))
    return ranges


def mutate(rng, corpus: list[bytes], structure: list[list[tuple[int, int]]]) -> tuple[str, bytes]:
    """One truncated, bit-flipped, overwritten or spliced variant of a corpus file."""
    which = rng.randrange(len(corpus))
    data = corpus[which]

    def position() -> int:
        if rng.random() < 0.85:
            start, end = rng.choice(structure[which])
            return rng.randrange(start, end)
        return rng.randrange(len(data))

    kind = rng.random()
    if kind < 0.2:
        cut = position() if rng.random() < 0.7 else rng.randrange(len(data))
        return "truncate", data[:cut]
    if kind < 0.6:
        buf = bytearray(data)
        for _ in range(rng.choice((1, 1, 1, 2, 3, 8))):
            pos = position()
            buf[pos] ^= 1 << rng.randrange(8)
        return "bitflip", bytes(buf)
    if kind < 0.8:
        buf = bytearray(data)
        width = rng.choice((1, 2, 4, 8))
        pos = min(position(), len(buf) - width)
        value = rng.choice((*_INTERESTING, len(data), len(data) - pos, rng.getrandbits(width * 8)))
        buf[pos : pos + width] = (value & ((1 << (width * 8)) - 1)).to_bytes(width, "little")
        return "overwrite", bytes(buf)
    other = corpus[rng.randrange(len(corpus))]
    i = position()
    j = rng.randrange(len(other))
    if rng.random() < 0.5:
        return "splice", data[:i] + other[j:]
    k = min(len(other), j + rng.randrange(1, 256))
    return "splice", data[:i] + other[j:k] + data[i:]


def fuzz_chunk(args) -> dict:
    """Runs `count` variants from `seed`; returns counts. Only WrpFormatError is allowed."""
    import random
    import re
    import time

    from wrpkg.errors import WrpFormatError
    from wrpkg.wrpformat import read_wrp

    seed, count, corpus = args
    structure = [structural_positions(d) for d in corpus]
    rng = random.Random(seed)
    parsed = 0
    rejected: dict[str, int] = {}
    by_kind: dict[str, int] = {}
    slowest = 0.0
    cpu_start = time.process_time()
    for _ in range(count):
        kind, variant = mutate(rng, corpus, structure)
        by_kind[kind] = by_kind.get(kind, 0) + 1
        start = time.perf_counter()
        try:
            wrp = read_wrp(variant)
        except WrpFormatError as err:
            # Group rules by their wording: numbers and quoted values vary per variant.
            rule = re.sub(r"'[^']*'|\"[^\"]*\"|\d+", "N", err.rule)
            rule = f"{err.section}: {rule}"
            rejected[rule] = rejected.get(rule, 0) + 1
        else:
            parsed += 1
            # Whatever parses must write back to bytes that parse again (checked on a
            # sample: it doubles the cost of a variant).
            if parsed % 8 == 0:
                read_wrp(wrp.to_bytes())
        slowest = max(slowest, time.perf_counter() - start)
    return {
        "parsed": parsed,
        "rejected": rejected,
        "by_kind": by_kind,
        "slowest_s": slowest,
        "cpu_s": time.process_time() - cpu_start,
    }


# Runs a capture program's step directly (no capture: Warp's own operations) on the CPU and
# prints each output's bytes as hex, in JSON.
_DIRECT_RUN = """
import importlib.util, json, sys
import warp as wp
wp.config.quiet = True
spec = importlib.util.spec_from_file_location("program", sys.argv[1])
program = importlib.util.module_from_spec(spec)
spec.loader.exec_module(program)
capture = program.build(sys.argv[2])
capture.step()
wp.synchronize()
print(json.dumps({name: arr.numpy().tobytes().hex() for name, arr in capture.outputs.items()}))
"""


def direct_step_outputs(
    script: Path, env_extra: dict[str, str] | None = None, device: str = "cpu"
) -> dict[str, bytes]:
    """The outputs of `script`'s step run once by Warp on `device` without a capture, by name."""
    proc = run_python("-c", _DIRECT_RUN, str(script), device, env_extra=env_extra)
    assert proc.returncode == 0, proc.stderr
    return {name: bytes.fromhex(data) for name, data in json.loads(proc.stdout.splitlines()[-1]).items()}
