"""`wp.HashGrid.build()` in a step, as Warp operations APIC records, and its id relocated.

Warp 1.19 refuses `HashGrid.build()` in a saveable APIC capture ("HashGrid serialization is
not yet supported"), and a grid's id is a pointer to a native `HashGrid_t` that no saved
graph can hold. NVIDIA's SPH and DEM samples, and Newton's particle contacts, rebuild their
grid in every step. While a step records, these hooks do each build as Warp does it
(`warp/native/hashgrid.cu`, `hash_grid_rebuild_device`), in operations APIC records:

1. a one-thread kernel writes the grid's `HashGrid_t` header into a `wp.array` (the same
   fields Warp's host code fills: buffers, dimensions, point count, `cell_width` and
   `Type(1) / cell_width`), with the buffer addresses the replay passes it;
2. a kernel computes each point's cell with Warp's own `hash_grid_index` (and, for a grouped
   build, the `(cell, group)` key with `hash_grid_point_key`);
3. `wp.utils.radix_sort_pairs` sorts them (the stable radix sort Warp's build calls; recorded
   as one operation, on the CPU and on CUDA);
4. two memsets and a kernel compute the cell starts and ends (`compute_cell_offsets`).

For the length of the step the grid's `id` is the header array's address, and a launch
parameter (`wp.uint64` or `wp.handle`) holding it is recorded as a relocation to that array:
every replay, on any device, rebuilds the grid from the points of that replay, and every query
kernel reads the grid of that replay. The grid's native id comes back when the step ends.

Not lowered: a grid built in `build()` and only queried in the step (its native buffers are no
Warp arrays; the stale-pointer check refuses it, with the fix: build it in the step), an id in
a struct field (refused as an address inside a live array).
"""

import functools
from dataclasses import dataclass

from wrpkg import warp_internals

# HashGrid_t<Type> (warp/native/hashgrid.h): five pointers, seven ints, a pointer, two Type.
# 96 bytes is its size for double (88 for float and half): the header array holds either.
_HEADER_WORDS = 12
_MODULE = "wrpkg_lowered_hash_grid"


def _native_type(dtype) -> str:
    import warp as wp  # noqa: PLC0415 - Warp is imported lazily

    return {wp.float16: "wp::half", wp.float32: "float", wp.float64: "double"}[dtype]


@functools.cache
def _kernels(dtype):
    """The build's kernels for grids of one scalar type (one module per type)."""
    import warp as wp  # noqa: PLC0415

    scalar = _native_type(dtype)
    vec3 = wp.types.vector(3, dtype)
    grid_t = f"wp::HashGrid_t<{scalar}>"
    module = f"{_MODULE}_{wp.types.type_repr(dtype)}"

    header_snippet = f"""
    {grid_t} grid;
    grid.point_cells = point_cells.data;
    grid.point_ids = point_ids.data;
    grid.point_keys = has_groups ? point_keys.data : nullptr;
    grid.cell_starts = cell_starts.data;
    grid.cell_ends = cell_ends.data;
    grid.dim_x = dim_x;
    grid.dim_y = dim_y;
    grid.dim_z = dim_z;
    grid.num_points = num_points;
    grid.max_points = capacity;
    grid.max_keys = has_groups ? capacity : 0;
    grid.has_groups = has_groups;
    grid.context = nullptr;
    grid.cell_width = ({scalar})(cell_width);
    grid.cell_width_inv = ({scalar})(1) / grid.cell_width;
    *({grid_t}*)(header.data) = grid;
    """

    def write_header(
        header: wp.array(dtype=wp.uint64),
        point_cells: wp.array(dtype=wp.int32),
        point_ids: wp.array(dtype=wp.int32),
        point_keys: wp.array(dtype=wp.uint64),
        cell_starts: wp.array(dtype=wp.int32),
        cell_ends: wp.array(dtype=wp.int32),
        dim_x: int,
        dim_y: int,
        dim_z: int,
        num_points: int,
        capacity: int,
        has_groups: int,
        cell_width: wp.float64,
    ): ...

    tag = wp.types.type_repr(dtype)
    # Warp keys a function by its qualified name within its Python module: one key per type.
    write_header.__name__ = write_header.__qualname__ = f"hash_grid_write_header_{tag}"
    write_header_func = wp.func_native(header_snippet)(write_header)

    # Native functions return nothing (wp.func_native): these write the point's entry.
    def cell_of(
        header: wp.array(dtype=wp.uint64),
        points: wp.array(dtype=vec3),
        point_cells: wp.array(dtype=wp.int32),
        point_ids: wp.array(dtype=wp.int32),
        tid: int,
    ): ...

    cell_of.__name__ = cell_of.__qualname__ = f"hash_grid_cell_of_{tag}"
    cell_of_func = wp.func_native(
        f"point_cells[tid] = wp::hash_grid_index(*(const {grid_t}*)(header.data), points[tid]);\n"
        "point_ids[tid] = tid;"
    )(cell_of)

    def key_of(
        header: wp.array(dtype=wp.uint64),
        points: wp.array(dtype=vec3),
        groups: wp.array(dtype=wp.int32),
        point_keys: wp.array(dtype=wp.uint64),
        point_ids: wp.array(dtype=wp.int32),
        tid: int,
    ): ...

    key_of.__name__ = key_of.__qualname__ = f"hash_grid_key_of_{tag}"
    key_of_func = wp.func_native(
        "point_keys[tid] = wp::hash_grid_point_key("
        f"wp::hash_grid_index(*(const {grid_t}*)(header.data), points[tid]), groups[tid]);\n"
        "point_ids[tid] = tid;"
    )(key_of)

    def header_kernel(
        header: wp.array(dtype=wp.uint64),
        point_cells: wp.array(dtype=wp.int32),
        point_ids: wp.array(dtype=wp.int32),
        point_keys: wp.array(dtype=wp.uint64),
        cell_starts: wp.array(dtype=wp.int32),
        cell_ends: wp.array(dtype=wp.int32),
        dim_x: int,
        dim_y: int,
        dim_z: int,
        num_points: int,
        capacity: int,
        has_groups: int,
        cell_width: wp.float64,
    ):
        write_header_func(
            header,
            point_cells,
            point_ids,
            point_keys,
            cell_starts,
            cell_ends,
            dim_x,
            dim_y,
            dim_z,
            num_points,
            capacity,
            has_groups,
            cell_width,
        )

    def cells_kernel(
        header: wp.array(dtype=wp.uint64),
        points: wp.array(dtype=vec3),
        point_cells: wp.array(dtype=wp.int32),
        point_ids: wp.array(dtype=wp.int32),
    ):
        cell_of_func(header, points, point_cells, point_ids, wp.tid())

    def keys_kernel(
        header: wp.array(dtype=wp.uint64),
        points: wp.array(dtype=vec3),
        groups: wp.array(dtype=wp.int32),
        point_keys: wp.array(dtype=wp.uint64),
        point_ids: wp.array(dtype=wp.int32),
    ):
        key_of_func(header, points, groups, point_keys, point_ids, wp.tid())

    kernel = functools.partial(wp.kernel, module=module, enable_backward=False)
    return (
        kernel(header_kernel, name="hash_grid_write_header"),
        kernel(cells_kernel, name="hash_grid_compute_cell_indices"),
        kernel(keys_kernel, name="hash_grid_compute_point_keys"),
    )


@functools.cache
def _shared_kernels():
    """The type-independent kernels of the build (compute_cell_offsets, extract_cells_from_keys)."""
    import warp as wp  # noqa: PLC0415

    def cells_from_keys(point_keys: wp.array(dtype=wp.uint64), point_cells: wp.array(dtype=wp.int32)):
        tid = wp.tid()
        point_cells[tid] = wp.int32(point_keys[tid] >> wp.uint64(32))

    def cell_offsets(
        cell_starts: wp.array(dtype=wp.int32),
        cell_ends: wp.array(dtype=wp.int32),
        point_cells: wp.array(dtype=wp.int32),
        num_points: int,
    ):
        tid = wp.tid()
        c = point_cells[tid]
        if tid == 0:
            cell_starts[c] = 0
        else:
            p = point_cells[tid - 1]
            if c != p:
                cell_starts[c] = tid
                cell_ends[p] = tid
        if tid == num_points - 1:
            cell_ends[c] = tid + 1

    kernel = functools.partial(wp.kernel, module=f"{_MODULE}_offsets", enable_backward=False)
    return (
        kernel(cells_from_keys, name="hash_grid_extract_cells_from_keys"),
        kernel(cell_offsets, name="hash_grid_compute_cell_offsets"),
    )


@dataclass
class _LoweredGrid:
    """The Warp arrays standing in for one grid's native buffers during the step."""

    grid: object
    native_id: int
    capacity: int
    header: object
    point_cells: object
    point_ids: object
    point_keys: object  # None until a grouped build
    cell_starts: object
    cell_ends: object


class HashGridLowering:
    """Hooks `wp.HashGrid.build` for one recording; `restore()` gives the grids their ids back."""

    def __init__(self):
        self._grids: dict[int, _LoweredGrid] = {}  # id(grid) ->
        self._header_ptrs: dict[int, object] = {}  # header address -> header array (all ever made)

    def header_for(self, value: int):
        """The header array whose address a launch parameter holds, or None."""
        return self._header_ptrs.get(value)

    def patches(self) -> list[tuple[object, str, object]]:
        import warp as wp  # noqa: PLC0415

        lowering = self
        original_build = wp.HashGrid.build

        def build(self, points, radius, groups=None):
            if not lowering.build(self, points, radius, groups):
                original_build(self, points, radius, groups)

        return [(wp.HashGrid, "build", build)]

    def restore(self) -> None:
        for lowered in self._grids.values():
            lowered.grid.id = lowered.native_id
        self._grids.clear()

    def build(self, grid, points, radius, groups) -> bool:
        """Records `grid.build(points, radius, groups)` as Warp operations; False when Warp's own
        build applies (no APIC recording of the grid's device)."""
        import warp as wp  # noqa: PLC0415

        device = grid.device
        if warp_internals.context()._get_apic_capture_for_device(device) is None:
            return False
        # Warp's own argument checks, in its words (HashGrid.build).
        if not wp.types.types_equal(points.dtype, grid._vec_type):
            raise TypeError(
                f"Hash grid points should have type {grid._vec_type.__name__}, got {points.dtype}"
            )
        if radius <= 0.0:
            raise ValueError(f"Hash grid cell width must be positive, got {radius}")
        if points.device != device:
            raise RuntimeError("points must live on the same device as this HashGrid")
        if groups is not None:
            if groups.dtype != wp.int32:
                raise RuntimeError("groups should be an array of type wp.int32")
            if groups.device != device:
                raise RuntimeError("groups must live on the same device as this HashGrid")
            if groups.size != points.size:
                raise RuntimeError("groups must have the same length as points")
            if groups.ndim > 1:
                groups = groups.contiguous().flatten()
        if points.ndim > 1:
            points = points.contiguous().flatten()
        num_points = points.shape[0]
        lowered = self._buffers(grid, num_points, grouped=groups is not None)
        header_kernel, cells_kernel, keys_kernel = _kernels(grid.dtype)
        cells_from_keys, cell_offsets = _shared_kernels()
        has_groups = 1 if groups is not None else 0
        wp.launch(
            header_kernel,
            dim=1,
            inputs=[
                lowered.header,
                lowered.point_cells,
                lowered.point_ids,
                lowered.point_keys if has_groups else None,
                lowered.cell_starts,
                lowered.cell_ends,
                grid._dim_x,
                grid._dim_y,
                grid._dim_z,
                num_points,
                lowered.capacity,
                has_groups,
                float(radius),
            ],
            device=device,
        )
        if num_points:
            if has_groups:
                wp.launch(
                    keys_kernel,
                    dim=num_points,
                    inputs=[lowered.header, points, groups, lowered.point_keys, lowered.point_ids],
                    device=device,
                )
                wp.utils.radix_sort_pairs(lowered.point_keys, lowered.point_ids, num_points)
                wp.launch(
                    cells_from_keys,
                    dim=num_points,
                    inputs=[lowered.point_keys, lowered.point_cells],
                    device=device,
                )
            else:
                wp.launch(
                    cells_kernel,
                    dim=num_points,
                    inputs=[lowered.header, points, lowered.point_cells, lowered.point_ids],
                    device=device,
                )
                wp.utils.radix_sort_pairs(lowered.point_cells, lowered.point_ids, num_points)
        lowered.cell_starts.zero_()
        lowered.cell_ends.zero_()
        if num_points:
            wp.launch(
                cell_offsets,
                dim=num_points,
                inputs=[lowered.cell_starts, lowered.cell_ends, lowered.point_cells, num_points],
                device=device,
            )
        grid.groups = groups
        grid.reserved = True
        return True

    def _buffers(self, grid, num_points: int, grouped: bool) -> _LoweredGrid:
        """The grid's stand-in arrays, large enough for `num_points` (made anew when not)."""
        import warp as wp  # noqa: PLC0415

        lowered = self._grids.get(id(grid))
        if (
            lowered is not None
            and lowered.capacity >= num_points
            and (lowered.point_keys is not None or not grouped)
        ):
            return lowered
        device = grid.device
        capacity = max(num_points, 1)
        cells = grid._dim_x * grid._dim_y * grid._dim_z
        lowered = _LoweredGrid(
            grid=grid,
            native_id=lowered.native_id if lowered is not None else grid.id,
            capacity=capacity,
            header=wp.zeros(_HEADER_WORDS, dtype=wp.uint64, device=device),
            # radix_sort_pairs needs room for twice the points.
            point_cells=wp.zeros(2 * capacity, dtype=wp.int32, device=device),
            point_ids=wp.zeros(2 * capacity, dtype=wp.int32, device=device),
            point_keys=wp.zeros(2 * capacity, dtype=wp.uint64, device=device) if grouped else None,
            cell_starts=wp.zeros(cells, dtype=wp.int32, device=device),
            cell_ends=wp.zeros(cells, dtype=wp.int32, device=device),
        )
        self._grids[id(grid)] = lowered
        self._header_ptrs[lowered.header.ptr] = lowered.header
        grid.id = lowered.header.ptr
        return lowered
