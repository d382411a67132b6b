"""Axis larod tensor pitches: build, validate, pack into and view pitched buffers.

larod describes a tensor by its ``dims`` (outermost first) and ``pitches``:
``pitches[i]`` is the byte size of one step of dimension ``i - 1``, that is of
everything from dimension ``i`` inwards, padding included. They are built from
right to left, each rounded up to that dimension's byte alignment::

    p[n-1] = roundup(d[n-1] * elementsize, a[n-1])
    p[i]   = roundup(d[i] * p[i+1], a[i])            # p[0] = total bytes
    byte_offset(i_0..i_{n-1}) = sum(i_k * p[k+1] for k < n-1) + i_{n-1} * elementsize

The semi-planar ``420SP`` layout (NV12) has ``dims = (3, H, W)`` and
``pitches = (total, Y-plane bytes = offset of the CbCr plane, row pitch)``.
Odd H or W use ``ceil(H/2)`` chroma rows of ``ceil(W/2)`` CbCr pairs, so the row
pitch is built from ``2 * ceil(W/2)`` bytes.

Padding bytes have no defined value in larod; :func:`pack` writes 0.

Examples
--------
>>> import numpy as np, layoutkit as lk
>>> lk.larod.pitches((1, 3, 250, 250), "float32", "NCHW", align=(1, 1, 1, 32))
(768000, 768000, 256000, 1024)
>>> lk.larod.pitches((1, 224, 300, 3), "uint8", "NHWC", align=(1, 1, 32, 4))
(272384, 272384, 1216, 4)
>>> lk.larod.pitches((3, 224, 300), "uint8", "420SP", align=(1, 32, 32))
(107520, 71680, 320)
>>> x = np.arange(6, dtype=np.uint8).reshape(1, 1, 2, 3)      # N H W C
>>> p = lk.larod.pitches(x.shape, "uint8", "NHWC", align=(1, 1, 16, 4))
>>> p
(16, 16, 16, 4)
>>> buf = lk.larod.pack(x, p, "NHWC")
>>> buf.tolist()
[0, 1, 2, 0, 3, 4, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0]
>>> v = lk.larod.view(buf, x.shape, "uint8", p, "NHWC")
>>> v.strides, np.shares_memory(v, buf), np.array_equal(v, x)
((16, 16, 4, 1), True, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum
from typing import Any

import numpy as np

from ._engine import check_allocation
from ._errors import LayoutError
from .layout import _int_tuple

__all__ = [
    "MAX_LEN",
    "DataType",
    "TensorLayout",
    "data_type",
    "element_size",
    "nv12_to_rgb",
    "nv12_to_yuv",
    "offset",
    "pack",
    "pitches",
    "strides",
    "tensor_layout",
    "validate_pitches",
    "view",
]

MAX_LEN = 12
"""``LAROD_TENSOR_MAX_LEN``: at most 12 dims or pitches."""


class TensorLayout(IntEnum):
    """``larodTensorLayout`` (``LAROD_TENSOR_LAYOUT_*``) with larod's values.

    ``420SP`` is not a Python identifier: the member is ``LAYOUT_420SP``; every
    function also takes the string ``"420SP"``.
    """

    INVALID = 0
    UNSPECIFIED = 1
    NHWC = 2
    NCHW = 3
    LAYOUT_420SP = 4
    MAX = 5

    @property
    def larod_name(self) -> str:
        """The C name, e.g. ``LAROD_TENSOR_LAYOUT_420SP``."""
        return "LAROD_TENSOR_LAYOUT_" + self.name.removeprefix("LAYOUT_")


class DataType(IntEnum):
    """``larodTensorDataType`` (``LAROD_TENSOR_DATA_TYPE_*``) with larod's values."""

    INVALID = 0
    UNSPECIFIED = 1
    BOOL = 2
    UINT8 = 3
    INT8 = 4
    UINT16 = 5
    INT16 = 6
    UINT32 = 7
    INT32 = 8
    UINT64 = 9
    INT64 = 10
    FLOAT16 = 11
    FLOAT32 = 12
    FLOAT64 = 13
    MAX = 14

    @property
    def larod_name(self) -> str:
        """The C name, e.g. ``LAROD_TENSOR_DATA_TYPE_FLOAT32``."""
        return "LAROD_TENSOR_DATA_TYPE_" + self.name


# BOOL is documented as "1-bit boolean" but sized as 1 byte by ACAP runtime code.
_NUMPY = {
    DataType.BOOL: np.dtype(np.bool_),
    DataType.UINT8: np.dtype(np.uint8),
    DataType.INT8: np.dtype(np.int8),
    DataType.UINT16: np.dtype(np.uint16),
    DataType.INT16: np.dtype(np.int16),
    DataType.UINT32: np.dtype(np.uint32),
    DataType.INT32: np.dtype(np.int32),
    DataType.UINT64: np.dtype(np.uint64),
    DataType.INT64: np.dtype(np.int64),
    DataType.FLOAT16: np.dtype(np.float16),
    DataType.FLOAT32: np.dtype(np.float32),
    DataType.FLOAT64: np.dtype(np.float64),
}
_FROM_NUMPY = {v: k for k, v in _NUMPY.items()}


def _enum_from(value: Any, enum: Any, prefix: str, name: str, extra: dict[str, Any]) -> Any:
    if isinstance(value, enum):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        try:
            return enum(int(value))
        except ValueError:
            raise LayoutError(
                f"{name}={value}: not a {enum.__name__} value (0..{len(enum) - 1})"
            ) from None
    if isinstance(value, str):
        key = value.strip().upper().removeprefix(prefix)
        if key in extra:
            return extra[key]
        if key in enum.__members__:
            return enum[key]
    return None


def tensor_layout(value: Any, name: str = "layout") -> TensorLayout:
    """A :class:`TensorLayout` from a member, value or name (``"NCHW"``, ``"420SP"``,
    ``"LAROD_TENSOR_LAYOUT_NHWC"``, any case); INVALID and MAX are rejected.

    >>> tensor_layout("larod_tensor_layout_420sp")
    <TensorLayout.LAYOUT_420SP: 4>
    """
    res = _enum_from(
        value,
        TensorLayout,
        "LAROD_TENSOR_LAYOUT_",
        name,
        {"420SP": TensorLayout.LAYOUT_420SP, "NV12": TensorLayout.LAYOUT_420SP},
    )
    if res is None:
        if not isinstance(value, str):
            raise TypeError(
                f"{name}: expected a TensorLayout or a name such as 'NCHW', "
                f"got {type(value).__name__}"
            )
        raise LayoutError(
            f"{name}={value!r}: not a larod tensor layout; expected 'NCHW', 'NHWC', '420SP' "
            "or 'UNSPECIFIED'"
        )
    if res in (TensorLayout.INVALID, TensorLayout.MAX):
        raise LayoutError(f"{name}={value!r}: {res.larod_name} is not a usable layout")
    return res


def data_type(value: Any, name: str = "dtype") -> DataType:
    """A :class:`DataType` from a member, value, larod name (``"FLOAT32"``,
    ``"LAROD_TENSOR_DATA_TYPE_UINT8"``, any case) or numpy dtype.

    INVALID, UNSPECIFIED and MAX are rejected: they have no size.

    >>> data_type("float32"), data_type("LAROD_TENSOR_DATA_TYPE_UINT8")
    (<DataType.FLOAT32: 12>, <DataType.UINT8: 3>)
    """
    if value is None:  # np.dtype(None) is float64: never what a caller meant
        raise TypeError(f"{name}: expected a larod DataType, its name or a numpy dtype, got None")
    res = _enum_from(value, DataType, "LAROD_TENSOR_DATA_TYPE_", name, {})
    if res is None:
        try:
            dt = np.dtype(value)
        except (TypeError, ValueError):
            if isinstance(value, str):
                raise LayoutError(
                    f"{name}={value!r}: not a larod data type; expected one of "
                    f"{', '.join(m for m in DataType.__members__ if m not in ('INVALID', 'UNSPECIFIED', 'MAX'))} "
                    "or a numpy dtype"
                ) from None
            raise TypeError(
                f"{name}: expected a larod DataType, its name or a numpy dtype, "
                f"got {type(value).__name__}"
            ) from None
        if dt not in _FROM_NUMPY:
            raise LayoutError(
                f"{name}: numpy dtype {dt} has no larod data type (larod has bool, "
                "(u)int8/16/32/64, float16/32/64)"
            )
        return _FROM_NUMPY[dt]
    if res in (DataType.INVALID, DataType.UNSPECIFIED, DataType.MAX):
        raise LayoutError(
            f"{name}={value!r}: {res.larod_name} has no element size; pitches need a real type"
        )
    return res


def element_size(dtype: Any) -> int:
    """Bytes per element larod uses for pitch math (BOOL counts as 1).

    >>> element_size("FLOAT16")
    2
    """
    return _NUMPY[data_type(dtype)].itemsize


# ---------------------------------------------------------------------------
# Building and validating pitches
# ---------------------------------------------------------------------------


def _roundup(x: int, a: int) -> int:
    return -(-x // a) * a


def _check_dims(dims: Any, lay: TensorLayout) -> tuple[int, ...]:
    d = _int_tuple(dims, "dims")
    if len(d) > MAX_LEN:
        raise LayoutError(f"dims={d}: larod tensors have at most {MAX_LEN} dims")
    for k, v in enumerate(d):
        if v < 1:
            raise LayoutError(f"dims={d}: dims[{k}] = {v}; every dim must be >= 1")
    if lay in (TensorLayout.NCHW, TensorLayout.NHWC) and len(d) not in (0, 4):
        raise LayoutError(
            f"dims={d}: layout {lay.name} needs 4 dims ({', '.join(lay.name)}), got {len(d)}"
        )
    if lay is TensorLayout.LAYOUT_420SP:
        if len(d) != 3 or d[0] != 3:
            raise LayoutError(
                f"dims={d}: layout 420SP needs dims (3, H, W) with dims[0] = 3 channels"
            )
    return d


def _check_align(align: Any, n: int, lay: TensorLayout) -> tuple[int, ...]:
    if align is None:
        return (1,) * n
    a = _int_tuple(align, "align")
    what = "(total, plane, row)" if lay is TensorLayout.LAYOUT_420SP else "one per dim"
    if len(a) != n:
        raise LayoutError(f"align={a}: expected {n} byte alignments {what}, got {len(a)}")
    for k, v in enumerate(a):
        if v < 1:
            raise LayoutError(f"align={a}: align[{k}] = {v}; alignments are >= 1 (1 = none)")
    return a


def pitches(
    dims: Sequence[int],
    dtype: Any,
    layout: Any = "NCHW",
    align: Sequence[int] | None = None,
) -> tuple[int, ...]:
    """The larod pitches of a tensor, in bytes (``pitches[0]`` = total size).

    Parameters
    ----------
    dims : sequence of int
        The dims in the layout's order (NCHW: N, C, H, W; NHWC: N, H, W, C;
        420SP: 3, H, W). At most 12; an empty ``dims`` gives empty pitches
        (larod's "unspecified").
    dtype : numpy dtype, larod DataType or name
        ``"FLOAT32"``, ``"LAROD_TENSOR_DATA_TYPE_FLOAT32"`` or ``np.float32``.
    layout : str or TensorLayout, optional
        ``"NCHW"`` (default), ``"NHWC"``, ``"420SP"`` or ``"UNSPECIFIED"`` (any
        rank).
    align : sequence of int, optional
        One byte alignment per dim (1 = none); for 420SP the alignments of
        ``(total, Y plane, row)``.

    Returns
    -------
    tuple of int

    Raises
    ------
    LayoutError
        For dims the layout does not allow, a bad dtype or alignment.

    Examples
    --------
    >>> pitches((1, 3, 224, 300), "uint8", align=(1, 1, 1, 64))
    (215040, 215040, 71680, 320)
    >>> pitches((3, 225, 301), "uint8", "420SP", align=(1, 4096, 64))
    (109888, 73728, 320)
    """
    lay = tensor_layout(layout)
    d = _check_dims(dims, lay)
    e = element_size(dtype)
    a = _check_align(align, len(d), lay)
    if not d:
        return ()
    if lay is TensorLayout.LAYOUT_420SP:
        _, h, w = d
        row = _roundup(2 * (-(-w // 2)) * e, a[2])
        plane = _roundup(h * row, a[1])
        total = _roundup(plane + (-(-h // 2)) * row, a[0])
        return (total, plane, row)
    p = [0] * len(d)
    p[-1] = _roundup(d[-1] * e, a[-1])
    for i in range(len(d) - 2, -1, -1):
        p[i] = _roundup(d[i] * p[i + 1], a[i])
    return tuple(p)


def validate_pitches(
    dims: Sequence[int],
    dtype: Any,
    pitches: Sequence[int],
    layout: Any = "NCHW",
    align: Sequence[int] | None = None,
) -> tuple[int, ...]:
    """Check user-supplied pitches against dims (seed-systems §3.6); return them as ints.

    Rules: at most 12 pitches; as many pitches as dims; every pitch > 0;
    ``p[n-1] >= d[n-1]*elementsize`` and ``p[i] >= d[i]*p[i+1]``; for 420SP,
    ``dims = (3, H, W)``, ``p[2] >= 2*ceil(W/2)*elementsize``,
    ``p[1] >= H*p[2]`` and ``p[0] >= p[1] + ceil(H/2)*p[2]``; with ``align``,
    each pitch a multiple of its alignment. An empty ``pitches`` (larod's
    "unspecified", no check) is returned as is.

    Raises
    ------
    LayoutError
        Naming the first pitch that breaks a rule, with the bound.

    Examples
    --------
    >>> validate_pitches((1, 3, 250, 250), "float32", (768000, 768000, 256000, 1024))
    (768000, 768000, 256000, 1024)
    >>> validate_pitches((1, 3, 250, 250), "float32", (768000, 768000, 256000, 999))
    Traceback (most recent call last):
    ...
    layoutkit._errors.LayoutError: pitches[3] = 999 is smaller than dims[3] * 4 bytes = 1000 (the pitch of dim 3 must hold its elements)
    """
    lay = tensor_layout(layout)
    d = _check_dims(dims, lay)
    e = element_size(dtype)
    p = _int_tuple(pitches, "pitches")
    if len(p) > MAX_LEN:
        raise LayoutError(f"pitches={p}: larod allows at most {MAX_LEN} pitches, got {len(p)}")
    if not p:
        return p
    if d and len(p) != len(d):
        raise LayoutError(
            f"pitches={p} has {len(p)} entries but dims={d} has {len(d)}; larod needs equal lengths"
        )
    if not d:
        raise LayoutError(f"pitches={p}: dims are needed to check pitches")
    for k, v in enumerate(p):
        if v < 1:
            raise LayoutError(f"pitches={p}: pitches[{k}] = {v}; every pitch must be > 0")
    if lay is TensorLayout.LAYOUT_420SP:
        _, h, w = d
        need_row = 2 * (-(-w // 2)) * e
        if p[2] < need_row:
            raise LayoutError(
                f"pitches[2] = {p[2]} (row pitch) is smaller than 2*ceil(W/2)*{e} = {need_row} "
                f"bytes (W = {w}: a row of CbCr pairs)"
            )
        if p[1] < h * p[2]:
            raise LayoutError(
                f"pitches[1] = {p[1]} (Y plane) is smaller than H * pitches[2] = {h} * {p[2]} "
                f"= {h * p[2]}"
            )
        need_total = p[1] + (-(-h // 2)) * p[2]
        if p[0] < need_total:
            raise LayoutError(
                f"pitches[0] = {p[0]} (total) is smaller than pitches[1] + ceil(H/2) * pitches[2] "
                f"= {p[1]} + {-(-h // 2)} * {p[2]} = {need_total}"
            )
    else:
        n = len(d)
        if p[-1] < d[-1] * e:
            raise LayoutError(
                f"pitches[{n - 1}] = {p[-1]} is smaller than dims[{n - 1}] * {e} bytes = "
                f"{d[-1] * e} (the pitch of dim {n - 1} must hold its elements)"
            )
        for i in range(n - 2, -1, -1):
            if p[i] < d[i] * p[i + 1]:
                raise LayoutError(
                    f"pitches[{i}] = {p[i]} is smaller than dims[{i}] * pitches[{i + 1}] = "
                    f"{d[i]} * {p[i + 1]} = {d[i] * p[i + 1]}"
                )
    if align is not None:
        a = _check_align(align, len(d), lay)
        for k, (v, al) in enumerate(zip(p, a)):
            if v % al:
                raise LayoutError(
                    f"pitches[{k}] = {v} is not a multiple of its alignment align[{k}] = {al}"
                )
    return p


def strides(dims: Sequence[int], dtype: Any, pitches: Sequence[int]) -> tuple[int, ...]:
    """Byte strides of each dim of a pitched (non-420SP) tensor: ``p[1:] + (elementsize,)``.

    >>> strides((1, 224, 300, 3), "uint8", (272384, 272384, 1216, 4))
    (272384, 1216, 4, 1)
    """
    p = validate_pitches(dims, dtype, pitches, "UNSPECIFIED")
    if not p:
        raise LayoutError("pitches: empty pitches define no strides")
    return (*p[1:], element_size(dtype))


def offset(
    dims: Sequence[int],
    dtype: Any,
    pitches: Sequence[int],
    index: Sequence[int],
    layout: Any = "NCHW",
) -> int:
    """Byte offset of ``index`` in a pitched buffer.

    For 420SP the index is ``(channel, h, w)`` with channel 0 = Y, 1 = Cb, 2 = Cr
    (NV12 order), ``h`` and ``w`` in pixels.

    Examples
    --------
    >>> offset((1, 3, 250, 250), "float32", (768000, 768000, 256000, 1024), (0, 1, 2, 3))
    258060
    >>> offset((3, 224, 300), "uint8", (107520, 71680, 320), (1, 10, 20), "420SP")
    73300
    """
    lay = tensor_layout(layout)
    p = validate_pitches(dims, dtype, pitches, lay)
    d = _check_dims(dims, lay)
    if not p:
        raise LayoutError("pitches: empty pitches define no offsets")
    idx = _int_tuple(index, "index")
    if len(idx) != len(d):
        raise LayoutError(f"index={idx} has {len(idx)} entries but dims={d} has {len(d)}")
    for k, (i, s) in enumerate(zip(idx, d)):
        if not 0 <= i < s:
            raise LayoutError(
                f"index={idx}: entry {k} is {i}; expected 0 <= {i} < {s} "
                "(negative indices do not wrap around)"
            )
    e = element_size(dtype)
    if lay is TensorLayout.LAYOUT_420SP:
        ch, h, w = idx
        if ch == 0:
            return h * p[2] + w * e
        return p[1] + (h // 2) * p[2] + (w // 2) * 2 * e + (ch - 1) * e
    return sum(i * s for i, s in zip(idx[:-1], p[1:])) + idx[-1] * e


# ---------------------------------------------------------------------------
# Pitched buffers
# ---------------------------------------------------------------------------


def _bytes_of(buf: Any) -> np.ndarray:
    """A flat uint8 view of ``buf`` (no copy)."""
    if isinstance(buf, np.ndarray):
        if not buf.flags.c_contiguous:
            raise LayoutError(
                "buf: a pitched buffer must be one contiguous block of memory "
                f"(got an array with strides {buf.strides})"
            )
        if buf.dtype.hasobject:
            raise TypeError(f"buf: dtype {buf.dtype} holds Python objects")
        return buf.reshape(-1).view(np.uint8)
    try:
        mv = memoryview(buf)
    except TypeError:
        raise TypeError(
            f"buf: expected an array or a bytes-like object, got {type(buf).__name__}"
        ) from None
    if not mv.c_contiguous:
        raise LayoutError("buf: a pitched buffer must be one contiguous block of memory")
    return np.frombuffer(mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv, np.uint8)


def _strided(
    base: np.ndarray, shape: tuple[int, ...], dtype: np.dtype, strides_: tuple[int, ...], start: int
) -> np.ndarray:
    extent = start + sum((s - 1) * st for s, st in zip(shape, strides_)) + dtype.itemsize
    if extent > base.size:  # pragma: no cover - validate_pitches guarantees this
        raise LayoutError(f"buf: {base.size} bytes, the view reaches byte {extent}")
    return np.ndarray(shape, dtype=dtype, buffer=base, offset=start, strides=strides_)


def _views(
    base: np.ndarray, d: tuple[int, ...], dt: np.dtype, p: tuple[int, ...], lay: TensorLayout
) -> Any:
    e = dt.itemsize
    if lay is TensorLayout.LAYOUT_420SP:
        _, h, w = d
        y = _strided(base, (h, w), dt, (p[2], e), 0)
        uv = _strided(base, (-(-h // 2), -(-w // 2), 2), dt, (p[2], 2 * e, e), p[1])
        return y, uv
    return _strided(base, d, dt, (*p[1:], e), 0)


def view(
    buf: Any,
    dims: Sequence[int],
    dtype: Any,
    pitches: Sequence[int],
    layout: Any = "NCHW",
) -> Any:
    """A zero-copy strided view of a pitched buffer.

    Parameters
    ----------
    buf : ndarray or bytes-like
        One contiguous block of at least ``pitches[0]`` bytes (any dtype). The
        view is writeable when ``buf`` is.
    dims : sequence of int
        The dims in the layout's order.
    dtype : numpy dtype, larod DataType or name
        The element type.
    pitches : sequence of int
        The pitches in bytes (validated as in :func:`validate_pitches`).
    layout : str or TensorLayout, optional
        ``"NCHW"`` (default), ``"NHWC"``, ``"UNSPECIFIED"`` or ``"420SP"``.

    Returns
    -------
    ndarray or tuple of ndarray
        An array of shape ``dims`` whose strides are the pitches; for 420SP a
        pair ``(y, uv)``: ``y`` of shape ``(H, W)`` and the interleaved CbCr
        plane ``uv`` of shape ``(ceil(H/2), ceil(W/2), 2)``.

    Examples
    --------
    >>> import numpy as np
    >>> p = pitches((3, 4, 6), "uint8", "420SP", align=(1, 1, 8))
    >>> p
    (48, 32, 8)
    >>> y, uv = view(np.zeros(p[0], np.uint8), (3, 4, 6), "uint8", p, "420SP")
    >>> y.shape, y.strides, uv.shape, uv.strides
    ((4, 6), (8, 1), (2, 3, 2), (8, 2, 1))
    """
    lay = tensor_layout(layout)
    d = _check_dims(dims, lay)
    p = validate_pitches(d, dtype, pitches, lay)
    if not p:
        raise LayoutError("pitches: empty (unspecified) pitches cannot be viewed")
    base = _bytes_of(buf)
    if base.size < p[0]:
        raise LayoutError(f"buf holds {base.size} bytes but pitches[0] = {p[0]} bytes are needed")
    return _views(base, d, _NUMPY[data_type(dtype)], p, lay)


def pack(x: Any, pitches: Sequence[int], layout: Any = "NCHW") -> np.ndarray:
    """Write a tensor into a new pitched buffer of ``pitches[0]`` bytes, padding zero.

    Parameters
    ----------
    x : array_like or (y, uv) pair
        The tensor in the layout's order (its shape is ``dims``, its dtype a
        larod type); for 420SP the pair ``(y, uv)`` with ``y`` of shape
        ``(H, W)`` and ``uv`` of shape ``(ceil(H/2), ceil(W/2), 2)`` (Cb, Cr).
    pitches : sequence of int
        The pitches in bytes, e.g. from :func:`pitches`.
    layout : str or TensorLayout, optional
        ``"NCHW"`` (default), ``"NHWC"``, ``"UNSPECIFIED"`` or ``"420SP"``.

    Returns
    -------
    ndarray of uint8
        ``pitches[0]`` bytes.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.full((2, 3), 9, np.uint8); uv = np.ones((1, 2, 2), np.uint8)
    >>> pack((y, uv), (12, 8, 4), "420SP").tolist()
    [9, 9, 9, 0, 9, 9, 9, 0, 1, 1, 1, 1]
    """
    lay = tensor_layout(layout)
    if lay is TensorLayout.LAYOUT_420SP:
        if not (isinstance(x, (tuple, list)) and len(x) == 2):
            raise TypeError("x: for 420SP pass the pair (y, uv)")
        y = np.asarray(x[0])
        uv = np.asarray(x[1])
        if y.ndim != 2:
            raise LayoutError(f"x: y must be 2-D (H, W), got shape {y.shape}")
        h, w = y.shape
        want = (-(-h // 2), -(-w // 2), 2)
        if uv.shape != want:
            raise LayoutError(
                f"x: uv has shape {uv.shape}; for a {h}x{w} Y plane it must be {want} "
                "(ceil(H/2), ceil(W/2), CbCr)"
            )
        if uv.dtype != y.dtype:
            raise LayoutError(f"x: uv dtype {uv.dtype} differs from y dtype {y.dtype}")
        dims: tuple[int, ...] = (3, h, w)
        dt = y.dtype
    else:
        arr = np.asarray(x)
        dims = tuple(arr.shape)
        dt = arr.dtype
    data_type(dt, "x: dtype")
    p = validate_pitches(dims, dt, pitches, lay)
    if not p:
        raise LayoutError("pitches: empty (unspecified) pitches cannot be packed into")
    check_allocation((p[0],), np.dtype(np.uint8), "the pitched buffer")
    out = np.zeros(p[0], dtype=np.uint8)
    views = _views(out, dims, dt, p, lay)
    if lay is TensorLayout.LAYOUT_420SP:
        np.copyto(views[0], y)
        np.copyto(views[1], uv)
    else:
        np.copyto(views, arr)
    return out


# ---------------------------------------------------------------------------
# NV12 convenience
# ---------------------------------------------------------------------------


def nv12_to_yuv(
    buf: Any, dims: Sequence[int], pitches: Sequence[int], planar: bool = False
) -> np.ndarray:
    """Full-resolution YUV (4:4:4, chroma repeated 2x2) from a uint8 420SP buffer.

    Returns ``(H, W, 3)`` (interleaved Y, Cb, Cr) or ``(3, H, W)`` with ``planar=True``.

    >>> import numpy as np
    >>> buf = pack((np.full((2, 2), 50, np.uint8), np.array([[[100, 200]]], np.uint8)), (6, 4, 2), "420SP")
    >>> nv12_to_yuv(buf, (3, 2, 2), (6, 4, 2))[1, 1].tolist()
    [50, 100, 200]
    """
    y, uv = view(buf, dims, "uint8", pitches, "420SP")
    h, w = y.shape
    out = np.empty((3, h, w) if planar else (h, w, 3), np.uint8)
    planes = [out[k] for k in range(3)] if planar else [out[..., k] for k in range(3)]
    planes[0][...] = y
    for k in (0, 1):
        up = np.repeat(np.repeat(uv[..., k], 2, axis=0), 2, axis=1)[:h, :w]
        planes[k + 1][...] = up
    return out


def nv12_to_rgb(
    buf: Any,
    dims: Sequence[int],
    pitches: Sequence[int],
    planar: bool = False,
    full_range: bool = False,
) -> np.ndarray:
    """RGB (uint8) from a uint8 420SP (NV12) buffer, BT.601 matrix.

    ``full_range=False`` (default) reads video-range Y in [16, 235] and CbCr in
    [16, 240]; ``True`` reads full-range (JPEG) values. Chroma is repeated 2x2.
    Returns ``(H, W, 3)`` or, with ``planar=True``, ``(3, H, W)``.

    >>> import numpy as np
    >>> buf = pack((np.full((2, 2), 235, np.uint8), np.full((1, 1, 2), 128, np.uint8)), (6, 4, 2), "420SP")
    >>> nv12_to_rgb(buf, (3, 2, 2), (6, 4, 2))[0, 0].tolist()
    [255, 255, 255]
    """
    yuv = nv12_to_yuv(buf, dims, pitches, planar=True).astype(np.float32)
    y, cb, cr = yuv[0], yuv[1] - 128.0, yuv[2] - 128.0
    if full_range:
        ys, cs = y, 1.0
    else:
        ys, cs = (y - 16.0) * (255.0 / 219.0), 255.0 / 224.0
    r = ys + 1.402 * cs * cr
    g = ys - (0.114 * 1.772 / 0.587) * cs * cb - (0.299 * 1.402 / 0.587) * cs * cr
    b = ys + 1.772 * cs * cb
    rgb = np.stack([r, g, b], axis=0 if planar else -1)
    return np.clip(np.rint(rgb), 0, 255).astype(np.uint8)
