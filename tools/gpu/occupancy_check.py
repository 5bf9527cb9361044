"""Holds the device model's computed occupancy (wrpkg/capture/occupancy.py) against a real GPU.

Run on a CUDA machine from the repository root: `PYTHONPATH=. python3 tools/gpu/occupancy_check.py`.
For a few small kernels of its own (light, register-heavy, launch-bounded, tiled) and every kernel
MuJoCo Warp asks `wp.get_suggested_block_size` about while stepping mujoco_warp/test_data/collision.xml
(CG and Newton solvers: the CCD kernels, the nxn broadphase, the sparse JTDAJ update), it prints one
JSON object: the GPU, the device model matching it, and per kernel the GPU's answer, the computed
one, the resources the driver reports for the loaded function next to those read from the cubin the
retarget compiles, and whether they match. Exit status 1 if any answer differs.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
# The small kernels of the CPU tests (light, register-heavy, launch-bounded), checked here on a GPU.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

import warp as wp  # noqa: E402
from occupancy_kernels import bounded, heavy, light  # noqa: E402

from wrpkg.capture import device_model, occupancy  # noqa: E402

TILE = 64


@wp.kernel
def tiled(a: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    i, j = wp.tid()
    t = wp.tile_load(a, shape=(TILE, TILE), offset=(i * TILE, j * TILE))
    wp.tile_atomic_add(out, wp.tile_sum(t), offset=(0,))


def driver_resources(kernel, device) -> dict:
    """What the driver reports for the forward function Warp loaded (cuFuncGetAttribute)."""
    try:
        from cuda.bindings import driver  # noqa: PLC0415

        hooks = kernel.module.load(device).get_kernel_hooks(kernel)
        function = driver.CUfunction(int(hooks.forward))
        attrs = driver.CUfunction_attribute
        values = {}
        for name, attr in (
            ("registers", attrs.CU_FUNC_ATTRIBUTE_NUM_REGS),
            ("static_shared_bytes", attrs.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
            ("max_threads_per_block", attrs.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
            ("max_dynamic_shared_bytes", attrs.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES),
        ):
            err, value = driver.cuFuncGetAttribute(attr, function)
            values[name] = value if err == driver.CUresult.CUDA_SUCCESS else f"error {err}"
        values["forward_smem_bytes (Warp's dynamic)"] = hooks.forward_smem_bytes
        return values
    except Exception as exc:  # noqa: BLE001 - a diagnostic only: the comparison does not need it
        return {"unavailable": f"{type(exc).__name__}: {exc}"}


def check(kernel, device, sm, sm_count, where, asked_answer=None) -> dict:
    entry = {"kernel": kernel.key, "module": kernel.module.name, "asked_from": where}
    try:
        gpu = tuple(asked_answer) if asked_answer is not None else wp.get_suggested_block_size(kernel, device)
        entry["gpu"] = list(gpu)
        suggestion = occupancy.suggested_block_size(kernel, sm, sm_count, device.arch, where)
        computed = (suggestion.block_size, suggestion.min_grid_size)
        entry["computed"] = list(computed)
        entry["cubin"] = {
            "function": suggestion.function,
            "registers": suggestion.resources.registers,
            "static_shared_bytes": suggestion.resources.static_shared_bytes,
            "max_threads_per_block": suggestion.resources.max_threads_per_block,
            "dynamic_shared_bytes": suggestion.dynamic_shared_bytes,
        }
        entry["driver"] = driver_resources(kernel, device)
        entry["match"] = computed == gpu
    except Exception as exc:  # noqa: BLE001 - reported per kernel, the others still checked
        entry["error"] = f"{type(exc).__name__}: {exc}"
        entry["traceback"] = traceback.format_exc(limit=6)
        entry["match"] = False
    return entry


def mujoco_warp_queries(device) -> tuple[list, list[str]]:
    """(kernel, where, answer) for each distinct kernel MuJoCo Warp asks about while stepping
    collision.xml, and the configurations that failed to run."""
    import mujoco  # noqa: PLC0415
    import mujoco_warp as mjw  # noqa: PLC0415

    asked = {}
    original = wp.get_suggested_block_size

    def recording(kernel, device_arg=None):
        answer = original(kernel, device_arg)
        frame = sys._getframe(1)
        where = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno} ({frame.f_code.co_name})"
        asked.setdefault(id(kernel), (kernel, where, answer))
        return answer

    problems = []
    xml = os.path.join(os.path.dirname(mjw.__file__), "test_data", "collision.xml")
    wp.get_suggested_block_size = recording
    try:
        for solver in (mujoco.mjtSolver.mjSOL_CG, mujoco.mjtSolver.mjSOL_NEWTON):
            try:
                mjm = mujoco.MjModel.from_xml_path(xml)
                mjm.opt.solver = solver
                mjm.opt.jacobian = mujoco.mjtJacobian.mjJAC_SPARSE
                mjm.opt.iterations, mjm.opt.ls_iterations = 10, 5
                mjd = mujoco.MjData(mjm)
                # Stacks that touch (as models/mjwarp/mjw_collision.py places them): contacts for the CCD.
                mjd.qpos[:] = [0.0, 0.0, 0.0, 0.0, 0.0, -0.1, 0.0, -0.1, 0.0, -0.1, 0.0, -0.1][: mjm.nq]
                with wp.ScopedDevice(device):
                    m = mjw.put_model(mjm)
                    d = mjw.put_data(mjm, mjd, nworld=4)
                    for _ in range(3):
                        mjw.step(m, d)
                wp.synchronize_device(device)
            except Exception as exc:  # noqa: BLE001
                problems.append(f"{solver}: {type(exc).__name__}: {exc}")
    finally:
        wp.get_suggested_block_size = original
    return list(asked.values()), problems


def main() -> int:
    wp.init()
    device = wp.get_device("cuda:0")
    model = next((m for m in device_model.MODELS.values() if m.name == device.name), None)
    sm = occupancy.SM_LIMITS.get(device.arch)
    report = {
        "device": {"name": device.name, "arch": device.arch, "sm_count": device.sm_count},
        "warp": wp.config.version,
        "device_model": model.key if model is not None else None,
    }
    if model is not None and (model.arch, model.sm_count) != (device.arch, device.sm_count):
        report["device_model_differs"] = {"arch": model.arch, "sm_count": model.sm_count}
    if sm is None:
        report["error"] = (
            f"no per-SM limits for sm_{device.arch} (occupancy.SM_LIMITS: {sorted(occupancy.SM_LIMITS)})"
        )
        print(json.dumps(report, indent=1))
        return 1
    # The GPU's own SM count: the check is of the calculator and the cubin, the model only picks it.
    sm_count = device.sm_count
    results = [
        check(k, device, sm, sm_count, "tools/gpu/occupancy_check.py") for k in (light, heavy, bounded, tiled)
    ]
    queries, problems = mujoco_warp_queries(device)
    results += [check(k, device, sm, sm_count, where, answer) for k, where, answer in queries]
    # The asking functions (MuJoCo Warp's factories name their kernels "kernel", "ccd_kernel"...).
    expected = ("_ccd_grid_size", "collision_driver.py", "_jtdaj_groups_per_world")
    report["mujoco_warp_problems"] = problems
    report["mujoco_warp_asked_from"] = sorted({r["asked_from"] for r in results[4:]})
    report["mujoco_warp_expected_not_seen"] = [
        e for e in expected if not any(e in r["asked_from"] for r in results[4:])
    ]
    report["results"] = results
    report["all_match"] = all(r["match"] for r in results)
    print(json.dumps(report, indent=1, default=str))
    for r in results:
        print(
            f"{'OK ' if r['match'] else 'BAD'} {r['kernel']:40} gpu={r.get('gpu')} computed={r.get('computed')}",
            file=sys.stderr,
        )
    return 0 if report["all_match"] else 1


if __name__ == "__main__":
    sys.exit(main())
