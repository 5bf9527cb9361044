"""Every command the README and the docs/ pages show is accounted for, so they cannot drift.

Commands are the lines of their code blocks (indented or fenced) and their inline `code` spans
that start like a command (bazel, tools/..., wrpkg, pip, python, file, ./, each maybe after
VAR=value assignments). Each one is either
- RUN here, as the page writes it (paths under bazel-bin/ point at this test's bundles), or
- ELSEWHERE: run by another test or CI job, or needing a GPU, a package index or two clean
  builds; the entry says which and the script it names must exist.
A command in neither table, or an entry no page shows any more, fails the test. So does a
relative link that leads nowhere, a docs/ page the README does not link, and a README over
150 lines (issue 27: the README says what this is and links the rest)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

RUNFILES = Path(__file__).resolve().parents[1]
# The README and scripts as checked out (this test is tagged local: it reads the tree).
SOURCE = Path(os.path.realpath(os.environ["WRP_README"])).parent
BUNDLES = {
    "bazel-bin/models/sim_cpu_wrp": Path(os.environ["WRP_CPU_BUNDLE"]).resolve(),
    "bazel-bin/models/sim_recorded_wrp": Path(os.environ["WRP_RECORDED_BUNDLE"]).resolve(),
}
WRPKG_BINARY = Path(os.environ["WRP_WRPKG_BINARY"]).resolve()

GPU = (
    "needs a CUDA GPU: the gpu-tagged tests, bazel test --config=gpu //... on a GPU runner (docs/runners.md)"
)
ELSEWHERE = {
    "tools/dev.sh test": "CI: .ci/run runs exactly this",
    "tools/dev.sh build": "CI builds its no-GPU branch (//models:sim_cpu_wrp, a dependency of its replay "
    "tests); the GPU branch: " + GPU,
    "bazel build //models:sim_wrp": "CI: `bazel test //...` builds it (retargeted: its replay tests are gpu-tagged, "
    "but //tests:model_bundles_test reads the bundle); natively on a GPU: " + GPU,
    "bazel test //...": "CI: .ci/run (tools/dev.sh test) runs exactly this",
    "tools/setup.sh": "CI: tools/dev.sh runs it first on every fresh machine",
    "bazel build --config=aarch64 --build_tag_filters=-gpu //examples/deploy/... //runtime/...": "CI: "
    "//tests/aarch64 builds these through a transition to //platforms:linux_aarch64 and runs them under qemu",
    "bazel build --config=aarch64 //models:sim_recorded_wrp_embedded_replay_test": "CI: "
    "//tests/aarch64:embedded_bundles_test and embedded_replay_no_gpu_aarch64",
    "bazel build -c opt //your:app": "a placeholder target; the benchmarks build this way "
    "(bazel run -c opt //tools/bench:bench_all)",
    "pip install warp-lang==1.19.0": "on the deployment device (needs a package index): run by hand",
    "tools/bench/report.sh /tmp/out": "draws the report from a GPU run's results (tools/bench/bench_all.sh): run by hand",
    "tools/fuzz/run.sh ... --runs 1000000": "the long fuzz run (minutes per target): run by hand; "
    "//tools/fuzz:fuzz_smoke_test runs the same targets briefly in CI",
    "tools/gpu/one_gpu.sh": "--config=gpu's --run_under wrapper: //tests/gpu_wrapper:one_gpu_test on a described "
    "machine, one_gpu_driver_test (tagged gpu) against the real driver",
    "tools/gpu/mathdx_native_check.py": "needs a CUDA GPU: run by hand on the GPU machine (no Bazel); "
    "also //tests:mathdx_gpu_test, tagged gpu",
    "tools/apic_corpus.py": "//tests:apic_corpus_test runs it on five programs; the whole corpus: "
    "//tests:apic_corpus_gpu_test (tagged gpu)",
    "OUT=/tmp/out bazel run -c opt //tools/bench:bench_all": "needs a CUDA GPU: the benchmarks (tools/bench/bench_all.sh), "
    "on a GPU machine: run by hand",
    "tools/bench/bench_all.sh": "the same benchmarks from a copy of the target's runfiles on a GPU machine: run by hand",
    "bazel run -c opt //tools/bench:load_rounds -- [ROUNDS]": "needs a CUDA GPU: the load ratios with more rounds "
    "(tools/bench/load_rounds.sh): run by hand",
    "bazel run -c opt //tools/bench:start_phases": "needs a CUDA GPU: a C++ load's steps (tools/bench/start_phases.sh): "
    "run by hand",
    "bazel run -c opt //tools/bench:instantiate_probe": "needs a CUDA GPU: a C++ load's first replay against what ran "
    "before it (tools/bench/instantiate_probe.sh): run by hand",
    "python tools/bench/load_profile.py BUNDLE...": "tools/bench/bench_all.sh runs it on the GPU machine "
    "(it times wrpkg.reader.bundle's steps on a CUDA bundle): run by hand",
    "python3 tools/bench/build_bench.py --out /tmp/out/build.json": "times clean and incremental builds "
    "(many minutes): run by hand",
    "python tools/bench/retarget_bench.py": "captures models/cloth.py and steps of 1k to 100k launches in both "
    "modes, fresh kernel caches (many minutes): run by hand",
    "python3 tools/bench/kernel_cache_bench.py": "cold Bazel builds of one and six Newton targets (tens of "
    "minutes on 2 cores): run by hand; its numbers are in docs/benchmarks.md",
    "python tools/bench/capture_overhead_bench.py [--mode cpu|retarget|gpu]": "captures each model with wrpkg and "
    "with plain Warp, three rounds (minutes): run by hand; its numbers are in docs/benchmarks.md",
    "python tools/bench/refusal_bench.py": "times each refused program of tests/refusal_programs.py with fresh "
    "kernel caches (minutes): run by hand; //tests:refusal_before_compile_test holds what it measures (no compile "
    "before the refusal)",
    "tools/unicode/nfc_tables.py": "rewrites wrpkg/nfc_table.py and runtime/internal/nfc_table.h from Python's unicodedata: "
    "//tests:names_test holds both files to what it writes",
    "file bazel-out/k8-fastbuildaarch64/bin/examples/deploy/deploy_recorded": "CI: //tests/aarch64 runs the "
    "aarch64 deploy_recorded under qemu (an x86_64 binary would not start there)",
    "LD_LIBRARY_PATH=.../warp/bin ./deploy_recorded": "on the aarch64 device, with its warp.so: run by hand; "
    "//tests/aarch64 runs it under qemu",
    "wrpkg capture": "run by every wrp_artifact's capture action (python -m wrpkg.capture) and //tests:capture_test",
    "wrpkg pack": "run by every wrp_artifact's bundle action (python -m wrpkg.build.pack) and //tests:bundle_test",
    "wrpkg verify": "//tests:validity_parity_test and bundle_test (the RUN entry runs it through Bazel)",
    "bazel test --config=gpu //...": GPU,
    "python -m wrpkg.capture ... --device cuda": GPU + " (tools/gpu/capture_cuda.sh)",
    "tools/gpu/capture_cuda.sh": "needs a CUDA GPU: re-records models/recorded/ by hand when the model changes "
    "(//tests:recorded_capture_test says when)",
    "pip install .": "//tests:wheel_test builds the wheel from pyproject.toml, installs it and runs `wrpkg`",
    "pip install '.[cuda]'": "//tests:wheel_test (the extra's pins equal requirements.lock: test_pins_agree)",
    "tools/check_incremental.sh": "two builds with execution logs (minutes): run by hand",
    "tools/check_reproducible.sh": "two clean output bases (10+ minutes): run by hand",
    "tools/format.sh": "//tests/lint:lint_test fails when it would change a file",
    "python3 tools/docs/gen_rules_doc.py": "//tests:rules_doc_test fails when docs/rules.md is not what it writes",
    "toolchains/python/lock.sh": "needs a package index: run by hand when a pin changes",
    "tools/fill_wheelhouse.sh /srv/wheelhouse": "needs a package index: run by hand (test_wheelhouse_script_reads_the_locks)",
    "bazel build --repo_env=WRP_WHEELHOUSE=/srv/wheelhouse //models:sim_cpu_wrp": "needs a filled wheelhouse: "
    "run by hand (the venv rule's --no-index --find-links branch)",
    "tools/gpu/runner_pack.sh": "builds the runner root filesystem (root, mmdebstrap, minutes of xz): run by hand; "
    "//tests:wheelhouse_pack_test checks its wheel packing",
    "tools/gpu/native_vs_retarget.py": "needs a CUDA GPU: run by hand on the GPU machine (no Bazel), natively "
    "capturing and retargeting each Newton model; //tests:retarget_gpu_test holds the same check for the small "
    "programs under --config=gpu",
    "tools/gpu/occupancy_check.py": "needs a CUDA GPU: run by hand on the GPU machine (no Bazel); "
    "//tests:occupancy_test holds the calculator and the device model's answer on the CPU",
    "tools/coverage/gpu_coverage.py": "needs a CUDA GPU and Newton: run by hand on the GPU machine (no Bazel), "
    "its JSON read by newton_coverage.py --gpu-results",
    "tools/gpu/runner_unpack.sh": "on the GPU machine, piece by piece: run by hand (toolchains/containers/README.md)",
    "tools/gpu/enter_runner.sh": "needs root and an unpacked runner root filesystem: run by hand "
    "(toolchains/containers/README.md)",
    "tools/check_host.sh trixie": "a fresh root filesystem and the whole build inside (an hour, root, the "
    "registries): //tests/hosts:check_host_trixie_test (tagged manual)",
    "bazel build --//rules:archs=sm_80,sm_90 //models:sim_wrp": "//tests/analysis:artifact_test sets "
    "--//rules:archs through a transition and checks the SMs it gives; tools/check_incremental.sh builds this way",
    "bazel run @rules_warp//:wrpkg": "in a workspace that uses rules_warp with rules_warp_register_toolchains"
    "(python = True): run by hand; the RUN entries run the same binary, //:wrpkg",
    "python sim.py": "not run: how the capture harness imports a script (//tests:capture_test)",
    "tools/bench/remote_bench.py": "builds through the reference cluster (root, many minutes): run by hand; "
    "//tests/remote:remote_cluster_test builds through the same cluster",
    "wrpkg inspect": "the RUN entries run it (bazel run //:wrpkg -- inspect, wrpkg inspect bazel-bin/...)",
}
# command -> what its output must say
RUN = {
    "bazel run //:wrpkg -- inspect bazel-bin/models/sim_cpu_wrp": (
        "bundle //models:sim_cpu_wrp",
        "vec3f[2048]",
    ),
    "bazel run //:wrpkg -- verify bazel-bin/models/sim_cpu_wrp": ("content hash",),
    "bazel run //:wrpkg -- --help": ("inspect",),
    "wrpkg inspect bazel-bin/models/sim_recorded_wrp": ("bundle //models:sim_recorded_wrp", "vec3f[2048]"),
}

_COMMAND = re.compile(
    r"^([A-Z_]+=\S+ )*(bazel |tools/\S+\.(sh|py)|wrpkg |pip |python3? |file |\./|\S+/lock\.sh)"
)


def pages() -> list[Path]:
    """The README and the docs/ pages it links (docs/bench/REPORT.md is generated: not a page)."""
    return [SOURCE / "README.md", *sorted((SOURCE / "docs").glob("*.md"))]


def page_commands(page: Path) -> list[str]:
    text = page.read_text()
    found = []
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.startswith("    "):
            command = re.split(r"\s{2,}#", line.strip())[0].strip()
            if _COMMAND.match(command):
                found.append(command)
    for span in re.findall(r"`([^`\n]+)`", text):
        if _COMMAND.match(span):
            found.append(span.strip())
    return sorted(set(found))


def documented_commands() -> dict[str, list[str]]:
    """command -> the pages (relative paths) that show it."""
    where: dict[str, list[str]] = {}
    for page in pages():
        for command in page_commands(page):
            where.setdefault(command, []).append(str(page.relative_to(SOURCE)))
    return where


def test_every_documented_command_is_run_or_accounted_for():
    where = documented_commands()
    unaccounted = sorted(set(where) - set(RUN) - set(ELSEWHERE))
    assert not unaccounted, "commands no test runs or accounts for: " + "; ".join(
        f"{c} ({', '.join(where[c])})" for c in unaccounted
    )
    stale = (set(RUN) | set(ELSEWHERE)) - set(where)
    assert not stale, f"entries for commands neither the README nor docs/ shows any more: {sorted(stale)}"


def test_the_readme_is_short_and_links_every_page():
    readme = (SOURCE / "README.md").read_text()
    assert len(readme.splitlines()) <= 150, "README.md is over 150 lines: move the detail to a docs/ page"
    for page in sorted((SOURCE / "docs").glob("*.md")):
        assert f"](docs/{page.name})" in readme, f"README.md does not link docs/{page.name}"


@pytest.mark.parametrize("page", [str(p.relative_to(SOURCE)) for p in pages()])
def test_relative_links_resolve(page):
    text = (SOURCE / page).read_text()
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)  # code is not links
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0]
        assert ((SOURCE / page).parent / path).exists(), f"{page}: link to {target} leads nowhere"


@pytest.mark.parametrize("command", sorted(ELSEWHERE))
def test_scripts_named_elsewhere_exist(command):
    for word in shlex.split(command):
        if re.fullmatch(r"(tools|toolchains)/\S+\.(sh|py)", word):
            assert (SOURCE / word).is_file(), f"{command}: {word} is not in the tree"


def _workdir(tmp_path: Path) -> Path:
    """A directory where the README's bazel-bin/ paths lead to this test's bundles."""
    for rel, target in BUNDLES.items():
        link = tmp_path / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)
    return tmp_path


@pytest.mark.parametrize("command", sorted(RUN))
def test_readme_command_runs(command, tmp_path):
    argv = shlex.split(command)
    workdir = _workdir(tmp_path)
    env = dict(os.environ)
    if argv[:3] == ["bazel", "run", "//:wrpkg"]:
        # What `bazel run` does: start the binary in its runfiles, the caller's directory in
        # BUILD_WORKING_DIRECTORY.
        env["BUILD_WORKING_DIRECTORY"] = str(workdir)
        done = subprocess.run(
            [str(WRPKG_BINARY), *argv[4:]], cwd=RUNFILES, env=env, capture_output=True, text=True
        )
    else:
        assert argv[0] == "wrpkg"
        done = subprocess.run(
            [sys.executable, "-m", "wrpkg.cli", *argv[1:]],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
        )
    assert done.returncode == 0, done.stderr
    for expected in RUN[command]:
        assert expected in done.stdout, done.stdout
    assert "Could not find or load the NVIDIA CUDA driver" not in done.stdout + done.stderr


def test_wheelhouse_script_reads_the_locks():
    script = (SOURCE / "tools" / "fill_wheelhouse.sh").read_text()
    for lock in re.findall(r"(?:toolchains|remote)/\S+\.lock", script):
        assert (SOURCE / lock).is_file(), lock
    assert "--require-hashes" in script and "--only-binary=:all:" in script
