"""Warp's own APIC tests as a corpus of capture programs for the retarget mode.

The pinned wheel ships `warp/tests/test_apic*.py`: unittest functions that capture graphs with
`wp.capture_begin(apic=True)` / `wp.ScopedCapture(apic=True)`. This tool runs those tests
unchanged under a shim around Warp's capture API: every APIC capture a test ends is also
saved, as rules_warp saves a capture (`source_fallback=True` on CUDA, no bindings), into
`OUT/<program>/prog.wrp` (+ `prog_modules/`), where `<program>` is
`<test module>.<test function>.<n>` (the n-th APIC capture of that test, from 0), so a CPU run
and a CUDA run name the same program the same way.

    python3 tools/apic_corpus.py retarget --out DIR [-k SUBSTR ...]   # the tests' CPU variants
    python3 tools/apic_corpus.py native --out DIR [-k SUBSTR ...]     # their cuda:0 variants (GPU)
    python3 tools/apic_corpus.py compare RETARGETED NATIVE --report OUT.json

`retarget` runs the CPU variant (`test_x_cpu`) of every test with wrpkg's
RetargetRecorder active during each APIC capture and rewrites each saved copy into the CUDA
capture for sm_90 (`wrpkg.capture.retarget.retarget`): per program `retargeted`, or `refused` with
the refusal message (also when the refusal stopped the test inside its capture), or
`save_failed` when Warp itself cannot save the graph. `native` runs the `test_x_cuda_0`
variants and keeps the saves (`saved`). Both apply rules_warp's source-path canonicalization
(`wrpkg.capture.source_paths`). `compare` compares every program both runs saved in canonical form
(`wrpkg.capture.retarget.compare_captures`: .wrp, .cu and .cubin bytes) and prints a table; its two
runs may also be of one mode (two native runs: is a program's content hash stable?).
`OUT/corpus.json` lists every test (its unittest outcome; `no_variant` when it has no variant
for the device run, e.g. a CUDA-only test) and program (status, message, operation counts).

The tests' own assertions still run; their outcome is recorded but does not decide a
program's status (many tests check Warp's error paths on purpose). Needs only Warp (and
numpy) importable; `--tests` names other test modules of the wheel.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import json
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

DEFAULT_TESTS = ("test_apic", "test_apic_mesh", "test_apic_utility_algorithms", "test_apic_load_from_bytes")
CORPUS_SCHEMA = "rules_warp.apic_corpus/1"
STEM = "prog"


class CorpusShim:
    """Wraps wp.capture_begin / capture_end while the tests run: every APIC capture that ends
    is saved (as rules_warp saves it) into the corpus, and in retarget mode retargeted."""

    def __init__(self, wp, out: Path, mode: str, arch: int):
        self.wp = wp
        self.out = out
        self.mode = mode  # "retarget" | "native"
        self.arch = arch
        self.test = None
        self.count = 0
        self.open = {}  # device alias -> (ExitStack, recorder or None) of an APIC capture
        self.pending_refusal = None
        self.programs = []
        # Absolute source path -> stable form, for every function relocated in this process
        # (wrpkg.capture.source_paths.relocate): a module built for an earlier program keeps its code.
        self.source_paths = {}

    # --- the wrapped API ------------------------------------------------------------------

    def install(self):
        import warp._src.context as ctx  # noqa: PLC0415

        self.orig = {name: getattr(ctx, name) for name in ("capture_begin", "capture_end", "capture_save")}
        self.signatures = {
            name: inspect.signature(self.orig[name]) for name in ("capture_begin", "capture_end")
        }
        wrappers = {"capture_begin": self.begin, "capture_end": self.end}
        self.patched = []
        for module in (ctx, self.wp):
            for name, wrapper in wrappers.items():
                self.patched.append((module, name, getattr(module, name)))
                setattr(module, name, wrapper)

    def uninstall(self):
        for module, name, value in self.patched:
            setattr(module, name, value)

    def _device(self, name, args, kwargs):
        bound = self.signatures[name].bind(*args, **kwargs)
        bound.apply_defaults()
        return self.wp.get_device(bound.arguments["device"]), bound.arguments

    def begin(self, *args, **kwargs):
        result = self.orig["capture_begin"](*args, **kwargs)
        device, arguments = self._device("capture_begin", args, kwargs)
        if not arguments["apic"]:
            return result
        stack = contextlib.ExitStack()
        recorder = None
        if self.mode == "retarget" and device.is_cpu:
            from wrpkg.capture import retarget_recorder  # noqa: PLC0415

            shim = self

            class Recorder(retarget_recorder.RetargetRecorder):
                def refuse(self, what, where, fix=None):
                    error = super().refuse(what, where, fix)
                    shim.pending_refusal = str(error)
                    return error

            tests_dir = os.path.dirname(os.path.abspath(importlib.import_module("warp.tests").__file__))
            recorder = Recorder(user_dirs=(tests_dir + os.sep,), target=self.test or "apic corpus")
            # Compared with Warp's own native captures, which save a wp.uint64 mesh id verbatim.
            recorder.relocate_uint64_mesh_ids = False
            stack.enter_context(recorder.recording(device))
        self.open[device.alias] = (stack, recorder)
        return result

    def end(self, *args, **kwargs):
        device, _ = self._device("capture_end", args, kwargs)
        stack, recorder = self.open.pop(device.alias, (None, None))
        if stack is not None:
            stack.close()
        graph = self.orig["capture_end"](*args, **kwargs)
        if stack is not None:
            self.programs.append(self._keep(self._next_program(), graph, recorder))
        return graph

    def _next_program(self) -> str:
        program = f"{self.test}.{self.count}"
        self.count += 1
        return program

    # --- one program ----------------------------------------------------------------------

    def _keep(self, program: str, graph, recorder) -> dict:
        from wrpkg import wrpformat  # noqa: PLC0415
        from wrpkg.capture import retarget, retarget_recorder, source_paths  # noqa: PLC0415

        record = {"program": program, "test": self.test}
        dest = self.out / program
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        if self.pending_refusal is not None:
            record.update(status="refused", message=self.pending_refusal)
            self.pending_refusal = None
            return self._done(record, dest)
        try:
            self.orig["capture_save"](graph, str(dest / STEM), source_fallback=bool(graph.device.is_cuda))
        except Exception as exc:  # Warp's own refusal to save: recorded, the test goes on
            record.update(status="save_failed", message=f"{type(exc).__name__}: {exc}")
            return self._done(record, dest)
        wrp_path, modules_dir = dest / f"{STEM}.wrp", dest / f"{STEM}_modules"
        try:
            wrp = wrpformat.read_wrp(wrp_path)  # parsed once: the retarget and the paths change it
        except Exception as exc:
            record.update(status="error", message=f"{type(exc).__name__}: {exc}")
            return self._done(record, dest)
        if recorder is not None:
            try:
                retarget.retarget(wrp, modules_dir, recorder, self.arch)
            except retarget_recorder.RetargetError as exc:
                record.update(status="refused", message=str(exc))
                return self._done(record, dest)
            except Exception as exc:  # a retarget bug: the corpus must show it, not stop
                record.update(
                    status="error", message="".join(traceback.format_exception_only(type(exc), exc))
                )
                return self._done(record, dest)
            record["status"] = "retargeted"
        else:
            record["status"] = "saved"
        try:
            rewritten = modules_dir.is_dir() and source_paths.canonicalize_sources(
                wrp, modules_dir, source_paths.relocate(self.wp, None, self.source_paths), program
            )
            if recorder is not None or rewritten:
                wrpformat.write_wrp(wrp, wrp_path)
        except Exception as exc:
            record.update(status="error", message=f"{type(exc).__name__}: {exc}")
            return self._done(record, dest)
        record["device"] = "cuda" if wrp.is_cuda else "cpu"
        record["ops"] = wrp.op_counts()
        record["modules"] = len(wrp.metadata.modules)
        record["entries"] = sorted({k.forward_name for k in wrp.metadata.kernels})
        return self._done(record, dest)

    def _done(self, record: dict, dest: Path) -> dict:
        (dest / "program.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        return record

    def close_open_captures(self):
        """A test that failed inside a capture leaves it open: end it so the next test starts
        clean; a refusal that stopped it is that program's result."""
        for alias, (stack, _) in list(self.open.items()):
            stack.close()
            with contextlib.suppress(Exception):
                self.orig["capture_end"](device=alias)
            program = self._next_program()
            if self.pending_refusal is not None:
                dest = self.out / program
                dest.mkdir(parents=True, exist_ok=True)
                record = {
                    "program": program,
                    "test": self.test,
                    "status": "refused",
                    "message": self.pending_refusal,
                }
                self.programs.append(self._done(record, dest))
        self.open.clear()
        self.pending_refusal = None


def _test_methods(module, suffix: str):
    for _, cls in sorted(vars(module).items()):
        if isinstance(cls, type) and issubclass(cls, unittest.TestCase) and cls.__module__ == module.__name__:
            for name in sorted(vars(cls)):
                if name.startswith("test_"):
                    yield cls, name, name.endswith(suffix)


def _base_name(method: str) -> str:
    return re.sub(r"_(cpu|cuda_\d+)$", "", method)


def run_corpus(mode: str, out: Path, tests: list[str], only: list[str], arch: int) -> dict:
    import warp as wp  # noqa: PLC0415

    from wrpkg.warp_init import init_warp  # noqa: PLC0415

    out.mkdir(parents=True, exist_ok=True)
    wp.config.log_level = wp.LOG_WARNING
    wp.config.kernel_cache_dir = tempfile.mkdtemp(prefix="apic-corpus-kernels-")
    init_warp(wp)
    if mode == "native" and wp.get_cuda_device_count() == 0:
        raise SystemExit("native mode needs a CUDA GPU (cuda:0)")
    suffix = "_cpu" if mode == "retarget" else "_cuda_0"
    shim = CorpusShim(wp, out, mode, arch)
    shim.install()
    results = []
    try:
        for test_module in tests:
            module = importlib.import_module(f"warp.tests.{test_module}")
            seen = {}
            for cls, method, runnable in _test_methods(module, suffix):
                base = _base_name(method)
                test_id = f"{test_module}.{base}"
                if only and not any(k in test_id for k in only):
                    continue
                if not runnable:
                    seen.setdefault(test_id, None)
                    continue
                seen[test_id] = method
                shim.test, shim.count = test_id, 0
                before = len(shim.programs)
                start = time.monotonic()
                outcome = unittest.TestResult()
                cls(method).run(outcome)
                shim.close_open_captures()
                status = "ok"
                detail = ""
                for kind, problems in (
                    ("error", outcome.errors),
                    ("fail", outcome.failures),
                    ("skip", outcome.skipped),
                ):
                    if problems:
                        status, detail = kind, str(problems[0][1])[-1500:]
                        break
                results.append(
                    {
                        "test": test_id,
                        "method": method,
                        "outcome": status,
                        "detail": detail,
                        "seconds": round(time.monotonic() - start, 2),
                        "programs": [p["program"] for p in shim.programs[before:]],
                    }
                )
                print(f"{test_id}: {status}, {len(shim.programs) - before} programs", flush=True)
            for test_id, method in seen.items():
                if method is None:
                    results.append({"test": test_id, "outcome": "no_variant", "programs": []})
    finally:
        shim.uninstall()
    corpus = {
        "schema": CORPUS_SCHEMA,
        "mode": mode,
        "warp_version": wp.config.version,
        "arch": arch if mode == "retarget" else None,
        "tests": results,
        "programs": shim.programs,
    }
    (out / "corpus.json").write_text(json.dumps(corpus, indent=1, sort_keys=True) + "\n")
    counts = {}
    for p in shim.programs:
        counts[p["status"]] = counts.get(p["status"], 0) + 1
    print(f"{mode}: {len(results)} tests, {len(shim.programs)} programs: {counts}")
    return corpus


# Statuses of a program that left a capture to compare (either mode's run may be either side,
# e.g. two native runs of one program).
_SAVED = ("retargeted", "saved")


def compare(retargeted: Path, native: Path) -> list[dict]:
    from wrpkg.capture.retarget import compare_captures  # noqa: PLC0415

    r = {p["program"]: p for p in json.loads((retargeted / "corpus.json").read_text())["programs"]}
    n = {p["program"]: p for p in json.loads((native / "corpus.json").read_text())["programs"]}
    rows = []
    for program in sorted(set(r) | set(n)):
        row = {
            "program": program,
            "retarget": r.get(program, {}).get("status", "absent"),
            "native": n.get(program, {}).get("status", "absent"),
            "message": r.get(program, {}).get("message"),
        }
        if row["retarget"] in _SAVED and row["native"] in _SAVED:
            differences = compare_captures(retargeted / program, native / program, STEM)
            if differences and "radix_sort" in (n[program].get("ops") or {}):
                # A native capture records the copies back from CUB's alternate buffer after a radix sort,
                # which the loader's re-issued sort makes itself (wrpkg.capture.retarget.drop_sort_copies).
                differences = compare_captures(
                    retargeted / program, native / program, STEM, without_sort_copies=True
                )
                row["sort_copies_dropped"] = not differences
            row["byte_identical"] = not differences
            row["differences"] = differences
            row["ops"] = n[program].get("ops")
        rows.append(row)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for mode in ("retarget", "native"):
        p = sub.add_parser(mode)
        p.add_argument("--out", required=True, type=Path)
        p.add_argument("--tests", nargs="+", default=list(DEFAULT_TESTS))
        p.add_argument(
            "-k", dest="only", action="append", default=[], help="only tests whose id contains this"
        )
        p.add_argument("--arch", type=int, default=90)
    p = sub.add_parser("compare")
    p.add_argument("retargeted", type=Path)
    p.add_argument("native", type=Path)
    p.add_argument("--report", required=True, type=Path)
    args = parser.parse_args(argv)
    if args.command == "compare":
        rows = compare(args.retargeted, args.native)
        args.report.write_text(json.dumps(rows, indent=1, sort_keys=True) + "\n")
        compared = [row for row in rows if "byte_identical" in row]
        for row in rows:
            verdict = (
                "byte-identical"
                if row.get("byte_identical")
                else ("DIFFERS: " + "; ".join(row["differences"]))
                if "byte_identical" in row
                else (row.get("message") or "").splitlines()[0][:100]
                if row.get("message")
                else ""
            )
            print(f"{row['program']:70s} {row['retarget']:11s} {row['native']:11s} {verdict}")
        same = sum(1 for row in compared if row["byte_identical"])
        print(f"compared {len(compared)} programs: {same} byte-identical, {len(compared) - same} differ")
        return 0 if same == len(compared) else 1
    run_corpus(args.command, args.out, args.tests, args.only, args.arch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
