# Stub for the Cython module _repack.pyx (cdef class RepackPlan).
from typing import Any

import numpy as np
import numpy.typing as npt
from typing_extensions import disjoint_base

MAX_PLAN_LEVELS: int
MAX_PLAN_DIMS: int

def simd_name() -> str: ...
def tuned_for() -> str: ...
def exact_shape(shape: Any) -> bool: ...

@disjoint_base
class RepackPlan:
    ext: npt.NDArray[np.int64]
    ss: npt.NDArray[np.int64]
    ds: npt.NDArray[np.int64]
    dim: npt.NDArray[np.int64]
    wt: npt.NDArray[np.int64]
    ranges: npt.NDArray[np.int64]
    span: npt.NDArray[np.int64]
    last_noninner: npt.NDArray[np.int64]
    dcontig: npt.NDArray[np.int64]
    below: npt.NDArray[np.int64]
    # Data boxes of fill_then_copy (count, then ext | first | below | dcontig per box).
    fill_box: npt.NDArray[np.int64] | None
    nlev: int
    ndim: int
    cast_src: int
    cast_dst: int
    esize: int
    # The pad pattern's length (the array's itemsize; esize may be a run of elements).
    pad_esize: int
    src_esize: int
    scale: float
    zero_point: float
    src_base: int
    dst_base: int
    # The source is a whole layout buffer: every slot of a source pixel is readable.
    src_whole: bool
    # An unpack of a crouton the chunk kernels pack: that pack plan, walked backwards.
    chunks_back: RepackPlan | None
    def __init__(
        self,
        ext: npt.ArrayLike,
        ss: npt.ArrayLike,
        ds: npt.ArrayLike,
        dim: npt.ArrayLike,
        wt: npt.ArrayLike,
        ranges: npt.ArrayLike,
        span: npt.ArrayLike,
        ndim: int,
        esize: int,
        src_base: int = 0,
        dst_base: int = 0,
        src_esize: int = 0,
        cast_src: int = -1,
        cast_dst: int = -1,
        scale: float = 1.0,
        zero_point: float = 0.0,
        src_whole: bool = False,
        pad_esize: int = 0,
    ) -> None: ...
    def use_chunks_back(self, pack: RepackPlan) -> bool: ...
    def run(self, src: np.ndarray, dst: np.ndarray, pad: np.ndarray, threads: int = 1) -> None: ...
    def run_into(
        self,
        src: np.ndarray,
        out: object,
        out_dtype: np.dtype,
        shape: tuple[int, ...],
        pad: np.ndarray,
        serial_below: int,
    ) -> np.ndarray | None: ...
    def _run_slice(
        self,
        src: np.ndarray,
        dst: np.ndarray,
        pad: np.ndarray,
        t_lo: int,
        t_hi: int,
        lev: int = 0,
        d0: int = 0,
    ) -> None: ...

def set_stream_threshold(nbytes: int) -> int: ...

@disjoint_base
class RepeatCalls:
    def __init__(self, size: int = 32) -> None: ...
    def find(
        self, x: object, args: tuple[Any, ...]
    ) -> tuple[RepackPlan, tuple[int, ...], np.dtype, np.ndarray] | None: ...
    def run(
        self, x: object, args: tuple[Any, ...], out: object, threads: object
    ) -> np.ndarray | None: ...
    def keep(
        self,
        x: np.ndarray,
        args: tuple[Any, ...],
        plan: RepackPlan,
        result_shape: tuple[int, ...],
        out_dtype: np.dtype,
        pad: np.ndarray,
    ) -> None: ...
    def alias(
        self,
        x: object,
        kept: tuple[Any, ...],
        args: tuple[Any, ...],
        result_shape: tuple[int, ...],
    ) -> bool: ...
    def clear(self) -> None: ...
    def __len__(self) -> int: ...

repeated_calls: RepeatCalls

@disjoint_base
class CPlan:
    plan: RepackPlan
    pad: np.ndarray
    def __init__(self, plan: RepackPlan, pad: np.ndarray) -> None: ...
    def capsule(self) -> object: ...
