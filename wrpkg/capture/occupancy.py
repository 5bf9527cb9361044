"""CUDA's occupancy calculator, for a GPU that is not there.

`wp.get_suggested_block_size(kernel, device)` is `cuOccupancyMaxPotentialBlockSize(&min_grid,
&block, forward, NULL, forward_smem_bytes, 0)` on the kernel's forward entry point as Warp loads it
(warp/native/warp.cu `wp_cuda_get_suggested_block_size`; warp/_src/context.py): no block size limit,
no block-size-dependent shared memory, the module's default block_dim variant, the dynamic shared
memory from the module's `.meta`. The driver answers from the function's registers, static shared
memory and maximum threads per block (its launch bounds) and the GPU's per-SM limits; this module
computes that answer as CUDA's occupancy calculator (cuda_occupancy.h,
`cudaOccMaxPotentialOccupancyBlockSize`) does, with the GPU's default shared memory carveout, from
the cubin Warp compiles for the target SM (the one a GPU of that SM would load).
"""

from __future__ import annotations

import io
import json
import struct
from dataclasses import dataclass

from wrpkg.errors import CaptureError


@dataclass(frozen=True)
class SmLimits:
    """What the occupancy calculator reads of a GPU (cudaOccDeviceProp), per compute capability."""

    max_threads_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int
    registers_per_block: int
    shared_memory_per_sm: int  # bytes, the most the carveout gives shared memory
    shared_memory_per_block: int  # bytes, without opting in
    shared_memory_per_block_optin: int  # bytes
    reserved_shared_memory_per_block: int  # bytes the driver keeps per block (sm_80 on)
    max_threads_per_block: int = 1024
    warp_size: int = 32
    # Registers go to a warp in units of this many (cudaOccRegAllocationGranularity), from a
    # per-thread count of at most max_registers_per_thread.
    register_allocation_unit: int = 256
    max_registers_per_thread: int = 255
    # Registers are split among the SM's sub-partitions; a block's warps are spread over them.
    sub_partitions: int = 4
    shared_memory_allocation_unit: int = 128


# The CUDA programming guide's table of compute capabilities (and cudaDeviceProp on such GPUs).
SM_LIMITS: dict[int, SmLimits] = {
    80: SmLimits(2048, 32, 65536, 65536, 167936, 49152, 166912, 1024),
    89: SmLimits(1536, 24, 65536, 65536, 102400, 49152, 101376, 1024),
    90: SmLimits(2048, 32, 65536, 65536, 233472, 49152, 232448, 1024),
}


@dataclass(frozen=True)
class KernelResources:
    """What the driver knows of one function of a cubin (cuFuncGetAttribute)."""

    registers: int  # per thread (CU_FUNC_ATTRIBUTE_NUM_REGS)
    static_shared_bytes: int  # CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
    max_threads_per_block: int | None  # from __launch_bounds__, None without


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def max_active_blocks_per_sm(
    sm: SmLimits, kernel: KernelResources, block_size: int, dynamic_shared_bytes: int
) -> int:
    """cudaOccMaxActiveBlocksPerMultiprocessor: the least of the warp, block, register and shared
    memory limits (0: a block of this size cannot launch)."""
    max_threads = min(sm.max_threads_per_block, kernel.max_threads_per_block or sm.max_threads_per_block)
    if block_size <= 0 or block_size > max_threads:
        return 0
    warps_per_block = -(-block_size // sm.warp_size)
    by_warps = (sm.max_threads_per_sm // sm.warp_size) // warps_per_block

    registers_per_warp = _round_up(kernel.registers * sm.warp_size, sm.register_allocation_unit)
    if registers_per_warp == 0:
        by_registers = by_warps
    else:
        # The hardware checks a block's registers as if its warps filled every sub-partition alike.
        assumed = registers_per_warp * _round_up(warps_per_block, sm.sub_partitions)
        if assumed > sm.registers_per_block or registers_per_warp * warps_per_block > sm.registers_per_block:
            return 0
        warps_per_sub_partition = (sm.registers_per_sm // sm.sub_partitions) // registers_per_warp
        by_registers = (warps_per_sub_partition * sm.sub_partitions) // warps_per_block

    shared = kernel.static_shared_bytes + sm.reserved_shared_memory_per_block + dynamic_shared_bytes
    shared_per_block = _round_up(shared, sm.shared_memory_allocation_unit)
    # Warp opts a kernel in to the dynamic shared memory it asks for (cuFuncSetAttribute), so a block
    # may use the opt-in maximum; the driver's reserve comes on top of either limit.
    opted_in = kernel.static_shared_bytes + dynamic_shared_bytes > sm.shared_memory_per_block
    block_limit = (
        sm.shared_memory_per_block_optin if opted_in else sm.shared_memory_per_block
    ) + sm.reserved_shared_memory_per_block
    if shared_per_block > block_limit:
        return 0
    by_shared = sm.shared_memory_per_sm // shared_per_block

    return min(by_warps, sm.max_blocks_per_sm, by_registers, by_shared)


def max_potential_block_size(
    sm: SmLimits, sm_count: int, kernel: KernelResources, dynamic_shared_bytes: int
) -> tuple[int, int]:
    """cuOccupancyMaxPotentialBlockSize without a block size limit: (block size, minimum grid size).

    The largest block size, tried downward by warps, whose blocks keep the most threads resident on an
    SM; the grid that fills every SM with them. (0, 0) when no block size fits (the driver then fails
    the query, and Warp raises)."""
    limit = min(sm.max_threads_per_block, kernel.max_threads_per_block or sm.max_threads_per_block)
    best_size = best_blocks = best_threads = 0
    for aligned in range(_round_up(limit, sm.warp_size), 0, -sm.warp_size):
        size = min(limit, aligned)
        blocks = max_active_blocks_per_sm(sm, kernel, size, dynamic_shared_bytes)
        if size * blocks > best_threads:
            best_size, best_blocks, best_threads = size, blocks, size * blocks
        if best_threads == sm.max_threads_per_sm:
            break
    return best_size, best_blocks * sm_count


# --- a cubin's resource usage -----------------------------------------------------------------

# The per-function attributes nvcc/NVRTC leave in a cubin's .nv.info sections (EIATTR_*): records
# of a format byte, an attribute byte and a 16-bit field that is the value (formats 1 to 3) or, for
# format 4 (EIFMT_SVAL), the size of the payload that follows.
_EIFMT_SVAL = 0x04
_EIATTR_MAX_THREADS = 0x05  # __launch_bounds__'s maximum: three 32-bit dimensions
_EIATTR_REGCOUNT = 0x2F  # in .nv.info: (function symbol index, registers), 32 bits each


class CubinError(CaptureError):
    """A cubin does not hold what the occupancy calculator needs of a function."""


def _eiattr_records(data: bytes):
    offset = 0
    while offset + 4 <= len(data):
        fmt, attr, field = struct.unpack_from("<BBH", data, offset)
        offset += 4
        if fmt == _EIFMT_SVAL:
            yield attr, data[offset : offset + field]
            offset += field
        else:
            yield attr, struct.pack("<H", field)


def cubin_resources(cubin: bytes, function: str, where: str) -> KernelResources:
    """The registers, static shared memory and launch-bounds maximum of `function` in `cubin`."""
    try:
        from elftools.elf.elffile import ELFFile  # noqa: PLC0415 - only a device model's occupancy needs it
    except ImportError:
        raise CubinError(
            f"{where}: reading the cubin's resource usage needs pyelftools",
            fix="pip install 'wrpkg[cuda]' (pyelftools==0.32)",
        ) from None
    elf = ELFFile(io.BytesIO(cubin))
    symbols = elf.get_section_by_name(".symtab")
    index = (
        next((i for i, s in enumerate(symbols.iter_symbols()) if s.name == function), None)
        if symbols is not None
        else None
    )
    info = elf.get_section_by_name(".nv.info")
    if index is None or info is None:
        raise CubinError(f"{where}: the cubin has no function {function} (or no .nv.info)")
    registers = None
    for attr, payload in _eiattr_records(info.data()):
        if attr == _EIATTR_REGCOUNT and len(payload) == 8:
            symbol, count = struct.unpack("<II", payload)
            if symbol == index:
                registers = count
    if registers is None:
        raise CubinError(f"{where}: the cubin's .nv.info gives no register count for {function}")
    max_threads = None
    own_info = elf.get_section_by_name(f".nv.info.{function}")
    for attr, payload in _eiattr_records(own_info.data() if own_info is not None else b""):
        if attr == _EIATTR_MAX_THREADS and len(payload) == 12:
            x, y, z = struct.unpack("<III", payload)
            max_threads = x * max(y, 1) * max(z, 1)
    shared = elf.get_section_by_name(f".nv.shared.{function}")
    return KernelResources(registers, shared["sh_size"] if shared is not None else 0, max_threads)


# --- a Warp kernel on a modelled GPU ------------------------------------------------------------


@dataclass(frozen=True)
class Suggestion:
    """A modelled `wp.get_suggested_block_size` answer, with what it was computed from."""

    block_size: int
    min_grid_size: int
    function: str  # the forward entry point
    resources: KernelResources
    dynamic_shared_bytes: int

    def describe(self, arch: int) -> str:
        bounds = self.resources.max_threads_per_block
        return (
            f"({self.block_size}, {self.min_grid_size}) (computed for sm_{arch} from its cubin: "
            f"{self.resources.registers} registers, {self.resources.static_shared_bytes} B static + "
            f"{self.dynamic_shared_bytes} B dynamic shared memory"
            + (f", launch bounds {bounds}" if bounds else "")
            + ")"
        )


def forward_resources(kernel, arch: int, where: str) -> tuple[str, KernelResources, int]:
    """(forward entry name, its resources, Warp's dynamic shared memory for it) in the cubin Warp
    compiles for sm_<arch> of the module variant `Module.load(device)` loads (its default block_dim),
    compiled as the retarget compiles (kernel_cache.compile_cuda_variant: once per kernel cache)."""
    import warp as wp  # noqa: PLC0415 - Warp is imported lazily

    from wrpkg.capture import kernel_cache  # noqa: PLC0415 - imports Warp's internals

    wp.init()  # as get_suggested_block_size does: the kernel cache is Warp's
    module = kernel.module
    block_dim = module.options["block_dim"]
    options = module.resolve_options(wp.config, block_dim=block_dim)
    module.get_module_hash(block_dim)  # fills module.hashers[block_dim], which names the kernel
    folder = kernel_cache.compile_cuda_variant(module, block_dim, arch, options)
    binary = folder / module._get_compile_output_name(None, arch, "", False, block_dim=block_dim)
    hasher = module.hashers[block_dim]
    mangled = kernel.get_mangled_name(kernel_hash=hasher.kernel_hashes[kernel])
    forward = f"{mangled}_cuda_kernel_forward"
    resources = cubin_resources(binary.read_bytes(), forward, where)
    if (module.options | kernel.options).get("entry_point_abi", "warp") == "external_constant_params":
        dynamic = 0  # Warp asks for the raw entry point with no shared memory (its code has no tiles)
    else:
        meta = json.loads((folder / module._get_meta_name(block_dim=block_dim)).read_text())
        dynamic = int(meta.get(f"{forward}_smem_bytes", 0))
    return forward, resources, dynamic


def suggested_block_size(kernel, sm: SmLimits, sm_count: int, arch: int, where: str) -> Suggestion:
    """What `wp.get_suggested_block_size(kernel, device)` returns on a GPU of sm_<arch> with these limits."""
    function, resources, dynamic = forward_resources(kernel, arch, where)
    block_size, min_grid_size = max_potential_block_size(sm, sm_count, resources, dynamic)
    return Suggestion(block_size, min_grid_size, function, resources, dynamic)
