#!/usr/bin/env python3
"""Benchmark (not a test): local against remote execution on the reference cluster
(remote/README.md), side by side in one run, each build from a clean output base:

  - cold: the targets built locally (linux-sandbox), and on an empty cluster (`--config=remote`)
    with W CPU workers for each W of --workers (the speedup over one worker: the parallel part);
  - warm: another clean output base against the filled cluster (every action a cache hit);
  - per action: N trivial genrules (//tools/bench/remote:noop_*), analysed first, built locally
    and remotely; (remote - local) / N is what remote execution adds to one action.

The pinned venvs are repository rules no cache holds: every output base reuses those of a
prepared one (--override_repository), so the times are of the actions.

    python3 tools/bench/remote_bench.py [--targets //models/...] [--workers 1,2] \
        [--image /var/tmp/rules_warp-image-bookworm] [--analysed] [--out docs/bench/results/remote.json]

Inside the GPU runner (tools/gpu/enter_runner.sh), whose root is the workers' image:
`--image-root / --image-id sha256:...` (remote/cluster.py's options of the same names).
--out is rewritten after each measurement, so a run cut short keeps what it measured. With
--work DIR the work directory (output bases, prepared venvs, what was measured) stays, and a
second run with the same DIR measures only what the first did not: one benchmark can span
several calls of a machine whose calls have a time limit.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOOP = [f"//tools/bench/remote:noop_{i}" for i in range(40)]


class Bench:
    def __init__(self, work: Path, image: list[str], failure_logs: Path | None = None) -> None:
        self.work = work
        self.failure_logs = failure_logs
        self.image = image  # cluster.py up's options that name the workers' image
        self.state = work / "cluster"
        self.overrides: dict[bool, list[str]] = {}

    def cluster(self, *args: str) -> None:
        subprocess.run(
            [sys.executable, str(ROOT / "remote/cluster.py"), "--state", str(self.state), *args],
            check=True,
            stdout=subprocess.DEVNULL,
        )

    def bazel(self, ob: str, remote: bool, *args: str, analysed: bool = False) -> tuple:
        """Builds args in output base ob: (wall seconds, Bazel's process count line, its critical
        path in seconds). With analysed, the loading and analysis run first, untimed, in the same
        server: the time is the execution phase's, the part that workers share."""
        startup = [f"--output_base={self.work / ob}"]
        if remote:
            startup.append(f"--bazelrc={self.state / 'bazelrc'}")
        flags = [
            "--symlink_prefix=/",
            "--verbose_failures",
            *(["--config=remote"] if remote else []),
            *self.overrides.get(remote, []),
        ]
        if analysed:
            subprocess.run(
                ["bazel", *startup, "build", *flags, "--nobuild", *args],
                cwd=ROOT,
                check=True,
                capture_output=True,
            )
        t0 = time.perf_counter()
        result = subprocess.run(
            ["bazel", *startup, "build", *flags, *args], cwd=ROOT, capture_output=True, text=True
        )
        seconds = time.perf_counter() - t0
        if result.returncode != 0:
            logs = ""
            if remote and self.failure_logs:
                # The work directory goes at exit: keep what the cluster says about the failure.
                subprocess.run(
                    ["tar", "-C", str(self.state), "-czf", str(self.failure_logs), "logs"], check=False
                )
                logs = f" (the cluster's logs: {self.failure_logs})"
            raise SystemExit(f"bazel build {' '.join(args)} failed{logs}:\n{result.stderr[-3000:]}")
        processes = re.findall(r"INFO: (\d+ process.*)", result.stderr)
        critical = re.findall(r"Critical Path: ([0-9.]+)s", result.stderr)
        subprocess.run(["bazel", *startup, "shutdown"], cwd=ROOT, capture_output=True)
        return seconds, processes[-1] if processes else "", float(critical[-1]) if critical else None

    def prepare_venvs(self, remote: bool, targets: list[str]) -> None:
        """Fetch the venvs once (remote builds make them from /usr/bin/python3, local from python3)."""
        ob = f"venvs-{'remote' if remote else 'local'}"
        self.bazel(ob, remote, "--nobuild", *targets)
        external = self.work / ob / "external"
        self.overrides[remote] = [
            f"--override_repository={name}={external / name}" for name in ("wrp_venv", "wrp_nvrtc_13_0_venv")
        ]


# Bazel's profile (command.profile.gz, written by every build) times each remote spawn's
# phases as Bazel sees them; the workers' logs (remote/worker.py) time the same actions on the
# worker. Their difference is what neither does: waiting in BuildGrid's queue, and the calls.
PROFILE_PHASES = {
    "upload missing inputs": "bazel_upload_s",
    "execute remotely": "bazel_execute_s",
    "download outputs": "bazel_download_s",
}
LEASE = re.compile(r"exit -?\d+ in ([\d.]+) s \(inputs ([\d.]+) s, command ([\d.]+) s, outputs ([\d.]+) s\)")


def where_time_went(output_base: Path, cluster_logs: Path) -> dict:
    """One cold remote build's time by phase, summed over its actions: Bazel's side from its
    profile, the workers' side from their logs, and the critical path's longest actions."""
    detail: dict = {name: 0.0 for name in PROFILE_PHASES.values()}
    critical = []
    profile = output_base / "command.profile.gz"
    if profile.exists():
        trace = json.loads(gzip.open(profile).read())
        for event in trace["traceEvents"] if isinstance(trace, dict) else trace:
            if event.get("ph") != "X":
                continue
            seconds = event.get("dur", 0) / 1e6
            if event.get("name") in PROFILE_PHASES:
                detail[PROFILE_PHASES[event["name"]]] += seconds
            elif event.get("cat") == "critical path component":
                critical.append((round(seconds, 2), event["name"]))
    leases = []
    for log in sorted(cluster_logs.glob("worker-*.log")):
        leases += [[float(x) for x in m.groups()] for m in LEASE.finditer(log.read_text())]
    detail["worker_leases"] = len(leases)
    for i, name in enumerate(("worker_busy_s", "worker_inputs_s", "worker_command_s", "worker_outputs_s")):
        detail[name] = sum(lease[i] for lease in leases)
    # What a spawn spent between Bazel's request and the worker's start and end: queue and calls.
    detail["queue_and_calls_s"] = detail["bazel_execute_s"] - detail["worker_busy_s"]
    detail["critical_path_longest"] = sorted(critical, reverse=True)[:5]
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in detail.items()}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--targets", default="//models/...")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--image", default="/var/tmp/rules_warp-image-bookworm")
    parser.add_argument("--image-root", help="an unpacked image (remote/cluster.py up --image-root)")
    parser.add_argument("--image-id", help="with --image-root: its image ID (sha256:...)")
    parser.add_argument("--no-noop", action="store_true", help="skip the per-action overhead builds")
    parser.add_argument(
        "--analysed",
        action="store_true",
        help="time the cold builds' execution phase only (loading and analysis first, untimed)",
    )
    parser.add_argument(
        "--no-fuse",
        dest="fuse",
        action="store_false",
        help="workers stage inputs as hard links (remote/cluster.py up --no-fuse), to compare",
    )
    parser.add_argument("--work", help="a work directory kept after the run; a run with the same one resumes")
    parser.add_argument("--out", default=str(ROOT / "docs/bench/results/remote.json"))
    args = parser.parse_args()
    image = (
        ["--image-root", args.image_root, "--image-id", args.image_id]
        if args.image_root
        else ["--image", args.image]
    )
    staging = [] if args.fuse else ["--no-fuse"]
    targets = args.targets.split(",")
    if args.work:
        work = Path(args.work).resolve()
        work.mkdir(parents=True, exist_ok=True)
    else:
        work = Path(tempfile.mkdtemp(prefix="remote-bench.", dir="/var/tmp"))
    work.chmod(0o755)  # PostgreSQL runs as its own user
    bench = Bench(work, image, Path(args.out).with_suffix(".cluster-logs.tgz"))
    measured = work / "measured.json"
    rows: dict = {
        "targets": targets,
        "cold_remote": {},
        "warm_remote": {},
        "timed": "execution phase (analysis first, untimed)" if args.analysed else "whole build",
        "staging": "buildbox-fuse where the machine has it" if args.fuse else "hard links (--no-fuse)",
        "rows": "[wall s, Bazel's processes line, critical path s]",
    }

    if args.work and measured.exists():
        done = json.loads(measured.read_text())
        if any(done.get(key) != rows[key] for key in ("targets", "timed", "staging")):
            raise SystemExit(f"{measured} measured other targets, phase or staging: use a new --work")
        rows.update(done)
        # JSON keys are strings: the worker counts are ints again.
        for key in ("cold_remote", "warm_remote", "cold_remote_time"):
            rows[key] = {int(w): row for w, row in rows.get(key, {}).items()}

    def save() -> None:
        text = json.dumps(rows, indent=1, sort_keys=True) + "\n"
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
        measured.write_text(text)

    try:
        if bench.state.exists():  # a run cut short left its cluster up, or its state
            bench.cluster("down", "--purge")
        bench.cluster("up", "--cpu-workers", "1", "--gpu-workers", "0", *image, *staging)
        bench.prepare_venvs(False, targets)
        bench.prepare_venvs(True, targets)
        bench.cluster("down", "--purge")

        if "cold_local" not in rows:
            rows["cold_local"] = bench.bazel("cold-local", False, *targets, analysed=args.analysed)
            save()
        for workers in [int(w) for w in args.workers.split(",")]:
            if workers in rows["warm_remote"]:
                continue
            # A build cut short leaves a warm output base and a half-filled cache: start both over.
            for ob in (f"cold-remote-{workers}", f"warm-remote-{workers}"):
                if (work / ob).exists():
                    subprocess.run(
                        ["bazel", f"--output_base={work / ob}", "shutdown"], cwd=ROOT, capture_output=True
                    )
                    shutil.rmtree(work / ob)
            bench.cluster("up", "--cpu-workers", str(workers), "--gpu-workers", "0", *image, *staging)
            rows["cold_remote"][workers] = bench.bazel(
                f"cold-remote-{workers}", True, *targets, analysed=args.analysed
            )
            rows.setdefault("cold_remote_time", {})[workers] = where_time_went(
                work / f"cold-remote-{workers}", bench.state / "logs"
            )
            save()
            rows["warm_remote"][workers] = bench.bazel(f"warm-remote-{workers}", True, *targets)
            save()
            if workers == 1 and not args.no_noop:
                for remote in (False, True):
                    ob = f"noop-{'remote' if remote else 'local'}"
                    bench.bazel(ob, remote, "--nobuild", *NOOP)
                    startup = [f"--output_base={work / ob}"]
                    t0 = time.perf_counter()
                    subprocess.run(
                        [
                            "bazel",
                            *startup,
                            *([f"--bazelrc={bench.state / 'bazelrc'}"] if remote else []),
                            "build",
                            "--symlink_prefix=/",
                            *(["--config=remote"] if remote else []),
                            *bench.overrides[remote],
                            *NOOP,
                        ],
                        cwd=ROOT,
                        check=True,
                        capture_output=True,
                    )
                    rows[f"noop_{'remote' if remote else 'local'}"] = time.perf_counter() - t0
                    subprocess.run(["bazel", *startup, "shutdown"], cwd=ROOT, capture_output=True)
            bench.cluster("down", "--purge")
    finally:
        subprocess.run(
            [sys.executable, str(ROOT / "remote/cluster.py"), "--state", str(bench.state), "down"],
            capture_output=True,
        )
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)

    local_s = rows["cold_local"][0]
    print(f"{'build':<34}{'wall s':>9}  processes")
    print(f"{'cold, local (linux-sandbox)':<34}{local_s:9.1f}  {rows['cold_local'][1]}")
    one = rows["cold_remote"].get(1)
    for workers, (seconds, processes, critical) in rows["cold_remote"].items():
        speedup = ""
        if one and workers != 1:
            speedup = f"  speedup over 1 worker {one[0] / seconds:.2f}x"
            if critical is not None and one[2] is not None and seconds > critical:
                # The time beyond the critical path is what more workers can shorten: its
                # speedup is the one to hold against the number of workers.
                parallel = (one[0] - one[2]) / (seconds - critical)
                speedup += f", beyond the critical path {parallel:.2f}x ({parallel / workers:.2f} x workers)"
                rows.setdefault("parallel_part_speedup", {})[workers] = parallel
        print(
            f"{f'cold, remote, {workers} worker(s)':<34}{seconds:9.1f}  {processes}"
            f"  critical path {critical} s  ({seconds / local_s:.2f}x local){speedup}"
        )
    for workers, detail in rows.get("cold_remote_time", {}).items():
        print(
            f"cold, {workers} worker(s), summed over its actions: Bazel uploading inputs "
            f"{detail['bazel_upload_s']:.1f} s, executing {detail['bazel_execute_s']:.1f} s (of it on "
            f"workers {detail['worker_busy_s']:.1f} s: staging {detail['worker_inputs_s']:.1f}, "
            f"command {detail['worker_command_s']:.1f}, outputs {detail['worker_outputs_s']:.1f}; "
            f"queue and calls {detail['queue_and_calls_s']:.1f} s), downloading "
            f"{detail['bazel_download_s']:.1f} s"
        )
    for workers, (seconds, processes, _) in rows["warm_remote"].items():
        print(f"{f'warm, remote, {workers} worker(s)':<34}{seconds:9.1f}  {processes}")
    if "noop_remote" in rows:
        per_action = (rows["noop_remote"] - rows["noop_local"]) / len(NOOP)
        print(
            f"per action: {len(NOOP)} trivial genrules local {rows['noop_local']:.1f} s, remote "
            f"{rows['noop_remote']:.1f} s: remote adds {per_action * 1000:.0f} ms an action"
        )
        rows["remote_overhead_per_action_s"] = per_action
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
