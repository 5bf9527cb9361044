"""The occupancy calculator a retargeted capture answers wp.get_suggested_block_size with
(wrpkg/capture/occupancy.py): hand-worked cases of each limit on sm_90, sm_89 and sm_80, and the
resource usage it reads from a cubin Warp compiles (held against the pinned cuobjdump's)."""

from __future__ import annotations

import re
import subprocess

import pytest

from wrpkg.capture.occupancy import SM_LIMITS, KernelResources, max_potential_block_size

H200_SMS, L40S_SMS, A100_SMS = 132, 142, 108


def kernel(registers, static_shared=0, max_threads=None):
    return KernelResources(registers, static_shared, max_threads)


@pytest.mark.parametrize(
    ("arch", "sms", "resources", "dynamic", "expected"),
    [
        # Warp-limited: 16 registers fit 128 warps, an SM holds 64: two blocks of 1024.
        (90, H200_SMS, kernel(16), 0, (1024, 2 * H200_SMS)),
        # Register-limited: 128 registers are 4096 a warp, 4 warps per sub-partition; a block of 1024
        # would need 32 x 4096 > 65536; 16 warps an SM, first reached by one block of 512.
        (90, H200_SMS, kernel(128), 0, (512, H200_SMS)),
        # 72 registers round up to 2304 a warp: 7 warps per sub-partition, 28 an SM; a block's warps are
        # checked rounded up to 4 sub-partitions, so 29..32 warps do not launch and 896 threads (28) do.
        (80, A100_SMS, kernel(72), 0, (896, A100_SMS)),
        # Shared-memory-limited: 150000 B dynamic + 2048 static + 1024 reserved, in 128 B units, is
        # 153088 B: one block an SM (228 KiB), of the largest size.
        (90, H200_SMS, kernel(16, 2048), 150000, (1024, H200_SMS)),
        (80, A100_SMS, kernel(16, 2048), 150000, (1024, A100_SMS)),
        # Two such blocks fit sm_90's SM with 100000 B: the warp limit decides again.
        (90, H200_SMS, kernel(16, 2048), 100000, (1024, 2 * H200_SMS)),
        # More than sm_80's opt-in per block: nothing launches (the driver fails the query).
        (80, A100_SMS, kernel(16), 170000, (0, 0)),
        # Launch bounds cap the block: 256 threads, 8 blocks fill the SM's 64 warps.
        (90, H200_SMS, kernel(32, 0, 256), 0, (256, 8 * H200_SMS)),
        # Block-count-limited: one-warp blocks, at most 32 an SM (sm_90) and 24 (sm_89).
        (90, H200_SMS, kernel(16, 0, 32), 0, (32, 32 * H200_SMS)),
        (89, L40S_SMS, kernel(16, 0, 32), 0, (32, 24 * L40S_SMS)),
        # sm_89 holds 48 warps: a block of 1024 leaves 16 idle, two of 768 fill it.
        (89, L40S_SMS, kernel(32), 0, (768, 2 * L40S_SMS)),
    ],
)
def test_max_potential_block_size_hand_worked(arch, sms, resources, dynamic, expected):
    assert max_potential_block_size(SM_LIMITS[arch], sms, resources, dynamic) == expected


def _res_usage(cubin) -> dict[str, tuple[int, int]]:
    """function -> (REG, SHARED) as the pinned cuobjdump reports them."""
    from wrpkg.cuda_tools.cuobjdump import cuobjdump_path  # noqa: PLC0415

    text = subprocess.run(
        [str(cuobjdump_path()), "-res-usage", str(cubin)], capture_output=True, text=True, check=True
    ).stdout
    found = re.findall(r"Function (\S+):\s*\n\s*REG:(\d+) STACK:\d+ SHARED:(\d+)", text)
    return {name: (int(reg), int(shared)) for name, reg, shared in found}


@pytest.mark.parametrize("arch", [90, 80])
def test_cubin_resources_match_cuobjdump_and_launch_bounds(arch):
    """A small kernel, a register-heavy one and one with launch bounds, compiled as the retarget
    compiles: the registers and static shared memory read from the cubin are cuobjdump's, and the
    launch bounds are found."""
    import warp as wp  # noqa: PLC0415
    from occupancy_kernels import KERNELS  # noqa: PLC0415

    from wrpkg.capture import kernel_cache, occupancy  # noqa: PLC0415

    wp.init()
    seen = {}
    for k in KERNELS.values():
        function, resources, dynamic = occupancy.forward_resources(k, arch, "test")
        module = k.module
        block_dim = module.options["block_dim"]
        folder = kernel_cache.compile_cuda_variant(
            module, block_dim, arch, module.resolve_options(wp.config, block_dim=block_dim)
        )
        cubin = folder / module._get_compile_output_name(None, arch, "", False, block_dim=block_dim)
        assert _res_usage(cubin)[function] == (resources.registers, resources.static_shared_bytes)
        seen[k.key] = (resources, dynamic)
    assert seen["bounded"][0].max_threads_per_block == 128
    assert seen["light"][0].max_threads_per_block is None
    assert seen["heavy"][0].registers > seen["light"][0].registers
