"""Turns benchmark JSON into docs/bench/REPORT.md and its PNG plots.

    tools/bench/report.sh RESULTS_DIR        (installs the hash-locked matplotlib, then runs this)

RESULTS_DIR holds what tools/bench/bench_all.sh wrote on the GPU machine (machine.json,
load.json, replay_*.json, verify.json, load_profile.json) and, optionally, build.json from
tools/bench/build_bench.py and load_profile_build_machine.json / verify_build_machine.json
from tools/bench/load_profile.py / verify_bench run on the build machine. The JSON files are copied to docs/bench/results/ so the report
can be redrawn from what is committed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "bench"

ROADS = [  # (road, how, label), in plot order
    ("native", "stock", "Warp single-arch .wrp\n(wp.capture_load)"),
    ("sass", "stock", "bundle, stock\nwp.capture_load"),
    ("sass", "wrpkg-noview", "bundle, wrpkg.Bundle\nwhole fatbins"),
    ("sass", "wrpkg", "bundle, wrpkg.Bundle\nper-device view"),
    ("sass", "cpp-noview", "bundle, C++\nwhole fatbins"),
    ("sass", "cpp", "bundle, C++\nper-device view"),
    ("ptx", "stock", "PTX JIT\n(bundle)"),
    ("source", "stock", "source fallback\n(first load)"),
]


def load_json(path: Path):
    return json.loads(path.read_text()) if path.is_file() else None


def verdict(value: float | None, target: float, higher_is_better: bool = False) -> str:
    if value is None:
        return "not measured"
    ok = value >= target if higher_is_better else value <= target
    return "met" if ok else "**missed**"


def fmt(value, unit="", digits=2):
    return "n/a" if value is None else f"{value:.{digits}f}{unit}"


def case(load, model, road, how):
    for c in (load or {}).get("cases", []):
        if (c["model"], c["road"], c["how"]) == (model, road, how):
            return c
    return None


def ratio(a, b, key):
    if a is None or b is None:
        return None
    return a["median"][key] / b["median"][key]


def _load_time(run: dict, key: str) -> float:
    """A run's time as the ratios count it (load_bench's medians): C++ includes opening the bundle."""
    load = run.get("open_verify_ms", 0.0) + run["load_ms"]
    return load + run["first_replay_ms"] if key == "to_first_replay_ms" else load


def round_spread(a, b, key) -> str:
    """The ratio a/b round by round (load_bench runs every case once per round, so round r of both
    ran side by side): "p25-p75 (min-max)", to show how much of a ratio is the host's noise."""
    if a is None or b is None:
        return ""
    ratios = sorted(
        _load_time(x, key) / _load_time(y, key) for x, y in zip(a["runs"], b["runs"], strict=False)
    )
    if len(ratios) < 4:
        return ""
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    return f"{q1:.2f}-{q3:.2f} ({ratios[0]:.2f}-{ratios[-1]:.2f})"


def verify_share(bundle: dict, load) -> float | None:
    """Verifying every file of `bundle` (verify_bench) against the median load of the same bundle
    directory in load_bench's run: the C++ load when there is one, else Warp's."""
    name = Path(bundle["bundle"]).name
    runs = [c for c in (load or {}).get("cases", []) if Path(c["path"]).name == name]
    chosen = next((c for c in runs if c["how"] == "cpp"), next(iter(runs), None))
    if chosen is None:
        return None
    return bundle["open_verify_ms"] / (
        chosen["median"].get("open_verify_ms", 0.0) + chosen["median"]["load_ms"]
    )


def plot_loads(load, models, path: Path) -> None:
    fig, axes = plt.subplots(1, len(models), figsize=(6.5 * len(models), 5), squeeze=False)
    for ax, model in zip(axes[0], models, strict=True):
        labels, load_ms, first_ms = [], [], []
        for road, how, label in ROADS:
            c = case(load, model, road, how)
            if c is None:
                continue
            labels.append(label)
            load_ms.append(c["median"].get("open_verify_ms", 0.0) + c["median"]["load_ms"])
            first_ms.append(c["median"]["first_replay_ms"])
        xs = range(len(labels))
        ax.bar(xs, load_ms, label="load (C++: + open/verify)")
        ax.bar(xs, first_ms, bottom=load_ms, label="first replay")
        ax.set_yscale("log")
        ax.set_ylim(bottom=1)
        ax.set_xticks(list(xs), labels, rotation=60, ha="right", fontsize=8)
        ax.set_ylabel("ms, median of fresh processes (log)")
        ax.set_title(f"{model}: cold load per road (context creation excluded)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _grouped_bars(ax, replays, models, series) -> None:
    """One group of bars per model, one bar per (key, label) of `series`."""
    width = 0.25
    for i, (key, label) in enumerate(series):
        ax.bar(
            [m + i * width for m in range(len(models))],
            [replays[m].get(key) or 0 for m in models],
            width,
            label=label,
        )
    ax.set_xticks([m + width for m in range(len(models))], models)
    ax.legend(fontsize=8)


def plot_replay(replays, path: Path) -> None:
    models = sorted(replays)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    _grouped_bars(
        ax1,
        replays,
        models,
        [
            ("bare_host_us", "bare cuGraphLaunch"),
            ("wrp_host_us", "C++ wrp::Graph::Launch"),
            ("py_host_us", "Python"),
        ],
    )
    ax1.set_ylabel("host time per launch, us (median of rounds)")
    _grouped_bars(
        ax2,
        replays,
        models,
        [
            ("bare_replays_per_s", "bare cuGraphLaunch"),
            ("wrp_replays_per_s", "C++"),
            ("py_replays_per_s", "Python"),
        ],
    )
    ax2.set_ylabel("replays per second (log)")
    ax2.set_yscale("log")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_build(build, path: Path) -> None:
    per_arch = build["compile_s_per_arch"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [2, 1]})
    ax1.bar(list(per_arch), list(per_arch.values()))
    ax1.set_ylabel("seconds")
    ax1.set_title(f"per-SM compile action ({build['target']})")
    ax1.tick_params(axis="x", rotation=45)
    bars = {
        "cold build": build["cold_build_s"],
        "sum of actions": build["cold_action_sum_s"],
        f"add {build['added_arch']}": build["add_one_sm_build_s"],
    }
    ax2.bar(list(bars), list(bars.values()), color=["C0", "C7", "C2"])
    ax2.set_ylabel("seconds (wall)")
    ax2.set_title(f"{build['cores']} cores: {build['compile_peak_in_flight']} compiles at once")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("results", type=Path)
    parser.add_argument("--docs", type=Path, default=DOCS)
    args = parser.parse_args()
    docs = args.docs
    results = docs / "results"
    results.mkdir(parents=True, exist_ok=True)
    if args.results.resolve() != results.resolve():
        for f in args.results.glob("*.json"):
            shutil.copy(f, results / f.name)
    machine = load_json(results / "machine.json") or {}
    load = load_json(results / "load.json")
    verify = load_json(results / "verify.json")
    verify_dev = load_json(results / "verify_build_machine.json")
    build = load_json(results / "build.json")
    replays = {}
    for model in ("sim", "cloth"):
        cpp = load_json(results / f"replay_cpp_{model}.json") or {}
        py = load_json(results / f"replay_python_{model}.json") or {}
        if cpp or py:
            replays[model] = {
                **cpp,
                "py_host_us": py.get("host_us"),
                "py_replays_per_s": py.get("replays_per_s"),
            }

    rows = []
    models = sorted({c["model"] for c in (load or {}).get("cases", [])}, key=lambda m: m != "sim")
    for model in models:
        native = case(load, model, "native", "stock")
        for how, what in (
            ("wrpkg", "wrpkg.reader.bundle (verify + per-device view)"),
            ("stock", "stock wp.capture_load"),
            ("cpp", "C++ wrp::Graph::Load (per-device view)"),
        ):
            c = case(load, model, "sass", how)
            if c is None or native is None:
                continue
            load_key = "load_ms"
            r_load = (c["median"].get("open_verify_ms", 0.0) + c["median"][load_key]) / native["median"][
                load_key
            ]
            r_total = ratio(c, native, "to_first_replay_ms")
            target = 1.1 if how != "stock" else None
            rows.append(
                (
                    f"{model}: bundle SASS {what} / Warp single-arch, load",
                    r_load,
                    target,
                    round_spread(c, native, "load_ms"),
                )
            )
            rows.append(
                (
                    f"{model}: bundle SASS {what} / Warp single-arch, load + first replay",
                    r_total,
                    target,
                    round_spread(c, native, "to_first_replay_ms"),
                )
            )
        cpp, py = case(load, model, "sass", "cpp"), case(load, model, "sass", "stock")
        if cpp and py:
            rows.append(
                (
                    f"{model}: C++ to first replay / Python wp.capture_load + first launch (same bundle)",
                    ratio(cpp, py, "to_first_replay_ms"),
                    1.1,
                    round_spread(cpp, py, "to_first_replay_ms"),
                )
            )
    for model, r in sorted(replays.items()):
        if "host_ratio" in r:
            rows.append((f"{model}: C++ host time per launch / bare cuGraphLaunch", r["host_ratio"], 1.1, ""))

    if load:
        lines = [
            "# Benchmark report",
            "",
            f"Machine: {machine.get('gpu', '?')}; CPU {machine.get('cpu', '?')} ({machine.get('cores', '?')} cores); "
            f"Warp {machine.get('warp', '?')}, Python {machine.get('python', '?')}. "
            "Everything in one table was measured side by side in the same run (`tools/bench/bench_all.sh`); "
            "C++ built with `-c opt`. Raw numbers: [results/](results/).",
            "",
            "![load per road](load_roads.png)",
            "",
            "Ratios are of medians; beside each, the same ratio taken round by round (both sides of a "
            "round ran one after the other): quartiles and range, the host's noise.",
            "",
            "| ratio | measured | per round: p25-p75 (min-max) | target | |",
            "|---|---|---|---|---|",
        ]
    else:
        lines = [
            "# Benchmark report",
            "",
            "No GPU results yet: the sections below were measured on the build machine. Run "
            "`tools/bench/bench_all.sh` on a GPU machine and `tools/bench/report.sh` on its output "
            "(docs/benchmarks.md). Raw numbers: [results/](results/).",
        ]
    for what, value, target, spread in rows:
        lines.append(
            f"| {what} | {fmt(value, 'x')} | {spread} | {'<= ' + str(target) + 'x' if target else 'report'} | "
            f"{verdict(value, target) if target else ''} |"
        )
    gaps = []
    for model in models:
        native = case(load, model, "native", "stock")
        pairs = [
            (
                "stock wp.capture_load of the bundle minus Warp's single-arch .wrp",
                case(load, model, "sass", "stock"),
                native,
            ),
            (
                "wrpkg.reader.bundle with whole fatbins minus with the per-device view",
                case(load, model, "sass", "wrpkg-noview"),
                case(load, model, "sass", "wrpkg"),
            ),
            (
                "C++ with whole fatbins minus with the per-device view",
                case(load, model, "sass", "cpp-noview"),
                case(load, model, "sass", "cpp"),
            ),
        ]
        for what, a, b in pairs:
            if a and b:
                gaps.append(
                    f"| {model} | {what} | {a['median']['load_ms'] - b['median']['load_ms']:.2f} ms | "
                    f"{a['median']['to_first_replay_ms'] - b['median']['to_first_replay_ms']:.2f} ms |"
                )
    if gaps:
        lines += [
            "",
            "## Where the multi-arch load time went",
            "",
            "Warp 1.19 reads each packaged module file and SHA-256-checks the whole file before "
            "`cuModuleLoadData` whenever the record carries a digest (source fallback kept). With a "
            "multi-arch fatbin that is every SM's code hashed to load one image; the per-device view "
            "hands Warp only the device's cubin. Differences measured side by side in this run:",
            "",
            "| model | difference | load | to first replay |",
            "|---|---|---|---|",
            *gaps,
        ]
    for title, data, loads in (
        ("the GPU machine", verify, load),
        ("the build machine (2 shared cores)", verify_dev, None),
    ):
        if not data:
            continue
        lines += [
            "",
            f"## C++ verification on {title} (SHA-256 of every bundle file, `-c opt`)",
            "",
            f"SHA-256 ({data.get('sha256_implementation', 'hand-written')}) "
            f"{'with the CPU SHA extensions' if data['sha256_hardware'] else 'without CPU SHA extensions'}: "
            f"{data['sha256_auto_MBps']:.0f} MB/s median, {data.get('sha256_auto_best_MBps', 0):.0f} MB/s best"
            # Results from before OpenSSL (runtime/internal/sha256.cc) also measured the hand-written portable code.
            + (
                f"; portable code {data['sha256_portable_MBps']:.0f} MB/s."
                if "sha256_portable_MBps" in data
                else "."
            ),
            "",
            "`every file`: `Bundle::OpenDirectory` with `verify_all` (what `replay` and `wrpkg verify` check). "
            "A load opens without hashing (`open`) and verifies only what it hands Warp: the device view's "
            "`.wrp` is hashed while Warp parses it, and Warp checks each image. `share of the load`: every "
            "file's verification against the load of the same bundle in this run (the C++ load where one "
            "was measured, else Warp's); the target is 1 GB/s, or at most 10% of the load.",
            "",
            "| bundle | bytes | every file (median) | MB/s median / best | a load's open | share of the load | target |",
            "|---|---|---|---|---|---|---|",
        ]
        for b in data["bundles"]:
            share = verify_share(b, loads)
            met = b["MBps"] >= 1000 or (share is not None and share <= 0.10)
            verdict_text = (
                "met" if met else "**missed**" + (" (no load measured here)" if share is None else "")
            )
            lines.append(
                f"| {Path(b['bundle']).name} | {b['bytes']:,} | {b['open_verify_ms']:.2f} ms | "
                f"{b['MBps']:.0f} / {b.get('best_MBps', 0):.0f} | {fmt(b.get('open_ms'), ' ms')} | "
                f"{'' if share is None else f'{share:.1%}'} | {verdict_text} |"
            )
    for title, data in (
        ("the GPU machine's CPU", load_json(results / "load_profile.json")),
        ("the build machine (2 shared cores)", load_json(results / "load_profile_build_machine.json")),
    ):
        if not data:
            continue
        lines += [
            "",
            f"## wrpkg.reader.bundle's own steps on {title} (`tools/bench/load_profile.py`, medians of "
            f"{data['repeat']} fresh processes, ms, device faked as sm_{data['sm']})",
            "",
            "Everything `wrpkg.reader.bundle` does on a CUDA device before Warp's own call. `import` (once per "
            "program) is not part of `prepare`. The per-device view takes each module's image out of "
            "its fatbin and patches the .wrp's module digests in place; a .wrp of 1 MiB or more is read "
            "on another thread meanwhile (`.wrp read`; a smaller one on the loading thread first). The "
            ".wrp's sha256 (`sha256`) runs on that thread while Warp parses it (Warp checks the images "
            "against the digests the view writes), so it is not part of `prepare` either.",
            "",
            "| bundle | import wrpkg.reader.bundle | manifest | arch check | .wrp read | per-device view, .wrp read "
            "included | prepare (all) | sha256, during Warp's load |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for name, b in data["bundles"].items():
            lines.append(
                f"| {name} | {fmt(b.get('import_ms'))} | {fmt(b.get('manifest_ms'))} | "
                f"{fmt(b.get('check_device_ms'))} | {fmt(b.get('wrp_read_ms'))} | "
                f"{fmt(b.get('view_ms'))} | {fmt(b.get('prepare_ms'))} | {fmt(b.get('hash_ms'))} |"
            )
    if load:
        lines += [
            "",
            "## Cold loads (medians of fresh processes, ms)",
            "",
            "Context creation, Warp init and importing wrpkg.reader.bundle (once per program, like importing warp) "
            "are timed apart and left out of every ratio. `wrpkg own`: the part of wrpkg.reader.bundle's load "
            "outside Warp's own call (manifest, arch check, reading and verifying what Warp is given).",
            "",
            "| model | road | how | Warp init | context | import wrpkg | open + verify | load | wrpkg own | "
            "first replay (instantiate) | to first replay | taken |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for c in load["cases"]:
            m = c["median"]
            lines.append(
                f"| {c['model']} | {c['road']} | {c['how']} | {fmt(m.get('init_ms'))} | {fmt(m.get('context_ms'))} | "
                f"{fmt(m.get('import_ms'))} | {fmt(m.get('open_verify_ms'))} | {fmt(m['load_ms'])} | "
                f"{fmt(m.get('wrpkg_own_ms'))} | {fmt(m['first_replay_ms'])} ({fmt(m.get('instantiate_ms'))}) | "
                f"{fmt(m['to_first_replay_ms'])} | {', '.join(c['road_taken'])} |"
            )
    if replays:
        plot_replay(replays, docs / "replay.png")
        lines += [
            "",
            "## Replay",
            "",
            "![replay](replay.png)",
            "",
            "| model | bare cuGraphLaunch us | C++ us | Python us | C++/bare | replays/s bare, C++, Python |",
            "|---|---|---|---|---|---|",
        ]
        for model, r in sorted(replays.items()):
            lines.append(
                f"| {model} | {fmt(r.get('bare_host_us'), '', 3)} | {fmt(r.get('wrp_host_us'), '', 3)} | "
                f"{fmt(r.get('py_host_us'), '', 3)} | {fmt(r.get('host_ratio'), 'x', 3)} | "
                f"{fmt(r.get('bare_replays_per_s'), '', 0)}, {fmt(r.get('wrp_replays_per_s'), '', 0)}, "
                f"{fmt(r.get('py_replays_per_s'), '', 0)} |"
            )
    if build:
        plot_build(build, docs / "build.png")
        lines += [
            "",
            f"## Build side ({build['target']}, {build['cores']} cores"
            + (f", load average {build['load_average']}" if "load_average" in build else "")
            + ", `tools/bench/build_bench.py`)",
            "",
            "![build](build.png)",
            "",
            f"- cold build (every action of the target re-run, Bazel server and venvs warm): "
            f"{build['cold_build_s']} s wall, {build['cold_actions']} actions, {build['cold_action_sum_s']} s "
            "of action time",
            f"- compile parallelism: {build['compile_peak_in_flight']} compile actions in flight at once, "
            f"speed-up {build['compile_speedup']}x over running them one by one",
            f"- adding {build['added_arch']}: {build['add_one_sm_build_s']} s, ran: "
            + "; ".join(build["add_one_sm_actions"]),
        ]
    if load:
        plot_loads(load, models, docs / "load_roads.png")
    notes = results / "NOTES.md"  # what the numbers mean, written by whoever ran the benchmark
    if notes.is_file():
        lines += ["", notes.read_text().strip()]
    (docs / "REPORT.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {docs / 'REPORT.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
