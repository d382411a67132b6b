"""GGML tensors and quantized block types, byte-exact with ggml's reference C code.

Three pieces:

* the type table (:class:`GGMLType`, :func:`type_info`): every ``enum ggml_type``
  value with ggml's block size and bytes per block (taken from ggml's C
  definitions: Q8_1 is 36 bytes, not gguf-py's 40); removed ids are listed and
  marked ``removed``;
* :func:`quantize` / :func:`dequantize`: Cython ports of ggml's
  ``quantize_row_*_ref`` and ``dequantize_row_*`` that give the same bytes and
  the same float32 bit patterns, with the same array shapes as the ``gguf``
  package (the last axis holds whole blocks);
* the tensor model (:func:`new_tensor`, :class:`Tensor`): ggml's ``ne``/``nb``
  bookkeeping (``ne[0]`` fastest, byte strides), ``permute`` / ``transpose`` /
  ``view`` / ``reshape`` / ``cont`` and the contiguity predicates exactly as
  ``src/ggml.c`` defines them, zero-copy numpy views and a bridge to
  :class:`layoutkit.Layout` for :func:`layoutkit.convert`.

Exactness: every float operation of ggml's reference code is reproduced in
IEEE binary32 in the same order (no fused multiply-add, sequential sums and
max searches, ggml's own fp16/bf16 rounding, ``roundf`` vs ``nearest_int``
where ggml uses each). The tests compare against ggml's C library (optional
``ggml-python``), the ``gguf`` package and committed digests of ggml's output.
Blocks holding NaN follow ggml's sequential semantics as compiled for x86-64
(its float->int conversions are undefined there; those bytes are not a
promise). On x86-64 CPUs with AVX2 the Q4_0/Q8_0 quantizers and dequantizers
use AVX2 builds that give identical bits; ``LAYOUTKIT_GGML_KERNELS=portable``
turns them off.

>>> import numpy as np, layoutkit as lk
>>> x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(2, 32)
>>> q = lk.ggml.quantize(x, "Q8_0")
>>> q.shape, q.dtype
((2, 34), dtype('uint8'))
>>> bool(np.abs(lk.ggml.dequantize(q, "Q8_0") - x).max() < 0.01)
True
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _ggml_quants as _k
from ._errors import LayoutError

__all__ = [
    "GGML_MAX_DIMS",
    "GGML_MEM_ALIGN",
    "DTypeError",
    "GGMLType",
    "GGUFFile",
    "GGUFTensorInfo",
    "Tensor",
    "TypeInfo",
    "dequantize",
    "from_numpy",
    "load_gguf",
    "new_tensor",
    "quantize",
    "row_size",
    "type_info",
    "types",
]

GGML_MAX_DIMS = 4
GGML_MEM_ALIGN = 16


class DTypeError(LayoutError, TypeError):
    """An array of the wrong dtype (both a :class:`LayoutError` and a ``TypeError``)."""


class GGMLType(enum.IntEnum):
    """ggml's ``enum ggml_type`` (values are ggml's ids; removed ids included)."""

    F32 = 0
    F16 = 1
    Q4_0 = 2
    Q4_1 = 3
    Q4_2 = 4  # removed
    Q4_3 = 5  # removed
    Q5_0 = 6
    Q5_1 = 7
    Q8_0 = 8
    Q8_1 = 9
    Q2_K = 10
    Q3_K = 11
    Q4_K = 12
    Q5_K = 13
    Q6_K = 14
    Q8_K = 15
    IQ2_XXS = 16
    IQ2_XS = 17
    IQ3_XXS = 18
    IQ1_S = 19
    IQ4_NL = 20
    IQ3_S = 21
    IQ2_S = 22
    IQ4_XS = 23
    I8 = 24
    I16 = 25
    I32 = 26
    I64 = 27
    F64 = 28
    IQ1_M = 29
    BF16 = 30
    Q4_0_4_4 = 31  # removed
    Q4_0_4_8 = 32  # removed
    Q4_0_8_8 = 33  # removed
    TQ1_0 = 34
    TQ2_0 = 35
    IQ4_NL_4_4 = 36  # removed
    IQ4_NL_4_8 = 37  # removed
    IQ4_NL_8_8 = 38  # removed
    MXFP4 = 39
    NVFP4 = 40
    Q1_0 = 41
    Q2_0 = 42


GGML_TYPE_COUNT = 43

# id: (ggml type_name, block size, bytes per block); sizes from ggml-common.h / ggml.c type_traits
_TABLE: dict[int, tuple[str, int, int]] = {
    0: ("f32", 1, 4),
    1: ("f16", 1, 2),
    2: ("q4_0", 32, 18),
    3: ("q4_1", 32, 20),
    4: ("DEPRECATED", 0, 0),
    5: ("DEPRECATED", 0, 0),
    6: ("q5_0", 32, 22),
    7: ("q5_1", 32, 24),
    8: ("q8_0", 32, 34),
    9: ("q8_1", 32, 36),
    10: ("q2_K", 256, 84),
    11: ("q3_K", 256, 110),
    12: ("q4_K", 256, 144),
    13: ("q5_K", 256, 176),
    14: ("q6_K", 256, 210),
    15: ("q8_K", 256, 292),
    16: ("iq2_xxs", 256, 66),
    17: ("iq2_xs", 256, 74),
    18: ("iq3_xxs", 256, 98),
    19: ("iq1_s", 256, 50),
    20: ("iq4_nl", 32, 18),
    21: ("iq3_s", 256, 110),
    22: ("iq2_s", 256, 82),
    23: ("iq4_xs", 256, 136),
    24: ("i8", 1, 1),
    25: ("i16", 1, 2),
    26: ("i32", 1, 4),
    27: ("i64", 1, 8),
    28: ("f64", 1, 8),
    29: ("iq1_m", 256, 56),
    30: ("bf16", 1, 2),
    31: ("DEPRECATED", 0, 0),
    32: ("DEPRECATED", 0, 0),
    33: ("DEPRECATED", 0, 0),
    34: ("tq1_0", 256, 54),
    35: ("tq2_0", 256, 66),
    36: ("DEPRECATED", 0, 0),
    37: ("DEPRECATED", 0, 0),
    38: ("DEPRECATED", 0, 0),
    39: ("mxfp4", 32, 17),
    40: ("nvfp4", 64, 36),
    41: ("q1_0", 128, 18),
    42: ("q2_0", 64, 18),
}

_REMOVED_NOTE = {
    4: "Q4_2 was removed from ggml",
    5: "Q4_3 was removed from ggml",
    31: "Q4_0_4_4 was removed from ggml (use Q4_0 with runtime repacking)",
    32: "Q4_0_4_8 was removed from ggml (use Q4_0 with runtime repacking)",
    33: "Q4_0_8_8 was removed from ggml (use Q4_0 with runtime repacking)",
    36: "IQ4_NL_4_4 was removed from ggml (use IQ4_NL with runtime repacking)",
    37: "IQ4_NL_4_8 was removed from ggml (use IQ4_NL with runtime repacking)",
    38: "IQ4_NL_8_8 was removed from ggml (use IQ4_NL with runtime repacking)",
}

# numpy element type of the non-block types
_NP_DTYPE: dict[int, str] = {
    0: "<f4",
    1: "<f2",
    24: "i1",
    25: "<i2",
    26: "<i4",
    27: "<i8",
    28: "<f8",
}


def _bf16_dtype() -> np.dtype[Any]:
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


@dataclass(frozen=True)
class TypeInfo:
    """One row of the GGML type table.

    Attributes
    ----------
    name : str
        Upper-case enum name as in gguf-py (``"Q4_K"``).
    id : int
        ggml's ``enum ggml_type`` value.
    block_size : int
        Elements per block (1 for plain types, 0 for removed ids).
    type_size : int
        Bytes per block (0 for removed ids).
    ggml_name : str
        ggml's ``ggml_type_name`` (``"q4_K"``; ``"DEPRECATED"`` for removed ids).
    removed : bool
        The id was removed from ggml and has no layout.
    is_quantized : bool
        ggml's ``ggml_is_quantized`` (every block type).
    can_quantize, can_dequantize : bool
        Whether :func:`quantize` / :func:`dequantize` support the type.
    note : str
        Why a removed id was removed, or what is special about the type.
    """

    name: str
    id: int
    block_size: int
    type_size: int
    ggml_name: str
    removed: bool
    is_quantized: bool
    can_quantize: bool
    can_dequantize: bool
    note: str = ""

    @property
    def type(self) -> GGMLType:
        """The :class:`GGMLType` member."""
        return GGMLType(self.id)

    def row_size(self, n: int) -> int:
        """Bytes of ``n`` elements (``ggml_row_size``); ``n`` a multiple of the block size."""
        n = _as_int(n, "n")
        if self.removed:
            raise LayoutError(f"type {self.name} (id {self.id}) has no layout: {self.note}")
        if n < 0 or n % self.block_size:
            raise LayoutError(
                f"n={n}: expected a non-negative multiple of {self.name}'s block size "
                f"{self.block_size}"
            )
        return n // self.block_size * self.type_size


_KREF = "quantize: ggml's *_ref search, or its *_impl search with imatrix="
_NOTES = {
    9: "activation format; ggml has no to_float, dequantize here gives q*d",
    10: _KREF,
    11: _KREF,
    12: _KREF,
    13: _KREF,
    14: _KREF,
    15: "activation format; d is float32; bsums of an all-zero block are left 0",
    20: "quantize: ggml_quantize_chunk's search (ntry=7), not quantize_row_iq4_nl_ref's",
    23: "quantize: ggml_quantize_chunk's search (ntry=7), same as quantize_row_iq4_xs_ref",
    41: "d = mean |x| with a sequential fp32 sum",
    42: "not in gguf 0.19.0",
}


def _build_infos() -> dict[int, TypeInfo]:
    infos = {}
    for tid, (gname, bs, ts) in _TABLE.items():
        removed = tid in _REMOVED_NOTE
        infos[tid] = TypeInfo(
            name=GGMLType(tid).name,
            id=tid,
            block_size=bs,
            type_size=ts,
            ggml_name=gname,
            removed=removed,
            is_quantized=(bs > 1),
            can_quantize=(not removed) and bool(_k.can_quantize(tid)),
            can_dequantize=(not removed) and bool(_k.can_dequantize(tid)),
            note=_REMOVED_NOTE.get(tid, _NOTES.get(tid, "")),
        )
    return infos


_INFOS = _build_infos()
_BY_NAME: dict[str, int] = {}
for _tid, _info in _INFOS.items():
    _BY_NAME[_info.name.upper()] = _tid
for _tid, _info in _INFOS.items():
    if not _info.removed:
        _BY_NAME.setdefault(_info.ggml_name.upper(), _tid)


def types() -> list[TypeInfo]:
    """All rows of the type table, in id order (removed ids included, ``removed=True``)."""
    return [_INFOS[t] for t in sorted(_INFOS)]


def type_info(t: Any) -> TypeInfo:
    """Look up a GGML type.

    Parameters
    ----------
    t : str, int or GGMLType
        A name in any case (``"Q4_0"``, ``"q4_k"``, ``"GGML_TYPE_BF16"``), an id
        (``2``) or an enum member (also gguf's ``GGMLQuantizationType``).

    Returns
    -------
    TypeInfo

    Raises
    ------
    LayoutError
        Unknown name or id.
    TypeError
        ``t`` is not a str or an integer.

    Examples
    --------
    >>> import layoutkit as lk
    >>> i = lk.ggml.type_info("q8_1")
    >>> i.name, i.id, i.block_size, i.type_size
    ('Q8_1', 9, 32, 36)
    """
    if isinstance(t, TypeInfo):
        return t
    if isinstance(t, str):
        key = t.strip().upper()
        if key.startswith("GGML_TYPE_"):
            key = key[len("GGML_TYPE_") :]
        tid = _BY_NAME.get(key)
        if tid is None:
            names = ", ".join(i.name for i in types() if not i.removed)
            raise LayoutError(f"type {t!r}: unknown GGML type name; expected one of {names}")
        return _INFOS[tid]
    if isinstance(t, (bool, np.bool_)) or not isinstance(t, (int, np.integer)):
        raise TypeError(
            f"type: expected a GGML type name (str), id (int) or GGMLType, got {type(t).__name__}"
        )
    tid = int(t)
    if tid not in _INFOS:
        raise LayoutError(f"type id {tid}: not a ggml_type; expected 0..{GGML_TYPE_COUNT - 1}")
    return _INFOS[tid]


def _usable(t: Any, name: str = "type") -> TypeInfo:
    info = type_info(t)
    if info.removed:
        raise LayoutError(f"{name} {info.name} (id {info.id}) has no layout: {info.note}")
    return info


def row_size(t: Any, n: int) -> int:
    """``ggml_row_size``: bytes of ``n`` elements of type ``t`` (``n``: whole blocks).

    >>> import layoutkit as lk
    >>> lk.ggml.row_size("Q4_0", 4096), lk.ggml.row_size("Q4_K", 4096)
    (2304, 2304)
    """
    return _usable(t).row_size(n)


# ---------------------------------------------------------------------------
# quantize / dequantize
# ---------------------------------------------------------------------------


def _as_int(v: Any, name: str) -> int:
    if isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{name}: expected an int, got bool")
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{name}: expected an int, got {type(v).__name__} {v!r}") from None


def _is_float_dtype(dt: np.dtype[Any]) -> bool:
    if dt.kind == "f":
        return True
    try:
        return dt == _bf16_dtype()
    except ImportError:  # pragma: no cover - ml_dtypes is a dependency
        return False


def quantize(
    x: Any,
    t: Any,
    *,
    imatrix: Any = None,
    out: np.ndarray | None = None,
    threads: int = 1,
) -> np.ndarray:
    """Quantize the rows of ``x`` to GGML type ``t``, byte-exact with ggml's reference C code.

    The result is what ggml's ``ggml_quantize_chunk(t, x, ..., imatrix)`` writes
    (the ``quantize_row_*_ref`` functions where that is what it calls).

    Parameters
    ----------
    x : array_like of float
        Any float dtype (float16/32/64, bfloat16; converted to float32 first, as
        ggml quantizes float32). ``x.shape[-1]`` must be a multiple of the type's
        block size. Any number of leading dims.
    t : str, int or GGMLType
        One of F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, TQ1_0, TQ2_0,
        MXFP4, NVFP4, Q1_0, Q2_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K (with its
        ``bsums``), IQ4_NL and IQ4_XS.
    imatrix : array_like of float, optional
        Importance weights, one per column (``x.shape[-1]`` values, the same for
        every row), as ``ggml_quantize_chunk`` takes them (llama.cpp's
        ``--imatrix`` data for one tensor). Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K,
        IQ4_NL and IQ4_XS then run ggml's weighted searches
        (``quantize_row_*_impl``: ``make_qx_quants`` / ``make_qkx3_quants`` /
        ``make_qp_quants``), with the same bytes as ggml given the same weights.
        The other types ignore it, as ggml does (their quantizers take no
        weights). Without it, the K-quants use ggml's ``quantize_row_*_ref``.
    out : ndarray of uint8, optional
        Destination (C-contiguous, writeable, the result's shape), e.g. to reuse
        a buffer across calls.
    threads : int
        Worker threads (the kernel releases the GIL; rows of blocks are split
        between them). Default 1; the results do not depend on it.

    Returns
    -------
    ndarray of uint8, shape ``(*x.shape[:-1], x.shape[-1] // block_size * type_size)``
        The blocks of each row back to back, as ggml stores them (little-endian).

    Raises
    ------
    LayoutError
        Unsupported type, last dim not a multiple of the block size, 0-d input.
    DTypeError
        ``x`` is not a float array (a ``LayoutError`` and a ``TypeError``).

    Notes
    -----
    NaN input never crashes, but the bytes of a block holding NaN are not
    pinned (ggml's own result there depends on undefined float->int casts).
    The kernel releases the GIL.

    IQ4_NL and IQ4_XS follow ``ggml_quantize_chunk`` (``quantize_iq4_nl`` /
    ``quantize_iq4_xs``, a search over 15 candidate scales, ``ntry = 7``). For
    IQ4_XS that is also what ``quantize_row_iq4_xs_ref`` computes. For IQ4_NL,
    ggml's ``quantize_row_iq4_nl_ref`` (the type's ``from_float_ref``) differs:
    it passes ``ntry = -1``, so it starts from ``d = max / -127`` instead of
    ``-max / -127``, skips the search, and keeps the codes of that first guess
    instead of re-picking them for the refined scale (most random blocks get
    different bytes); and for a block whose largest ``|x|`` is below 1e-15 it
    leaves the codes of the previous block (its code buffer is not reset),
    where ``ggml_quantize_chunk`` writes code 8 (value +1 times scale 0).

    Examples
    --------
    >>> import numpy as np, layoutkit as lk
    >>> lk.ggml.quantize(np.zeros(32, np.float32), "Q4_0").tobytes().hex()  # d = -0.0
    '008088888888888888888888888888888888'
    """
    if imatrix is None and out is not None and type(threads) is int and threads == 1:
        info = _kept_type(_QUANTIZED, t)  # a repeat: checked and run in C
        if (
            info is not None
            and _k.blocks_into(True, info.id, info.block_size, info.type_size, x, out) is not None
        ):
            return out
    info = _usable(t)
    if not info.can_quantize:
        ok = ", ".join(i.name for i in types() if i.can_quantize)
        raise LayoutError(f"type {info.name}: quantize is not supported; supported types: {ok}")
    arr = _as_array(x, "x")
    if not _is_float_dtype(arr.dtype):
        raise DTypeError(
            f"x: expected a float array (float16/32/64 or bfloat16), got dtype {arr.dtype}"
        )
    if arr.ndim == 0:
        raise LayoutError("x: expected at least 1 dimension (rows of elements), got a 0-d array")
    n = arr.shape[-1]
    if n % info.block_size:
        raise LayoutError(
            f"x.shape[-1]={n} (x.shape={arr.shape}): expected a multiple of "
            f"{info.name}'s block size {info.block_size}"
        )
    nthreads = _check_threads(threads)
    qw = _check_imatrix(imatrix, n) if imatrix is not None else None
    x32 = np.ascontiguousarray(arr, dtype=np.float32)
    out_shape = (*arr.shape[:-1], n // info.block_size * info.type_size)
    if out is None:
        alloc = np.zeros if info.id == GGMLType.Q8_K else np.empty
        res = alloc(out_shape, dtype=np.uint8)
    else:
        res = _check_out(out, out_shape, np.dtype(np.uint8), x32)
        if info.id == GGMLType.Q8_K:
            res[...] = 0
    if qw is not None and _k.uses_imatrix(info.id) and n:
        _run_rows(info, x32.reshape(-1, n), qw, res.reshape(-1, out_shape[-1]), nthreads)
        return res
    _run(
        _k.quantize_blocks,
        info,
        x32.reshape(-1),
        res.reshape(-1),
        info.block_size,
        info.type_size,
        nthreads,
    )
    if info.id != GGMLType.Q8_K:  # Q8_K's output is zeroed first: never in C
        _keep_type(_QUANTIZED, t, info)
    return res


def dequantize(q: Any, t: Any, *, out: np.ndarray | None = None, threads: int = 1) -> np.ndarray:
    """Dequantize GGML blocks of type ``t`` to float32, bit-exact with ggml's ``dequantize_row_*``.

    Parameters
    ----------
    q : array_like of uint8, or bytes
        ``q.shape[-1]`` must be a multiple of the type's bytes per block (bytes
        objects are taken as one row).
    t : str, int or GGMLType
        Any type of the table except I8..I64, F64 and removed ids.
    out : ndarray of float32, optional
        Destination (C-contiguous, writeable, the result's shape).
    threads : int
        Worker threads (default 1; the results do not depend on it).

    Returns
    -------
    ndarray of float32, shape ``(*q.shape[:-1], q.shape[-1] // type_size * block_size)``

    Raises
    ------
    LayoutError
        Unsupported type, last dim not whole blocks, 0-d input.
    DTypeError
        ``q`` is not uint8 (view other buffers with ``.view(np.uint8)``).

    Examples
    --------
    >>> import layoutkit as lk
    >>> lk.ggml.dequantize(bytes.fromhex("003c") + bytes(range(1, 33)), "Q8_0")[:4].tolist()
    [1.0, 2.0, 3.0, 4.0]
    """
    if out is not None and type(threads) is int and threads == 1:
        info = _kept_type(_DEQUANTIZED, t)  # a repeat: checked and run in C
        if (
            info is not None
            and _k.blocks_into(False, info.id, info.block_size, info.type_size, q, out) is not None
        ):
            return out
    info = _usable(t)
    if not info.can_dequantize:
        ok = ", ".join(i.name for i in types() if i.can_dequantize)
        raise LayoutError(f"type {info.name}: dequantize is not supported; supported types: {ok}")
    arr = _as_blocks(q, info.name)
    if arr.ndim == 0:
        raise LayoutError("q: expected at least 1 dimension (rows of bytes), got a 0-d array")
    nbytes = arr.shape[-1]
    if nbytes % info.type_size:
        raise LayoutError(
            f"q.shape[-1]={nbytes} (q.shape={arr.shape}): expected whole {info.name} blocks, "
            f"a multiple of {info.type_size} bytes"
        )
    nthreads = _check_threads(threads)
    qc = np.ascontiguousarray(arr)
    out_shape = (*arr.shape[:-1], nbytes // info.type_size * info.block_size)
    if out is None:
        res = np.empty(out_shape, np.float32)
    else:
        res = _check_out(out, out_shape, np.dtype(np.float32), qc)
    _run(
        _k.dequantize_blocks,
        info,
        qc.reshape(-1),
        res.reshape(-1),
        info.type_size,
        info.block_size,
        nthreads,
    )
    _keep_type(_DEQUANTIZED, t, info)
    return res


# The types quantize and dequantize have run, by the type argument as given
# (with its Python type: True is not 1): a repeated call with out= and one
# thread goes straight to blocks_into, which checks the arrays in C (the full
# checks cost ~4 us a call).
_QUANTIZED: dict[tuple[type, Any], TypeInfo] = {}
_DEQUANTIZED: dict[tuple[type, Any], TypeInfo] = {}


def _kept_type(kept: dict[tuple[type, Any], TypeInfo], t: Any) -> TypeInfo | None:
    try:
        return kept.get((type(t), t))
    except TypeError:  # unhashable
        return None


def _keep_type(kept: dict[tuple[type, Any], TypeInfo], t: Any, info: TypeInfo) -> None:
    try:
        if len(kept) < 256:
            kept[(type(t), t)] = info
    except TypeError:
        pass


def _check_imatrix(imatrix: Any, n: int) -> np.ndarray:
    """Importance weights as a contiguous float32 vector of length ``n`` (one per column)."""
    w = _as_array(imatrix, "imatrix")
    if not _is_float_dtype(w.dtype):
        raise DTypeError(f"imatrix: expected a float array, got dtype {w.dtype}")
    if w.ndim != 1 or w.shape[0] != n:
        raise LayoutError(
            f"imatrix.shape={w.shape}: expected ({n},), one weight per column of x "
            f"(x.shape[-1]={n})"
        )
    return np.ascontiguousarray(w, dtype=np.float32)


def _run_rows(
    info: TypeInfo, x2: np.ndarray, qw: np.ndarray, out2: np.ndarray, threads: int
) -> None:
    """Importance-matrix quantizers work on whole rows: split rows across ``threads``."""
    nrows, n = x2.shape
    if nrows == 0:
        return

    def work(a: int, b: int) -> None:
        _k.quantize_rows_imatrix(
            info.id, n, info.block_size, info.type_size,
            x2[a:b].reshape(-1), qw, out2[a:b].reshape(-1),
        )  # fmt: skip

    blocks = nrows * (n // info.block_size)
    chunks = min(threads, nrows, max(1, blocks // 1024))
    if chunks == 1:
        work(0, nrows)
        return
    if _k.native_pool():
        _k.quantize_rows_imatrix(
            info.id, n, info.block_size, info.type_size,
            x2.reshape(-1), qw, out2.reshape(-1), chunks,
        )  # fmt: skip
        return
    from concurrent.futures import ThreadPoolExecutor

    bounds = [nrows * k // chunks for k in range(chunks + 1)]
    with ThreadPoolExecutor(max_workers=chunks) as pool:
        for f in [pool.submit(work, a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]:
            f.result()


def _check_threads(threads: Any) -> int:
    n = _as_int(threads, "threads")
    if n < 1:
        raise LayoutError(f"threads={n}: expected >= 1")
    return n


def _check_out(
    out: Any, shape: tuple[int, ...], dtype: np.dtype[Any], src: np.ndarray
) -> np.ndarray:
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out: expected a numpy array, got {type(out).__name__}")
    if out.dtype != dtype or out.shape != shape:
        raise LayoutError(
            f"out: expected an array of shape {shape} and dtype {dtype}, "
            f"got shape {out.shape} and dtype {out.dtype}"
        )
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise LayoutError("out: expected a C-contiguous, writeable array")
    if np.shares_memory(out, src):
        raise LayoutError("out: must not overlap the input")
    return out


_SLOW_QUANT = frozenset(
    int(t)
    for t in (
        GGMLType.Q2_K, GGMLType.Q3_K, GGMLType.Q4_K, GGMLType.Q5_K, GGMLType.Q6_K,
        GGMLType.IQ4_NL, GGMLType.IQ4_XS,
    )
)  # fmt: skip


def _run(
    kernel: Any,
    info: TypeInfo,
    src: np.ndarray,
    dst: np.ndarray,
    src_per_block: int,
    dst_per_block: int,
    threads: int,
) -> None:
    """Run a block kernel over whole blocks, split across ``threads`` (GIL released)."""
    nblocks = src.size // src_per_block
    if nblocks == 0:
        return
    # enough work per thread to pay for it: the searching quantizers (K-quants,
    # IQ4) cost ~100x more per block than the plain ones
    slow = kernel is _k.quantize_blocks and info.id in _SLOW_QUANT
    chunks = min(threads, max(1, nblocks // (64 if slow else 4096)))
    if chunks == 1:
        kernel(info.id, info.block_size, info.type_size, src, dst)
        return
    if _k.native_pool():  # the kernel splits the blocks across the native pool
        kernel(info.id, info.block_size, info.type_size, src, dst, chunks)
        return
    from concurrent.futures import ThreadPoolExecutor  # builds without the native pool

    bounds = [nblocks * k // chunks for k in range(chunks + 1)]
    with ThreadPoolExecutor(max_workers=chunks) as pool:
        futures = [
            pool.submit(
                kernel,
                info.id,
                info.block_size,
                info.type_size,
                src[a * src_per_block : b * src_per_block],
                dst[a * dst_per_block : b * dst_per_block],
            )
            for a, b in zip(bounds[:-1], bounds[1:], strict=True)
        ]
        for f in futures:
            f.result()


def _as_blocks(q: Any, type_name: str) -> np.ndarray:
    """Quantized blocks ``q`` (a uint8 array, or bytes) as a uint8 array."""
    if isinstance(q, (bytes, bytearray, memoryview)):
        return np.frombuffer(q, dtype=np.uint8)
    arr = _as_array(q, "q")
    if arr.dtype != np.uint8:
        raise DTypeError(
            f"q: expected a uint8 array of {type_name} blocks, got dtype {arr.dtype} "
            "(view raw buffers with .view(np.uint8))"
        )
    return arr


def _as_array(x: Any, name: str) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__dlpack__") and not hasattr(x, "__array_interface__"):
        try:
            return np.from_dlpack(x)
        except Exception as exc:  # pragma: no cover - depends on the producer
            raise TypeError(f"{name}: cannot import via DLPack: {exc}") from None
    try:
        return np.asarray(x)
    except Exception as exc:
        raise TypeError(f"{name}: expected an array, got {type(x).__name__}: {exc}") from None


# ---------------------------------------------------------------------------
# tensor model
# ---------------------------------------------------------------------------


class _SpanView:
    """Expose memory at a raw address as a numpy array (keeps ``owner`` alive)."""

    def __init__(
        self,
        address: int,
        shape: tuple[int, ...],
        typestr: str,
        readonly: bool,
        owner: Any,
        strides: tuple[int, ...] | None = None,
    ) -> None:
        self.__array_interface__ = {
            "version": 3,
            "shape": shape,
            "typestr": typestr,
            "data": (address, readonly),
            "strides": strides,
        }
        self._owner = owner


_MAX_BYTES = (1 << 63) - 1  # ggml sizes are size_t, its extents int64


def _ne4(ne: Sequence[Any], name: str = "ne") -> tuple[int, int, int, int]:
    if not 1 <= len(ne) <= GGML_MAX_DIMS:
        raise LayoutError(f"{name}={tuple(ne)}: expected 1 to {GGML_MAX_DIMS} extents")
    vals = [_as_int(v, f"{name}[{i}]") for i, v in enumerate(ne)]
    for i, v in enumerate(vals):
        if v < 0:
            raise LayoutError(f"{name}={tuple(vals)}: {name}[{i}]={v}; expected >= 0")
    vals += [1] * (GGML_MAX_DIMS - len(vals))
    return (vals[0], vals[1], vals[2], vals[3])


def _packed_nb(info: TypeInfo, ne: tuple[int, ...]) -> tuple[int, int, int, int]:
    nb0 = info.type_size
    nb1 = nb0 * (ne[0] // info.block_size)
    nb2 = nb1 * ne[1]
    nb3 = nb2 * ne[2]
    return (nb0, nb1, nb2, nb3)


def _check_ne0(info: TypeInfo, ne: tuple[int, ...], name: str = "ne") -> None:
    if ne[0] % info.block_size:
        raise LayoutError(
            f"{name}[0]={ne[0]}: expected a multiple of {info.name}'s block size {info.block_size}"
        )


class Tensor:
    """A GGML tensor description: ``type``, ``ne``, ``nb``, ``offset`` and (optionally) its buffer.

    Made by :func:`new_tensor` or :func:`from_numpy`; every method that ggml
    implements as a view (``permute``, ``transpose``, ``view*``, ``reshape*``)
    returns a new :class:`Tensor` over the same buffer, like ggml.

    Attributes
    ----------
    type : GGMLType
    ne : tuple of 4 int
        Elements per dim, ``ne[0]`` the fastest (numpy shape is ``ne`` reversed).
    nb : tuple of 4 int
        Byte strides (for block types ``nb[0]`` is the stride between blocks).
    offset : int
        Byte offset of the first element in ``data`` (ggml's ``view_offs``).
    data : ndarray of uint8 or None
        The base buffer (the whole base tensor), or None for a description only.
    op : str
        The ggml op that made this tensor (``"NONE"``, ``"VIEW"``, ``"PERMUTE"``,
        ``"TRANSPOSE"``, ``"RESHAPE"``, ``"CONT"``).
    """

    __slots__ = ("_base_nbytes", "data", "nb", "ne", "offset", "op", "op_params", "type")

    def __init__(
        self,
        t: Any,
        ne: Sequence[int],
        nb: Sequence[int],
        offset: int = 0,
        data: np.ndarray | None = None,
        op: str = "NONE",
        base_nbytes: int | None = None,
        op_params: tuple[int, ...] = (),
    ) -> None:
        info = _usable(t)
        self.type = GGMLType(info.id)
        self.ne = _ne4(ne)
        nbv = [_as_int(v, f"nb[{i}]") for i, v in enumerate(nb)]
        if len(nbv) != GGML_MAX_DIMS or any(v < 0 for v in nbv):
            raise LayoutError(f"nb={tuple(nbv)}: expected {GGML_MAX_DIMS} byte strides >= 0")
        self.nb = (nbv[0], nbv[1], nbv[2], nbv[3])
        self.offset = _as_int(offset, "offset")
        if self.offset < 0:
            raise LayoutError(f"offset={self.offset}: expected >= 0")
        self.data = data
        self.op = op
        self.op_params = op_params
        self._base_nbytes = self.nbytes if base_nbytes is None else base_nbytes

    # -- basic properties ----------------------------------------------------

    @property
    def info(self) -> TypeInfo:
        """The :class:`TypeInfo` of ``type``."""
        return _INFOS[int(self.type)]

    @property
    def nelements(self) -> int:
        """``ggml_nelements``."""
        return self.ne[0] * self.ne[1] * self.ne[2] * self.ne[3]

    @property
    def nrows(self) -> int:
        """``ggml_nrows`` (ne1 * ne2 * ne3)."""
        return self.ne[1] * self.ne[2] * self.ne[3]

    @property
    def n_dims(self) -> int:
        """``ggml_n_dims``: 1 + the last dim with ``ne > 1`` (at least 1)."""
        for i in range(GGML_MAX_DIMS - 1, 0, -1):
            if self.ne[i] > 1:
                return i + 1
        return 1

    @property
    def nbytes(self) -> int:
        """``ggml_nbytes``: from the first byte to one past the last byte (0 if any ne <= 0)."""
        if any(v <= 0 for v in self.ne):
            return 0
        info = self.info
        if info.block_size == 1:
            n = info.type_size
            for i in range(GGML_MAX_DIMS):
                n += (self.ne[i] - 1) * self.nb[i]
            return n
        n = self.ne[0] * self.nb[0] // info.block_size
        for i in range(1, GGML_MAX_DIMS):
            n += (self.ne[i] - 1) * self.nb[i]
        return n

    @property
    def nbytes_pad(self) -> int:
        """``ggml_nbytes_pad``: ``nbytes`` rounded up to ``GGML_MEM_ALIGN`` (16)."""
        return (self.nbytes + GGML_MEM_ALIGN - 1) & ~(GGML_MEM_ALIGN - 1)

    @property
    def row_size(self) -> int:
        """``ggml_row_size(type, ne[0])``."""
        return self.info.row_size(self.ne[0])

    @property
    def shape(self) -> tuple[int, ...]:
        """The numpy shape: ``ne`` reversed, ``n_dims`` dims (like gguf-py; empty dims kept)."""
        return tuple(reversed(self.ne[: self._np_ndim()]))

    def _np_ndim(self) -> int:
        nd = self.n_dims
        for i in range(GGML_MAX_DIMS - 1, nd - 1, -1):
            if self.ne[i] == 0:
                return i + 1
        return nd

    @property
    def shape4(self) -> tuple[int, int, int, int]:
        """The 4-d numpy shape ``(ne3, ne2, ne1, ne0)``."""
        return (self.ne[3], self.ne[2], self.ne[1], self.ne[0])

    def __repr__(self) -> str:
        return (
            f"Tensor({self.type.name}, ne={self.ne}, nb={self.nb}, offset={self.offset}, "
            f"op={self.op})"
        )

    # -- predicates (src/ggml.c) ---------------------------------------------

    def _contiguous_n(self, n: int) -> bool:
        info = self.info
        nxt = info.type_size
        if self.ne[0] != info.block_size and self.nb[0] != nxt:
            return False
        nxt *= self.ne[0] // info.block_size
        for i in range(1, GGML_MAX_DIMS):
            if i > n:
                if self.ne[i] != 1 and self.nb[i] != nxt:
                    return False
                nxt *= self.ne[i]
            else:
                nxt = self.ne[i] * self.nb[i]  # this dim need not be contiguous
        return True

    def is_contiguous(self) -> bool:
        """``ggml_is_contiguous`` (= ``_0``): packed, no gaps or permutation (ne 1 dims ignored)."""
        return self._contiguous_n(0)

    def is_contiguous_0(self) -> bool:
        """``ggml_is_contiguous_0`` (same as :meth:`is_contiguous`)."""
        return self._contiguous_n(0)

    def is_contiguous_1(self) -> bool:
        """``ggml_is_contiguous_1``: dim 1 may be strided; dims >= 2 packed relative to it."""
        return self._contiguous_n(1)

    def is_contiguous_2(self) -> bool:
        """``ggml_is_contiguous_2``: dims 1 and 2 may be strided; dim 3 packed relative to dim 2."""
        return self._contiguous_n(2)

    def is_contiguously_allocated(self) -> bool:
        """``ggml_is_contiguously_allocated``: ``nbytes == nelements * type_size / block_size``."""
        info = self.info
        return self.nbytes == self.nelements * info.type_size // info.block_size

    def is_contiguous_rows(self) -> bool:
        """``ggml_is_contiguous_rows``: ``ne[0] == block_size or nb[0] == type_size``."""
        return self.ne[0] == self.info.block_size or self.nb[0] == self.info.type_size

    def is_contiguous_channels(self) -> bool:
        """``ggml_is_contiguous_channels``: ``nb[0] > nb[2] > ...``, ``nb[2] == type_size``."""
        nb = self.nb
        return nb[0] > nb[2] and nb[1] > nb[0] and nb[2] == self.info.type_size

    def is_permuted(self) -> bool:
        """``ggml_is_permuted``: ``nb[0] > nb[1] or nb[1] > nb[2] or nb[2] > nb[3]``."""
        nb = self.nb
        return nb[0] > nb[1] or nb[1] > nb[2] or nb[2] > nb[3]

    def is_transposed(self) -> bool:
        """``ggml_is_transposed``: ``nb[0] > nb[1]``."""
        return self.nb[0] > self.nb[1]

    def is_empty(self) -> bool:
        """``ggml_is_empty``: some ``ne[i] == 0``."""
        return any(v == 0 for v in self.ne)

    def locate(self, i0: int, i1: int = 0, i2: int = 0, i3: int = 0) -> tuple[int, int]:
        """Where element ``(i0, i1, i2, i3)`` lives: ``(byte offset of its block, index in block)``.

        The byte offset is relative to the tensor's first byte (add :attr:`offset`
        for the position in :attr:`data`); for plain types the index is always 0.

        Examples
        --------
        >>> import layoutkit as lk
        >>> lk.ggml.new_tensor("Q8_0", 64, 3, 2).locate(40, 2, 1)
        (374, 8)
        """
        idx = [_as_int(v, f"i{k}") for k, v in enumerate((i0, i1, i2, i3))]
        for k, v in enumerate(idx):
            if not 0 <= v < self.ne[k]:
                raise LayoutError(f"i{k}={v}: out of range for ne[{k}]={self.ne[k]}")
        bs = self.info.block_size
        off = (idx[0] // bs) * self.nb[0] + idx[1] * self.nb[1] + idx[2] * self.nb[2]
        return off + idx[3] * self.nb[3], idx[0] % bs

    # -- views -----------------------------------------------------------------

    def _derived(
        self,
        ne: tuple[int, ...],
        nb: tuple[int, ...],
        offset: int,
        op: str,
        params: tuple[int, ...] = (),
    ) -> Tensor:
        return Tensor(self.type, ne, nb, offset, self.data, op, self._base_nbytes, params)

    def permute(self, axis0: int, axis1: int, axis2: int, axis3: int) -> Tensor:
        """``ggml_permute``: argument ``i`` says where source dim ``i`` goes.

        ``ne'[axis_i] = ne[i]`` and ``nb'[axis_i] = nb[i]``; the data is not moved.

        Examples
        --------
        >>> import layoutkit as lk
        >>> t = lk.ggml.new_tensor("F32", 2, 3, 4, 5).permute(1, 2, 0, 3)
        >>> t.ne, t.nb
        ((4, 2, 3, 5), (24, 4, 8, 96))
        """
        axes = [_as_int(a, f"axis{i}") for i, a in enumerate((axis0, axis1, axis2, axis3))]
        if sorted(axes) != [0, 1, 2, 3]:
            raise LayoutError(
                f"permute{tuple(axes)}: expected a permutation of 0, 1, 2, 3 (argument i says "
                "where source dim i goes)"
            )
        ne = [0] * 4
        nb = [0] * 4
        for i, a in enumerate(axes):
            ne[a] = self.ne[i]
            nb[a] = self.nb[i]
        return self._derived(tuple(ne), tuple(nb), self.offset, "PERMUTE", tuple(axes))

    def transpose(self) -> Tensor:
        """``ggml_transpose``: swap dims 0 and 1 (a view, same as ``permute(1, 0, 2, 3)``)."""
        ne, nb = self.ne, self.nb
        return self._derived(
            (ne[1], ne[0], ne[2], ne[3]), (nb[1], nb[0], nb[2], nb[3]), self.offset, "TRANSPOSE"
        )

    def view(self, ne: Sequence[int], nb: Sequence[int] | None = None, offset: int = 0) -> Tensor:
        """A strided view (``ggml_view_1d`` .. ``ggml_view_4d``).

        Parameters
        ----------
        ne : sequence of 1 to 4 int
            Extents of the view, ``ne[0]`` fastest.
        nb : sequence of int, optional
            Either all 4 byte strides (``nb[0]`` must be the type size: a view
            cannot change the element stride) or ggml's ``nb1..nb{len(ne)-1}``.
            Missing strides continue packed (``nb[i] = nb[i-1] * ne[i-1]``);
            ``None`` means fully packed.
        offset : int
            Byte offset relative to this tensor's first byte.

        Raises
        ------
        LayoutError
            When ggml would assert: ``row_size(ne0) * ne1 * ... + offset`` larger
            than the base tensor. (Like ggml, a strided view may address bytes past
            the base tensor; reading such a view's data raises instead.)

        Examples
        --------
        >>> import layoutkit as lk
        >>> a = lk.ggml.new_tensor("F32", 2, 3, 4, 5)
        >>> v = a.view((2, 6), (8,), offset=24)
        >>> v.ne, v.nb, v.nbytes
        ((2, 6, 1, 1), (4, 8, 48, 48), 48)
        """
        ne_list = list(ne) if not isinstance(ne, (int, np.integer)) else [ne]
        k = len(ne_list)
        ne4 = _ne4(ne_list)
        info = self.info
        _check_ne0(info, ne4)
        packed = _packed_nb(info, ne4)
        if nb is None:
            nbs: list[int] = list(packed)
        else:
            given = [_as_int(v, f"nb[{i}]") for i, v in enumerate(nb)]
            if len(given) == GGML_MAX_DIMS:
                if given[0] != info.type_size:
                    raise LayoutError(
                        f"nb={tuple(given)}: nb[0] must be {info.name}'s type size "
                        f"{info.type_size} (a view cannot change the element stride)"
                    )
                nbs = given
            elif len(given) == k - 1:
                nbs = [info.type_size, *given]
                for i in range(len(nbs), GGML_MAX_DIMS):
                    nbs.append(nbs[i - 1] * ne4[i - 1])
                if k == 1:
                    nbs = list(packed)
            else:
                raise LayoutError(
                    f"nb={tuple(given)}: expected 4 strides or {k - 1} (nb1..nb{k - 1}) for a "
                    f"{k}-d view"
                )
            for i, v in enumerate(nbs):
                if v < 0:
                    raise LayoutError(f"nb={tuple(nbs)}: nb[{i}]={v}; expected >= 0")
        off = _as_int(offset, "offset")
        if off < 0:
            raise LayoutError(f"offset={off}: expected >= 0")
        absolute = self.offset + off
        data_size = info.row_size(ne4[0])
        for i in range(1, k):
            data_size *= ne4[i]
        if data_size != 0 and data_size + absolute > self._base_nbytes:
            raise LayoutError(
                f"view ne={ne4[:k]} at offset {off}: needs {data_size} + {absolute} bytes but the "
                f"base tensor has {self._base_nbytes} (ggml asserts data_size + view_offs <= "
                "ggml_nbytes(view_src))"
            )
        res = Tensor(self.type, ne4, nbs, absolute, self.data, "VIEW", self._base_nbytes, (off,))
        return res

    def view_1d(self, ne0: int, offset: int = 0) -> Tensor:
        """``ggml_view_1d(a, ne0, offset)``."""
        return self.view((ne0,), None, offset)

    def view_2d(self, ne0: int, ne1: int, nb1: int, offset: int = 0) -> Tensor:
        """``ggml_view_2d(a, ne0, ne1, nb1, offset)``."""
        return self.view((ne0, ne1), (nb1,), offset)

    def view_3d(self, ne0: int, ne1: int, ne2: int, nb1: int, nb2: int, offset: int = 0) -> Tensor:
        """``ggml_view_3d(a, ne0, ne1, ne2, nb1, nb2, offset)``."""
        return self.view((ne0, ne1, ne2), (nb1, nb2), offset)

    def view_4d(
        self, ne0: int, ne1: int, ne2: int, ne3: int, nb1: int, nb2: int, nb3: int, offset: int = 0
    ) -> Tensor:
        """``ggml_view_4d(a, ne0, ne1, ne2, ne3, nb1, nb2, nb3, offset)``."""
        return self.view((ne0, ne1, ne2, ne3), (nb1, nb2, nb3), offset)

    def reshape(self, *ne: int) -> Tensor:
        """``ggml_reshape_{1..4}d``: same data, new extents, packed strides (needs contiguous).

        ``reshape(other_tensor)`` takes the extents of another :class:`Tensor`
        (``ggml_reshape``).
        """
        if len(ne) == 1 and isinstance(ne[0], Tensor):
            ne4 = ne[0].ne
        else:
            if len(ne) == 1 and not isinstance(ne[0], (int, np.integer)):
                ne = tuple(ne[0])
            ne4 = _ne4(ne)
        if not self.is_contiguous():
            raise LayoutError(
                f"reshape: the tensor (ne={self.ne}, nb={self.nb}) is not contiguous; "
                "ggml requires ggml_is_contiguous(a); call .cont() first"
            )
        n_new = ne4[0] * ne4[1] * ne4[2] * ne4[3]
        if n_new != self.nelements:
            raise LayoutError(
                f"reshape{tuple(ne4)}: {n_new} elements, but the tensor has {self.nelements}"
            )
        info = self.info
        _check_ne0(info, ne4)
        return self._derived(ne4, _packed_nb(info, ne4), self.offset, "RESHAPE")

    def reshape_1d(self, ne0: int) -> Tensor:
        """``ggml_reshape_1d``."""
        return self.reshape(ne0)

    def reshape_2d(self, ne0: int, ne1: int) -> Tensor:
        """``ggml_reshape_2d``."""
        return self.reshape(ne0, ne1)

    def reshape_3d(self, ne0: int, ne1: int, ne2: int) -> Tensor:
        """``ggml_reshape_3d``."""
        return self.reshape(ne0, ne1, ne2)

    def reshape_4d(self, ne0: int, ne1: int, ne2: int, ne3: int) -> Tensor:
        """``ggml_reshape_4d``."""
        return self.reshape(ne0, ne1, ne2, ne3)

    # -- data --------------------------------------------------------------------

    def _need_data(self, what: str) -> np.ndarray:
        if self.data is None:
            raise LayoutError(f"{what}: this tensor has no data (made with no_alloc=True)")
        return self.data

    def _block_view(self) -> np.ndarray:
        """The tensor's blocks as a zero-copy (ne3, ne2, ne1, ne0/B, type_size) uint8 view."""
        data = self._need_data("data access")
        info = self.info
        if self.ne[0] % info.block_size:
            raise LayoutError(
                f"ne[0]={self.ne[0]} is not a multiple of {info.name}'s block size "
                f"{info.block_size} (a transposed block tensor has no element layout)"
            )
        shape = (self.ne[3], self.ne[2], self.ne[1], self.ne[0] // info.block_size, info.type_size)
        strides = (self.nb[3], self.nb[2], self.nb[1], self.nb[0], 1)
        if self._span() == 0:
            return np.zeros(shape, np.uint8)
        self._check_span(data)
        addr = data.__array_interface__["data"][0] + self.offset
        return np.asarray(_SpanView(addr, shape, "|u1", not data.flags.writeable, data, strides))

    def to_numpy(self, ndim: int | None = None) -> np.ndarray:
        """A zero-copy strided numpy view of the data (non-block types only).

        Parameters
        ----------
        ndim : int, optional
            Number of dims of the result (``n_dims`` .. 4); default ``n_dims``.
            The shape is ``ne`` reversed (numpy order), the strides ``nb`` reversed.

        Examples
        --------
        >>> import numpy as np, layoutkit as lk
        >>> t = lk.ggml.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
        >>> t.transpose().to_numpy().tolist()
        [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
        """
        info = self.info
        if info.block_size != 1:
            raise LayoutError(
                f"to_numpy: {info.name} is a block type with no per-element numpy dtype; "
                "use .dequantize() for float32 values or .blocks() for the raw blocks"
            )
        data = self._need_data("to_numpy")
        nd = self._np_ndim() if ndim is None else _as_int(ndim, "ndim")
        if not self._np_ndim() <= nd <= GGML_MAX_DIMS:
            raise LayoutError(f"ndim={nd}: expected {self._np_ndim()}..{GGML_MAX_DIMS}")
        dt = self.element_dtype()
        shape = tuple(reversed(self.ne[:nd]))
        strides = tuple(reversed(self.nb[:nd]))
        if self.nbytes == 0:
            return np.zeros(shape, dt)
        self._check_span(data)
        addr = data.__array_interface__["data"][0] + self.offset
        raw = np.asarray(
            _SpanView(
                addr,
                shape,
                f"<u{dt.itemsize}" if dt.itemsize > 1 else "|u1",
                not data.flags.writeable,
                data,
                strides,
            )
        )
        return raw.view(dt)

    def _span(self) -> int:
        """Bytes from the first byte to one past the last byte actually addressed."""
        info = self.info
        if any(v <= 0 for v in self.ne):
            return 0
        n0 = self.ne[0] // info.block_size if info.block_size > 1 else self.ne[0]
        span = info.type_size + (max(n0, 1) - 1) * self.nb[0]
        for i in range(1, GGML_MAX_DIMS):
            span += (self.ne[i] - 1) * self.nb[i]
        return span

    def _check_span(self, data: np.ndarray) -> None:
        span = self._span()
        if span and self.offset + span > data.size:
            raise LayoutError(
                f"tensor ne={self.ne} nb={self.nb} at offset {self.offset} addresses "
                f"{self.offset + span} bytes but its buffer has {data.size}"
            )

    def blocks(self) -> np.ndarray:
        """Raw blocks, a zero-copy uint8 view of shape ``(ne3, ne2, ne1, ne0 // B, type_size)``."""
        return self._block_view()

    def cont(self) -> Tensor:
        """``ggml_cont``: a new packed tensor with the same ``ne``, data copied in logical order."""
        info = self.info
        _check_ne0(info, self.ne)
        nb = _packed_nb(info, self.ne)
        size = self.ne[1] * self.ne[2] * self.ne[3] * nb[1] if self.nelements else 0
        if self.data is None:
            return Tensor(self.type, self.ne, nb, 0, None, "CONT", size)
        out = np.empty(size, np.uint8)
        if out.size:
            out.reshape(
                self.ne[3], self.ne[2], self.ne[1], self.ne[0] // info.block_size, info.type_size
            )[...] = self._block_view()
        return Tensor(self.type, self.ne, nb, 0, out, "CONT", size)

    def tobytes(self) -> bytes:
        """The elements (blocks) packed in logical order, as ggml writes them to a GGUF file."""
        return self._block_view().tobytes()

    def dequantize(self) -> np.ndarray:
        """The logical values as float32 in numpy order (shape :attr:`shape`)."""
        info = self.info
        blocks = np.ascontiguousarray(self._block_view())
        rows = blocks.reshape(self.ne[3], self.ne[2], self.ne[1], self.row_size)
        if info.can_dequantize:
            vals = dequantize(rows, info.id)
        else:
            vals = rows.view(np.dtype(_NP_DTYPE[info.id])).astype(np.float32)
        return vals.reshape(self.shape)

    # -- Layout bridge -------------------------------------------------------------

    def layout(self) -> Any:
        """This tensor's memory order as a :class:`layoutkit.Layout` over logical dims ``"ABCD"``.

        The logical dims are numpy order: ``A`` = ``ne[3]`` (slowest logical dim)
        ... ``D`` = ``ne[0]``; the tag lists them by decreasing stride. Only for
        tensors whose strides are a permutation of a packed order (a permuted,
        possibly reshaped, contiguous tensor). Then
        ``lk.convert(t.base_elements(), t.layout_shape, t.layout(), "ABCD")``
        gives the packed logical tensor (what ``cont`` computes).

        Block types are supported when dim 0 is not moved: the elements are then
        whole blocks (numpy void dtype) and ``D`` counts blocks
        (``ne[0] // block_size``, see :attr:`layout_shape`).

        Examples
        --------
        >>> import layoutkit as lk
        >>> str(lk.ggml.new_tensor("F32", 2, 3, 4, 5).permute(1, 2, 0, 3).layout())
        'ADBC'
        """
        from .layout import Layout

        order = self._memory_order()
        letters = "ABCD"
        # dim i of ggml is logical letter letters[3 - i]
        return Layout("".join(letters[3 - i] for i in order), dims="ABCD")

    @property
    def layout_shape(self) -> tuple[int, int, int, int]:
        """Logical shape for :meth:`layout`: ``(ne3, ne2, ne1, ne0 // block_size)``."""
        n = self._unit_ne()
        return (n[3], n[2], n[1], n[0])

    def _unit_ne(self) -> tuple[int, int, int, int]:
        info = self.info
        if self.ne[0] % info.block_size:
            raise LayoutError(
                f"ne[0]={self.ne[0]} is not a multiple of {info.name}'s block size "
                f"{info.block_size}"
            )
        return (self.ne[0] // info.block_size, self.ne[1], self.ne[2], self.ne[3])

    def _memory_order(self) -> list[int]:
        """ggml dims from slowest to fastest in memory, if the strides are a packed permutation."""
        info = self.info
        ne = self._unit_ne()
        # stable order: larger stride first; ties (only possible with extent-1 dims) by dim index
        order = sorted(range(GGML_MAX_DIMS), key=lambda i: (-self.nb[i], -i))
        expected = info.type_size
        for i in reversed(order):
            if ne[i] != 1 and self.nb[i] != expected:
                raise LayoutError(
                    f"layout: strides nb={self.nb} with ne={self.ne} are not a permutation of a "
                    f"packed {info.name} tensor (dim {i} has stride {self.nb[i]}, expected "
                    f"{expected}); only permuted contiguous tensors map to a Layout"
                )
            expected *= ne[i]
        if info.block_size != 1 and order[-1] != 0 and ne[0] != 1:
            raise LayoutError(
                f"layout: {info.name} blocks must stay innermost (dim 0 moved, nb={self.nb})"
            )
        return order

    def element_dtype(self) -> np.dtype[Any]:
        """numpy dtype of one element (one block, as ``V{type_size}``, for block types)."""
        info = self.info
        if info.block_size != 1:
            return np.dtype((np.void, info.type_size))
        if self.type == GGMLType.BF16:
            return _bf16_dtype()
        return np.dtype(_NP_DTYPE[info.id])

    def base_elements(self) -> np.ndarray:
        """The packed bytes this tensor spans, as a 1-d array of :meth:`element_dtype`.

        For a tensor that :meth:`layout` accepts, this is the source buffer for
        :func:`layoutkit.convert`.
        """
        data = self._need_data("base_elements")
        self._memory_order()
        info = self.info
        n = self._unit_ne()
        count = n[0] * n[1] * n[2] * n[3]
        self._check_span(data)
        raw = data[self.offset : self.offset + count * info.type_size]
        return raw.view(self.element_dtype())  # zero-copy (uint8 is always contiguous here)


def new_tensor(t: Any, *ne: int, data: Any = None, no_alloc: bool = False) -> Tensor:
    """``ggml_new_tensor_{1..4}d``: a packed tensor of type ``t`` and extents ``ne``.

    Parameters
    ----------
    t : str, int or GGMLType
    *ne : int
        1 to 4 extents; missing ones are 1. ``ne[0]`` must be a multiple of the block size.
    data : buffer, optional
        Bytes to use as the tensor's data (zero-copy when possible); at least
        ``nbytes`` bytes. By default a zeroed buffer is allocated.
    no_alloc : bool
        Describe only, no buffer (like a ggml context with ``no_alloc``).

    Examples
    --------
    >>> import layoutkit as lk
    >>> t = lk.ggml.new_tensor("Q4_0", 64, 3, 2)
    >>> t.ne, t.nb, t.nbytes
    ((64, 3, 2, 1), (18, 36, 108, 216), 216)
    """
    info = _usable(t)
    if len(ne) == 1 and not isinstance(ne[0], (int, np.integer)):
        if not isinstance(ne[0], (tuple, list, np.ndarray)):
            raise TypeError(
                f"ne: expected 1 to {GGML_MAX_DIMS} int extents or one sequence of them, "
                f"got {ne[0]!r}"
            )
        ne = tuple(ne[0])
    ne4 = _ne4(ne)
    _check_ne0(info, ne4)
    nb = _packed_nb(info, ne4)
    size = info.row_size(ne4[0]) * ne4[1] * ne4[2] * ne4[3]
    if size > _MAX_BYTES:
        raise LayoutError(
            f"ne={ne4}: the tensor would take {size} bytes, more than ggml's sizes hold ({_MAX_BYTES})"
        )
    buf: np.ndarray | None
    if data is not None:
        if isinstance(data, np.ndarray):
            if not data.flags.c_contiguous:
                raise LayoutError("data: expected a C-contiguous buffer")
            buf = data.reshape(-1).view(np.uint8)
        else:
            buf = np.frombuffer(data, dtype=np.uint8)
        if buf.size < size:
            raise LayoutError(f"data: {buf.size} bytes, but the tensor needs {size}")
    elif no_alloc:
        buf = None
    else:
        buf = np.zeros(size, np.uint8)
    return Tensor(info.id, ne4, nb, 0, buf, "NONE", size)


_DTYPE_TO_TYPE = {
    np.dtype("<f4"): GGMLType.F32,
    np.dtype("<f2"): GGMLType.F16,
    np.dtype("<f8"): GGMLType.F64,
    np.dtype("i1"): GGMLType.I8,
    np.dtype("<i2"): GGMLType.I16,
    np.dtype("<i4"): GGMLType.I32,
    np.dtype("<i8"): GGMLType.I64,
}


def from_numpy(x: Any, t: Any = None) -> Tensor:
    """A GGML tensor from a numpy array (``ne`` = shape reversed).

    Parameters
    ----------
    x : array_like
        Up to 4 dims.
    t : str, int or GGMLType, optional
        Target type. Default: the array's own type (float32 -> F32, float16 ->
        F16, bfloat16 -> BF16, int8..int64 -> I8..I64, float64 -> F64); the
        tensor then views ``x``'s memory without copying, with ``nb`` = ``x``'s
        strides (any non-negative strides). Any other ``t`` quantizes ``x``
        (:func:`quantize`) into a new packed tensor.

    Examples
    --------
    >>> import numpy as np, layoutkit as lk
    >>> t = lk.ggml.from_numpy(np.zeros((6, 2), np.float32))
    >>> t.ne, t.nb
    ((2, 6, 1, 1), (4, 8, 48, 48))
    """
    arr = _as_array(x, "x")
    if arr.ndim > GGML_MAX_DIMS:
        raise LayoutError(f"x.shape={arr.shape}: GGML tensors have at most {GGML_MAX_DIMS} dims")
    natural: GGMLType | None
    try:
        natural = GGMLType.BF16 if arr.dtype == _bf16_dtype() else _DTYPE_TO_TYPE.get(arr.dtype)
    except ImportError:  # pragma: no cover
        natural = _DTYPE_TO_TYPE.get(arr.dtype)
    info = type_info(t) if t is not None else None
    if info is None:
        if natural is None:
            raise DTypeError(
                f"x: dtype {arr.dtype} has no GGML type; pass t= to quantize it (e.g. t='F16')"
            )
        info = _INFOS[int(natural)]
    ne = tuple(reversed(arr.shape)) if arr.ndim else (1,)
    if natural is not None and info.id == int(natural):
        if arr.ndim == 0:
            arr = arr.reshape(1)
        strides = tuple(reversed(arr.strides))
        if any(s < 0 for s in strides) or arr.size == 0:
            arr = np.ascontiguousarray(arr)
            strides = tuple(reversed(arr.strides))
        if arr.size == 0:
            return new_tensor(info.id, *ne)
        nb4 = [*strides, *([0] * (GGML_MAX_DIMS - len(strides)))]
        ne4 = _ne4(ne)
        for i in range(len(strides), GGML_MAX_DIMS):
            nb4[i] = nb4[i - 1] * ne4[i - 1] if i > 0 else info.type_size
        span = info.type_size + sum((ne4[i] - 1) * nb4[i] for i in range(GGML_MAX_DIMS))
        addr = arr.__array_interface__["data"][0]
        raw = np.asarray(_SpanView(addr, (span,), "|u1", not arr.flags.writeable, arr))
        return Tensor(info.id, ne4, nb4, 0, raw, "NONE", span)
    q = quantize(arr.reshape(1) if arr.ndim == 0 else arr, info.id)
    return new_tensor(info.id, *ne, data=q.reshape(-1))


from ._gguf import GGUFFile, GGUFTensorInfo, load_gguf  # noqa: E402  (needs this module)
