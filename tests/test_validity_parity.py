"""One bundle-validity policy: wrpkg.reader.verify and the C++ runtime give every bundle of the
shared corpus (tests/bundle_corpus.py) and every hostile case (tests/hostile_corpus.py) the
verdict the policy expects (docs/security.md)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from bundle_corpus import make_corpus
from hostile_corpus import CASES, FIELD, GOOD_CUDA_DIR, GOOD_DIR, GOOD_TAR, PARITY_CASES, copy_good

from wrpkg.errors import WrpError
from wrpkg.reader.verify import verify_bundle, verify_tar

VERIFY_BUNDLE = os.path.abspath(os.environ["WRP_VERIFY_BUNDLE"])  # some cases run from inside the bundle


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(GOOD_DIR, GOOD_TAR, tmp_path_factory.mktemp("corpus"))


def python_verdict_on(bundle: str, tar: bool = False, cwd: Path | None = None) -> tuple[bool, str]:
    """wrpkg.reader.verify's verdict on `bundle` (run from `cwd`): (accepted, message)."""
    before = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        verify_tar(bundle) if tar else verify_bundle(bundle)
    except WrpError as exc:
        return False, str(exc)
    finally:
        os.chdir(before)
    return True, ""


def cpp_verdict_on(
    bundle: str,
    tar: bool = False,
    cwd: Path | None = None,
    load: str | None = None,
    *,
    load_only: bool = False,
) -> tuple[bool, str]:
    """The C++ runtime's verdict on `bundle` (run from `cwd`): (accepted, message). `load`: also load it on
    that device, through Warp, which checks the manifest against the .wrp (as wrpkg.reader.verify does by parsing
    the .wrp); with `load_only`, load it without verifying first, as a deployment does."""
    mode = ["--load-only" if load_only else "--load", load] if load else []
    cmd = [VERIFY_BUNDLE, *(["--tar"] if tar else []), *mode, bundle]
    proc = subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, errors="backslashreplace", timeout=120, check=False
    )
    assert proc.returncode == 0, f"{bundle}: verify_bundle exited {proc.returncode}: {proc.stderr[-2000:]}"
    return proc.stdout.startswith("ok"), proc.stdout.strip()


def python_verdict(case) -> tuple[bool, str]:
    return python_verdict_on(str(case.path), case.kind == "tar")


def cpp_verdict(case) -> tuple[bool, str]:
    return cpp_verdict_on(str(case.path), case.kind == "tar")


def test_the_corpus_is_complete(corpus):
    names = {c.name for c in corpus}
    for required in [
        "extra_file", "missing_file", "flipped_byte", "truncated_file", "edited_manifest",
        "duplicate_manifest_entry", "dotdot_path_in_manifest", "absolute_path_in_manifest",
        "symlinked_directory_escaping_bundle", "oversized_size_in_manifest",
        "tar_dotdot_entry", "tar_absolute_entry", "tar_duplicate_entry", "tar_truncated",
        "missing_golden_manifest", "golden_manifest_of_other_bundle", "edited_golden_digest",
        "tar_without_golden_manifest",
    ]:  # fmt: skip
        assert required in names


def test_both_runtimes_judge_the_corpus_alike(corpus):
    wrong = []
    for case in corpus:
        cpp_ok, cpp_message = cpp_verdict(case)
        if cpp_ok != case.valid:
            wrong.append(f"C++ {case.name}: expected {'ok' if case.valid else 'reject'}, got {cpp_message}")
        py_ok, py_message = python_verdict(case)
        if py_ok != case.valid:
            wrong.append(
                f"Python {case.name}: expected {'ok' if case.valid else 'reject'}, got {py_message or 'ok'}"
            )
    assert not wrong, "\n".join(wrong)


def test_rejections_name_the_file(corpus):
    by_name = {c.name: c for c in corpus}
    for case_name, needle in [
        ("extra_file", "notes.txt"),
        ("flipped_byte", "_modules/"),
        ("missing_file", "golden/"),
        ("missing_golden_manifest", "golden.json"),
        ("golden_manifest_of_other_bundle", "golden.json"),
    ]:
        case = by_name[case_name]
        assert needle in cpp_verdict(case)[1]
        assert needle in python_verdict(case)[1]


# --- every hostile case, through both readers ---------------------------------------------------------------

HOSTILE = [*CASES, *PARITY_CASES]
# //tests:validity_parity_gpu_test (tagged gpu) sets WRP_PARITY_CUDA_DEVICE and runs the cases only a GPU load
# judges in C++; this (CPU) test runs the others, and holds Python's verdict on those.
CUDA_DEVICE = os.environ.get("WRP_PARITY_CUDA_DEVICE")
JUDGED_HERE = [c for c in HOSTILE if getattr(c, "gpu_load", False) == bool(CUDA_DEVICE)]


def test_the_parity_corpus_has_100_refusals_of_its_own():
    names = [c.name for c in HOSTILE]
    assert len(names) == len(set(names))
    refusals = [c for c in HOSTILE if not getattr(c, "valid", False)]
    assert len(refusals) >= 100, len(refusals)
    assert sum(getattr(c, "valid", False) for c in HOSTILE) >= 8  # and what both must accept


def _made(case, tmp_path: Path) -> tuple[str, Path | None, bool]:
    """The case's bundle in tmp_path: (argument as the case spells it, working directory, is a tar)."""
    cuda = getattr(case, "cuda", False)
    if cuda and not GOOD_CUDA_DIR.is_dir():
        pytest.fail("WRP_GOOD_CUDA_BUNDLE_DIR is not set: the CUDA cases need a CUDA bundle")
    bundle = copy_good(tmp_path, GOOD_CUDA_DIR if cuda else GOOD_DIR)
    judged = case.mutate(bundle)
    if isinstance(judged, Path):
        return str(judged), None, True
    spelling = getattr(case.mutate, "spelling", "DIR")
    if spelling == ".":
        return ".", bundle, False
    return spelling.replace("DIR", str(bundle)), None, False


@pytest.mark.parametrize("case", JUDGED_HERE, ids=[c.name for c in JUDGED_HERE])
def test_both_readers_give_the_expected_verdict(case, tmp_path):
    arg, cwd, tar = _made(case, tmp_path)
    cuda = getattr(case, "cuda", False)
    load = None if tar else (CUDA_DEVICE if cuda else "cpu")
    if cuda and not CUDA_DEVICE:
        load = None  # a CUDA graph loads only on a GPU; these cases are refused before any load
    python, cpp = python_verdict_on(arg, tar, cwd), cpp_verdict_on(arg, tar, cwd, load)
    expected = getattr(case, "valid", False)
    verdict = {True: "ok", False: "reject"}
    assert (python[0], cpp[0]) == (expected, expected), (
        f"expected {verdict[expected]}: Python {verdict[python[0]]} ({python[1] or 'ok'}), "
        f"C++ {verdict[cpp[0]]} ({cpp[1]})"
    )
    if not expected and case.file:
        assert case.file in python[1], python[1]
        assert case.file in cpp[1], cpp[1]
    # A field's refusal is one message in both readers: both walk the field's declaration in wrpkg/schemas
    # (wrpkg/schema_fields.py, runtime/internal/schema_fields.cc) or apply one written rule twice.
    if not expected and getattr(case, "fragment", "").startswith(FIELD):
        assert case.fragment in python[1], python[1]
        assert case.fragment in cpp[1], cpp[1]


# --- verify = load (issue 40): verify's verdict is every load's ------------------------------------------------

# The SMs a CUDA bundle of the corpus serves with SASS: a load on each takes that SM's images.
VIEW_SMS = (75, 80, 86, 87, 89, 90, 100, 120)


def python_load_verdicts(arg: str, tar: bool, cwd: Path | None, cuda: bool) -> dict[str, tuple[bool, str]]:
    """What each of wrpkg's loads decides, by load: a CPU bundle loaded on the CPU through Warp
    (`wrpkg.load_bundle`, or `Bundle.from_tar(...).load` for an archive); a CUDA bundle, which needs a GPU
    to reach Warp, as far as a load goes without one: `prepare_cuda_load` for a device of each SM it serves
    (the per-device view, read and verified, or every file verified for Warp)."""
    from wrpkg import Bundle, load_bundle
    from wrpkg.reader.bundle import prepare_cuda_load

    loads = {}
    before = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        if tar:
            attempts = {"Bundle.from_tar(...).load('cpu')": lambda: Bundle.from_tar(arg).load("cpu")}
            if cuda:
                attempts = {"Bundle.from_tar": lambda: Bundle.from_tar(arg)}
        elif cuda:
            # A bundle serves every SM it holds SASS for: it is loadable when the load on each of them is.
            def every_sm() -> None:
                refusals = []
                for sm in VIEW_SMS:
                    try:
                        prepare_cuda_load(arg, "cuda:0", f"sm_{sm} GPU", sm, (13, 0))
                    except WrpError as exc:
                        refusals.append(f"sm_{sm}: {exc}")
                if refusals:
                    raise WrpError("; ".join(refusals))

            attempts = {"prepare_cuda_load(each SM)": every_sm}
        else:
            attempts = {"load_bundle(cpu)": lambda: load_bundle(arg, device="cpu")}
        for name, attempt in attempts.items():
            try:
                attempt()
                loads[name] = (True, "")
            except WrpError as exc:
                loads[name] = (False, str(exc))
    finally:
        os.chdir(before)
    return loads


# The one verdict verify and a load give differently, by design (docs/security.md): a chunked file whose
# chunk digests are right but whose whole-file sha256 is not. A load checks the chunks, which bind every byte
# it hands Warp; hashing the whole file again would double a large .wrp's hashing on every load for a digest
# that vouches for no byte the chunks do not. verify refuses the manifest as not the bundler's.
VERIFY_ONLY = {"whole_sha256_wrong_chunks_right"}


@pytest.mark.parametrize("case", JUDGED_HERE, ids=[c.name for c in JUDGED_HERE])
def test_verify_verdict_is_every_loads(case, tmp_path):
    """For every case of the hostile corpus, each reader's verify gives the verdict every load gives: wrpkg
    verify that of wrpkg's loads, and the C++ verify (no Warp) that of a C++ load alone (a deployment's
    Bundle::OpenDirectory without verify_all, then Graph::Load on the CPU). A load never accepts what verify
    refuses, nor refuses what it accepts; and every refusal is a WrpError (VerifyError), never Warp's own."""
    arg, cwd, tar = _made(case, tmp_path)
    cuda = getattr(case, "cuda", False)
    verdicts = {"wrpkg verify": python_verdict_on(arg, tar, cwd), "C++ verify": cpp_verdict_on(arg, tar, cwd)}
    verdicts.update(python_load_verdicts(arg, tar, cwd, cuda))
    if not tar and not cuda:
        verdicts["C++ load alone (cpu)"] = cpp_verdict_on(arg, tar, cwd, "cpu", load_only=True)
    expected = {name: getattr(case, "valid", False) for name in verdicts}
    if case.name in VERIFY_ONLY:
        expected = {name: "verify" not in name for name in verdicts}
    wrong = {name: message or "ok" for name, (ok, message) in verdicts.items() if ok != expected[name]}
    assert not wrong, "; ".join(
        f"{k}: expected {'ok' if expected[k] else 'reject'}, got {v}" for k, v in wrong.items()
    )


GPU_LOAD_CASES = [c for c in PARITY_CASES if c.gpu_load]

if not CUDA_DEVICE:  # on a GPU runner, test_both_readers_give_the_expected_verdict judges these

    @pytest.mark.parametrize("case", GPU_LOAD_CASES, ids=[c.name for c in GPU_LOAD_CASES])
    def test_python_verdict_on_what_only_a_gpu_load_shows_in_cpp(case, tmp_path):
        arg, cwd, tar = _made(case, tmp_path)
        python = python_verdict_on(arg, tar, cwd)
        assert python[0] == case.valid, python[1]
        if not case.valid:
            assert case.file in python[1], python[1]


# --- differential: random edits of both manifests, one verdict -----------------------------------------------

EDITS = int(os.environ.get("WRP_PARITY_EDITS", "200"))
SEED = 20261202
_VALUES = [None, True, False, 0, -1, 1, 7, 2**63 - 1, 2**63, 2**64 - 1, 0.5, -0.0, 1e300, "", "x", "sim.wrp",
           "../x", "/etc/passwd", "a\u00e9", "\u0000", "0" * 64, [], [1], {}, {"k": 1}]  # fmt: skip


def _paths(value, prefix=()):
    """Every (path, value) inside a parsed JSON value, the root included."""
    yield prefix, value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield from _paths(child, (*prefix, key))


def _random_edit(raw, rng) -> str:
    """Changes `raw` in place in one random way; returns what it did."""
    path, target = rng.choice(list(_paths(raw)))
    op = rng.choice(["replace", "replace", "delete", "add", "nudge", "duplicate"])
    parent = raw
    for key in path[:-1]:
        parent = parent[key]
    if op == "replace" and path:
        parent[path[-1]] = rng.choice(_VALUES)
    elif op == "delete" and path:
        del parent[path[-1]]
    elif op == "add" and isinstance(target, dict):
        target[rng.choice(["extra", "name", "size", "path"])] = rng.choice(_VALUES)
    elif op == "nudge" and isinstance(target, int) and not isinstance(target, bool) and path:
        parent[path[-1]] = target + rng.choice([-1, 1])
    elif op == "duplicate" and isinstance(target, list) and target:
        target.append(rng.choice(target))
    else:
        return "nothing"
    return f"{op} {'/'.join(map(str, path)) or '(root)'}"


def test_random_edits_get_one_verdict(tmp_path):
    """EDITS random edits of manifest.json or golden.json, each judged by both readers (C++ loading CPU
    bundles through Warp) with the content hash redone: two in three structural (a field deleted, added,
    retyped, nudged, duplicated; written canonically), one in three a byte flipped, inserted or deleted.
    The verdicts must agree."""
    import json
    import random

    from bundle_corpus import _rehash, _write_canonical

    rng = random.Random(SEED)
    disagreements, refused = [], 0
    for i in range(EDITS):
        bundle = copy_good(tmp_path / str(i), GOOD_DIR)
        file_name = rng.choice(["manifest.json", "golden.json"])
        if i % 3 == 2:  # the bytes: what the JSON parsers must judge alike
            data = bytearray((bundle / file_name).read_bytes())
            at = rng.randrange(len(data))
            byte = rng.choice(b'{}[]",:\\ 0123456789.eE-+tfnu\x00\x7f\xc3\xa9\xff\xef\xbb\xbf')
            op = rng.choice(["flip", "insert", "delete"])
            if op == "flip":
                data[at] = byte
            elif op == "insert":
                data.insert(at, byte)
            else:
                del data[at]
            what = f"{op} byte {at} ({byte:#04x})"
            (bundle / file_name).write_bytes(bytes(data))
        else:
            raw = json.loads((bundle / file_name).read_bytes())
            what = _random_edit(raw, rng)
            _write_canonical(bundle / file_name, raw)
        if file_name == "manifest.json":  # golden.json is outside the content hash
            _rehash(bundle)
        python, cpp = python_verdict_on(str(bundle)), cpp_verdict_on(str(bundle), load="cpu")
        refused += not python[0]
        if python[0] != cpp[0]:
            disagreements.append(f"{file_name}: {what}: Python {python[1] or 'ok'} / C++ {cpp[1]}")
        shutil.rmtree(tmp_path / str(i))
    assert not disagreements, "\n".join(disagreements)
    assert refused >= EDITS // 2  # the edits do break bundles
