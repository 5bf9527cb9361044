"""On a GPU machine: the last two columns of docs/coverage/newton_mjwarp.md (replay on the GPU,
byte-identical to native) for the programs the CPU table ran.

For each program, the same generic adapter as tools/coverage/newton_coverage.py is captured natively
(`--mode gpu`) and retargeted on this machine's CPU (the GPU hidden), the two compared in canonical
form, and the retargeted capture replayed on the GPU against the native golden values
(tools/gpu/native_vs_retarget.py's check). Results go to one JSON, rewritten after each program;
a second run with the same --out goes on where the first stopped, so the work can be spread over
calls of a time-limited machine:

    PYTHONPATH=. python tools/coverage/gpu_coverage.py --out $OUT/gpu.json --jobs 12 --stop-after 540

Back on the CPU machine, the table takes the columns from that file:

    PYTHONPATH=. python tools/coverage/newton_coverage.py --table-only --gpu-results FILE
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
from native_vs_retarget import check  # noqa: E402
from newton_coverage import DEFAULT_TABLE, list_programs, write_adapter  # noqa: E402

# Seconds kept at the end of a run for the last JSON write; a capture is never given less.
_MARGIN_S = 15
_MIN_CAPTURE_S = 30


def _first_line(text: str, limit: int = 200) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    # A refusal's last lines name the reason and the fix; Python's traceback ends in the error.
    line = next((entry for entry in reversed(lines) if "refused" in entry or "Error" in entry), "")
    line = line or (lines[-1] if lines else "no output")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def cells(record: dict) -> dict:
    """The two table cells of one program's check."""
    native, retarget = record.get("native", {}), record.get("retarget", {})
    if not native.get("ok"):
        where = "native capture " + ("timed out" if "timeout" in native.get("error", "") else "failed")
        cell = f"{where}: {_first_line(native.get('error', ''))}"
        return {"replay": cell, "identical": "no native capture"}
    if not retarget.get("ok"):
        return {
            "replay": "native ok; no retargeted capture to replay",
            "identical": f"retarget failed: {_first_line(retarget.get('error', ''))}",
        }
    replay = record.get("replay_vs_native_golden", {})
    if "error" in replay:
        replay_cell = f"replay failed: {replay['error'][:200]}"
    else:
        exact = [name for name, r in replay.items() if r["bit_exact"]]
        close = [name for name, r in replay.items() if r["within_tolerance"]]
        if len(exact) == len(replay):
            replay_cell = f"ok: {len(replay)} of {len(replay)} outputs bit-exact to the native goldens"
        elif len(close) == len(replay):
            replay_cell = (
                f"ok: {len(exact)} of {len(replay)} outputs bit-exact, the rest within the declared tolerance"
            )
        else:
            worst = next(name for name, r in replay.items() if not r["within_tolerance"])
            replay_cell = f"differs: {worst}: {replay[worst]['detail']}"
    differences = record.get("canonical_differences", [])
    if record.get("byte_identical"):
        identical = "yes"
    elif record.get("identical_without_sort_copies"):
        identical = "yes, but for the copies a native capture records after each radix sort"
    else:
        identical = f"no: {differences[0] if differences else 'differs'}"[:240]
    return {"replay": replay_cell, "identical": identical}


def gpu_name() -> str:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,compute_cap", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise SystemExit(
            f"gpu_coverage.py: no GPU here (nvidia-smi: {exc}); run it on a GPU machine"
        ) from exc
    name, cap = [part.strip() for part in out.splitlines()[0].split(",")]
    return f"{name}, sm_{cap.replace('.', '')}"


def selected_programs(table_json: Path, only: list[str]) -> list[dict]:
    """The programs the CPU table ran, those it retargeted first (their check is the one that can pass),
    each with the arrays its CPU run found unused (the adapter leaves them out)."""
    results = json.loads(table_json.read_text())["programs"]
    ran = [
        {**p, "unused": results[p["program"]].get("unused", [])}
        for p in list_programs()
        if results.get(p["program"], {}).get("runnable")
    ]
    ran = [p for p in ran if not only or any(s in p["program"] for s in only)]

    def retargeted(p: dict) -> bool:
        return results[p["program"]].get("retarget", {}).get("verdict") == "ok"

    return sorted(ran, key=lambda p: (not retargeted(p), p["program"]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--out", type=Path, required=True, help="the GPU results JSON (read first if it exists)"
    )
    parser.add_argument("--table", type=Path, default=DEFAULT_TABLE, help="the CPU table, its JSON beside it")
    parser.add_argument("--only", action="append", default=[], help="programs whose name contains this")
    parser.add_argument("--jobs", type=int, default=8, help="programs checked at once")
    parser.add_argument("--timeout", type=float, default=420, help="seconds per capture")
    parser.add_argument(
        "--stop-after",
        type=float,
        default=None,
        help="start no program after this many seconds, end all by it",
    )
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "wrp-gpu-coverage")
    args = parser.parse_args(argv)
    start = time.monotonic()
    end = start + args.stop_after - _MARGIN_S if args.stop_after else float("inf")

    data = json.loads(args.out.read_text()) if args.out.exists() else {"programs": {}}
    data.update(
        {
            "device": gpu_name(),
            "date": datetime.date.today().isoformat(),
            "command": "PYTHONPATH=. python tools/coverage/gpu_coverage.py "
            + " ".join(argv if argv is not None else sys.argv[1:]),
        }
    )
    todo = [
        p
        for p in selected_programs(args.table.with_suffix(".json"), args.only)
        if p["program"] not in data["programs"]
    ]
    print(f"{len(todo)} programs to check on {data['device']}", flush=True)
    args.work.mkdir(parents=True, exist_ok=True)
    lock = threading.Lock()

    def save() -> None:
        tmp = args.out.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        tmp.replace(args.out)

    def one(program: dict) -> None:
        # Two captures per check: each gets half of what is left.
        budget = min(args.timeout, (end - time.monotonic()) / 2)
        if budget < _MIN_CAPTURE_S:
            return
        script = write_adapter(program, args.work / "scripts" / program["stem"])
        if program["unused"]:
            script.with_suffix(".exclude.json").write_text(json.dumps(program["unused"]))
        began = time.monotonic()
        record = check(script, args.work / program["stem"], args.work / "kernel-cache", budget)
        if budget < args.timeout and any(
            "timeout" in record.get(mode, {}).get("error", "") for mode in ("native", "retarget")
        ):
            print(f"{program['program']}: cut short by --stop-after, left for another run", flush=True)
            return
        record["program"] = program["program"]
        record["seconds"] = round(time.monotonic() - began, 1)
        for mode in ("native", "retarget"):
            record.get(mode, {}).pop("phases", None)
        with lock:
            data["programs"][program["program"]] = {**cells(record), "check": record}
            save()
        print(f"{program['program']}: {cells(record)} ({record['seconds']} s)", flush=True)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for future in [pool.submit(one, p) for p in todo]:
            future.result()
    save()
    left = [p["program"] for p in todo if p["program"] not in data["programs"]]
    print(f"checked {len(todo) - len(left)}; left for another run: {len(left)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
