"""Planning and validation for every repack: pack, unpack and convert.

A repack walks the destination buffer in memory order. Each side (the source
and the destination) is described per logical dim as a list of *digits*
``(weight, extent, byte_stride)`` of the padded coordinate ``p``. The planner
cuts every dim at the union of both sides' digit weights, so each refined digit
maps linearly to a byte stride on both sides; the kernel then only needs, per
level, an extent, two strides, and (for dims with padding or ragged ends) the
ranges of ``p`` that hold data or exist in the destination.

Levels of size 1 are dropped and adjacent levels that are contiguous on both
sides are fused. Plans are cached per (layouts, shape, itemsize, strides).

When both sides cut a dim at weights that do not divide each other (say blocks
of 3 and of 4), no linear plan exists; such conversions use a gather through
per-element offsets computed with numpy (correct, slower, rare).
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import ml_dtypes
import numpy as np

from ._errors import LayoutError
from ._repack import RepackPlan
from ._repack import repeated_calls as _REPEATS
from .layout import Layout, as_dtype, as_layout, exact_shape

__all__ = ["convert", "pack", "unpack"]


@dataclass(frozen=True)
class _Side:
    """One side of a repack: per dim, its digits (weight, extent|None, byte stride)."""

    digits: tuple[
        tuple[int, int, int | None, int], ...
    ]  # (dim, weight, extent, stride) memory order
    left_pad: tuple[int, ...]
    padded: tuple[int, ...]  # extent of p per dim (M)

    def dim_digits(self, d: int) -> list[tuple[int, int | None, int]]:
        return [(w, n, s) for dd, w, n, s in self.digits if dd == d]

    def is_linear(self, d: int) -> bool:
        dd = self.dim_digits(d)
        return len(dd) <= 1 and all(w == 1 for w, _, _ in dd)


def _layout_side(layout: Layout, shape: tuple[int, ...], itemsize: int) -> _Side:
    phys = layout.physical_shape(shape)
    strides = [itemsize] * len(phys)
    for k in range(len(phys) - 2, -1, -1):
        strides[k] = strides[k + 1] * phys[k + 1]
    digits = []
    for (d, w, n), st, ext in zip(layout.digits, strides, phys):
        digits.append((d, w, ext if n is not None else None, st))
    return _Side(tuple(digits), layout.left_pad, layout.padded_shape(shape))


def _array_side(shape: tuple[int, ...], strides: tuple[int, ...]) -> _Side:
    digits = tuple((d, 1, None, strides[d]) for d in range(len(shape)))
    return _Side(digits, (0,) * len(shape), shape)


class _NoLinearPlan(Exception):
    pass


# RepackPlan's element-conversion arguments when elements move unchanged.
_NO_CONVERSION: tuple[int, int, int, float, float] = (0, -1, -1, 1.0, 0.0)


def _build_plan(
    src: _Side,
    dst: _Side,
    shape: tuple[int, ...],
    itemsize: int,
    conversion: Any = None,
    src_whole: bool = False,
    wide_elements: bool = True,
) -> RepackPlan:
    """Refine both sides into kernel levels (see the module docstring).

    ``src_whole``: the source is a whole layout buffer (every physical slot
    readable), not a strided logical array. ``wide_elements``: let a last
    level of 2-8 contiguous bytes become the element (not for the C emitter,
    whose element moves are typed by the array's itemsize).
    """
    rank = len(shape)
    src_base = 0
    dst_base = 0
    # Per dim: the frame of p, the range holding data (v) and the range that exists in dst (e).
    v_rng, e_rng = [], []
    for d in range(rank):
        lps, lpd = src.left_pad[d], dst.left_pad[d]
        if lps == lpd:
            shift, e_lo, e_hi = lpd, 0, dst.padded[d]
        elif src.is_linear(d):
            shift, e_lo, e_hi = lpd, 0, dst.padded[d]
            src_base += (lps - lpd) * (src.dim_digits(d) or [(1, None, 0)])[0][2]
        elif dst.is_linear(d) and lpd <= lps:
            # The source frames the walk; destination slots before its p = 0 (a
            # larger left pad than the source's) would never be visited, so that
            # case takes the gather instead.
            shift = lps
            e_lo, e_hi = lps - lpd, lps - lpd + dst.padded[d]
            dst_base += (lpd - lps) * (dst.dim_digits(d) or [(1, None, 0)])[0][2]
        else:
            raise _NoLinearPlan
        v_rng.append((shift, shift + shape[d]))
        e_rng.append((e_lo, e_hi))

    # Refined levels in destination order.
    levels: list[list[int]] = []  # [extent, sstride, dstride, dim, weight]
    for d in range(rank):
        cuts = sorted(
            {w for w, _, _ in src.dim_digits(d)} | {w for w, _, _ in dst.dim_digits(d)} | {1}
        )
        cuts = [c for c in cuts if c < max(e_rng[d][1], 1)] or [1]
        for a, b in zip(cuts, cuts[1:]):
            if b % a:
                raise _NoLinearPlan
    for d, w, n, dstride in dst.digits:
        e_hi = e_rng[d][1]
        top = w * n if n is not None else max(e_hi, 1)
        all_cuts = sorted(
            {c for c, _, _ in src.dim_digits(d)} | {c for c, _, _ in dst.dim_digits(d)} | {1}
        )
        sub = [c for c in all_cuts if w <= c < top and (c < e_hi or c == w)]
        bounds = [*sub[1:], top]
        src_digits = src.dim_digits(d)
        for c, nxt in reversed(list(zip(sub, bounds))):
            extent = -(-nxt // c)
            sstride = None
            for sw, sn, ss in src_digits:
                if sw <= c and (sn is None or c < sw * sn):
                    sstride = ss * (c // sw)
                    break
            if sstride is None:  # only reachable when the dim has no source digits (extent 0/1)
                sstride = 0
            levels.append([extent, sstride, dstride * (c // w), d, c])

    # Dims that never need a range check: no shift, no padding, nothing ragged.
    clean = [
        v_rng[d] == (0, shape[d])
        and e_rng[d] == (0, shape[d])
        and math.prod(lv[0] for lv in levels if lv[3] == d) == shape[d]
        for d in range(rank)
    ]
    levels = [lv for lv in levels if lv[0] != 1]
    for lv in levels:
        if clean[lv[3]]:
            lv[3] = -1
    fused: list[list[int]] = []
    for lv in levels:
        if fused:
            prev = fused[-1]
            contiguous = prev[1] == lv[0] * lv[1] and prev[2] == lv[0] * lv[2]
            # Two clean levels fuse; so do two adjacent digits of one padded dim
            # (e.g. W and 32w of NCHW32w), whose ranges then apply to the fused digit.
            same_dim = prev[3] == lv[3] and prev[3] != -1 and prev[4] == lv[0] * lv[4]
            if contiguous and ((prev[3] == -1 and lv[3] == -1) or same_dim):
                prev[0] *= lv[0]
                prev[1], prev[2], prev[4] = lv[1], lv[2], lv[4]
                continue
        fused.append(lv)
    levels = fused

    constrained = [d for d in range(rank) if not clean[d]]
    # A last level that is one run of 2-8 bytes on both sides, with nothing
    # padded anywhere, moves as one wider element (NHWC -> HCWNC4 uint8: the
    # 4-channel runs of each pixel are the elements of a transpose).
    esize = itemsize
    if wide_elements and conversion is None and not constrained and len(levels) >= 2:
        n, sstride, dstride = levels[-1][:3]
        if sstride == dstride == itemsize and n * itemsize in (2, 4, 8):
            esize = n * itemsize
            levels = levels[:-1]
    compact = {d: k for k, d in enumerate(constrained)}
    nlev = len(levels)
    ranges = []
    for d in constrained:
        ranges += [e_rng[d][0], e_rng[d][1], v_rng[d][0], v_rng[d][1]]
    span = np.ones((nlev + 1, max(len(constrained), 1)), dtype=np.int64)
    for k, d in enumerate(constrained):
        current = 1
        for lv_i in range(nlev - 1, -1, -1):
            ext, _, _, dim, wgt = levels[lv_i]
            if dim == d:
                current = wgt * ext
            span[lv_i, k] = current
    conversion_args: tuple[int, int, int, float, float] = (
        conversion.plan_args() if conversion is not None else _NO_CONVERSION
    )
    return RepackPlan(
        np.array([lv[0] for lv in levels], dtype=np.int64),
        np.array([lv[1] for lv in levels], dtype=np.int64),
        np.array([lv[2] for lv in levels], dtype=np.int64),
        np.array([compact.get(lv[3], -1) for lv in levels], dtype=np.int64),
        np.array([lv[4] for lv in levels], dtype=np.int64),
        np.array(ranges or [0], dtype=np.int64),
        span,
        len(constrained),
        esize,
        src_base,
        dst_base,
        *conversion_args,
        src_whole,
        itemsize,
    )


@lru_cache(maxsize=512)
def _cached_plan(
    src_key: Any,
    dst_key: Any,
    shape: tuple[int, ...],
    itemsize: int,
    src_strides: Any,
    conversion: Conversion | None = None,
) -> RepackPlan | None:
    """The plan for a repack; ``itemsize`` is the source's, the destination's comes from ``conversion``."""
    src_layout, dst_layout = src_key, dst_key
    out_size = conversion.dst.itemsize if conversion is not None else itemsize
    if src_layout is None:
        src = _array_side(shape, src_strides)
    else:
        src = _layout_side(src_layout, shape, itemsize)
    if dst_layout is None:
        cstrides = [out_size] * len(shape)
        for k in range(len(shape) - 2, -1, -1):
            cstrides[k] = cstrides[k + 1] * shape[k + 1]
        dst = _array_side(shape, tuple(cstrides))
    else:
        dst = _layout_side(dst_layout, shape, out_size)
    try:
        plan = _build_plan(src, dst, shape, out_size, conversion, src_layout is not None)
    except _NoLinearPlan:
        return None
    unpadded_dst = dst_layout is None or dst_layout.size(shape) == math.prod(shape)
    if src_layout is not None and unpadded_dst and conversion is None and plan.ndim:
        # Unpacking a padded crouton (into an array or a layout without
        # padding): the pack plan walked backwards chunk by chunk, where the
        # chunk kernels take it (RepackPlan.use_chunks_back).
        try:
            plan.use_chunks_back(_build_plan(dst, src, shape, itemsize))
        except _NoLinearPlan:
            pass
    return plan


# ---------------------------------------------------------------------------
# Element conversion fused into the repack (quantize, dequantize, float casts)
# ---------------------------------------------------------------------------

_FLOAT_CODES = {np.dtype(np.float32): 0, np.dtype(np.float16): 1, np.dtype(ml_dtypes.bfloat16): 2}
_INT_CODES = {
    np.dtype(np.int8): 3,
    np.dtype(np.uint8): 4,
    np.dtype(np.int16): 5,
    np.dtype(np.uint16): 6,
}
_SUPPORTED = "float32, float16, bfloat16 (ml_dtypes), int8, uint8, int16, uint16"


@dataclass(frozen=True)
class Conversion:
    """A validated element conversion from ``src`` to ``dst`` (see :func:`conversion`)."""

    src: np.dtype
    dst: np.dtype
    kind: str  # "quantize", "dequantize" or "cast"
    scale: float  # float32 value
    zero_point: int

    def plan_args(self) -> tuple[int, int, int, float, float]:
        codes = {**_FLOAT_CODES, **_INT_CODES}
        return (
            self.src.itemsize,
            codes[self.src],
            codes[self.dst],
            self.scale,
            float(self.zero_point),
        )

    def apply(self, values: np.ndarray) -> np.ndarray:
        """The same conversion with numpy (used where no linear plan exists)."""
        if self.kind == "quantize":
            with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
                v = values.astype(np.float32) / np.float32(self.scale)
                r = np.rint(v) + np.float32(self.zero_point)
                r[np.isnan(v)] = self.zero_point
                info = np.iinfo(self.dst)
                return np.clip(r, info.min, info.max).astype(self.dst)
        if self.kind == "dequantize":
            v = (values.astype(np.float32) - np.float32(self.zero_point)) * np.float32(self.scale)
            return v.astype(self.dst)
        with np.errstate(over="ignore"):
            return values.astype(np.float32).astype(self.dst)


def conversion(src: np.dtype, dtype: Any, scale: Any, zero_point: Any) -> Conversion | None:
    """Validate ``dtype``/``scale``/``zero_point`` for input dtype ``src``; None if no conversion."""
    if dtype is None and scale is None and zero_point is None:
        return None
    try:  # every call of a preprocessing loop asks the same question: answer it once
        types = (type(dtype), type(scale), type(zero_point))
        return _conversion_cached(src, dtype, scale, zero_point, types)
    except TypeError as exc:
        if "unhashable" not in str(exc):
            raise
    return _conversion(src, dtype, scale, zero_point)


@lru_cache(maxsize=256)
def _conversion_cached(
    src: np.dtype, dtype: Any, scale: Any, zero_point: Any, _types: tuple[type, ...]
) -> Conversion | None:
    # The types are part of the key: True == 1 and 0.5 == np.float32(0.5), but
    # they do not validate alike.
    return _conversion(src, dtype, scale, zero_point)


def _conversion(src: np.dtype, dtype: Any, scale: Any, zero_point: Any) -> Conversion | None:
    if dtype is None or as_dtype(dtype) == src:
        if dtype is None and (scale is not None or zero_point is not None):
            raise LayoutError(
                "scale/zero_point given without dtype=; pass the output dtype to quantize"
            )
        if dtype is not None and (scale is not None or zero_point is not None):
            raise LayoutError(
                f"dtype={np.dtype(dtype)} equals the input dtype: nothing to quantize"
            )
        return None
    dst = as_dtype(dtype)
    for name, dt in (("input dtype", src), ("dtype", dst)):
        if dt not in _FLOAT_CODES and dt not in _INT_CODES:
            raise LayoutError(f"{name} {dt} cannot be converted; supported: {_SUPPORTED}")
    if src in _INT_CODES and dst in _INT_CODES:
        raise LayoutError(
            f"no conversion from {src} to {dst}: integer-to-integer requantization is not supported"
        )
    if src in _FLOAT_CODES and dst in _FLOAT_CODES:
        if scale is not None or zero_point is not None:
            raise LayoutError(f"{src} -> {dst} is a float cast; scale/zero_point do not apply")
        return Conversion(src, dst, "cast", 1.0, 0)
    kind = "quantize" if dst in _INT_CODES else "dequantize"
    int_dtype = dst if kind == "quantize" else src
    if scale is None:
        raise LayoutError(f"{src} -> {dst} ({kind}) needs scale=, e.g. scale=1/128")
    try:
        with np.errstate(over="ignore"):  # a scale past float32 is refused just below
            scale32 = float(np.float32(scale))
    except (TypeError, ValueError):
        raise TypeError(f"scale={scale!r}: expected a float") from None
    if not (np.isfinite(scale32) and scale32 > 0):
        raise LayoutError(f"scale={scale!r}: expected a finite float > 0 (as float32)")
    zp = 0 if zero_point is None else zero_point
    if isinstance(zp, bool) or not isinstance(zp, (int, np.integer)):
        raise TypeError(f"zero_point={zero_point!r}: expected an int")
    info = np.iinfo(int_dtype)
    if not info.min <= int(zp) <= info.max:
        raise LayoutError(
            f"zero_point={zp} does not fit {int_dtype} (range {info.min}..{info.max})"
        )
    return Conversion(src, dst, kind, scale32, int(zp))


# ---------------------------------------------------------------------------
# Validation helpers
# ---------------------------------------------------------------------------


def _as_array(x: Any, name: str) -> np.ndarray:
    if isinstance(x, np.ndarray):
        arr = x
    elif isinstance(x, bytes):  # a buffer, as bytearray and memoryview are (not an S scalar)
        arr = np.frombuffer(x, dtype=np.uint8)
    elif hasattr(x, "__dlpack__") and not hasattr(x, "__array_interface__"):
        try:  # torch, jax, cupy-on-host...: zero-copy through DLPack
            arr = np.from_dlpack(x)
        except (TypeError, BufferError, RuntimeError) as exc:
            raise TypeError(f"{name}: cannot be viewed through DLPack ({exc})") from None
    else:
        try:
            arr = np.asarray(x)
        except Exception as exc:  # e.g. ragged nested lists
            raise TypeError(f"{name}: cannot be viewed as an array ({exc})") from None
    if arr.dtype.hasobject:
        raise TypeError(
            f"{name}: dtype {arr.dtype} holds Python objects; layoutkit moves raw elements only"
        )
    check_element_size(arr.dtype, f"{name}: dtype")
    return arr


def check_allocation(shape: tuple[int, ...], dtype: np.dtype, what: str) -> None:
    """Raise LayoutError when ``shape`` of ``dtype`` cannot exist in this address space."""
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > sys.maxsize:
        raise LayoutError(
            f"{what} of shape {shape} ({dtype}) would take {nbytes} bytes, more than this "
            f"process can address ({sys.maxsize})"
        )


def check_element_size(dtype: np.dtype, name: str) -> None:
    """Raise LayoutError for a dtype whose elements have no bytes (``V0``, ``S0``)."""
    if dtype.itemsize == 0:
        raise LayoutError(
            f"{name} {dtype} has 0-byte elements; expected elements of 1 byte or more"
        )


def _pad_bytes(pad_value: Any, dtype: np.dtype) -> np.ndarray:
    if type(pad_value) in (int, float, bool):
        return _pad_bytes_cached(type(pad_value).__name__, pad_value, dtype)
    return _pad_bytes_uncached(pad_value, dtype)


@lru_cache(maxsize=256)
def _pad_bytes_cached(kind: str, pad_value: Any, dtype: np.dtype) -> np.ndarray:
    result = _pad_bytes_uncached(pad_value, dtype)
    result.setflags(write=False)
    return result


def _pad_bytes_uncached(pad_value: Any, dtype: np.dtype) -> np.ndarray:
    is_int = isinstance(pad_value, (int, np.integer)) and not isinstance(pad_value, bool)
    if is_int and pad_value == 0:
        # Zero bytes for every dtype: np.array(0, "S2") is the text b"0", and
        # float8_e8m0fnu has no zero (its 0x00 is 2**-127).
        return np.zeros(dtype.itemsize, dtype=np.uint8)
    if dtype.kind == "V" and dtype.fields is None and not _is_ml_dtype(dtype):
        if isinstance(pad_value, (bytes, bytearray)) and len(pad_value) == dtype.itemsize:
            return np.frombuffer(bytes(pad_value), dtype=np.uint8).copy()
        raise LayoutError(
            f"pad_value={pad_value!r}: for raw dtype {dtype} pass 0 or {dtype.itemsize} bytes"
        )
    if pad_value is None:
        raise LayoutError(f"pad_value=None: expected a scalar of {dtype} (0 for zero padding)")
    if dtype.kind in "SU":
        if not isinstance(pad_value, (str, bytes)):
            raise LayoutError(
                f"pad_value={pad_value!r}: for string dtype {dtype} pass 0 (zero bytes) or a "
                "str/bytes value"
            )
    try:
        with np.errstate(over="raise", invalid="ignore"):
            value = np.array(pad_value, dtype=dtype)
    except (TypeError, ValueError, OverflowError, FloatingPointError) as exc:
        raise LayoutError(f"pad_value={pad_value!r} cannot be stored as {dtype}: {exc}") from None
    if value.shape != ():
        raise LayoutError(f"pad_value must be a scalar, got shape {value.shape}")
    if dtype.kind in "iu" and np.array(pad_value).dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= int(pad_value) <= info.max:
            raise LayoutError(
                f"pad_value={pad_value} does not fit {dtype} (range {info.min}..{info.max})"
            )
    _check_pad_exact(pad_value, value, dtype)
    return np.frombuffer(value.tobytes(), dtype=np.uint8).copy()


def _is_ml_dtype(dtype: np.dtype) -> bool:
    """bfloat16, float8_*, int4 ...: numeric, though numpy gives most of them kind "V"."""
    return dtype.type.__module__.split(".")[0] == "ml_dtypes"


def _check_pad_exact(pad_value: Any, value: np.ndarray, dtype: np.dtype) -> None:
    """Refuse a numeric pad value that the cast would change (1.5 -> 1 in uint8,
    2 -> True in bool, 1e6 -> inf in float16); NaN and infinities stay allowed."""
    if not isinstance(pad_value, (int, float, np.integer, np.floating)):
        return
    ml = _is_ml_dtype(dtype)
    floating = dtype.kind == "f" or (ml and "float" in dtype.name)
    if not (floating or dtype.kind in "biu" or ml):
        return
    given = float(pad_value)
    if not math.isfinite(given):
        if floating:
            return
        raise LayoutError(f"pad_value={pad_value!r} cannot be stored as {dtype}")
    stored = float(value.astype(np.float64))
    if floating and not math.isfinite(stored):
        raise LayoutError(
            f"pad_value={pad_value!r} does not fit {dtype} (it would become {value.item()!r})"
        )
    if not floating and stored != given:
        raise LayoutError(
            f"pad_value={pad_value!r} cannot be stored exactly as {dtype} (it would become "
            f"{value.item()!r})"
        )


def _check_out(
    out: Any, dtype: np.dtype, shape: tuple[int, ...], inputs: tuple[np.ndarray, ...]
) -> np.ndarray:
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out: expected a numpy.ndarray, got {type(out).__name__}")
    if out.dtype != dtype:
        raise LayoutError(f"out: dtype is {out.dtype}, expected {dtype}")
    n = out.size if out.shape == shape else math.prod(shape)
    if out.size != n:
        raise LayoutError(f"out: holds {out.size} elements, expected {n} (shape {shape})")
    flags = out.flags
    if not flags.c_contiguous:
        raise LayoutError("out: must be C-contiguous")
    if not flags.writeable:
        raise LayoutError("out: is read-only")
    for arr in inputs:
        if n and np.may_share_memory(out, arr):
            raise LayoutError("out: overlaps the input buffer; pass a separate array")
    return out if out.shape == shape else out.reshape(shape)


def _run(
    plan: RepackPlan | None,
    fallback: Any,
    src: np.ndarray,
    dst: np.ndarray,
    pad: np.ndarray,
    shape: tuple[int, ...],
    threads: int | None = None,
) -> None:
    if dst.size == 0:
        return
    if 0 in shape:
        # No data at all: every slot that exists is padding.
        dst.reshape(-1).view(np.uint8).reshape(dst.size, -1)[:] = pad
        return
    if plan is None:
        fallback()
        return
    plan.run(src, dst, pad, _thread_count(threads, dst.nbytes))


_MIN_BYTES_PER_THREAD = 1 << 20


def _thread_count(threads: int | None, nbytes: int) -> int:
    """Threads for one repack: the argument, else $LAYOUTKIT_NUM_THREADS, else 1.

    Outputs under 2 MiB always run on the calling thread; the environment is
    only consulted (and checked) for larger ones, which keeps small calls cheap.
    """
    if threads is None:
        if nbytes < 2 * _MIN_BYTES_PER_THREAD:
            return 1
        env = os.environ.get("LAYOUTKIT_NUM_THREADS", "")
        try:
            threads = int(env) if env else 1
        except ValueError:
            raise LayoutError(
                f"LAYOUTKIT_NUM_THREADS={env!r}: expected a positive integer"
            ) from None
    elif isinstance(threads, bool) or not isinstance(threads, (int, np.integer)):
        raise TypeError(f"threads={threads!r}: expected an int")
    if threads < 1:
        raise LayoutError(f"threads={threads}: expected >= 1")
    # Small tensors are not worth waking a pool for.
    return max(1, min(int(threads), nbytes // _MIN_BYTES_PER_THREAD))


def _layout_buffer(buf: Any, layout: Layout, shape: tuple[int, ...], what: str) -> np.ndarray:
    """``buf`` as a C-ordered array holding exactly ``layout.size(shape)`` elements."""
    arr = _as_array(buf, "buf")
    layout.check_dtype(arr.dtype, "buf: dtype")
    need = layout.size(shape)
    if arr.size != need:
        raise LayoutError(
            f"buf holds {arr.size} elements but {what} {layout} of shape {shape} needs {need} "
            f"(physical shape {layout.physical_shape(shape)})"
        )
    return arr if arr.flags.c_contiguous else np.ascontiguousarray(arr)


def _execute(
    arr: np.ndarray,
    src: Layout | None,
    dst: Layout | None,
    shape: tuple[int, ...],
    result_shape: tuple[int, ...],
    pad: np.ndarray,
    out: Any,
    conv: Conversion | None,
    threads: int | None,
    fast_key: tuple[Any, ...] | None = None,
) -> np.ndarray:
    """Allocate or check the output, then run the cached plan (or the gather fallback).

    ``src is None`` means ``arr`` is the strided logical tensor; ``dst is None`` a
    C-ordered logical result. ``fast_key``: the call's other arguments, to keep
    this validated call for repeats (see ``_REPEATS``); given only when ``arr``
    is the caller's own array.
    """
    out_dtype = conv.dst if conv is not None else arr.dtype
    if out is None:
        check_allocation(result_shape, out_dtype, "the output")
        result = np.empty(result_shape, dtype=out_dtype)
    else:
        result = _check_out(out, out_dtype, result_shape, (arr,))
    strides = tuple(arr.strides) if src is None else None
    plan = _cached_plan(src, dst, shape, arr.dtype.itemsize, strides, conv)

    def fallback() -> None:
        _gather(arr, src, dst, shape, result, pad, conv)

    _run(plan, fallback, arr, result, pad, shape, threads)
    if fast_key is not None and plan is not None and result.size and 0 not in shape:
        _REPEATS.keep(arr, fast_key, plan, result.shape, result.dtype, pad)
    return result


# ---------------------------------------------------------------------------
# Public operations
# ---------------------------------------------------------------------------


class CallMemo:
    """What a successful call worked out, kept under its exact arguments (at most
    ``size`` calls; the lot is dropped when full). Unhashable arguments (a shape
    given as a list, say) are simply not kept."""

    def __init__(self, size: int) -> None:
        self._kept: dict[Any, Any] = {}
        self._size = size

    def get(self, key: Any) -> Any:
        try:
            return self._kept.get(key)
        except TypeError:
            return None

    def keep(self, key: Any, value: Any) -> None:
        if key is None:
            return
        try:
            if len(self._kept) >= self._size:
                self._kept.clear()
            self._kept[key] = value
        except TypeError:
            pass


# Calls repeat with the same arguments (a preprocessing loop over frames): after
# one full validation, the plan, output shape and dtype and padding bytes are
# kept under the input's dtype, shape and strides and the call's other
# arguments (compared by type and value, so that True is not 1), and a repeat
# is recognised and run in C, checking only ``out``: about 0.5 us of Python a
# call where building and hashing a key took 1.3 us. One list for every API
# (the first argument says which), in _repack so that Layout's methods share it.


def _repeat_run(
    args: tuple[Any, ...], arr: Any, out: Any, threads: int | None
) -> np.ndarray | None:
    """The kept call of ``args`` run on ``arr`` (where ``_REPEATS.run`` would
    not run it), or None (not kept)."""
    hit = _REPEATS.find(arr, args)
    if hit is None:
        return None
    # Kept, but threads, a large output or an ``out`` that needs the full checks.
    plan, result_shape, out_dtype, pad = hit
    if out is None:
        result = np.empty(result_shape, dtype=out_dtype)
    else:
        result = _check_out(out, out_dtype, result_shape, (arr,))
    plan.run(arr, result, pad, _thread_count(threads, result.nbytes))
    return result


def _hashable(key: Any) -> Any:
    """``key``, or None when it cannot be a dict key."""
    try:
        hash(key)
    except TypeError:
        return None
    return key


def pack(
    layout: Layout,
    x: Any,
    pad_value: Any = 0,
    out: np.ndarray | None = None,
    *,
    dtype: Any = None,
    scale: Any = None,
    zero_point: Any = None,
    threads: int | None = None,
) -> np.ndarray:
    key = (0, layout, pad_value, dtype, scale, zero_point)
    done = _REPEATS.run(x, key, out, threads)
    if done is None:
        done = _repeat_run(key, x, out, threads)
    if done is not None:
        return done
    arr = _as_array(x, "x")
    if arr.ndim != layout.rank:
        raise LayoutError(
            f"x has {arr.ndim} dims (shape {arr.shape}) but layout {layout} (dims {layout.dims!r}) "
            f"has rank {layout.rank}"
        )
    shape = tuple(arr.shape)
    conv = conversion(arr.dtype, dtype, scale, zero_point)
    out_dtype = conv.dst if conv is not None else arr.dtype
    layout.check_dtype(out_dtype, "dtype" if conv is not None else "x: dtype")
    pad = _pad_bytes(pad_value, out_dtype)
    result_shape = layout.physical_shape(shape)
    kept = key if arr is x and _hashable(key) is not None else None
    return _execute(arr, None, layout, shape, result_shape, pad, out, conv, threads, kept)


def unpack(
    layout: Layout,
    buf: Any,
    shape: Any,
    out: np.ndarray | None = None,
    *,
    dtype: Any = None,
    scale: Any = None,
    zero_point: Any = None,
    threads: int | None = None,
) -> np.ndarray:
    key = (1, layout, shape, dtype, scale, zero_point)
    if exact_shape(shape):
        done = _REPEATS.run(buf, key, out, threads)
        if done is None:
            done = _repeat_run(key, buf, out, threads)
        if done is not None:
            return done
    sh = layout.check_shape(shape)
    arr = _layout_buffer(buf, layout, sh, "layout")
    conv = conversion(arr.dtype, dtype, scale, zero_point)
    out_dtype = conv.dst if conv is not None else arr.dtype
    pad = np.zeros(out_dtype.itemsize, dtype=np.uint8)  # a logical tensor has no padding
    kept = key if arr is buf and exact_shape(shape) and _hashable(key) is not None else None
    return _execute(arr, layout, None, sh, sh, pad, out, conv, threads, kept)


def _layout_pair(src: Any, dst: Any) -> tuple[Layout, Layout]:
    """``convert``'s src/dst arguments as two Layouts over the same dims."""
    if isinstance(src, Layout) and isinstance(dst, str):
        dst_l = as_layout(dst, "dst", dims=src.dims)
        src_l = src
    elif isinstance(dst, Layout) and isinstance(src, str):
        src_l = as_layout(src, "src", dims=dst.dims)
        dst_l = dst
    else:
        src_l = as_layout(src, "src")
        dst_l = as_layout(dst, "dst")
    if src_l.dims != dst_l.dims:
        raise LayoutError(
            f"src {src_l} has dims {src_l.dims!r} but dst {dst_l} has dims {dst_l.dims!r}; "
            f"pass Layout objects over the same dims, e.g. lk.Layout({str(dst_l)!r}, dims={src_l.dims!r})"
        )
    return src_l, dst_l


def convert(
    buf: Any,
    shape: Any,
    src: Any,
    dst: Any,
    pad_value: Any = 0,
    out: np.ndarray | None = None,
    *,
    dtype: Any = None,
    scale: Any = None,
    zero_point: Any = None,
    threads: int | None = None,
) -> np.ndarray:
    """Repack ``buf`` (a tensor of logical ``shape`` in layout ``src``) into layout ``dst``.

    One pass, destination order, padding written in the same pass; the logical
    tensor is never materialised. With ``dtype`` the elements are converted in
    the same pass (see Parameters).

    Parameters
    ----------
    buf : array_like
        ``src.size(shape)`` elements in layout ``src`` (any shape; its dtype is the element type).
    shape : sequence of int
        The logical shape, in the order of the layouts' ``dims``.
    src, dst : Layout or str
        Layouts over the same dims. A string takes the other argument's dims when
        that one is a ``Layout``; two strings take their default dims, which must
        agree (for channels-last storage of an NCHW tensor pass
        ``lk.Layout("NHWC", dims="NCHW")``).
    pad_value : scalar, optional
        Written to every padding slot of ``dst`` (default 0), in the output dtype.
    out : ndarray, optional
        Destination array (C-contiguous, writeable, output dtype, ``dst.size(shape)`` elements).
    dtype : dtype, optional
        Output element type. float32/float16/bfloat16 -> int8/uint8/int16/uint16
        quantizes as ONNX QuantizeLinear (``x / scale`` in float32, round half to
        even, ``+ zero_point``, saturate; NaN gives ``zero_point``); integer ->
        float dequantizes as DequantizeLinear (``(q - zero_point) * scale`` in
        float32); float -> float rounds to nearest even.
    scale, zero_point : float, int, optional
        Quantization parameters (per tensor); ``scale`` is required to (de)quantize.
    threads : int, optional
        Threads that split the work (default ``$LAYOUTKIT_NUM_THREADS`` or 1);
        results are identical for any count. Outputs under 2 MiB use one.

    Returns
    -------
    ndarray
        C-contiguous array of ``dst.physical_shape(shape)`` with the output dtype
        (buf's dtype unless ``dtype`` is given).

    Examples
    --------
    >>> import numpy as np, layoutkit as lk
    >>> x = np.arange(6, dtype=np.uint8).reshape(1, 3, 1, 2)      # NCHW
    >>> lk.convert(x, x.shape, "NCHW", lk.Layout("NHWC", dims="NCHW")).ravel().tolist()
    [0, 2, 4, 1, 3, 5]
    >>> f = np.array([0.3, -1.7, 2.5], np.float32).reshape(1, 3, 1, 1)
    >>> lk.convert(f, f.shape, "NCHW", "NCHW4c", dtype=np.int8, scale=0.5).ravel().tolist()
    [1, -3, 5, 0]
    """
    key = (2, shape, src, dst, pad_value, dtype, scale, zero_point)
    if exact_shape(shape):
        done = _REPEATS.run(buf, key, out, threads)
        if done is None:
            done = _repeat_run(key, buf, out, threads)
        if done is not None:
            return done
    src_l, dst_l = _layout_pair(src, dst)
    sh = src_l.check_shape(shape)
    arr = _layout_buffer(buf, src_l, sh, "src layout")
    conv = conversion(arr.dtype, dtype, scale, zero_point)
    out_dtype = conv.dst if conv is not None else arr.dtype
    dst_l.check_dtype(out_dtype, "dtype" if conv is not None else "buf: dtype")
    pad = _pad_bytes(pad_value, out_dtype)
    kept = key if arr is buf and exact_shape(shape) and _hashable(key) is not None else None
    result_shape = dst_l.physical_shape(sh)
    return _execute(arr, src_l, dst_l, sh, result_shape, pad, out, conv, threads, kept)


# ---------------------------------------------------------------------------
# Gather fallback (non-nested block sizes, shifted blocked dims on both sides)
# ---------------------------------------------------------------------------


def _logical_coords(
    layout: Layout | None, shape: tuple[int, ...]
) -> tuple[list[np.ndarray], np.ndarray]:
    """Per dim, the logical coordinate of every destination slot (broadcast arrays), and a validity mask."""
    if layout is None:
        axes = [
            np.arange(n, dtype=np.int64).reshape([-1 if k == d else 1 for k in range(len(shape))])
            for d, n in enumerate(shape)
        ]
        return axes, np.ones([1] * len(shape), dtype=bool)
    phys = layout.physical_shape(shape)
    rank = len(phys)
    coords: list[Any] = [np.zeros([1] * rank, dtype=np.int64) for _ in range(layout.rank)]
    for k, ((d, w, _), n) in enumerate(zip(layout.digits, phys)):
        axis = np.arange(n, dtype=np.int64).reshape([-1 if j == k else 1 for j in range(rank)]) * w
        coords[d] = coords[d] + axis
    valid = np.ones([1] * rank, dtype=bool)
    for d in range(layout.rank):
        coords[d] = coords[d] - layout.left_pad[d]
        valid = valid & (coords[d] >= 0) & (coords[d] < shape[d])
    return coords, valid


def _gather(
    src_arr: np.ndarray,
    src: Layout | None,
    dst: Layout | None,
    shape: tuple[int, ...],
    result: np.ndarray,
    pad: np.ndarray,
    conv: Conversion | None = None,
) -> None:
    coords, valid = _logical_coords(dst, shape)
    valid = np.broadcast_to(valid, result.shape)
    clipped = [np.clip(c, 0, max(n - 1, 0)) for c, n in zip(coords, shape)]
    if src is None:
        # A strided logical array: index it directly.
        values = src_arr[tuple(clipped)]
    else:
        flat = src_arr.reshape(-1)
        strides = src._physical_strides(shape)
        off: Any = 0
        for (d, w, n), st in zip(src.digits, strides):
            p = clipped[d] + src.left_pad[d]
            digit = p // w if n is None else (p // w) % n
            off = off + digit * st
        values = flat[np.broadcast_to(off, result.shape)]
    values = np.broadcast_to(values, result.shape)
    if conv is not None:
        values = conv.apply(values)
    pad_elem = pad.view(result.dtype)[0] if result.dtype.itemsize else None
    np.copyto(result, values)
    if not valid.all():
        result[~valid] = pad_elem
