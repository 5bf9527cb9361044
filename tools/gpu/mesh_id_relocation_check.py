"""GPU machine (no Bazel): is a `mesh: wp.uint64` program, captured with the mesh id recorded as a
wp.handle relocation, the native capture of the same program edited to `wp.handle`?

    PYTHONPATH=<repo>:/tmp/wrp-site python3 tools/gpu/mesh_id_relocation_check.py OUT [RETARGETED_RAW]

Captures tests/programs_capture/mesh_id_uint64.py natively on cuda:0 twice, in fresh processes:
as written (`wp.uint64`, relocated by the capture) and edited to `wp.handle`
(WRP_TEST_MESH_ID_TYPE=handle). RETARGETED_RAW, when given, is the `wrpkg capture --device cuda
--mode retarget` output of the `wp.uint64` program made on a CPU machine (the retarget side needs
Warp's CPU compiler). Then checks, in canonical form (.wrp, .cu and .cubin bytes), each side against
the native `wp.handle` capture, and replays every .wrp on the GPU in this process (not the capturing
one: a verbatim mesh address would crash or read garbage here), comparing each output with the
native `wp.handle` capture's goldens bit for bit. Writes OUT/mesh_id_relocation.json and prints it;
exits 1 when anything differs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "programs_capture" / "mesh_id_uint64.py"
OUTPUTS = ("dist_a", "dist_b", "face_a", "face_b", "t_hit")


def capture_native(out: Path, mesh_type: str) -> dict:
    env = dict(os.environ, WRP_TEST_MESH_ID_TYPE=mesh_type)
    cmd = [
        sys.executable,
        "-m",
        "wrpkg.capture",
        "--script",
        str(SCRIPT),
        "--device",
        "cuda",
        "--mode",
        "gpu",
    ]
    cmd += ["--out-dir", str(out), "--stem", "mesh", "--label", f"//check:{mesh_type}"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    return {"rc": proc.returncode, "log": proc.stderr.strip().splitlines()[-4:]}


def canonical_files(raw: Path) -> dict[str, bytes]:
    from wrpkg.wrpformat import canonicalize, read_wrp  # noqa: PLC0415

    files = {"mesh.wrp (canonical)": canonicalize(read_wrp(raw / "mesh.wrp")).to_bytes()}
    for path in sorted((raw / "mesh_modules").iterdir()):
        files[path.name] = path.read_bytes()
    return files


def replay(wp, raw: Path) -> dict[str, bytes]:
    loaded = wp.capture_load(str(raw / "mesh.wrp"), device="cuda:0")
    wp.capture_launch(loaded)
    wp.synchronize_device("cuda:0")
    outputs = {}
    for name in OUTPUTS:
        buffer = wp.empty(loaded._params[name]["size"], dtype=wp.uint8, device="cuda:0")
        loaded.get_param(name, buffer)
        outputs[name] = buffer.numpy().tobytes()
    return outputs


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    sides = {"native_uint64": out / "native_uint64", "native_handle": out / "native_handle"}
    report: dict = {"captures": {}}
    for name, mesh_type in (("native_uint64", "uint64"), ("native_handle", "handle")):
        report["captures"][name] = capture_native(sides[name], mesh_type)
    if len(sys.argv) > 2:
        sides["retarget_uint64"] = Path(sys.argv[2])
    if any(c["rc"] for c in report["captures"].values()):
        print(json.dumps(report, indent=1))
        return 1
    import warp as wp  # noqa: PLC0415

    wp.config.quiet = True
    wp.init()
    report["device"] = (
        f"{wp.get_cuda_device(0).name} sm_{wp.get_cuda_device(0).arch}, warp {wp.config.version}"
    )
    reference = canonical_files(sides["native_handle"])
    golden = {n: (sides["native_handle"] / "golden" / f"{n}.bin").read_bytes() for n in OUTPUTS}
    ok = True
    for name, raw in sides.items():
        files = canonical_files(raw)
        same = {f: files.get(f) == data for f, data in reference.items()}
        replayed = replay(wp, raw)
        matches = {n: replayed[n] == golden[n] for n in OUTPUTS}
        info = json.loads((raw / "capture.json").read_text())
        report[name] = {
            "canonical_equal_to_native_handle": same,
            "extra_files": sorted(set(files) - set(reference)),
            "gpu_replay_equals_native_handle_goldens": matches,
            "uint64_mesh_ids_as_handles": info.get("uint64_mesh_ids_as_handles"),
        }
        ok &= all(same.values()) and not report[name]["extra_files"] and all(matches.values())
    report["ok"] = ok
    (out / "mesh_id_relocation.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
