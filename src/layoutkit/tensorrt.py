"""NVIDIA TensorRT ``TensorFormat``: storage arrays, strides and packing.

Every TensorRT I/O format is a core :class:`layoutkit.Layout` over the logical
(kLINEAR) tensor, so :func:`to_format` / :func:`from_format` run through the
one-pass repack kernel:

* vector-major formats (kCHW2/4/16/32, kCDHW32) split C into
  ``[ceil(C/V)] ... [V]``: ``kCHW4`` over NCHW is the tag ``NCHW4c``;
* vector-minor formats (kHWC8/16, kDHWC8, kHWC, kDHWC) move C last, padded to a
  multiple of V: ``kHWC8`` is ``NHWC8c`` over dims NCHW;
* ``kDLA_LINEAR`` pads every row to 64 bytes: ``NCHW32w`` for FP16;
* ``kDLA_HWC4`` stores C' = 1 or 4 channels (C = 3 gets a zero 4th slot) with
  the H stride padded to 32 bytes (Xavier) or 64 bytes (Orin): ``NHWC16w4c``
  for INT8, C = 3, Orin.

The vectorized axis is the third from last (fourth from last for kCDHW32,
kDHWC8, kDHWC), so ranks above 4 (5) put the extra leading dims before it, as
TensorRT does. Padding slots are written as 0 (TensorRT leaves them undefined).

Dtype rules follow the TensorRT 10.12 – 11.x headers by default; pass
``version="8.x"`` (or ``"10.8"`` ...) for an older profile, or ``strict=False``
for the union over every version layoutkit knows (see :func:`format_info`).

Examples
--------
>>> import numpy as np, layoutkit as lk
>>> x = np.arange(2 * 5 * 3 * 3, dtype=np.int8).reshape(2, 5, 3, 3)
>>> buf = lk.tensorrt.to_format(x, "kCHW4")
>>> buf.shape
(2, 2, 3, 3, 4)
>>> int(buf[1, 1, 2, 1, 0]) == int(x[1, 4, 2, 1])
True
>>> lk.tensorrt.offset("kCHW4", (2, 5, 3, 3), (1, 4, 2, 1))
136
>>> np.array_equal(lk.tensorrt.from_format(buf, "kCHW4", x.shape), x)
True
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from functools import cache, lru_cache
from typing import Any

import numpy as np

from ._engine import CallMemo, _as_array, _check_out
from ._engine import pack as _engine_pack
from ._errors import LayoutError
from ._repack import repeated_calls as _REPEATS
from .layout import Layout, _int_tuple, exact_shape

__all__ = [
    "DataType",
    "FormatInfo",
    "TensorFormat",
    "data_type",
    "format_info",
    "from_format",
    "layout",
    "nbytes",
    "numpy_dtype",
    "offset",
    "storage_shape",
    "storage_strides",
    "strides",
    "to_format",
]


class TensorFormat(IntEnum):
    """``nvinfer1::TensorFormat`` with TensorRT's names and values."""

    kLINEAR = 0
    kCHW2 = 1
    kHWC8 = 2
    kCHW4 = 3
    kCHW16 = 4
    kCHW32 = 5
    kDHWC8 = 6
    kCDHW32 = 7
    kHWC = 8
    kDLA_LINEAR = 9
    kDLA_HWC4 = 10
    kHWC16 = 11
    kDHWC = 12


class DataType(IntEnum):
    """``nvinfer1::DataType`` with TensorRT's names and values."""

    kFLOAT = 0
    kHALF = 1
    kINT8 = 2
    kINT32 = 3
    kBOOL = 4
    kUINT8 = 5
    kFP8 = 6
    kBF16 = 7
    kINT64 = 8
    kINT4 = 9
    kFP4 = 10
    kE8M0 = 11

    @property
    def bits(self) -> int:
        """Storage bits of one scalar (4 for the packed kINT4/kFP4)."""
        return _DT_BITS[self]

    @property
    def short(self) -> str:
        """The usual short name: FP32, FP16, INT8, ..."""
        return _DT_SHORT[self]


_DT_BITS = {
    DataType.kFLOAT: 32,
    DataType.kHALF: 16,
    DataType.kINT8: 8,
    DataType.kINT32: 32,
    DataType.kBOOL: 8,
    DataType.kUINT8: 8,
    DataType.kFP8: 8,
    DataType.kBF16: 16,
    DataType.kINT64: 64,
    DataType.kINT4: 4,
    DataType.kFP4: 4,
    DataType.kE8M0: 8,
}
_DT_SHORT = {
    DataType.kFLOAT: "FP32",
    DataType.kHALF: "FP16",
    DataType.kINT8: "INT8",
    DataType.kINT32: "INT32",
    DataType.kBOOL: "BOOL",
    DataType.kUINT8: "UINT8",
    DataType.kFP8: "FP8",
    DataType.kBF16: "BF16",
    DataType.kINT64: "INT64",
    DataType.kINT4: "INT4",
    DataType.kFP4: "FP4",
    DataType.kE8M0: "E8M0",
}
_DT_ALIASES = {
    "FLOAT": DataType.kFLOAT,
    "FLOAT32": DataType.kFLOAT,
    "HALF": DataType.kHALF,
    "FLOAT16": DataType.kHALF,
    "BFLOAT16": DataType.kBF16,
    "FP8E4M3": DataType.kFP8,
    "E4M3": DataType.kFP8,
    **{v.upper(): k for k, v in _DT_SHORT.items()},
}


@cache
def _numpy_map() -> dict[DataType, np.dtype]:
    import ml_dtypes

    return {
        DataType.kFLOAT: np.dtype(np.float32),
        DataType.kHALF: np.dtype(np.float16),
        DataType.kINT8: np.dtype(np.int8),
        DataType.kINT32: np.dtype(np.int32),
        DataType.kBOOL: np.dtype(np.bool_),
        DataType.kUINT8: np.dtype(np.uint8),
        DataType.kFP8: np.dtype(ml_dtypes.float8_e4m3fn),
        DataType.kBF16: np.dtype(ml_dtypes.bfloat16),
        DataType.kINT64: np.dtype(np.int64),
        DataType.kINT4: np.dtype(ml_dtypes.int4),
        DataType.kFP4: np.dtype(ml_dtypes.float4_e2m1fn),
        DataType.kE8M0: np.dtype(ml_dtypes.float8_e8m0fnu),
    }


@cache
def _numpy_lookup() -> dict[np.dtype, DataType]:
    return {v: k for k, v in _numpy_map().items()}


def numpy_dtype(dt: Any) -> np.dtype:
    """The numpy dtype that holds one scalar of a TensorRT ``DataType``.

    kBF16, kFP8, kINT4, kFP4 and kE8M0 use ``ml_dtypes`` (kINT4/kFP4 one scalar
    per byte, unpacked).

    >>> numpy_dtype("kHALF")
    dtype('float16')
    """
    return _numpy_map()[data_type(dt)]


def data_type(value: Any, name: str = "dtype") -> DataType:
    """A :class:`DataType` from a member, its value, its name, or a numpy dtype.

    Names are TensorRT's (``"kHALF"``), without the ``k`` (``"HALF"``) or the
    usual short names (``"FP16"``, ``"BF16"``, ``"INT8"``), any case.

    >>> data_type("fp16"), data_type(np.int8)
    (<DataType.kHALF: 1>, <DataType.kINT8: 2>)
    """
    if isinstance(value, np.dtype):
        hit = _numpy_lookup().get(value)
        if hit is not None:
            return hit
    return _data_type(value, name)


def _data_type(value: Any, name: str) -> DataType:
    if isinstance(value, DataType):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        try:
            return DataType(int(value))
        except ValueError:
            raise LayoutError(
                f"{name}={value}: not a TensorRT DataType value (0..{len(DataType) - 1})"
            ) from None
    if isinstance(value, str):
        key = value.strip()
        for cand in (key, "k" + key.upper(), key.upper()):
            if cand in DataType.__members__:
                return DataType[cand]
        up = key.upper().removeprefix("K") if key[:1] in "kK" and len(key) > 1 else key.upper()
        if up in _DT_ALIASES:
            return _DT_ALIASES[up]
        if key.upper() in _DT_ALIASES:
            return _DT_ALIASES[key.upper()]
        try:
            dt = np.dtype(key)
        except TypeError:
            raise LayoutError(
                f"{name}={value!r}: not a TensorRT DataType; expected one of "
                f"{', '.join(DataType.__members__)}"
            ) from None
        return _from_numpy(dt, name)
    try:
        dt = np.dtype(value)
    except TypeError:
        raise TypeError(
            f"{name}: expected a DataType, its name or a numpy dtype, got {type(value).__name__}"
        ) from None
    return _from_numpy(dt, name)


def _from_numpy(dt: np.dtype, name: str) -> DataType:
    for k, v in _numpy_map().items():
        if v == dt:
            return k
    raise LayoutError(
        f"{name}: numpy dtype {dt} has no TensorRT DataType (TensorRT holds "
        "float32, float16, bfloat16, int8, uint8, int32, int64, bool, float8_e4m3fn, ...); "
        "pass dtype= to name the TensorRT type of raw data"
    )


# ---------------------------------------------------------------------------
# Per-format rules (seed-systems.md §4.4)
# ---------------------------------------------------------------------------

_F, _H, _I8, _I32 = DataType.kFLOAT, DataType.kHALF, DataType.kINT8, DataType.kINT32
_U8, _BF, _FP8, _I64 = DataType.kUINT8, DataType.kBF16, DataType.kFP8, DataType.kINT64
_ALL = tuple(DataType)

Version = tuple[int, int]
CURRENT: Version = (11, 99)


@dataclass(frozen=True)
class _Rule:
    since: Version
    dtypes: tuple[DataType, ...]
    note: str = ""
    dla_only: bool = False


@dataclass(frozen=True)
class _Spec:
    kind: str  # "linear", "major", "minor", "dla"
    vector: int
    from_end: int  # the vectorized axis is rank - from_end (0: none)
    min_rank: int
    rules: tuple[_Rule, ...]
    description: str


_TF = TensorFormat
_SPECS: dict[TensorFormat, _Spec] = {
    _TF.kLINEAR: _Spec(
        "linear",
        1,
        0,
        0,
        (_Rule((8, 0), _ALL, "all types; on DLA, C, H and W lie in [1, 8192]"),),
        "Row major linear format. For a tensor with dimensions {N, C, H, W}, the W axis "
        "has unit stride (plain C order). For DLA usage, the tensor sizes are limited to "
        "C,H,W in the range [1,8192].",
    ),
    _TF.kCHW2: _Spec(
        "major",
        2,
        3,
        3,
        (
            _Rule((8, 0), (_H,), "8.x-10.11: FP16 only (10.6-10.8 headers say FP16 only)"),
            _Rule((10, 12), (_H, _BF), "10.12+: FP16 or BF16"),
        ),
        "Two wide channel vectorized row major format. Only available for dimensions >= 3. "
        "For a tensor with dimensions {N, C, H, W}, the memory layout is equivalent to a C "
        "array with dimensions [N][(C+1)/2][H][W][2], with the tensor coordinates (n, c, h, w) "
        "mapping to array subscript [n][c/2][h][w][c%2].",
    ),
    _TF.kHWC8: _Spec(
        "minor",
        8,
        3,
        3,
        (
            _Rule((8, 0), (_H,), "8.x: FP16"),
            _Rule((10, 12), (_H, _BF), "10.12+: FP16 or BF16"),
        ),
        "Eight channel format where C is padded to a multiple of 8. Only available for "
        "dimensions >= 3. For a tensor with dimensions {N, C, H, W}, the memory layout is "
        "equivalent to the array with dimensions [N][H][W][(C+7)/8*8], with the tensor "
        "coordinates (n, c, h, w) mapping to array subscript [n][h][w][c].",
    ),
    _TF.kCHW4: _Spec(
        "major",
        4,
        3,
        3,
        (
            _Rule((8, 0), (_I8, _H), "8.x-10.8: INT8 or FP16"),
            _Rule((10, 9), (_I8, _H, _BF), "10.9-10.11: INT8, FP16 or BF16"),
            _Rule((10, 12), (_I8,), "10.12+: INT8 (C must be a build-time constant)"),
        ),
        "Four wide channel vectorized row major format. Only available for dimensions >= 3. "
        "For INT8, the C dimension must be a build-time constant. For a tensor with "
        "dimensions {N, C, H, W}, the memory layout is equivalent to a C array with dimensions "
        "[N][(C+3)/4][H][W][4], with the tensor coordinates (n, c, h, w) mapping to array "
        "subscript [n][c/4][h][w][c%4]. Deprecated DLA usage: C <= 4 and, without GPU "
        "fallback, the line stride in bytes a multiple of 32 (Xavier) or 64 (Orin).",
    ),
    _TF.kCHW16: _Spec(
        "major",
        16,
        3,
        3,
        (
            _Rule((8, 0), (_H,), "8.x: FP16 (GPU and DLA)"),
            _Rule((10, 0), (_I8, _H), "10.0-10.5: INT8 or FP16"),
            _Rule((10, 6), (_H,), "10.6-10.11: FP16"),
            _Rule((10, 12), (_H,), "10.12+: FP16, DLA only", dla_only=True),
        ),
        "Sixteen wide channel vectorized row major format. Only available for dimensions "
        ">= 3. For a tensor with dimensions {N, C, H, W}, the memory layout is equivalent to "
        "a C array with dimensions [N][(C+15)/16][H][W][16], with the tensor coordinates "
        "(n, c, h, w) mapping to array subscript [n][c/16][h][w][c%16]. For DLA usage, this "
        "format maps to the native feature format for FP16, and the tensor sizes are limited "
        "to C,H,W in the range [1,8192].",
    ),
    _TF.kCHW32: _Spec(
        "major",
        32,
        3,
        3,
        (
            _Rule(
                (8, 0),
                (_F, _H, _I32, _I8),
                "8.x-10.11: no dtype binding in the headers; the seed table marks "
                "FP32, FP16, INT32, INT8",
            ),
            _Rule((10, 12), (_I8, _F, _H), "10.12+: INT8, FP32 or FP16"),
        ),
        "Thirty-two wide channel vectorized row major format. Only available for dimensions "
        ">= 3. For a tensor with dimensions {N, C, H, W}, the memory layout is equivalent to "
        "a C array with dimensions [N][(C+31)/32][H][W][32], with the tensor coordinates "
        "(n, c, h, w) mapping to array subscript [n][c/32][h][w][c%32]. For DLA usage, this "
        "format maps to the native feature format for INT8, and the tensor sizes are limited "
        "to C,H,W in the range [1,8192].",
    ),
    _TF.kDHWC8: _Spec(
        "minor",
        8,
        4,
        4,
        (
            _Rule((8, 0), (_H,), "8.x: FP16"),
            _Rule((10, 12), (_H, _BF), "10.12+: FP16 or BF16"),
        ),
        "Eight channel format where C is padded to a multiple of 8. Only available for "
        "dimensions >= 4. For a tensor with dimensions {N, C, D, H, W}, the memory layout is "
        "equivalent to an array with dimensions [N][D][H][W][(C+7)/8*8], with the tensor "
        "coordinates (n, c, d, h, w) mapping to array subscript [n][d][h][w][c].",
    ),
    _TF.kCDHW32: _Spec(
        "major",
        32,
        4,
        4,
        (_Rule((8, 0), (_H, _I8), "all versions: FP16 or INT8"),),
        "Thirty-two wide channel vectorized row major format. Bound to FP16 and INT8, only "
        "available for dimensions >= 4. For a tensor with dimensions {N, C, D, H, W}, the "
        "memory layout is equivalent to a C array with dimensions [N][(C+31)/32][D][H][W][32], "
        "with the tensor coordinates (n, c, d, h, w) mapping to array subscript "
        "[n][c/32][d][h][w][c%32].",
    ),
    _TF.kHWC: _Spec(
        "minor",
        1,
        3,
        3,
        (
            _Rule((8, 0), (_F,), "8.x-10.5: FP32"),
            _Rule((10, 6), (_F, _H, _U8, _I64, _BF), "10.6-10.11: FP32, FP16, UINT8, INT64, BF16"),
            _Rule((10, 12), (_F, _U8), "10.12+: FP32 or UINT8"),
        ),
        "Non-vectorized channel-last format. Only available for dimensions >= 3. For a tensor "
        "with dimensions {N, C, H, W}, the memory layout is equivalent to the array with "
        "dimensions [N][H][W][C].",
    ),
    _TF.kDLA_LINEAR: _Spec(
        "dla",
        1,
        0,
        4,
        (_Rule((8, 0), (_H, _I8), "FP16 or INT8 (DLA)", dla_only=True),),
        "DLA planar format. For a tensor with dimension {N, C, H, W}, the W axis always has "
        "unit stride. The stride for stepping along the H axis is rounded up to 64 bytes. The "
        "memory layout is equivalent to a C array with dimensions "
        "[N][C][H][roundUp(W, 64/elementSize)] where elementSize is 2 for FP16 and 1 for "
        "Int8, with the tensor coordinates (n, c, h, w) mapping to array subscript [n][c][h][w].",
    ),
    _TF.kDLA_HWC4: _Spec(
        "dla",
        1,
        0,
        4,
        (_Rule((8, 0), (_H, _I8), "FP16 or INT8 (DLA); C in {1, 3, 4}", dla_only=True),),
        "DLA image format. For a tensor with dimension {N, C, H, W} the C axis always has unit "
        "stride. The stride for stepping along the H axis is rounded up to 32 bytes on Xavier "
        "and 64 bytes on Orin. C can only be 1, 3 or 4; C' = 1, 4, 4 respectively (C = 3 is "
        "padded to 4). The memory layout is equivalent to a C array with dimensions "
        "[N][H][roundUp(W, 32/C'/elementSize)][C'] on Xavier and "
        "[N][H][roundUp(W, 64/C'/elementSize)][C'] on Orin where elementSize is 2 for FP16 "
        "and 1 for Int8, with (n, c, h, w) mapping to array subscript [n][h][w][c].",
    ),
    _TF.kHWC16: _Spec(
        "minor",
        16,
        3,
        3,
        (
            _Rule((8, 0), (_H,), "8.x-10.5: FP16"),
            _Rule((10, 6), (_H, _I8), "10.6-10.7: FP16 or INT8"),
            _Rule((10, 8), (_H, _I8, _FP8), "10.8+: FP16, INT8 or FP8"),
        ),
        "Sixteen channel format where C is padded to a multiple of 16. Only available for "
        "dimensions >= 3. For a tensor with dimensions {N, C, H, W}, the memory layout is "
        "equivalent to the array with dimensions [N][H][W][(C+15)/16*16], with the tensor "
        "coordinates (n, c, h, w) mapping to array subscript [n][h][w][c].",
    ),
    _TF.kDHWC: _Spec(
        "minor",
        1,
        4,
        4,
        (
            _Rule((8, 0), (), "not in TensorRT 8.x (missing from the seed table)"),
            _Rule((10, 0), (_F,), "10.0+: FP32"),
        ),
        "Non-vectorized channel-last format. Bound to FP32, only available for dimensions "
        ">= 4. For a tensor with dimensions {N, C, D, H, W}, the memory layout is equivalent "
        "to the array with dimensions [N][D][H][W][C].",
    ),
}

_DLA_FORMATS = (_TF.kLINEAR, _TF.kCHW4, _TF.kCHW16, _TF.kCHW32, _TF.kDLA_LINEAR, _TF.kDLA_HWC4)
_DLA_LINE_BYTES = {"xavier": 32, "orin": 64}
_MAX_RANK = 8
_DLA_MAX_EXTENT = 8192


_VERSION_TEXT = re.compile(r"(\d+)(?:\.(\d+|x|\*))?(?:\.\d+)*")


def _version(value: Any) -> Version:
    if value is None:
        return CURRENT
    if isinstance(value, tuple) and len(value) == 2:
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
            raise LayoutError(f"version={value!r}: expected a (major, minor) pair of ints")
        major, minor = int(value[0]), int(value[1])
        if minor < 0:
            raise LayoutError(f"version={value!r}: the minor version must be >= 0")
    elif isinstance(value, float):
        raise TypeError(
            f"version={value!r}: pass the version as a string such as '10.8' "
            "(as a float, 10.10 and 10.1 are the same number)"
        )
    elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        major, minor = int(value), 99
    elif isinstance(value, str):
        text = value.strip().lower()
        if text in ("current", "latest"):
            return CURRENT
        m = _VERSION_TEXT.fullmatch(text)
        if m is None:
            raise LayoutError(
                f"version={value!r}: expected 'MAJOR.MINOR' such as '10.8', '8.x' or 'current'"
            )
        major = int(m.group(1))
        minor = int(m.group(2)) if m.group(2) and m.group(2).isdigit() else 99
    else:
        raise TypeError(f"version: expected a string such as '10.8', got {type(value).__name__}")
    if major < 8:
        raise LayoutError(f"version={value!r}: layoutkit knows TensorRT 8.x and later")
    return (major, minor)


def _vtext(v: Version) -> str:
    return f"{v[0]}.x" if v[1] >= 99 else f"{v[0]}.{v[1]}"


def _rule_label(rules: tuple[_Rule, ...], k: int) -> str:
    since = rules[k].since
    start = f"{since[0]}.x" if since == (8, 0) else _vtext(since)
    if k + 1 == len(rules):
        return f"TensorRT {start}+ rules"
    nxt = rules[k + 1].since
    end = f"{nxt[0] - 1}.x" if nxt[1] == 0 else f"{nxt[0]}.{nxt[1] - 1}"
    return f"TensorRT {start} rules" if start == end else f"TensorRT {start}-{end} rules"


def _select_rule(spec: _Spec, version: Version) -> int:
    k = 0
    for i, r in enumerate(spec.rules):
        if r.since <= version:
            k = i
    return k


@dataclass(frozen=True)
class FormatInfo:
    """What TensorRT says about one ``TensorFormat`` under a version profile.

    Attributes
    ----------
    name, value : str, int
        TensorRT's name (``"kCHW32"``) and enum value.
    kind : str
        ``"linear"``, ``"vector-major"`` (C split into ``[C/V] ... [V]``),
        ``"vector-minor"`` (C moved last, padded to a multiple of V) or ``"dla"``.
    vector_size : int
        Scalars per vector V (1 when not vectorized).
    components_per_element : int
        ``ICudaEngine::getTensorComponentsPerElement``: V, or -1 when not
        vectorized. (The 8.x ``IAlgorithmIOInfo`` convention returned 1: that
        is :attr:`vector_size`.)
    min_rank : int
        The smallest rank the format allows (4 for the DLA formats: layoutkit
        models them over NCHW only).
    dtypes : tuple of DataType
        The allowed data types under the selected rules.
    dla_only : bool
        True when the format may only be used on DLA under these rules.
    rules : str
        The rule set the dtypes come from, e.g. ``"TensorRT 10.12+ rules"``.
    history : tuple of (str, tuple of DataType, str)
        Every known rule set: (versions, dtypes, note), oldest first.
    description : str
        TensorRT's human-readable description of the format.
    """

    name: str
    value: int
    kind: str
    vector_size: int
    min_rank: int
    dtypes: tuple[DataType, ...]
    dla_only: bool
    rules: str
    history: tuple[tuple[str, tuple[DataType, ...], str], ...] = field(repr=False)
    description: str = field(repr=False)
    _from_end: int = field(repr=False, default=0)

    @property
    def components_per_element(self) -> int:
        """V for a vectorized format, else -1 (TensorRT's engine-query convention)."""
        return self.vector_size if self.vector_size > 1 else -1

    def vectorized_dim(self, rank: int) -> int:
        """``getTensorVectorizedDim``: the vectorized axis of a rank-``rank`` tensor, or -1.

        >>> format_info("kCHW32").vectorized_dim(4), format_info("kCHW4").vectorized_dim(3)
        (1, 0)
        >>> format_info("kHWC").vectorized_dim(4)
        -1
        """
        if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)):
            raise TypeError(f"rank: expected an int, got {type(rank).__name__}")
        if rank < self.min_rank or rank > _MAX_RANK:
            raise LayoutError(f"rank={rank}: {self.name} needs rank {self.min_rank}..{_MAX_RANK}")
        if self.vector_size == 1:
            return -1
        return int(rank) - self._from_end

    def bytes_per_component(self, dtype: Any) -> int:
        """``getTensorBytesPerComponent``: bytes of one scalar, or -1 when not vectorized."""
        dt = data_type(dtype)
        if self.vector_size == 1:
            return -1
        return dt.bits // 8 if dt.bits >= 8 else -1

    def allows(self, dtype: Any) -> bool:
        """True if ``dtype`` is allowed under these rules."""
        return data_type(dtype) in self.dtypes


_FORMAT_BY_UPPER = {m.name.upper(): m for m in TensorFormat}


def _format(value: Any, name: str = "fmt") -> TensorFormat:
    if isinstance(value, TensorFormat):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        try:
            return TensorFormat(int(value))
        except ValueError:
            raise LayoutError(
                f"{name}={value}: not a TensorRT TensorFormat value (0..{len(TensorFormat) - 1})"
            ) from None
    if isinstance(value, str):
        key = value.strip()
        for cand in (key.upper(), "K" + key.upper()):
            if cand in _FORMAT_BY_UPPER:
                return _FORMAT_BY_UPPER[cand]
        import difflib

        close = difflib.get_close_matches(key, list(TensorFormat.__members__), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise LayoutError(
            f"{name}={value!r}: not a TensorRT TensorFormat; expected one of "
            f"{', '.join(TensorFormat.__members__)} (the leading 'k' is optional){hint}"
        )
    raise TypeError(
        f"{name}: expected a TensorFormat, its name or value, got {type(value).__name__}"
    )


def format_info(fmt: Any, version: Any = None, strict: bool = True) -> FormatInfo:
    """Facts about a TensorRT format: vector size, vectorized dim, dtypes, history.

    Parameters
    ----------
    fmt : TensorFormat, str or int
        The format (``TensorFormat.kCHW32``, ``"kCHW32"``, ``"CHW32"`` or 5).
    version : str, optional
        TensorRT version profile (``"8.x"``, ``"10.8"``, ``"11.x"``); default the
        current rules (TensorRT 10.12 – 11.x).
    strict : bool, optional
        If False, ``dtypes`` is the union over every known version.

    Returns
    -------
    FormatInfo

    Examples
    --------
    >>> info = format_info("kCHW4")
    >>> info.vector_size, info.components_per_element, info.vectorized_dim(4), info.min_rank
    (4, 4, 1, 3)
    >>> [t.name for t in info.dtypes], info.rules
    (['kINT8'], 'TensorRT 10.12+ rules')
    >>> [t.name for t in format_info("kCHW4", version="8.x").dtypes]
    ['kINT8', 'kHALF']
    >>> format_info("kHWC").components_per_element
    -1
    """
    f = _format(fmt)
    spec = _SPECS[f]
    v = _version(version)
    if not isinstance(strict, bool):
        raise TypeError(f"strict: expected a bool, got {type(strict).__name__}")
    k = _select_rule(spec, v)
    rule = spec.rules[k]
    if strict:
        dtypes = rule.dtypes
        label = _rule_label(spec.rules, k)
        dla_only = rule.dla_only
    else:
        seen = {t for r in spec.rules for t in r.dtypes}
        dtypes = tuple(t for t in DataType if t in seen)
        label = "union over TensorRT 8.x-11.x rules"
        dla_only = all(r.dla_only for r in spec.rules)
    history = tuple(
        (_rule_label(spec.rules, i).removesuffix(" rules"), r.dtypes, r.note)
        for i, r in enumerate(spec.rules)
    )
    kind = {"major": "vector-major", "minor": "vector-minor"}.get(spec.kind, spec.kind)
    return FormatInfo(
        name=f.name,
        value=int(f),
        kind=kind,
        vector_size=spec.vector,
        min_rank=spec.min_rank,
        dtypes=dtypes,
        dla_only=dla_only,
        rules=label,
        history=history,
        description=spec.description,
        _from_end=spec.from_end,
    )


# ---------------------------------------------------------------------------
# Format + shape + dtype -> Layout
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Plan:
    fmt: TensorFormat
    shape: tuple[int, ...]
    dtype_given: DataType | None
    layout: Layout | None  # None only for a rank-0 kLINEAR tensor
    storage: tuple[int, ...]
    vector: int
    itemsize: int  # bytes per scalar (1 when the dtype is not known)


_LEAD = "NABEFGIJ"


def _dims(rank: int, from_end: int) -> tuple[str, int]:
    """Logical dim letters for a rank (the vectorized axis, if any, named C) and that axis."""
    if from_end == 0:
        tail = "CHW"[-rank:] if 0 < rank <= 3 else ("CHW" if rank else "")
        return _LEAD[: max(rank - 3, 0)] + tail, -1
    tail = "HW" if from_end == 3 else "DHW"
    return _LEAD[: rank - from_end] + "C" + tail, rank - from_end


def _dla_name(dla: Any) -> str:
    if not isinstance(dla, str):
        raise TypeError(f"dla: expected 'orin' or 'xavier', got {type(dla).__name__}")
    key = dla.strip().lower()
    if key not in _DLA_LINE_BYTES:
        raise LayoutError(
            f"dla={dla!r}: expected 'orin' (64-byte lines) or 'xavier' (32-byte lines)"
        )
    return key


def _resolve_device(f: TensorFormat, info: FormatInfo, device: Any) -> str:
    if device is None:
        return "dla" if info.dla_only else "gpu"
    if not isinstance(device, str):
        raise TypeError(f"device: expected 'gpu' or 'dla', got {type(device).__name__}")
    d = device.strip().lower()
    if d not in ("gpu", "dla"):
        raise LayoutError(f"device={device!r}: expected 'gpu' or 'dla'")
    if d == "gpu" and info.dla_only:
        raise LayoutError(
            f"device='gpu': {f.name} is DLA-only ({info.rules}); use device='dla' "
            "or an older version profile"
        )
    if d == "dla" and f not in _DLA_FORMATS:
        raise LayoutError(
            f"device='dla': {f.name} is not a DLA format; DLA takes "
            f"{', '.join(x.name for x in _DLA_FORMATS)}"
        )
    return d


def _plan(
    fmt: Any,
    shape: Any,
    dtype: Any,
    dla: Any = "orin",
    device: Any = None,
    version: Any = None,
    strict: bool = True,
    shape_name: str = "shape",
    dtype_name: str = "dtype",
) -> _Plan:
    """Validate and normalise the arguments, then build (or reuse) the plan."""
    f = _format(fmt)
    sh = _int_tuple(shape, shape_name)
    dt = None if dtype is None else data_type(dtype, dtype_name)
    dla_key = "orin" if dla is None else _dla_name(dla)
    if device is not None and not isinstance(device, str):
        raise TypeError(f"device: expected 'gpu' or 'dla', got {type(device).__name__}")
    if not isinstance(strict, bool):
        raise TypeError(f"strict: expected a bool, got {type(strict).__name__}")
    return _plan_cached(
        f, sh, dt, dla_key, device, _version(version), strict, shape_name, dtype_name
    )


@lru_cache(maxsize=512)
def _plan_cached(
    f: TensorFormat,
    sh: tuple[int, ...],
    dtype: DataType | None,
    dla: str,
    device: str | None,
    version: Version,
    strict: bool,
    shape_name: str,
    dtype_name: str,
) -> _Plan:
    info = format_info(f, version, strict)
    spec = _SPECS[f]
    rank = len(sh)
    if any(s < 0 for s in sh):
        raise LayoutError(f"{shape_name}={sh}: extents must be >= 0")
    if spec.kind == "dla" and rank != 4:
        raise LayoutError(
            f"{shape_name}={sh}: {f.name} needs a 4-D NCHW tensor (rank {rank} given)"
        )
    if rank < info.min_rank:
        raise LayoutError(
            f"{shape_name}={sh}: {f.name} is only available for dimensions >= {info.min_rank} "
            f"(rank {rank} given)"
        )
    if rank > _MAX_RANK:
        raise LayoutError(f"{shape_name}={sh}: TensorRT tensors have at most {_MAX_RANK} dims")
    dev = _resolve_device(f, info, device)
    if dtype is None:
        if spec.kind == "dla":
            raise LayoutError(
                f"{dtype_name}: {f.name} pads rows in bytes, so it needs the dtype (FP16 or INT8)"
            )
        dt = None
    else:
        dt = data_type(dtype, dtype_name)
        if not info.dtypes:
            raise LayoutError(f"{f.name} is not available under {info.rules}")
        if dt not in info.dtypes:
            allowed = " or ".join(t.short for t in info.dtypes)
            raise LayoutError(
                f"{dtype_name}: {f.name} requires {allowed} ({info.rules}); got {dt.name} "
                f"({dt.short})" + ("" if not strict else "; see format_info(fmt).history")
            )
    if dt is not None and dt.bits < 8:
        raise LayoutError(
            f"{dtype_name}: {dt.name} is packed two per byte and its nibble order is not "
            "documented; layoutkit moves whole-byte types only"
        )
    if dev == "dla":
        if dt is not None and dt not in (_H, _I8):
            raise LayoutError(f"{dtype_name}: DLA formats take FP16 or INT8, got {dt.name}")
        if rank < 3:
            raise LayoutError(f"{shape_name}={sh}: DLA tensors need C, H and W (rank >= 3)")
        for name, ext in zip("CHW", sh[-3:]):
            if not 1 <= ext <= _DLA_MAX_EXTENT:
                raise LayoutError(
                    f"{shape_name}={sh}: {name}={ext}; on DLA C, H and W must lie in "
                    f"[1, {_DLA_MAX_EXTENT}]"
                )
    esize = (dt.bits // 8) if dt is not None else 1

    dims, v = _dims(rank, spec.from_end)
    V = spec.vector
    if spec.kind == "linear":
        lay = Layout(dims, dims=dims) if rank else None
        storage = sh
    elif spec.kind == "major":
        if dev == "dla" and f is _TF.kCHW4:
            line = _DLA_LINE_BYTES[_dla_name(dla)]
            if sh[v] > 4:
                raise LayoutError(f"{shape_name}={sh}: C={sh[v]}; kCHW4 on DLA needs C <= 4")
            row = sh[-1] * V * esize
            if row % line:
                raise LayoutError(
                    f"{shape_name}={sh}: kCHW4 on DLA ({dla}) needs the line stride W*4*elementSize "
                    f"= {row} bytes to be a multiple of {line}"
                )
        lay = Layout(dims + f"{V}c", dims=dims)
        storage = (*sh[:v], -(-sh[v] // V), *sh[v + 1 :], V)
    elif spec.kind == "minor":
        order = dims[:v] + dims[v + 1 :] + "C"
        lay = Layout(order + (f"{V}c" if V > 1 else ""), dims=dims)
        storage = (*sh[:v], *sh[v + 1 :], -(-sh[v] // V) * V)
    elif f is _TF.kDLA_LINEAR:
        b = 64 // esize
        lay = Layout(f"NCHW{b}w", dims="NCHW")
        n, c, h, w = sh
        storage = (n, c, h, -(-w // b) * b)
    else:  # kDLA_HWC4
        line = _DLA_LINE_BYTES[_dla_name(dla)]
        n, c, h, w = sh
        if c not in (1, 3, 4):
            raise LayoutError(
                f"{shape_name}={sh}: C={c}; kDLA_HWC4 takes C in {{1, 3, 4}} "
                "(1 = grayscale, 3 or 4 = colour)"
            )
        cp = 1 if c == 1 else 4
        b = line // cp // esize
        lay = Layout(f"NHWC{b}w" + ("4c" if cp == 4 else ""), dims="NCHW")
        storage = (n, h, -(-w // b) * b, cp)
    return _Plan(f, sh, dt, lay, storage, V, esize)


# ---------------------------------------------------------------------------
# Public geometry
# ---------------------------------------------------------------------------

_GEOMETRY_DOC = """
    dla : {"orin", "xavier"}, optional
        DLA generation for the line strides of kDLA_HWC4 (64 or 32 bytes) and
        for kCHW4 used on DLA. Ignored by GPU formats.
    device : {"gpu", "dla"}, optional
        Where the tensor is used. Default: "dla" for the DLA formats and for
        formats that are DLA-only under the rules (kCHW16 from 10.12), else
        "gpu". On DLA the dtype must be FP16 or INT8 and C, H, W in [1, 8192].
    version : str, optional
        TensorRT version profile for the dtype rules (default current, 10.12+).
    strict : bool, optional
        False accepts any dtype some TensorRT version allowed.
"""


def layout(
    fmt: Any,
    shape: Sequence[int],
    dtype: Any = None,
    dla: str = "orin",
    *,
    device: str | None = None,
    version: Any = None,
    strict: bool = True,
) -> Layout:
    """The core :class:`layoutkit.Layout` a format stores a tensor of ``shape`` in.

    The layout's packed buffer, reshaped (without copying) to
    :func:`storage_shape`, is TensorRT's storage array.

    Examples
    --------
    >>> layout("kHWC8", (1, 3, 2, 2))
    Layout('NHWC8c', dims='NCHW')
    >>> layout("kDLA_HWC4", (1, 3, 2, 5), "int8", dla="orin")
    Layout('NHWC16w4c', dims='NCHW')
    """
    plan = _plan(fmt, shape, dtype, dla, device, version, strict)
    if plan.layout is None:
        raise LayoutError("shape=(): a rank-0 tensor has no layout (it is one scalar)")
    return plan.layout


def storage_shape(
    fmt: Any,
    shape: Sequence[int],
    dtype: Any = None,
    dla: str = "orin",
    *,
    device: str | None = None,
    version: Any = None,
    strict: bool = True,
) -> tuple[int, ...]:
    """TensorRT's storage array for a logical tensor of ``shape`` (seed-systems §4.3/§4.5).

    Parameters
    ----------
    fmt : TensorFormat, str or int
        The format.
    shape : sequence of int
        The logical (kLINEAR) shape: N C H W, N C D H W, or more leading dims.
    dtype : DataType, str or numpy dtype, optional
        Needed for the DLA formats (their padding is in bytes); checked against
        the format's dtype rules when given.
    """
    return _plan(fmt, shape, dtype, dla, device, version, strict).storage


storage_shape.__doc__ = (
    (storage_shape.__doc__ or "")
    + _GEOMETRY_DOC
    + """
    Returns
    -------
    tuple of int

    Examples
    --------
    >>> storage_shape("kCHW4", (2, 5, 3, 3))
    (2, 2, 3, 3, 4)
    >>> storage_shape("kHWC8", (2, 10, 3, 4))
    (2, 3, 4, 16)
    >>> storage_shape("kDLA_LINEAR", (1, 3, 5, 10), "fp16")
    (1, 3, 5, 32)
"""
)


def nbytes(
    fmt: Any,
    shape: Sequence[int],
    dtype: Any,
    dla: str = "orin",
    *,
    device: str | None = None,
    version: Any = None,
    strict: bool = True,
) -> int:
    """Total bytes of the storage array, padding included.

    >>> nbytes("kCHW32", (1, 40, 7, 9), "fp16")
    8064
    """
    plan = _plan(fmt, shape, dtype, dla, device, version, strict)
    return math.prod(plan.storage) * plan.itemsize


def offset(
    fmt: Any,
    shape: Sequence[int],
    index: Sequence[int],
    dtype: Any = None,
    dla: str = "orin",
    *,
    bytes: bool = False,
    device: str | None = None,
    version: Any = None,
    strict: bool = True,
) -> int:
    """Offset of a logical ``index`` in the storage array, in scalars or (``bytes=True``) bytes.

    Raises
    ------
    LayoutError
        For an index out of range (no wrap-around), or when ``bytes=True`` and
        ``dtype`` is None.

    Examples
    --------
    >>> offset("kHWC8", (2, 10, 3, 4), (1, 9, 2, 3))
    377
    >>> offset("kCHW32", (1, 40, 7, 9), (0, 35, 3, 4), "fp16", bytes=True)
    6022
    """
    plan = _plan(fmt, shape, dtype, dla, device, version, strict)
    if bytes and plan.dtype_given is None:
        raise LayoutError("dtype: bytes=True needs the dtype")
    if plan.layout is None:
        if len(_int_tuple(index, "index")) != 0:
            raise LayoutError(f"index={index}: a rank-0 tensor takes the index ()")
        return 0
    off = plan.layout.offset(plan.shape, index)
    return off * plan.itemsize if bytes else off


def _storage_strides(storage: tuple[int, ...]) -> list[int]:
    st = [1] * len(storage)
    for k in range(len(storage) - 2, -1, -1):
        st[k] = st[k + 1] * storage[k + 1]
    return st


def storage_strides(
    fmt: Any,
    shape: Sequence[int],
    dtype: Any = None,
    dla: str = "orin",
    *,
    unit: str = "scalars",
    device: str | None = None,
    version: Any = None,
    strict: bool = True,
) -> tuple[int, ...]:
    """C-order strides of the storage array, in ``unit`` "scalars" or "bytes".

    >>> storage_strides("kCHW4", (2, 5, 3, 3), "int8")
    (72, 36, 12, 4, 1)
    >>> storage_strides("kHWC8", (1, 3, 2, 2), "fp16", unit="bytes")
    (64, 32, 16, 2)
    """
    plan = _plan(fmt, shape, dtype, dla, device, version, strict)
    st = _storage_strides(plan.storage)
    return tuple(s * _unit_factor(unit, plan, 1) for s in st)


def _unit_factor(unit: Any, plan: _Plan, per_element: int) -> int:
    if unit in ("scalars", "elements"):
        return 1
    if unit == "bytes":
        if plan.dtype_given is None:
            raise LayoutError("dtype: unit='bytes' needs the dtype")
        return per_element * plan.itemsize
    raise LayoutError(f"unit={unit!r}: expected 'elements' or 'bytes'")


def strides(
    fmt: Any,
    shape: Sequence[int],
    dtype: Any = None,
    dla: str = "orin",
    *,
    unit: str = "elements",
    device: str | None = None,
    version: Any = None,
    strict: bool = True,
) -> tuple[int, ...]:
    """Per logical dim strides in TensorRT's ``getTensorStrides`` convention.

    With ``unit="elements"`` the strides count TensorRT *elements*: vectors of
    :attr:`FormatInfo.vector_size` scalars ("for kHWC8 a stride of one spans 8
    scalars"); the vectorized dim's stride is the step from ``c`` to ``c + V``.
    With ``unit="bytes"`` the same strides are in bytes (elements x V x dtype
    size). Non-vectorized formats (kLINEAR, kHWC, kDHWC, the DLA formats) count
    scalars.

    Examples
    --------
    >>> strides("kCHW4", (2, 5, 3, 3))
    (18, 9, 3, 1)
    >>> strides("kHWC8", (2, 10, 3, 4))
    (24, 1, 8, 2)
    >>> strides("kHWC8", (2, 10, 3, 4), "fp16", unit="bytes")
    (384, 16, 128, 32)
    >>> strides("kDLA_HWC4", (1, 3, 2, 5), "int8", dla="xavier")
    (64, 1, 32, 4)
    """
    plan = _plan(fmt, shape, dtype, dla, device, version, strict)
    spec = _SPECS[plan.fmt]
    V = plan.vector
    st = _storage_strides(plan.storage)
    rank = len(plan.shape)
    out: list[int] = []
    if spec.kind in ("linear",) or plan.fmt is _TF.kDLA_LINEAR:
        out = st[:rank]
    elif plan.fmt is _TF.kDLA_HWC4:
        out = [st[0], st[3], st[1], st[2]]
    else:
        v = rank - spec.from_end
        for d in range(rank):
            if spec.kind == "major":
                out.append(st[d] // V)
            elif d == v:
                out.append(1)
            else:
                out.append(st[d if d < v else d - 1] // V)
    f = _unit_factor(unit, plan, V)
    return tuple(s * f for s in out)


# ---------------------------------------------------------------------------
# Data movement
# ---------------------------------------------------------------------------


def _array(x: Any, name: str) -> np.ndarray:
    if isinstance(x, str):  # np.asarray would make it a 0-d string array
        raise TypeError(f"{name}: expected an array, got str")
    return _as_array(x, name)


def _declared(arr: np.ndarray, dtype: Any, name: str) -> Any:
    """The dtype to validate: ``dtype`` if given (sizes must agree), else the array's."""
    if dtype is None:
        return arr.dtype
    dt = data_type(dtype)
    if dt.bits >= 8 and arr.dtype.itemsize != dt.bits // 8:
        raise LayoutError(
            f"{name}: dtype {arr.dtype} has {arr.dtype.itemsize}-byte elements but "
            f"dtype={dt.name} is {dt.bits // 8} bytes"
        )
    return dt


_FAST_PLANS = CallMemo(512)  # plans of successful calls, by their arguments


def to_format(
    x: Any,
    fmt: Any,
    dla: str = "orin",
    *,
    dtype: Any = None,
    device: str | None = None,
    version: Any = None,
    strict: bool = True,
    pad_value: Any = 0,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Pack a kLINEAR tensor into a TensorRT format, in one pass.

    Parameters
    ----------
    x : array_like
        The logical tensor: N C H W, N C D H W (kCDHW32, kDHWC8, kDHWC), any
        rank the format allows. Its dtype is the TensorRT type (float32 = kFLOAT,
        float16 = kHALF, ml_dtypes.bfloat16 = kBF16, int8, uint8, ...).
    fmt : TensorFormat, str or int
        The target format (``"kCHW32"``, ``"CHW32"``, ``TensorFormat.kCHW32``).
    dla : {"orin", "xavier"}, optional
        DLA generation (line strides of kDLA_HWC4; kCHW4 on DLA).
    dtype : DataType or str, optional
        The TensorRT type of ``x`` when its numpy dtype does not say it (e.g.
        bf16 bits held as uint16); must have the same size.
    device, version, strict
        See :func:`storage_shape`.
    pad_value : scalar, optional
        Value of the padding slots (default 0; TensorRT leaves them undefined).
    out : ndarray, optional
        C-contiguous writeable destination of x's dtype and the storage size.

    Returns
    -------
    ndarray
        The storage array (:func:`storage_shape`), C-contiguous, x's dtype.

    Raises
    ------
    LayoutError
        If the dtype, rank or channel count is not allowed for the format; the
        message quotes the rule.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.arange(12, dtype=np.float16).reshape(1, 3, 2, 2)
    >>> b = to_format(x, "kHWC8")
    >>> b.shape, b[0, 1, 1].tolist()
    ((1, 2, 2, 8), [3.0, 7.0, 11.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    >>> to_format(x, "kCHW4")
    Traceback (most recent call last):
    ...
    layoutkit._errors.LayoutError: x: kCHW4 requires INT8 (TensorRT 10.12+ rules); got kHALF (FP16); see format_info(fmt).history
    """
    key = None
    args = ("tensorrt.to_format", fmt, dla, device, strict, pad_value)
    if type(x) is np.ndarray and dtype is None and version is None:
        done = _REPEATS.run(x, args, out, None)
        if done is not None:
            return done  # a repeat, run in C (see _engine._REPEATS)
        # A repeated call skips re-validating arguments it has seen succeed.
        key = ("to", fmt, x.shape, x.dtype, dla, device, strict)
        plan = _FAST_PLANS.get(key)
        if plan is not None and plan.layout is not None:
            res = _engine_pack(plan.layout, x, pad_value, out)
            if out is not None and out.shape == plan.storage:
                return out  # res is out, in the layout's own shape
            return res.reshape(plan.storage)
    arr = _array(x, "x")
    plan = _plan(
        fmt,
        arr.shape,
        _declared(arr, dtype, "x"),
        dla,
        device,
        version,
        strict,
        shape_name="x.shape",
        dtype_name="x",
    )
    _FAST_PLANS.keep(key, plan)
    if plan.layout is None:
        if out is not None:
            _check_out(out, arr.dtype, plan.storage, (arr,))[...] = arr
            return out
        return np.array(arr, copy=True)
    result = plan.layout.pack(arr, pad_value, out)
    if key is not None and arr is x:
        _REPEATS.alias(x, (0, plan.layout, pad_value, None, None, None), args, plan.storage)
    return result.reshape(plan.storage)


def from_format(
    buf: Any,
    fmt: Any,
    shape: Sequence[int],
    dla: str = "orin",
    *,
    dtype: Any = None,
    device: str | None = None,
    version: Any = None,
    strict: bool = True,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Unpack a buffer in a TensorRT format to the kLINEAR tensor of ``shape``.

    Parameters
    ----------
    buf : array_like
        The storage array, in any shape with exactly the storage size; its dtype
        is the element type. A raw ``uint8`` buffer is accepted with ``dtype=``.
    fmt : TensorFormat, str or int
        The format of ``buf``.
    shape : sequence of int
        The logical (kLINEAR) shape.
    dla : {"orin", "xavier"}, optional
        DLA generation.
    dtype : DataType or str, optional
        The TensorRT type when ``buf``'s dtype does not say it.
    device, version, strict
        See :func:`storage_shape`.
    out : ndarray, optional
        C-contiguous writeable destination of ``shape``.

    Returns
    -------
    ndarray
        The logical tensor of ``shape``.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.arange(30, dtype=np.int8).reshape(1, 3, 2, 5)
    >>> b = to_format(x, "kDLA_HWC4", dla="xavier")
    >>> b.shape
    (1, 2, 8, 4)
    >>> np.array_equal(from_format(b, "kDLA_HWC4", x.shape, dla="xavier"), x)
    True
    """
    key = None
    args = ("tensorrt.from_format", fmt, shape, dla, device, strict)
    if type(buf) is np.ndarray and dtype is None and version is None and exact_shape(shape):
        done = _REPEATS.run(buf, args, out, None)
        if done is not None:
            return done  # a repeat, run in C (see _engine._REPEATS)
        key = ("from", fmt, shape, buf.shape, buf.dtype, dla, device, strict)
        plan = _FAST_PLANS.get(key)
        if plan is not None and plan.layout is not None:
            return plan.layout.unpack(buf, plan.shape, out)
    arr = _array(buf, "buf")
    if dtype is not None:
        dt = data_type(dtype)
        np_dt = numpy_dtype(dt)
        if arr.dtype != np_dt and arr.dtype == np.uint8 and np_dt.itemsize > 1:
            if arr.nbytes % np_dt.itemsize:
                raise LayoutError(
                    f"buf: {arr.nbytes} bytes is not a whole number of {dt.name} elements"
                )
            arr = np.ascontiguousarray(arr).reshape(-1).view(np_dt)
    plan = _plan(
        fmt,
        shape,
        _declared(arr, dtype, "buf"),
        dla,
        device,
        version,
        strict,
        dtype_name="buf",
    )
    need = math.prod(plan.storage)
    if arr.size != need:
        raise LayoutError(
            f"buf holds {arr.size} elements but {plan.fmt.name} of shape {plan.shape} needs "
            f"{need} (storage array {list(plan.storage)})"
        )
    _FAST_PLANS.keep(key, plan)
    if plan.layout is None:
        res = np.array(arr.reshape(()), copy=True)
        if out is not None:
            _check_out(out, res.dtype, (), (arr,))[...] = res
            return out
        return res
    result = plan.layout.unpack(arr, plan.shape, out)
    if key is not None and arr is buf:
        _REPEATS.alias(buf, (1, plan.layout, plan.shape, None, None, None), args, plan.shape)
    return result
