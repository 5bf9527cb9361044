"""Strided and indexed copies and fills in a step, as Warp kernel launches APIC records.

Warp 1.19's APIC records a `wp.copy` between contiguous arrays and a `fill_`/`zero_` of a
contiguous array, but refuses (NotImplementedError) a copy from or to a strided view or a
`wp.indexedarray`, and a fill of one: Warp does those with native loops
(wp_array_copy_host/device, wp_array_fill_host/device) that write no record. Ordinary
programs do them in their step: Newton's implicit MPM takes `.contiguous()` of a transposed
view (`solver_implicit_mpm.py`), a solver zeroes a column slice. While a step records, these
hooks do such a copy or fill as a launch of a small Warp kernel that assigns element by
element (`dest[i, j] = src[i, j]`, `dest[i] = value`): a launch is what APIC records,
retargets and compiles like any kernel of the step, and an assignment moves the element's
bytes unchanged, so the replay writes what Warp's native loop writes (the capture's own
check, replay against the direct step, holds it to that).

What is not lowered is left to Warp, which refuses it or does it as before: copies between
devices or between element types of the same size (a bit cast, not an assignment), Fabric
arrays, fills of Warp's native types. One kernel per (array kinds, element type, ndim), each in
its own module: APIC records a kernel by its key within its module, so generic overloads
sharing one key would replay the first overload's code for all (wrpkg.capture.launch_recorder).
"""

import functools
import hashlib

from wrpkg import warp_internals

_MODULE_PREFIX = "wrpkg_lowered"


def _kind(arr) -> str | None:
    """'array' or 'indexedarray' for the arrays a kernel can take, None for others (Fabric)."""
    import warp as wp  # noqa: PLC0415 - Warp is imported lazily

    if isinstance(arr, wp.indexedarray):
        return "indexedarray"
    if isinstance(arr, wp.array):
        return "array"
    return None


def _type_tag(dtype) -> str:
    """A name-safe, deterministic tag of an element type: 'float32', 'vec3f', 'Particle_9f1c2a0b'."""
    import warp as wp  # noqa: PLC0415

    tag = wp.types.type_repr(dtype)
    if wp.types.type_is_struct(dtype):
        # Two structs may share a class name: their field layout tells them apart.
        layout = ",".join(f"{name}:{wp.types.type_repr(var.type)}" for name, var in dtype.vars.items())
        tag = f"{dtype.cls.__name__}_{hashlib.sha256(layout.encode()).hexdigest()[:8]}"
    return "".join(ch if ch.isalnum() else "_" for ch in tag)


def _array_type(kind: str, dtype, ndim: int):
    import warp as wp  # noqa: PLC0415

    return (wp.indexedarray if kind == "indexedarray" else wp.array)(dtype=dtype, ndim=ndim)


# Bodies by ndim; the annotations are the factory's locals (no postponed evaluation in this
# module: Warp reads the evaluated types from __annotations__).
def _copy_function(dest_t, src_t, ndim: int):
    import warp as wp  # noqa: PLC0415

    if ndim == 1:

        def copy(dest: dest_t, src: src_t):
            i = wp.tid()
            dest[i] = src[i]

    elif ndim == 2:

        def copy(dest: dest_t, src: src_t):
            i, j = wp.tid()
            dest[i, j] = src[i, j]

    elif ndim == 3:

        def copy(dest: dest_t, src: src_t):
            i, j, k = wp.tid()
            dest[i, j, k] = src[i, j, k]

    else:

        def copy(dest: dest_t, src: src_t):
            i, j, k, m = wp.tid()
            dest[i, j, k, m] = src[i, j, k, m]

    return copy


def _fill_function(dest_t, value_t, ndim: int):
    import warp as wp  # noqa: PLC0415

    if ndim == 1:

        def fill(dest: dest_t, value: value_t):
            i = wp.tid()
            dest[i] = value

    elif ndim == 2:

        def fill(dest: dest_t, value: value_t):
            i, j = wp.tid()
            dest[i, j] = value

    elif ndim == 3:

        def fill(dest: dest_t, value: value_t):
            i, j, k = wp.tid()
            dest[i, j, k] = value

    else:

        def fill(dest: dest_t, value: value_t):
            i, j, k, m = wp.tid()
            dest[i, j, k, m] = value

    return fill


def _as_kernel(function, name: str):
    import warp as wp  # noqa: PLC0415

    # One module per kernel, named by what it does: deterministic across runs and machines.
    return wp.kernel(function, name=name, module=f"{_MODULE_PREFIX}_{name}", enable_backward=False)


@functools.cache
def copy_kernel(dest_kind: str, src_kind: str, dtype, ndim: int):
    """The kernel copying a `src_kind` into a `dest_kind` array of `dtype` and `ndim` dimensions."""
    name = f"copy_{dest_kind}_{src_kind}_{_type_tag(dtype)}_{ndim}d"
    return _as_kernel(
        _copy_function(_array_type(dest_kind, dtype, ndim), _array_type(src_kind, dtype, ndim), ndim), name
    )


@functools.cache
def fill_kernel(dest_kind: str, dtype, ndim: int):
    """The kernel setting every element of a `dest_kind` array of `dtype` and `ndim` to a value."""
    name = f"fill_{dest_kind}_{_type_tag(dtype)}_{ndim}d"
    return _as_kernel(_fill_function(_array_type(dest_kind, dtype, ndim), dtype, ndim), name)


def _recording(device) -> bool:
    return warp_internals.context()._get_apic_capture_for_device(device) is not None


def _is_plain(arr) -> bool:
    """A contiguous wp.array: what Warp's own copy and fill record."""
    return _kind(arr) == "array" and arr.is_contiguous


def lowered_copy(dest, src, dest_offset: int = 0, src_offset: int = 0, count: int = 0, stream=None) -> bool:
    """Does `wp.copy(dest, src, ...)` as a kernel launch when APIC records the device and Warp's
    copy would not be recorded; False (nothing done) when Warp's own copy applies."""
    import warp as wp  # noqa: PLC0415

    dest_kind, src_kind = _kind(dest), _kind(src)
    if dest_kind is None or src_kind is None or src.device != dest.device or not _recording(dest.device):
        return False
    if _is_plain(dest) and _is_plain(src):
        return False
    if dest.dtype != src.dtype:
        return False  # a bit cast between same-size types: Warp's copy decides
    if count == 0:
        count = src.size
    if count == 0:
        return True
    if dest_offset != 0 or src_offset != 0 or count != src.size or count != dest.size:
        # Warp's rules (wp.copy's docstring): offsets and counts for 1-D wp.arrays only.
        if dest_kind != "array" or src_kind != "array" or dest.ndim != 1 or src.ndim != 1:
            return False
        if (
            min(dest_offset, src_offset, count) < 0
            or src_offset + count > src.size
            or dest_offset + count > dest.size
        ):
            return False
        src = src[src_offset : src_offset + count]
        dest = dest[dest_offset : dest_offset + count]
    if dest.shape != src.shape:
        return False
    kernel = copy_kernel(dest_kind, src_kind, dest.dtype, dest.ndim)
    wp.launch(kernel, dim=dest.shape, inputs=[dest, src], device=dest.device, stream=stream)
    return True


def lowered_fill(arr, value) -> bool:
    """Does `arr.fill_(value)` as a kernel launch when APIC records the device and Warp's fill
    would not be recorded; False when Warp's own fill applies."""
    import warp as wp  # noqa: PLC0415

    kind = _kind(arr)
    if kind is None or _is_plain(arr) or not _recording(arr.device):
        return False
    if arr.size == 0:
        return True
    dtype = arr.dtype
    if wp.types.type_is_struct(dtype):
        if isinstance(value, int) and value == 0:
            value = dtype()
        elif not isinstance(value, dtype.cls):
            return False  # Warp's fill_ gives its own error for this value
    elif wp.types.type_is_vector(dtype) or wp.types.type_is_matrix(dtype):
        value = dtype(value)
    elif not wp.types.type_is_scalar(dtype):
        return False  # Warp's native types (e.g. launch bounds): Warp's fill_ decides
    kernel = fill_kernel(kind, dtype, arr.ndim)
    wp.launch(kernel, dim=arr.shape, inputs=[arr, value], device=arr.device)
    return True


def patches() -> list[tuple[object, str, object]]:
    """(owner, attribute, replacement) for the recorder to install for the length of a step."""
    import warp  # noqa: PLC0415

    ctx = warp_internals.context()
    original_copy = ctx.copy

    def copy(dest, src, dest_offset=0, src_offset=0, count=0, stream=None):
        if not lowered_copy(dest, src, dest_offset, src_offset, count, stream):
            original_copy(dest, src, dest_offset, src_offset, count, stream)

    result = [(ctx, "copy", copy)]
    if warp.copy is original_copy:
        result.append((warp, "copy", copy))
    for cls in (warp.array, warp.indexedarray):
        original_fill, original_zero = cls.fill_, cls.zero_

        def fill_(self, value, _original=original_fill):
            if not lowered_fill(self, value):
                _original(self, value)

        def zero_(self, _original=original_zero):
            if not lowered_fill(self, 0):
                _original(self)

        result += [(cls, "fill_", fill_), (cls, "zero_", zero_)]
    return result
