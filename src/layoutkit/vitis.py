"""AMD Vitis AI NPU: HCWNC formats, ``flexmlrt-hsi.json`` reports, runtime transformations.

The NPU's blocked formats are layouts over a logical ``NCHW`` tensor:
``HCWNCx`` (x = 4, 8, 16) is the tag ``HCWN{x}c``, the array
``[H][ceil(C/x)][W][N][x]`` with the padding channels set to zero. The plain
formats ``NCHW``, ``NHWC``, ``NHW``, ``NCH``, ``NHC``, ``NWC``, ``NC`` and ``AB``
are row-major; a conversion between two plain formats with the same letters is
a transpose (``AB`` matches any rank-2 format position by position).

:func:`load_hsi` reads the compiler's ``flexmlrt-hsi.json`` report, in the
annotation form (``cpu_format``/``hw_format``) or the transformation form
(``rt_transformations``). Every entry is validated when the report is loaded
and converts data with ``entry.to_hw(x)`` (inputs) or ``entry.to_cpu(y)``
(outputs). A transformation chain is *planned*: the pad/reshape/transpose/slice
steps that amount to a layout change become one :class:`layoutkit.Layout`
repack, and quantize/dequantize/casts run in the same pass. Chains that are not
a layout change (a general slice, an odd reshape) run step by step in numpy
with exactly ONNX Runtime's semantics.

Conventions (seed-systems.md §2 and §8):

* quantize is ONNX QuantizeLinear: ``x / scale`` in float32 (fp16/bf16 widened
  first), round half to even, ``+ zero_point``, saturate; NaN maps to the zero
  point. dequantize is DequantizeLinear, ``(q - zero_point) * scale`` in float32.
  Float casts round to nearest even; bf16 arrays are ``ml_dtypes.bfloat16``.
* Input chains run in list order from the CPU tensor; output chains run in
  list order from the HW buffer.
* Padding is raw 0 of the HW dtype, also after quantizing with a non-zero
  zero point. HCWNC formats accept N > 1 (``vart_strict=True`` refuses it, as
  VART keeps N = 1 per buffer).

Examples
--------
>>> import numpy as np, layoutkit as lk
>>> lk.vitis.hw_shape((1, 3, 224, 224), "NCHW", "HCWNC4")
(224, 1, 224, 1, 4)
>>> x = np.arange(12, dtype=np.int8).reshape(1, 3, 2, 2)       # N C H W
>>> hw = lk.vitis.to_hw(x, "NCHW", "HCWNC4")
>>> hw.shape, hw[0, 0, 1, 0].tolist()                          # (h=0, w=1): R G B pad
((2, 1, 2, 1, 4), [1, 5, 9, 0])
>>> bool(np.array_equal(lk.vitis.to_cpu(hw, "HCWNC4", x.shape, "NCHW"), x))
True
"""

from __future__ import annotations

import difflib
import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

import ml_dtypes
import numpy as np

from ._engine import CallMemo, _as_array
from ._engine import pack as _engine_pack
from ._errors import LayoutError
from ._repack import repeated_calls as _REPEATS
from .layout import Layout, as_dtype, exact_shape

__all__ = [
    "FORMATS",
    "Cast",
    "Dequantize",
    "Format",
    "HsiReport",
    "HsiTensor",
    "Pad",
    "Quantize",
    "Reshape",
    "Slice",
    "Transformation",
    "Transpose",
    "hw_shape",
    "load_hsi",
    "plan_chain",
    "to_cpu",
    "to_hw",
]

# ---------------------------------------------------------------------------
# Data types
# ---------------------------------------------------------------------------

_BF16 = np.dtype(ml_dtypes.bfloat16)
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

#: HSI dtype names (any case) -> numpy dtype.
DTYPES: dict[str, np.dtype] = {
    "fp32": np.dtype(np.float32),
    "float32": np.dtype(np.float32),
    "float": np.dtype(np.float32),
    "fp16": np.dtype(np.float16),
    "float16": np.dtype(np.float16),
    "bf16": _BF16,
    "bfloat16": _BF16,
    "int8": np.dtype(np.int8),
    "uint8": np.dtype(np.uint8),
    "int16": np.dtype(np.int16),
    "uint16": np.dtype(np.uint16),
    "int32": np.dtype(np.int32),
    "uint32": np.dtype(np.uint32),
    "int64": np.dtype(np.int64),
    "uint64": np.dtype(np.uint64),
    "fp64": np.dtype(np.float64),
    "float64": np.dtype(np.float64),
    "bool": np.dtype(np.bool_),
}
_FLOATS = (np.dtype(np.float32), np.dtype(np.float16), _BF16)
_QUANT_INTS = tuple(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16))


def _dtype_label(dt: np.dtype) -> str:
    short = {
        np.dtype(np.float32): "fp32",
        np.dtype(np.float16): "fp16",
        _BF16: "bf16",
        np.dtype(np.float64): "fp64",
    }
    return short.get(dt, str(dt))


def _parse_dtype(value: Any, where: str) -> np.dtype:
    if not isinstance(value, str):
        raise LayoutError(
            f"{where} is {value!r}; expected a dtype name such as 'fp32', 'bf16' or 'int8'"
        )
    dt = DTYPES.get(value.lower())
    if dt is None:
        close = difflib.get_close_matches(value.lower(), DTYPES, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise LayoutError(
            f"{where} is {value!r}; expected one of fp32, fp16, bf16, int8, uint8, int16, "
            f"uint16, int32{hint}"
        )
    return dt


def _is_float(dt: np.dtype) -> bool:
    return dt in _FLOATS


def _is_quant_int(dt: np.dtype) -> bool:
    return dt in _QUANT_INTS


# ---------------------------------------------------------------------------
# Formats
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Format:
    """A Vitis AI tensor format: a plain row-major order or a channel-blocked HCWNCx.

    ``letters`` names the axes of the format's shape in order; ``block`` is x for
    ``HCWNCx`` (whose shape is ``[H, ceil(C/x), W, N, x]``) and None otherwise.
    """

    name: str
    letters: str
    block: int | None = None

    @property
    def rank(self) -> int:
        """Rank of a tensor shape in this format."""
        return len(self.letters)


#: The formats layoutkit converts, by name.
FORMATS: dict[str, Format] = {
    f.name: f
    for f in [
        Format("NCHW", "NCHW"),
        Format("NHWC", "NHWC"),
        Format("HCWNC4", "HCWNC", 4),
        Format("HCWNC8", "HCWNC", 8),
        Format("HCWNC16", "HCWNC", 16),
        Format("NHW", "NHW"),
        Format("NCH", "NCH"),
        Format("NHC", "NHC"),
        Format("NWC", "NWC"),
        Format("NC", "NC"),
        Format("AB", "AB"),
    ]
}


def _format(value: Any, where: str) -> Format:
    if not isinstance(value, str):
        raise LayoutError(f"{where} is {value!r}; expected a format name such as 'NCHW'")
    fmt = FORMATS.get(value.upper())
    if fmt is not None:
        return fmt
    up = value.upper()
    if up.startswith("HCWNC") and up[5:].isdigit():
        raise LayoutError(
            f"{where} is {value!r}: HCWNC block size {up[5:]} is not supported; "
            "expected HCWNC4, HCWNC8 or HCWNC16"
        )
    close = difflib.get_close_matches(up, FORMATS, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise LayoutError(f"{where} is {value!r}; expected one of {', '.join(FORMATS)}{hint}")


# ---------------------------------------------------------------------------
# Transformations
# ---------------------------------------------------------------------------


def _int_list(value: Any, where: str, *, minimum: int | None = 0) -> tuple[int, ...]:
    if not isinstance(value, (list, tuple)):
        raise LayoutError(f"{where} is {value!r}; expected a list of integers")
    out = []
    for k, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise LayoutError(f"{where}[{k}] is {v!r}; expected an integer")
        if minimum is not None and v < minimum:
            raise LayoutError(f"{where}[{k}] is {v}; expected an integer >= {minimum}")
        out.append(int(v))
    return tuple(out)


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise LayoutError(f"{where} is {value!r}; expected a number")
    return float(value)


def _scale(value: Any, where: str) -> float:
    s = _number(value, where)
    s32 = float(np.float32(s))
    if not (math.isfinite(s32) and s32 > 0):
        raise LayoutError(f"{where} is {value!r}; expected a finite number > 0")
    return s


def _zero_point(value: Any, where: str, dt: np.dtype) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise LayoutError(f"{where} is {value!r}; expected an integer")
    info = np.iinfo(dt)
    if not info.min <= value <= info.max:
        raise LayoutError(
            f"{where} is {value}; expected a value that fits {_dtype_label(dt)} "
            f"({info.min}..{info.max})"
        )
    return int(value)


class Transformation:
    """One step of a ``rt_transformations`` chain.

    Subclasses: :class:`Quantize`, :class:`Dequantize`, :class:`Cast`,
    :class:`Pad`, :class:`Reshape`, :class:`Transpose`, :class:`Slice`. Each has
    ``op`` (the JSON ``"transformation"`` value), :meth:`to_dict` and
    :meth:`apply` (the numpy reference semantics, ONNX Runtime's).
    """

    op: ClassVar[str] = ""
    #: True for a step the library adds (e.g. the implicit final cast).
    implicit: bool = False

    def out_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The shape after this step."""
        return shape

    def out_dtype(self, dtype: np.dtype) -> np.dtype:
        """The dtype after this step."""
        return dtype

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of this step."""
        raise NotImplementedError

    def apply(self, x: np.ndarray) -> np.ndarray:
        """Apply this step with numpy (the reference semantics)."""
        raise NotImplementedError

    def __str__(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.to_dict().items() if k != "transformation")
        return f"{self.op}({params})" + (" [implicit]" if self.implicit else "")


@dataclass(frozen=True)
class Quantize(Transformation):
    """ONNX QuantizeLinear to an integer dtype (saturating, round half to even)."""

    to_dtype: str
    scale: float
    zero_point: int = 0
    op: ClassVar[str] = "quantize"

    def out_dtype(self, dtype: np.dtype) -> np.dtype:
        return DTYPES[self.to_dtype.lower()]

    def to_dict(self) -> dict[str, Any]:
        return {
            "transformation": "quantize",
            "scale": self.scale,
            "to_dtype": self.to_dtype,
            "zero_point": self.zero_point,
        }

    def apply(self, x: np.ndarray) -> np.ndarray:
        return _np_convert(x, DTYPES[self.to_dtype.lower()], self.scale, self.zero_point)


@dataclass(frozen=True)
class Dequantize(Transformation):
    """ONNX DequantizeLinear to a float dtype: ``(q - zero_point) * scale``."""

    to_dtype: str
    scale: float
    zero_point: int = 0
    op: ClassVar[str] = "dequantize"

    def out_dtype(self, dtype: np.dtype) -> np.dtype:
        return DTYPES[self.to_dtype.lower()]

    def to_dict(self) -> dict[str, Any]:
        return {
            "transformation": "dequantize",
            "scale": self.scale,
            "to_dtype": self.to_dtype,
            "zero_point": self.zero_point,
        }

    def apply(self, x: np.ndarray) -> np.ndarray:
        return _np_convert(x, DTYPES[self.to_dtype.lower()], self.scale, self.zero_point)


@dataclass(frozen=True)
class Cast(Transformation):
    """A float cast (fp32/fp16/bf16), rounding to nearest even.

    Not one of the compiler's operations: layoutkit uses it for the annotation
    form's float conversions and the implicit final cast of a chain, and accepts
    ``{"transformation": "cast", "to_dtype": ...}`` in reports.
    """

    to_dtype: str
    implicit: bool = False
    op: ClassVar[str] = "cast"

    def out_dtype(self, dtype: np.dtype) -> np.dtype:
        return DTYPES[self.to_dtype.lower()]

    def to_dict(self) -> dict[str, Any]:
        return {"transformation": "cast", "to_dtype": self.to_dtype}

    def apply(self, x: np.ndarray) -> np.ndarray:
        return _np_convert(x, DTYPES[self.to_dtype.lower()], None, None)


@dataclass(frozen=True)
class Pad(Transformation):
    """Zero padding: ``pad_at_start[i]`` before and ``pad_at_end[i]`` after axis i."""

    pad_at_start: tuple[int, ...]
    pad_at_end: tuple[int, ...]
    output_shape: tuple[int, ...] | None = None
    op: ClassVar[str] = "pad"

    def out_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(n + s + e for n, s, e in zip(shape, self.pad_at_start, self.pad_at_end))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "transformation": "pad",
            "pad_at_start": list(self.pad_at_start),
            "pad_at_end": list(self.pad_at_end),
        }
        if self.output_shape is not None:
            d["output_shape"] = list(self.output_shape)
        return d

    def apply(self, x: np.ndarray) -> np.ndarray:
        out = np.zeros(self.out_shape(x.shape), dtype=x.dtype)
        out[tuple(slice(s, s + n) for s, n in zip(self.pad_at_start, x.shape))] = x
        return out


@dataclass(frozen=True)
class Reshape(Transformation):
    """Row-major reshape to ``output_shape``."""

    output_shape: tuple[int, ...]
    op: ClassVar[str] = "reshape"

    def out_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self.output_shape

    def to_dict(self) -> dict[str, Any]:
        return {"transformation": "reshape", "output_shape": list(self.output_shape)}

    def apply(self, x: np.ndarray) -> np.ndarray:
        return x.reshape(self.output_shape)


@dataclass(frozen=True)
class Transpose(Transformation):
    """Axis permutation, ONNX/numpy rule: ``out.shape[i] = in.shape[perm[i]]``."""

    perm: tuple[int, ...]
    op: ClassVar[str] = "transpose"

    def out_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(shape[p] for p in self.perm)

    def to_dict(self) -> dict[str, Any]:
        return {"transformation": "transpose", "perm": list(self.perm)}

    def apply(self, x: np.ndarray) -> np.ndarray:
        return x.transpose(self.perm)


@dataclass(frozen=True)
class Slice(Transformation):
    """``out = in[start[i] : start[i] + size[i]]`` on every axis."""

    start: tuple[int, ...]
    size: tuple[int, ...]
    op: ClassVar[str] = "slice"

    def out_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self.size

    def to_dict(self) -> dict[str, Any]:
        return {"transformation": "slice", "start": list(self.start), "size": list(self.size)}

    def apply(self, x: np.ndarray) -> np.ndarray:
        return x[tuple(slice(s, s + n) for s, n in zip(self.start, self.size))]


_OPS = ("quantize", "dequantize", "pad", "reshape", "transpose", "slice", "cast")
_LAYOUT_OPS = (Pad, Reshape, Transpose, Slice)


def _parse_step(
    raw: Any, where: str, shape: tuple[int, ...], dtype: np.dtype
) -> tuple[Transformation, tuple[int, ...], np.dtype]:
    """Parse and check one step against the current (shape, dtype); return it and the result."""
    if not isinstance(raw, Mapping):
        raise LayoutError(f"{where} is {raw!r}; expected an object with a 'transformation' key")
    op = raw.get("transformation")
    if op is None:
        raise LayoutError(f"{where}: missing field 'transformation' (one of {', '.join(_OPS)})")
    if not isinstance(op, str) or op.lower() not in _OPS:
        close = difflib.get_close_matches(str(op).lower(), _OPS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise LayoutError(
            f"{where}.transformation is {op!r}; expected one of {', '.join(_OPS)}{hint}"
        )
    op = op.lower()
    rank = len(shape)

    def need(key: str) -> Any:
        if key not in raw:
            raise LayoutError(f"{where} ({op}): missing field {key!r}")
        return raw[key]

    step: Transformation
    if op in ("quantize", "dequantize", "cast"):
        to_name = need("to_dtype")
        to = _parse_dtype(to_name, f"{where}.to_dtype")
        if op == "quantize":
            if not _is_float(dtype):
                raise LayoutError(
                    f"{where} (quantize): the tensor is {_dtype_label(dtype)} here; quantize "
                    "needs a float tensor (fp32, fp16 or bf16)"
                )
            if not _is_quant_int(to):
                raise LayoutError(
                    f"{where}.to_dtype is {to_name!r}; quantize needs int8, uint8, int16 or uint16"
                )
            scale = _scale(need("scale"), f"{where}.scale")
            zp = _zero_point(raw.get("zero_point", 0), f"{where}.zero_point", to)
            step = Quantize(to_name, scale, zp)
        elif op == "dequantize":
            if not _is_quant_int(dtype):
                raise LayoutError(
                    f"{where} (dequantize): the tensor is {_dtype_label(dtype)} here; dequantize "
                    "needs an integer tensor (int8, uint8, int16 or uint16)"
                )
            if not _is_float(to):
                raise LayoutError(
                    f"{where}.to_dtype is {to_name!r}; dequantize needs fp32, fp16 or bf16"
                )
            scale = _scale(need("scale"), f"{where}.scale")
            zp = _zero_point(raw.get("zero_point", 0), f"{where}.zero_point", dtype)
            step = Dequantize(to_name, scale, zp)
        else:
            if not (_is_float(dtype) and _is_float(to)):
                raise LayoutError(
                    f"{where} (cast): {_dtype_label(dtype)} -> {to_name} is not a float cast; "
                    "cast converts between fp32, fp16 and bf16"
                )
            step = Cast(to_name)
        return step, shape, to
    if op == "pad":
        start = _int_list(need("pad_at_start"), f"{where}.pad_at_start")
        end = _int_list(need("pad_at_end"), f"{where}.pad_at_end")
        for key, v in (("pad_at_start", start), ("pad_at_end", end)):
            if len(v) != rank:
                raise LayoutError(
                    f"{where}.{key} has {len(v)} values; expected {rank} (the tensor is "
                    f"{list(shape)} here)"
                )
        out = Pad(start, end).out_shape(shape)
        step = Pad(start, end, out)
        if "output_shape" in raw:
            given = _int_list(raw["output_shape"], f"{where}.output_shape")
            if given != out:
                raise LayoutError(
                    f"{where}.output_shape is {list(given)}; expected {list(out)} "
                    f"(input {list(shape)} + pad_at_start + pad_at_end)"
                )
        return step, out, dtype
    if op == "reshape":
        target = _int_list(need("output_shape"), f"{where}.output_shape", minimum=-1)
        if target.count(-1) > 1:
            raise LayoutError(f"{where}.output_shape {list(target)}: at most one -1 allowed")
        n = math.prod(shape)
        if -1 in target:
            rest = math.prod(v for v in target if v != -1)
            if rest == 0 or n % rest:
                raise LayoutError(
                    f"{where}.output_shape {list(target)}: cannot infer -1 for {n} elements"
                )
            target = tuple(n // rest if v == -1 else v for v in target)
        if math.prod(target) != n:
            raise LayoutError(
                f"{where}.output_shape is {list(target)} ({math.prod(target)} elements); the "
                f"tensor is {list(shape)} here ({n} elements); reshape cannot change the count"
            )
        return Reshape(target), target, dtype
    if op == "transpose":
        perm = _int_list(need("perm"), f"{where}.perm")
        if sorted(perm) != list(range(rank)):
            raise LayoutError(
                f"{where}.perm is {list(perm)}; expected a permutation of 0..{rank - 1} "
                f"(the tensor is {list(shape)} here)"
            )
        step = Transpose(perm)
        return step, step.out_shape(shape), dtype
    # slice
    start = _int_list(need("start"), f"{where}.start")
    size = _int_list(need("size"), f"{where}.size", minimum=1)
    for key, v in (("start", start), ("size", size)):
        if len(v) != rank:
            raise LayoutError(
                f"{where}.{key} has {len(v)} values; expected {rank} (the tensor is "
                f"{list(shape)} here)"
            )
    for i, (s, z, n) in enumerate(zip(start, size, shape)):
        if s + z > n:
            raise LayoutError(
                f"{where}: axis {i} slice [{s}, {s + z}) is out of bounds for extent {n} "
                f"(the tensor is {list(shape)} here)"
            )
    return Slice(start, size), size, dtype


# ---------------------------------------------------------------------------
# Value conversions
# ---------------------------------------------------------------------------


def _np_convert(
    x: np.ndarray, dst: np.dtype, scale: float | None, zero_point: int | None
) -> np.ndarray:
    """Quantize / dequantize / cast ``x`` (any strides) with the core's fused kernel."""
    if x.dtype == dst:
        return np.array(x, copy=True)
    flat = x.reshape(1) if x.ndim == 0 else x
    res = _identity(flat.ndim).pack(flat, dtype=dst, scale=scale, zero_point=zero_point)
    return res.reshape(x.shape)


@lru_cache(maxsize=32)
def _identity(rank: int) -> Layout:
    return Layout(_LETTERS[:rank] if rank <= len(_LETTERS) else "A")


def _pack(
    layout: Layout, x: np.ndarray, out: np.ndarray | None, conv: tuple[Any, ...] | None
) -> np.ndarray:
    if conv is None:
        return layout.pack(x, 0, out)
    dst, scale, zp = conv
    return layout.pack(x, 0, out, dtype=dst, scale=scale, zero_point=zp)


def _unpack(
    layout: Layout,
    y: np.ndarray,
    shape: tuple[int, ...],
    out: np.ndarray | None,
    conv: tuple[Any, ...] | None,
) -> np.ndarray:
    if conv is None:
        return layout.unpack(y, shape, out)
    dst, scale, zp = conv
    return layout.unpack(y, shape, out, dtype=dst, scale=scale, zero_point=zp)


# ---------------------------------------------------------------------------
# Planning: a run of pad/reshape/transpose steps -> one Layout
# ---------------------------------------------------------------------------

_Digit = tuple[int, int, int]  # (logical dim, weight, extent; 1 = a marker)


def _merge(digits: list[_Digit]) -> list[_Digit]:
    out: list[_Digit] = []
    for d, w, n in digits:
        if out and out[-1][0] == d and out[-1][1] == w * n:
            out[-1] = (d, w, out[-1][2] * n)
        else:
            out.append((d, w, n))
    return out


def _compile_layout(
    shape: tuple[int, ...], steps: Sequence[Transformation], dims: str | None = None
) -> Layout | None:
    """A Layout over ``dims`` (default ``ABC...``) whose packed buffer equals the chain's result.

    Each axis of the current tensor is a list of digits ``(dim, weight, extent)``
    of the padded logical coordinates; extent-1 digits are *markers* that only
    record where an axis of extent 1 belongs. Pads grow a dim that is still a
    whole axis, reshapes split and merge digits, transposes permute axes. The
    result is a Layout if every dim's digits end in decreasing weight order and
    the outer parts precede all blocks; otherwise None (the caller runs numpy).
    """
    rank = len(shape)
    letters = dims or _LETTERS[:rank]
    if rank == 0 or rank > len(_LETTERS) or 0 in shape or len(letters) != rank:
        return None
    axes: list[list[_Digit]] = [[(d, 1, n)] for d, n in enumerate(shape)]
    left = [0] * rank
    padded = list(shape)
    cur = tuple(shape)
    for step in steps:
        if isinstance(step, Pad):
            for a, (s, e) in enumerate(zip(step.pad_at_start, step.pad_at_end)):
                if s == 0 and e == 0:
                    continue
                big = [g for g in axes[a] if g[2] > 1]
                if big:
                    if len(big) != 1 or big[0][1] != 1 or big[0][2] != padded[big[0][0]]:
                        return None
                    d = big[0][0]
                else:
                    free = [g[0] for g in axes[a] if padded[g[0]] == 1]
                    if not free:
                        return None
                    d = free[0]
                left[d] += s
                padded[d] += s + e
                axes[a] = [g for g in axes[a] if g[0] != d] + [(d, 1, padded[d])]
        elif isinstance(step, Transpose):
            axes = [axes[p] for p in step.perm]
        elif isinstance(step, Reshape):
            queue = _merge([g for ax in axes for g in ax])
            new_axes: list[list[_Digit]] = []
            for extent in step.output_shape:
                ax: list[_Digit] = []
                while queue and queue[0][2] == 1:
                    ax.append(queue.pop(0))
                rem = extent
                while rem > 1:
                    if not queue:
                        return None
                    d, w, n = queue[0]
                    if n <= rem:
                        if rem % n:
                            return None
                        ax.append(queue.pop(0))
                        rem //= n
                    else:
                        if n % rem:
                            return None
                        ax.append((d, w * (n // rem), rem))
                        queue[0] = (d, w, n // rem)
                        rem = 1
                if not ax and queue:
                    d, w, n = queue[0]
                    ax.append((d, w * n, 1))
                new_axes.append(ax)
            if any(g[2] > 1 for g in queue):
                return None
            if new_axes:
                new_axes[-1].extend(queue)
            axes = new_axes
        else:
            return None
        cur = step.out_shape(cur)
    digits = _merge([g for ax in axes for g in ax])

    def roundup(x: int, a: int) -> int:
        return -(-x // a) * a

    # Per dim: its digits in memory order; a leading marker of weight padded[d]
    # is the outer part (extent 1); other markers carry nothing.
    outer_digit: dict[int, int] = {}
    block_of: dict[int, list[int]] = {d: [] for d in range(rank)}
    for d in range(rank):
        idx = [k for k, g in enumerate(digits) if g[0] == d]
        bigk = [k for k in idx if digits[k][2] > 1]
        ws = [digits[k][1] for k in bigk]
        if any(a <= b for a, b in zip(ws, ws[1:])):
            return None
        lead = [k for k in idx if digits[k][2] == 1 and digits[k][1] == padded[d]]
        fits_all_blocks = roundup(shape[d] + left[d], padded[d]) == padded[d]
        if bigk and roundup(shape[d] + left[d], digits[bigk[0]][1]) == padded[d]:
            outer_digit[d] = bigk[0]  # option A: the first digit is the outer part
            block_of[d] = bigk[1:]
        elif fits_all_blocks:
            block_of[d] = bigk  # option B: all digits are blocks, outer extent 1
            if lead and (not bigk or lead[0] < bigk[0]):
                outer_digit[d] = lead[0]
        else:
            return None
    while True:
        blocks = sorted(k for ks in block_of.values() for k in ks)
        first_block = blocks[0] if blocks else len(digits)
        late = [d for d, k in outer_digit.items() if k > first_block and digits[k][2] > 1]
        if not late:
            break
        for d in late:
            if roundup(shape[d] + left[d], padded[d]) != padded[d]:
                return None
            block_of[d] = [outer_digit.pop(d), *block_of[d]]
    order = sorted(outer_digit, key=lambda d: outer_digit[d])
    order += [d for d in range(rank) if d not in outer_digit]
    tag = "".join(letters[d] for d in order)
    tag += "".join(f"{digits[k][2]}{letters[digits[k][0]].lower()}" for k in blocks)
    try:
        layout = Layout(tag, dims=letters, left_pad=left if any(left) else None)
    except LayoutError:  # pragma: no cover - defensive
        return None
    if layout.padded_shape(shape) != tuple(padded) or layout.size(shape) != math.prod(cur):
        return None  # pragma: no cover - defensive
    return layout


def _inverse_steps(
    steps: Sequence[Transformation], shapes: Sequence[tuple[int, ...]]
) -> list[Transformation] | None:
    """The inverse (data-wise) of a run of transpose/reshape/slice steps; None if a pad occurs.

    ``shapes[i]`` is the input shape of ``steps[i]``. A slice inverts to a pad
    whose slots a later unpack never reads.
    """
    inv: list[Transformation] = []
    for step, shape in zip(reversed(steps), reversed(shapes)):
        if isinstance(step, Transpose):
            inv.append(Transpose(tuple(int(i) for i in np.argsort(step.perm))))
        elif isinstance(step, Reshape):
            inv.append(Reshape(shape))
        elif isinstance(step, Slice):
            end = tuple(n - s - z for n, s, z in zip(shape, step.start, step.size))
            inv.append(Pad(step.start, end, shape))
        else:
            return None
    return inv


@dataclass
class ChainPlan:
    """How a validated chain runs: one Layout repack (``kind`` 'pack'/'unpack') or numpy.

    ``layout`` is over dims ``ABC...`` naming the axes of the CPU tensor;
    ``conversion`` is ``(dtype, scale, zero_point)`` fused into the repack.
    ``prefix`` holds leading view steps (slices, transposes) applied to the
    input before packing.
    """

    direction: str  # "input" (CPU -> HW) or "output" (HW -> CPU)
    steps: tuple[Transformation, ...]
    in_shape: tuple[int, ...]
    in_dtype: np.dtype
    out_shape: tuple[int, ...]
    out_dtype: np.dtype
    kind: str = "numpy"
    layout: Layout | None = None
    layout_shape: tuple[int, ...] = ()
    conversion: tuple[Any, ...] | None = None
    prefix: tuple[Transformation, ...] = field(default_factory=tuple)

    @property
    def fast(self) -> bool:
        """One repack of the input as it is (no view steps, no dtype conversion):
        repeated calls go straight to it."""
        return self.kind == "pack" and not self.prefix and self.conversion is None

    def describe(self) -> str:
        """One line: how the chain runs."""
        conv = ""
        if self.conversion is not None:
            dt, scale, zp = self.conversion
            conv = f" + {_dtype_label(self.in_dtype)}->{_dtype_label(dt)}"
            if scale is not None:
                conv += f" (scale {scale:g}, zero point {zp})"
            conv += " fused"
        if self.kind == "pack":
            pre = f"{len(self.prefix)} view step(s), then " if self.prefix else ""
            return (
                f"{pre}one pass: Layout({str(self.layout)!r}, dims={self.layout.dims!r}).pack{conv}"  # type: ignore[union-attr]
            )
        if self.kind == "unpack":
            return f"one pass: Layout({str(self.layout)!r}, dims={self.layout.dims!r}).unpack{conv}"  # type: ignore[union-attr]
        return f"numpy, step by step ({len(self.steps)} steps)"

    def run(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Apply the chain to ``x`` (already validated: ``in_shape`` and ``in_dtype``)."""
        if self.kind == "pack":
            assert self.layout is not None
            for step in self.prefix:
                x = step.apply(x)
            res = _pack(self.layout, x, out, self.conversion)
            if out is not None and out.shape == self.out_shape:
                return out  # res is out, in the layout's own shape
            return res if res.shape == self.out_shape else res.reshape(self.out_shape)
        if self.kind == "unpack":
            assert self.layout is not None
            res = _unpack(self.layout, x.reshape(-1), self.layout_shape, out, self.conversion)
            return res if res.shape == self.out_shape else res.reshape(self.out_shape)
        y = x
        for step in self.steps:
            y = step.apply(y)
        if out is None:
            return np.ascontiguousarray(y)
        np.copyto(out.reshape(self.out_shape), y)
        return out.reshape(self.out_shape)


def _conversion(step: Transformation) -> tuple[Any, ...]:
    if isinstance(step, (Quantize, Dequantize)):
        return (DTYPES[step.to_dtype.lower()], step.scale, step.zero_point)
    assert isinstance(step, Cast)
    return (DTYPES[step.to_dtype.lower()], None, None)


def plan_chain(
    steps: Sequence[Transformation],
    shape: Sequence[int],
    dtype: Any,
    direction: str = "input",
    dims: str | None = None,
) -> ChainPlan:
    """Plan a validated chain (see :class:`ChainPlan`).

    Parameters
    ----------
    steps : sequence of Transformation
        The chain, already checked (as :func:`load_hsi` does).
    shape : sequence of int
        The shape the chain starts from (``cpu_shape`` for inputs, ``hw_shape``
        for outputs).
    dtype : dtype
        The dtype the chain starts from.
    direction : {'input', 'output'}
        ``'input'``: the chain packs a CPU tensor; ``'output'``: it unpacks a HW buffer.
    dims : str, optional
        Letters naming the CPU tensor's axes in the planned Layout (e.g. the
        ``cpu_format``); default ``"ABCD..."``.

    Returns
    -------
    ChainPlan

    Examples
    --------
    >>> import numpy as np, layoutkit as lk
    >>> V = lk.vitis
    >>> chain = [V.Quantize("int8", 0.0078125, 0), V.Pad((0, 0, 0, 0), (0, 5, 0, 0)),
    ...          V.Reshape((1, 1, 8, 32, 32)), V.Transpose((3, 1, 4, 0, 2))]
    >>> plan = V.plan_chain(chain, (1, 3, 32, 32), np.float32, dims="NCHW")
    >>> plan.kind, str(plan.layout), plan.out_shape
    ('pack', 'HCWN8c', (32, 1, 32, 1, 8))
    """
    shape = tuple(int(v) for v in shape)
    dt = as_dtype(dtype)
    steps = tuple(steps)
    shapes = [shape]
    dts = [dt]
    for s in steps:
        shapes.append(s.out_shape(shapes[-1]))
        dts.append(s.out_dtype(dts[-1]))
    plan = ChainPlan(direction, steps, shape, dt, shapes[-1], dts[-1])
    value_idx = [i for i, s in enumerate(steps) if isinstance(s, (Quantize, Dequantize, Cast))]
    layout_idx = [i for i, s in enumerate(steps) if isinstance(s, _LAYOUT_OPS)]
    if len(value_idx) > 1 or 0 in shape:
        return plan
    if value_idx:
        v = value_idx[0]
        # The value step must sit at one end of the layout run (and pads must not
        # precede it on the input side: they would be converted too).
        if layout_idx and not (v < layout_idx[0] or v > layout_idx[-1]):
            return plan
        if direction == "input" and v > 0 and any(isinstance(steps[i], Pad) for i in layout_idx):
            return plan
        if direction == "output" and v < len(steps) - 1:
            return plan
        plan.conversion = _conversion(steps[v])
    run = [steps[i] for i in layout_idx]
    run_shapes = [shapes[i] for i in layout_idx]
    if direction == "input":
        cut = max((k for k, s in enumerate(run) if isinstance(s, Slice)), default=-1)
        prefix, rest = run[: cut + 1], run[cut + 1 :]
        if any(isinstance(s, (Pad, Reshape)) for s in prefix):
            return plan
        start = run_shapes[cut + 1] if rest else shapes[-1]
        views_keep_dims = not any(isinstance(s, Transpose) for s in prefix)
        layout = _compile_layout(start, rest, dims if views_keep_dims else None)
        if layout is None:
            return plan
        plan.kind, plan.layout, plan.layout_shape = "pack", layout, start
        plan.prefix = tuple(prefix)
        return plan
    inv = _inverse_steps(run, run_shapes)
    if inv is None:
        return plan
    cpu_shape = shapes[-1]
    layout = _compile_layout(cpu_shape, inv, dims)
    if layout is None:
        return plan
    plan.kind, plan.layout, plan.layout_shape = "unpack", layout, cpu_shape
    return plan


# ---------------------------------------------------------------------------
# Annotation form: formats -> canonical chains
# ---------------------------------------------------------------------------


def _layout_chain(
    cpu_shape: tuple[int, ...], cpu: Format, hw: Format, where: str = "cpu_shape"
) -> list[Transformation]:
    """The canonical CPU -> HW layout steps (seed-systems.md §2.6).

    ``where`` names the shape in messages (e.g. ``inputs[0] 'x'.cpu_shape``).
    """
    prefix = where[: -len("cpu_shape")] if where.endswith("cpu_shape") else ""
    if cpu.block is not None:
        raise LayoutError(
            f"{prefix}cpu_format is {cpu.name!r}; the CPU side must be a plain format "
            "(NCHW, NHWC, NHW, NC, AB, ...): HCWNC formats are hardware formats"
        )
    if len(cpu_shape) != cpu.rank:
        raise LayoutError(
            f"{where} is {list(cpu_shape)} ({len(cpu_shape)} dims); format {cpu.name} "
            f"needs {cpu.rank} dims ({cpu.letters})"
        )
    if hw.block is not None:
        x = hw.block
        if cpu.name == "NCHW":
            n, c, h, w = cpu_shape
            cb = -(-c // x)
            return [
                Pad((0, 0, 0, 0), (0, cb * x - c, 0, 0), (n, cb * x, h, w)),
                Reshape((n, cb, x, h, w)),
                Transpose((3, 1, 4, 0, 2)),
            ]
        if cpu.name == "NHWC":
            n, h, w, c = cpu_shape
            cb = -(-c // x)
            return [
                Pad((0, 0, 0, 0), (0, 0, 0, cb * x - c), (n, h, w, cb * x)),
                Reshape((n, h, w, cb, x)),
                Transpose((1, 3, 2, 0, 4)),
            ]
        raise LayoutError(
            f"{prefix}cpu_format {cpu.name!r} cannot be converted to {hw.name}: HCWNC formats take "
            "an NCHW or NHWC tensor"
        )
    if cpu.rank != hw.rank:
        raise LayoutError(
            f"{prefix}cpu_format {cpu.name!r} (rank {cpu.rank}) and hw_format {hw.name!r} "
            f"(rank {hw.rank}) have different ranks"
        )
    if cpu.letters == hw.letters or "AB" in (cpu.name, hw.name):
        return []
    if sorted(cpu.letters) != sorted(hw.letters):
        raise LayoutError(
            f"{prefix}cpu_format {cpu.name!r} and hw_format {hw.name!r} name different axes; "
            "expected two orders of the same letters"
        )
    return [Transpose(tuple(cpu.letters.index(ch) for ch in hw.letters))]


def _shape_after(shape: tuple[int, ...], steps: Sequence[Transformation]) -> tuple[int, ...]:
    for s in steps:
        shape = s.out_shape(shape)
    return shape


def _output_chain(
    cpu_shape: tuple[int, ...], input_steps: Sequence[Transformation]
) -> list[Transformation]:
    """The HW -> CPU steps undoing ``input_steps`` (which start from ``cpu_shape``)."""
    shapes = [cpu_shape]
    for s in input_steps:
        shapes.append(s.out_shape(shapes[-1]))
    out: list[Transformation] = []
    for step, shape in zip(reversed(input_steps), reversed(shapes[:-1])):
        if isinstance(step, Transpose):
            out.append(Transpose(tuple(int(i) for i in np.argsort(step.perm))))
        elif isinstance(step, Reshape):
            out.append(Reshape(shape))
        elif isinstance(step, Pad):
            out.append(Slice(step.pad_at_start, shape))
    return out


def _shape_arg(value: Any, name: str) -> tuple[int, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        raise TypeError(f"{name}: expected a sequence of ints, got {type(value).__name__}")
    try:
        return _int_list(list(value), name)
    except LayoutError as exc:
        raise LayoutError(str(exc)) from None


@lru_cache(maxsize=256)
def _format_plan(
    cpu_shape: tuple[int, ...], cpu_format: str, hw_format: str, direction: str, dtype: np.dtype
) -> ChainPlan:
    cpu = _format(cpu_format, "cpu_format")
    hw = _format(hw_format, "hw_format")
    steps = _layout_chain(cpu_shape, cpu, hw)
    if direction == "input":
        return plan_chain(steps, cpu_shape, dtype, "input", cpu.letters)
    hws = _shape_after(cpu_shape, steps)
    return plan_chain(_output_chain(cpu_shape, steps), hws, dtype, "output", cpu.letters)


def _check_strict(cpu_shape: tuple[int, ...], cpu: Format, hw: Format, where: str) -> None:
    if hw.block is not None and cpu.name in ("NCHW", "NHWC") and cpu_shape[0] != 1:
        raise LayoutError(
            f"{where}: batch N = {cpu_shape[0]} but VART keeps N = 1 per {hw.name} buffer "
            "(vart_strict=True); batch with several tensors, or pass vart_strict=False"
        )


def hw_shape(
    cpu_shape: Sequence[int], cpu_format: str, hw_format: str, *, vart_strict: bool = False
) -> tuple[int, ...]:
    """The NPU buffer shape of a CPU tensor (seed-systems.md §2.3).

    Parameters
    ----------
    cpu_shape : sequence of int
        The CPU tensor's shape, in ``cpu_format`` order.
    cpu_format : str
        ``"NCHW"``, ``"NHWC"`` or another plain format (see :data:`FORMATS`).
    hw_format : str
        ``"HCWNC4"``, ``"HCWNC8"``, ``"HCWNC16"`` or a plain format.
    vart_strict : bool, optional
        Refuse N != 1 for HCWNC formats, as VART does.

    Returns
    -------
    tuple of int
        E.g. ``[H, ceil(C/x), W, N, x]`` for HCWNCx.

    Raises
    ------
    LayoutError
        Unknown format, rank mismatch, or formats that cannot be converted.

    Examples
    --------
    >>> import layoutkit as lk
    >>> lk.vitis.hw_shape((1, 2048, 7, 7), "NCHW", "HCWNC8")
    (7, 256, 7, 1, 8)
    >>> lk.vitis.hw_shape((2, 5, 6, 3), "NHWC", "HCWNC4")
    (5, 1, 6, 2, 4)
    """
    sh = _shape_arg(cpu_shape, "cpu_shape")
    cpu = _format(cpu_format, "cpu_format")
    hw = _format(hw_format, "hw_format")
    steps = _layout_chain(sh, cpu, hw)
    if vart_strict:
        _check_strict(sh, cpu, hw, "cpu_shape")
    return _shape_after(sh, steps)


_FAST_PLANS = CallMemo(512)  # plans of successful calls, by their arguments


def _out_matches(out: Any, shape: tuple[int, ...], dtype: np.dtype) -> bool:
    """The usual ``out=``: an array of exactly this shape and dtype (the repack
    itself checks that it is C-contiguous, writeable and apart from the input)."""
    return type(out) is np.ndarray and out.shape == shape and out.dtype == dtype


def _check_out(out: Any, shape: tuple[int, ...], dtype: np.dtype, label: str) -> np.ndarray:
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out: expected a numpy.ndarray, got {type(out).__name__}")
    n = math.prod(shape)
    if out.dtype != dtype:
        raise LayoutError(f"out: dtype is {out.dtype}; expected {_dtype_label(dtype)} ({label})")
    if out.size != n:
        raise LayoutError(
            f"out: holds {out.size} elements ({out.nbytes} bytes); expected {n} elements "
            f"({n * dtype.itemsize} bytes) for {label} {list(shape)}: allocate from the "
            "hw_shape, not the cpu_shape"
            if label == "hw_shape"
            else f"out: holds {out.size} elements; expected {n} for {label} {list(shape)}"
        )
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise LayoutError("out: must be a writeable C-contiguous array")
    return out


def to_hw(
    x: Any,
    cpu_format: str,
    hw_format: str,
    *,
    out: np.ndarray | None = None,
    vart_strict: bool = False,
) -> np.ndarray:
    """Convert a CPU tensor to the NPU format, in one pass; the dtype is kept.

    Parameters
    ----------
    x : array_like
        The CPU tensor, shaped in ``cpu_format`` order (any dtype, any strides).
    cpu_format, hw_format : str
        See :func:`hw_shape`.
    out : ndarray, optional
        Destination (writeable, C-contiguous, x's dtype, ``prod(hw_shape)`` elements).
    vart_strict : bool, optional
        Refuse N != 1 for HCWNC formats.

    Returns
    -------
    ndarray
        Of :func:`hw_shape`, padding channels zero.

    Examples
    --------
    >>> import numpy as np, layoutkit as lk
    >>> x = np.arange(6, dtype=np.float32).reshape(1, 2, 1, 3)    # N H W C
    >>> lk.vitis.to_hw(x, "NHWC", "HCWNC4")[1, 0].tolist()        # h = 1: w x [c0 c1 c2 pad]
    [[[3.0, 4.0, 5.0, 0.0]]]
    """
    key = None
    args = ("vitis.to_hw", cpu_format, hw_format, vart_strict)
    if type(x) is np.ndarray:
        # A repeat of a plain repack runs in C (see _engine._REPEATS) ...
        done = _REPEATS.run(x, args, out, None)
        if done is not None:
            return done
        # ... others skip re-validating arguments they have seen succeed.
        key = ("to_hw", cpu_format, hw_format, x.shape, x.dtype, vart_strict)
        hit = _FAST_PLANS.get(key)
        if hit is not None:
            if out is not None and not _out_matches(out, hit.out_shape, x.dtype):
                _check_out(out, hit.out_shape, x.dtype, "hw_shape")
            elif out is not None and hit.fast:
                _engine_pack(hit.layout, x, 0, out)  # the usual repeat: straight to the repack
                return out
            return hit.run(x, out)
    arr = _as_array(x, "x")
    cpu = _format(cpu_format, "cpu_format")
    hw = _format(hw_format, "hw_format")
    shape = tuple(arr.shape)
    _layout_chain(shape, cpu, hw, "x.shape")
    if vart_strict:
        _check_strict(shape, cpu, hw, "x.shape")
    plan = _format_plan(shape, cpu.name, hw.name, "input", arr.dtype)
    _FAST_PLANS.keep(key, plan)
    if out is not None:
        _check_out(out, plan.out_shape, arr.dtype, "hw_shape")
    result = plan.run(arr, out)
    _keep_repeat(plan, x, args)
    return result


def _keep_repeat(plan: ChainPlan, x: Any, args: tuple[Any, ...]) -> None:
    """Keep a call whose plan is one repack of ``x`` for repeats in C, as the
    layout's pack or unpack call that ran it (see ``ChainPlan.run``). An unpack
    ran on ``x.reshape(-1)``: found under ``x``'s own geometry only when ``x``
    is flat."""
    if type(x) is not np.ndarray or plan.prefix or plan.layout is None:
        return
    conv = plan.conversion if plan.conversion is not None else (None, None, None)
    if plan.kind == "pack":
        _REPEATS.alias(x, (0, plan.layout, 0, *conv), args, plan.out_shape)
    elif plan.kind == "unpack":
        _REPEATS.alias(x, (1, plan.layout, plan.layout_shape, *conv), args, plan.out_shape)


def to_cpu(
    y: Any,
    hw_format: str,
    cpu_shape: Sequence[int],
    cpu_format: str,
    *,
    out: np.ndarray | None = None,
    vart_strict: bool = False,
) -> np.ndarray:
    """Convert an NPU buffer back to the CPU tensor of ``cpu_shape``; the dtype is kept.

    Parameters
    ----------
    y : array_like
        The HW buffer: ``prod(hw_shape(cpu_shape, cpu_format, hw_format))``
        elements (any shape, e.g. flat); its dtype is the element type.
    hw_format : str
        The buffer's format.
    cpu_shape : sequence of int
        The CPU tensor's shape in ``cpu_format`` order.
    cpu_format : str
        The CPU format.
    out : ndarray, optional
        Destination (writeable, C-contiguous, y's dtype, ``prod(cpu_shape)`` elements).
    vart_strict : bool, optional
        Refuse N != 1 for HCWNC formats.

    Returns
    -------
    ndarray
        Of ``cpu_shape``; the padding channels are dropped.

    Examples
    --------
    >>> import numpy as np, layoutkit as lk
    >>> hw = np.arange(16, dtype=np.int8)                  # a [2, 1, 2, 1, 4] HCWNC4 buffer
    >>> lk.vitis.to_cpu(hw, "HCWNC4", (1, 3, 2, 2), "NCHW")[0, 2].tolist()
    [[2, 6], [10, 14]]
    """
    key = None
    args = ("vitis.to_cpu", hw_format, cpu_shape, cpu_format, vart_strict)
    if type(y) is np.ndarray and exact_shape(cpu_shape):
        done = _REPEATS.run(y, args, out, None)
        if done is not None:
            return done  # a repeat of a plain repack, run in C (see _keep_repeat)
        key = ("to_cpu", hw_format, cpu_shape, cpu_format, y.shape, y.dtype, vart_strict)
        hit = _FAST_PLANS.get(key)
        if hit is not None:
            if out is not None and not _out_matches(out, hit.out_shape, y.dtype):
                _check_out(out, hit.out_shape, y.dtype, "cpu_shape")
            return hit.run(y.reshape(hit.in_shape), out)
    arr = _as_array(y, "y")
    sh = _shape_arg(cpu_shape, "cpu_shape")
    cpu = _format(cpu_format, "cpu_format")
    hw = _format(hw_format, "hw_format")
    steps = _layout_chain(sh, cpu, hw)
    if vart_strict:
        _check_strict(sh, cpu, hw, "cpu_shape")
    hws = _shape_after(sh, steps)
    need = math.prod(hws)
    if arr.size != need:
        raise LayoutError(
            f"y holds {arr.size} elements (shape {arr.shape}); {hw.name} of cpu_shape "
            f"{list(sh)} ({cpu.name}) needs {need} (hw_shape {list(hws)})"
        )
    plan = _format_plan(sh, cpu.name, hw.name, "output", arr.dtype)
    _FAST_PLANS.keep(key, plan)
    if out is not None:
        _check_out(out, sh, arr.dtype, "cpu_shape")
    result = plan.run(arr.reshape(hws), out)
    if arr is y and exact_shape(cpu_shape):
        _keep_repeat(plan, y, args)
    return result


# ---------------------------------------------------------------------------
# flexmlrt-hsi.json reports
# ---------------------------------------------------------------------------

_FIELDS = (
    "name",
    "tensor_name",
    "cpu_shape",
    "cpu_format",
    "cpu_dtype",
    "hw_shape",
    "hw_format",
    "hw_dtype",
    "scale_factor",
    "zero_point",
    "rt_transformations",
)


def _unset(scale: float | None) -> bool:
    return scale is None or scale == -1.0


class HsiTensor:
    """One entry of a ``flexmlrt-hsi.json`` report (an input or an output).

    Every schema field is an attribute holding the JSON value as given (None
    when absent); other keys are kept in :attr:`extra`. Entries are validated
    and planned when the report is loaded.
    """

    def __init__(self, raw: Mapping[str, Any], role: str, index: int, vart_strict: bool = False):
        if role not in ("input", "output"):
            raise ValueError("role must be 'input' or 'output'")  # pragma: no cover
        self.role = role
        self.index = index
        if not isinstance(raw, Mapping):
            raise LayoutError(
                f"{role}s[{index}] is {type(raw).__name__} {raw!r}; expected a JSON object"
            )
        self._raw: dict[str, Any] = json.loads(json.dumps(raw))
        self._steps: tuple[Transformation, ...] = ()
        self._plan = self._validate(vart_strict)

    # -- fields --------------------------------------------------------------

    def _get(self, key: str) -> Any:
        return self._raw.get(key)

    name = property(lambda self: self._get("name"), doc="Compiler buffer id.")
    tensor_name = property(lambda self: self._get("tensor_name"), doc="ONNX tensor name.")
    cpu_shape = property(lambda self: self._get("cpu_shape"), doc="CPU shape (list).")
    cpu_format = property(lambda self: self._get("cpu_format"), doc="CPU format name.")
    cpu_dtype = property(lambda self: self._get("cpu_dtype"), doc="CPU dtype name.")
    hw_shape = property(lambda self: self._get("hw_shape"), doc="HW shape (list).")
    hw_format = property(lambda self: self._get("hw_format"), doc="HW format name.")
    hw_dtype = property(lambda self: self._get("hw_dtype"), doc="HW dtype name.")
    scale_factor = property(lambda self: self._get("scale_factor"), doc="Scale, -1 = unset.")
    zero_point = property(lambda self: self._get("zero_point"), doc="Zero point.")
    rt_transformations = property(
        lambda self: self._get("rt_transformations"), doc="Explicit chain (list of objects)."
    )

    @property
    def extra(self) -> dict[str, Any]:
        """Keys outside the schema, kept for round-tripping."""
        return {k: v for k, v in self._raw.items() if k not in _FIELDS}

    @property
    def label(self) -> str:
        """How messages name this entry: ``inputs[0] 'tensor_name'``."""
        nm = self._raw.get("tensor_name") or self._raw.get("name")
        base = f"{self.role}s[{self.index}]"
        return f"{base} {nm!r}" if isinstance(nm, str) else base

    @property
    def cpu_np_dtype(self) -> np.dtype:
        """``cpu_dtype`` as a numpy dtype."""
        return DTYPES[self.cpu_dtype.lower()]

    @property
    def hw_np_dtype(self) -> np.dtype:
        """``hw_dtype`` as a numpy dtype."""
        return DTYPES[self.hw_dtype.lower()]

    @property
    def form(self) -> str:
        """``'transformations'`` if ``rt_transformations`` decides, else ``'annotation'``."""
        return (
            "transformations" if self._raw.get("rt_transformations") is not None else "annotation"
        )

    @property
    def plan(self) -> ChainPlan:
        """How :meth:`to_hw` / :meth:`to_cpu` run (see :class:`ChainPlan`)."""
        return self._plan

    def to_dict(self) -> dict[str, Any]:
        """The entry's JSON object, as loaded."""
        return json.loads(json.dumps(self._raw))

    def __repr__(self) -> str:
        return f"<HsiTensor {self.label}: {self.summary()}>"

    def summary(self) -> str:
        """``cpu [1,3,224,224] NCHW fp32 -> hw [224,1,224,1,4] HCWNC4 int8``."""

        def side(s: str) -> str:
            fmt = self._raw.get(f"{s}_format")
            shape = "x".join(map(str, self._raw.get(f"{s}_shape") or []))
            return f"{s} {shape} {fmt or '-'} {self._raw.get(f'{s}_dtype')}"

        arrow = "->" if self.role == "input" else "<-"
        return f"{side('cpu')} {arrow} {side('hw')}"

    def transformations(self) -> list[Transformation]:
        """The chain this entry runs, in list order (from the CPU tensor for inputs,
        from the HW buffer for outputs), including implicit casts.

        For the annotation form this is the canonical chain of seed-systems.md §2.6.
        """
        return list(self._steps)

    # -- validation -------------------------------------------------------------

    def _validate(self, vart_strict: bool) -> ChainPlan:
        raw, where = self._raw, self.label
        for key in ("name", "tensor_name"):
            if key in raw and raw[key] is not None and not isinstance(raw[key], str):
                raise LayoutError(f"{where}: field {key!r} is {raw[key]!r}; expected a string")
        rt = raw.get("rt_transformations")
        required = ["cpu_shape", "cpu_dtype", "hw_shape", "hw_dtype"]
        if rt is None:
            required[1:1] = ["cpu_format"]
            required.append("hw_format")
        missing = [k for k in required if raw.get(k) is None]
        if missing:
            extra = ""
            if rt is None and set(missing) & {"cpu_format", "hw_format"}:
                extra = (
                    " (cpu_format and hw_format are required unless rt_transformations is given)"
                )
            raise LayoutError(
                f"{where}: missing required field{'s' if len(missing) > 1 else ''} "
                f"{', '.join(repr(m) for m in missing)}{extra}"
            )
        cpu_shape = _int_list(raw["cpu_shape"], f"{where}.cpu_shape")
        hws = _int_list(raw["hw_shape"], f"{where}.hw_shape")
        cpu_dt = _parse_dtype(raw["cpu_dtype"], f"{where}.cpu_dtype")
        hw_dt = _parse_dtype(raw["hw_dtype"], f"{where}.hw_dtype")
        scale = raw.get("scale_factor")
        if scale is not None:
            scale = _number(scale, f"{where}.scale_factor")
        zp = raw.get("zero_point")
        if rt is not None:
            return self._validate_chain(rt, cpu_shape, hws, cpu_dt, hw_dt)
        cpu = _format(raw["cpu_format"], f"{where}.cpu_format")
        hw = _format(raw["hw_format"], f"{where}.hw_format")
        layout_steps = _layout_chain(cpu_shape, cpu, hw, f"{where}.cpu_shape")
        if vart_strict:
            _check_strict(cpu_shape, cpu, hw, f"{where}.cpu_shape")
        derived = _shape_after(cpu_shape, layout_steps)
        if hws != derived:
            raise LayoutError(self._hw_shape_message(hws, derived, cpu_shape, cpu, hw))
        # dtype conversion (seed-systems.md §2.5)
        src_dt, dst_dt = (cpu_dt, hw_dt) if self.role == "input" else (hw_dt, cpu_dt)
        value: Transformation | None = None
        if src_dt == dst_dt or (_is_float(src_dt) and _is_float(dst_dt)):
            if not _unset(scale) and scale != 1.0:
                raise LayoutError(
                    f"{where}.scale_factor is {raw['scale_factor']!r}; cpu_dtype "
                    f"{raw['cpu_dtype']!r} and hw_dtype {raw['hw_dtype']!r} need no quantization, "
                    "so expected 1 or -1 (unset)"
                )
            if src_dt != dst_dt:
                value = Cast(raw["hw_dtype"] if self.role == "input" else raw["cpu_dtype"])
        elif self.role == "input" and _is_float(src_dt) and _is_quant_int(dst_dt):
            s = self._annotation_scale(scale)
            z = _zero_point(0 if zp is None else zp, f"{where}.zero_point", dst_dt)
            value = Quantize(raw["hw_dtype"], s, z)
        elif self.role == "output" and _is_quant_int(src_dt) and _is_float(dst_dt):
            s = self._annotation_scale(scale)
            z = _zero_point(0 if zp is None else zp, f"{where}.zero_point", src_dt)
            value = Dequantize(raw["cpu_dtype"], s, z)
        else:
            kind = (
                "quantize (float -> int)" if self.role == "input" else "dequantize (int -> float)"
            )
            raise LayoutError(
                f"{where}: cpu_dtype {raw['cpu_dtype']!r} and hw_dtype {raw['hw_dtype']!r} "
                f"cannot be converted for an {self.role}; supported: equal dtypes, float casts "
                f"(fp32/fp16/bf16), and {kind}"
            )
        if self.role == "input":
            steps = ([value] if value else []) + layout_steps
            self._steps = tuple(steps)
            return plan_chain(steps, cpu_shape, cpu_dt, "input", cpu.letters)
        steps = _output_chain(cpu_shape, layout_steps) + ([value] if value else [])
        self._steps = tuple(steps)
        return plan_chain(steps, hws, hw_dt, "output", cpu.letters)

    def _annotation_scale(self, scale: float | None) -> float:
        raw, where = self._raw, self.label
        if _unset(scale):
            what = "quantize" if self.role == "input" else "dequantize"
            cpu, hw = raw["cpu_dtype"], raw["hw_dtype"]
            flow = f"{cpu} -> {hw}" if self.role == "input" else f"{hw} -> {cpu}"
            raise LayoutError(
                f"{where}.scale_factor is {raw.get('scale_factor', 'missing')!r} (unset), but "
                f"{flow} needs a {what} scale: set "
                "scale_factor (> 0) and zero_point, or give rt_transformations"
            )
        return _scale(raw["scale_factor"], f"{where}.scale_factor")

    def _hw_shape_message(
        self,
        hws: tuple[int, ...],
        derived: tuple[int, ...],
        cpu_shape: tuple[int, ...],
        cpu: Format,
        hw: Format,
    ) -> str:
        where = self.label
        if hw.block is not None and len(hws) == 5:
            x = hw.block
            c = cpu_shape[cpu.letters.index("C")]
            names = ["H", f"ceil(C/{x}) channel blocks", "W", "N", f"block size {x}"]
            for i, (a, b) in enumerate(zip(hws, derived)):
                if a != b:
                    why = f" with C = {c}" if i == 1 else ""
                    return (
                        f"{where}.hw_shape is {list(hws)}; hw_shape[{i}] ({names[i]}) is {a}, "
                        f"expected {b}{why}: {hw.name} of cpu_shape {list(cpu_shape)} "
                        f"({cpu.name}) is {list(derived)}"
                    )
        return (
            f"{where}.hw_shape is {list(hws)}; expected {list(derived)} for cpu_shape "
            f"{list(cpu_shape)} {cpu.name} -> {hw.name}"
        )

    def _validate_chain(
        self,
        rt: Any,
        cpu_shape: tuple[int, ...],
        hws: tuple[int, ...],
        cpu_dt: np.dtype,
        hw_dt: np.dtype,
    ) -> ChainPlan:
        where = f"{self.label}.rt_transformations"
        if not isinstance(rt, list):
            raise LayoutError(f"{where} is {rt!r}; expected a list of transformation objects")
        if self.role == "input":
            shape, dt, end_shape, end_dt = cpu_shape, cpu_dt, hws, hw_dt
        else:
            shape, dt, end_shape, end_dt = hws, hw_dt, cpu_shape, cpu_dt
        steps: list[Transformation] = []
        for k, item in enumerate(rt):
            op = item.get("transformation") if isinstance(item, Mapping) else None
            if isinstance(op, str):
                op = op.lower()
            if op == "quantize" and (self.role != "input" or k != 0):
                rule = (
                    "quantize must be the first entry of an input chain"
                    if self.role == "input"
                    else "quantize is only allowed as the first entry of an input chain"
                )
                raise LayoutError(f"{where}[{k}] (quantize): {rule}")
            if op == "dequantize" and (self.role != "output" or k != len(rt) - 1):
                rule = (
                    "dequantize must be the last entry of an output chain"
                    if self.role == "output"
                    else "dequantize is only allowed as the last entry of an output chain"
                )
                raise LayoutError(f"{where}[{k}] (dequantize): {rule}")
            step, shape, dt = _parse_step(item, f"{where}[{k}]", shape, dt)
            steps.append(step)
        side = "hw" if self.role == "input" else "cpu"
        if dt != end_dt:
            if _is_float(dt) and _is_float(end_dt):
                steps.append(Cast(self._raw[f"{side}_dtype"], implicit=True))
            else:
                raise LayoutError(
                    f"{where}: the chain ends in {_dtype_label(dt)} but {side}_dtype is "
                    f"{self._raw[f'{side}_dtype']!r}"
                    + (
                        "; add a quantize step first"
                        if self.role == "input" and _is_quant_int(end_dt)
                        else "; add a dequantize step last"
                        if self.role == "output" and _is_quant_int(dt)
                        else ""
                    )
                )
        if shape != end_shape:
            raise LayoutError(
                f"{where}: the chain ends with shape {list(shape)} but {side}_shape is "
                f"{list(end_shape)}"
            )
        self._steps = tuple(steps)
        start_shape, start_dt = (cpu_shape, cpu_dt) if self.role == "input" else (hws, hw_dt)
        fmt = FORMATS.get(str(self._raw.get("cpu_format")).upper())
        dims = fmt.letters if fmt and fmt.block is None and fmt.rank == len(cpu_shape) else None
        return plan_chain(steps, start_shape, start_dt, self.role, dims)

    # -- conversion -------------------------------------------------------------

    def _check_array(self, x: Any, side: str, name: str) -> np.ndarray:
        want_shape = tuple(self._raw[f"{side}_shape"])
        want_dt = DTYPES[self._raw[f"{side}_dtype"].lower()]
        if isinstance(x, (list, tuple)):  # nested Python numbers: take the report's dtype
            try:
                x = np.asarray(x, dtype=want_dt)
            except (TypeError, ValueError, OverflowError) as exc:
                raise LayoutError(
                    f"{self.label}: {name} cannot be read as {_dtype_label(want_dt)} ({exc})"
                ) from None
        arr = _as_array(x, name)
        if arr.dtype != want_dt:
            hint = ""
            if _is_float(arr.dtype) and _is_quant_int(want_dt):
                hint = " (quantize it first, or use a report whose cpu_dtype is float)"
            elif arr.dtype == np.uint16 and want_dt == _BF16:
                hint = " (view raw bf16 bits with .view(ml_dtypes.bfloat16))"
            raise LayoutError(
                f"{self.label}: {name} has dtype {_dtype_label(arr.dtype)}; {side}_dtype is "
                f"{self._raw[f'{side}_dtype']!r} ({want_dt}){hint}"
            )
        if side == "cpu":
            if tuple(arr.shape) != want_shape:
                hint = ""
                if sorted(arr.shape) == sorted(want_shape):
                    fmt = self._raw.get("cpu_format")
                    hint = f" (wrong dimension order? cpu_format is {fmt!r})" if fmt else ""
                elif len(arr.shape) == len(want_shape) and arr.shape[1:] == want_shape[1:]:
                    hint = " (wrong batch size?)"
                raise LayoutError(
                    f"{self.label}: {name} has shape {list(arr.shape)}; cpu_shape is "
                    f"{list(want_shape)}{hint}"
                )
            return arr
        need = math.prod(want_shape)
        if arr.size != need:
            raise LayoutError(
                f"{self.label}: {name} holds {arr.size} elements ({arr.nbytes} bytes); hw_shape "
                f"{list(want_shape)} needs {need} ({need * want_dt.itemsize} bytes)"
            )
        return arr.reshape(want_shape)

    def to_hw(self, x: Any, out: np.ndarray | None = None) -> np.ndarray:
        """Convert a CPU tensor to this input's exact HW buffer (dtype conversion included).

        Parameters
        ----------
        x : array_like
            Of ``cpu_shape`` and ``cpu_dtype`` (bf16 as ``ml_dtypes.bfloat16``).
        out : ndarray, optional
            Destination: writeable, C-contiguous, ``hw_dtype``, ``prod(hw_shape)`` elements.

        Returns
        -------
        ndarray
            Of ``hw_shape`` and ``hw_dtype``.
        """
        done = _REPEATS.run(x, ("HsiTensor.to_hw", self), out, None)
        if done is not None:
            return done  # a repeat of a plain repack, run in C (see _keep_repeat)
        if self.role != "input":
            raise LayoutError(
                f"{self.label} is an output: it converts HW -> CPU with to_cpu(y), not to_hw"
            )
        plan = self._plan
        if type(x) is np.ndarray and x.shape == plan.in_shape and x.dtype == plan.in_dtype:
            arr = x  # the usual call: skip the checks that explain a wrong input
        else:
            arr = self._check_array(x, "cpu", "x")
        result = self._run(arr, out, "hw_shape")
        if arr is x:
            _keep_repeat(plan, x, ("HsiTensor.to_hw", self))
        return result

    def to_cpu(self, y: Any, out: np.ndarray | None = None) -> np.ndarray:
        """Convert this output's HW buffer back to the CPU tensor (dequantize/cast included).

        Parameters
        ----------
        y : array_like
            ``prod(hw_shape)`` elements of ``hw_dtype`` (any shape, e.g. flat).
        out : ndarray, optional
            Destination: writeable, C-contiguous, ``cpu_dtype``, ``prod(cpu_shape)`` elements.

        Returns
        -------
        ndarray
            Of ``cpu_shape`` and ``cpu_dtype``.
        """
        done = _REPEATS.run(y, ("HsiTensor.to_cpu", self), out, None)
        if done is not None:
            return done
        if self.role != "output":
            raise LayoutError(
                f"{self.label} is an input: it converts CPU -> HW with to_hw(x), not to_cpu"
            )
        arr = self._check_array(y, "hw", "y")
        result = self._run(arr, out, "cpu_shape")
        if arr is y:
            _keep_repeat(self._plan, y, ("HsiTensor.to_cpu", self))
        return result

    def _run(self, arr: np.ndarray, out: np.ndarray | None, label: str) -> np.ndarray:
        plan = self._plan
        if out is None:
            return plan.run(arr)
        if plan.kind == "numpy":  # ends in np.copyto into out: check it first
            _check_out(out, plan.out_shape, plan.out_dtype, label)
            return plan.run(arr, out)
        try:
            return plan.run(arr, out)  # the repack checks out= itself ...
        except (LayoutError, TypeError):
            _check_out(
                out, plan.out_shape, plan.out_dtype, label
            )  # ... this says it for the report
            raise


class HsiReport:
    """A ``flexmlrt-hsi.json`` report: :attr:`inputs` and :attr:`outputs` entries.

    Build it with :func:`load_hsi`. Top-level keys besides ``inputs``/``outputs``
    are kept in :attr:`extra`; :meth:`to_json` and :meth:`save` write the report
    back as loaded.
    """

    def __init__(self, data: Mapping[str, Any], vart_strict: bool = False, source: str = ""):
        if not isinstance(data, Mapping):
            raise LayoutError(
                f"report{' ' + source if source else ''} is a JSON {type(data).__name__}; "
                "expected an object with 'inputs' and 'outputs' arrays"
            )
        if "inputs" not in data and "outputs" not in data:
            keys = ", ".join(map(repr, data)) or "none"
            raise LayoutError(
                f"report{' ' + source if source else ''}: missing 'inputs' and 'outputs' "
                f"(keys found: {keys})"
            )
        self.source = source
        self._data: dict[str, Any] = json.loads(json.dumps(data))
        for key in ("inputs", "outputs"):
            if key in self._data and not isinstance(self._data[key], list):
                raise LayoutError(f"report: field {key!r} is {self._data[key]!r}; expected a list")
        self.inputs: list[HsiTensor] = [
            HsiTensor(e, "input", i, vart_strict)
            for i, e in enumerate(self._data.get("inputs", []))
        ]
        self.outputs: list[HsiTensor] = [
            HsiTensor(e, "output", i, vart_strict)
            for i, e in enumerate(self._data.get("outputs", []))
        ]

    @property
    def extra(self) -> dict[str, Any]:
        """Top-level keys besides ``inputs`` and ``outputs``."""
        return {k: v for k, v in self._data.items() if k not in ("inputs", "outputs")}

    def __iter__(self) -> Iterator[HsiTensor]:
        return iter([*self.inputs, *self.outputs])

    def __len__(self) -> int:
        return len(self.inputs) + len(self.outputs)

    def __repr__(self) -> str:
        return f"<HsiReport {len(self.inputs)} input(s), {len(self.outputs)} output(s)>"

    def _find(self, entries: list[HsiTensor], key: Any, role: str) -> HsiTensor:
        if isinstance(key, int) and not isinstance(key, bool):
            if 0 <= key < len(entries):
                return entries[key]
            raise LayoutError(f"{role} #{key}: the report has {len(entries)} {role}(s)")
        hits = [e for e in entries if key in (e.tensor_name, e.name)]
        if not hits and isinstance(key, str) and key.isdigit():
            return self._find(entries, int(key), role)
        if len(hits) == 1:
            return hits[0]
        names = [e.tensor_name or e.name or f"#{e.index}" for e in entries]
        if not hits:
            raise LayoutError(
                f"no {role} named {key!r}; the report's {role}s are: {', '.join(map(str, names))}"
            )
        raise LayoutError(f"{len(hits)} {role}s are named {key!r}; pick one by position")

    def input(self, key: str | int) -> HsiTensor:
        """The input entry with this ``tensor_name`` or ``name`` (or position)."""
        return self._find(self.inputs, key, "input")

    def output(self, key: str | int) -> HsiTensor:
        """The output entry with this ``tensor_name`` or ``name`` (or position)."""
        return self._find(self.outputs, key, "output")

    def to_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict (exactly as loaded)."""
        return json.loads(json.dumps(self._data))

    def to_json(self, indent: int | None = 2) -> str:
        """The report as JSON text; :func:`load_hsi` reads it back unchanged."""
        return json.dumps(self._data, indent=indent)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_json` to ``path``."""
        Path(path).write_text(self.to_json() + "\n", encoding="utf-8")


def load_hsi(src: Any, *, vart_strict: bool = False) -> HsiReport:
    """Load and validate a ``flexmlrt-hsi.json`` report.

    Parameters
    ----------
    src : str, os.PathLike, bytes or dict
        A path to the file, its JSON text, or the parsed dict.
    vart_strict : bool, optional
        Refuse HCWNC entries with N != 1 (VART keeps N = 1 per buffer).

    Returns
    -------
    HsiReport

    Raises
    ------
    LayoutError
        Unreadable file or JSON, and every rule of seed-systems.md §2.9; the
        message names the entry (``inputs[0] 'tensor_name'``) and the field.

    Examples
    --------
    >>> import numpy as np, layoutkit as lk
    >>> report = lk.vitis.load_hsi('''{"inputs": [{"name": "compute_graph.ifm_ddr",
    ...     "cpu_shape": [1, 3, 4, 4], "cpu_format": "NCHW", "cpu_dtype": "fp32",
    ...     "hw_shape": [4, 1, 4, 1, 4], "hw_format": "HCWNC4", "hw_dtype": "int8",
    ...     "scale_factor": 0.0078125, "zero_point": 0}], "outputs": []}''')
    >>> entry = report.inputs[0]
    >>> [str(t) for t in entry.transformations()][0]
    'quantize(scale=0.0078125, to_dtype=int8, zero_point=0)'
    >>> hw = entry.to_hw(np.full((1, 3, 4, 4), 0.5, dtype=np.float32))
    >>> hw.dtype, hw.shape, hw[0, 0, 0, 0].tolist()
    (dtype('int8'), (4, 1, 4, 1, 4), [64, 64, 64, 0])
    """
    source = ""
    if isinstance(src, Mapping):
        data: Any = src
    elif isinstance(src, (bytes, bytearray)):
        data = _parse_json(bytes(src).decode("utf-8", errors="replace"), "<bytes>")
    elif isinstance(src, (str, os.PathLike)):
        text = os.fspath(src)
        if isinstance(src, str) and text.lstrip().startswith(("{", "[")):
            data = _parse_json(text, "<string>")
        else:
            path = Path(text)
            source = repr(text)
            if not path.is_file():
                raise LayoutError(
                    f"report {text!r}: no such file (it is written to "
                    "<CACHE_DIR>/<CACHE_KEY>/vaiml_par_0/0/flexmlrt-hsi.json)"
                )
            data = _parse_json(path.read_text(encoding="utf-8"), text)
    else:
        raise TypeError(f"src: expected a path, a JSON string or a dict, got {type(src).__name__}")
    return HsiReport(data, vart_strict=vart_strict, source=source)


def _parse_json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise LayoutError(
            f"report {where}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
