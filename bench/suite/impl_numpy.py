"""numpy: strided views and ``np.copyto`` into the preallocated output (see ``strided.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import strided
from .common import Workload

NAME = "numpy"


def version() -> str:
    return np.__version__


class _Numpy:
    def wrap(self, a: np.ndarray) -> Any:
        return a

    def strides(self, t: Any) -> tuple[int, ...]:
        return tuple(t.strides)

    def as_strided(self, t: Any, shape: tuple[int, ...], strides: tuple[int, ...]) -> Any:
        return as_strided(t, shape, strides, writeable=True)

    def copy(self, dst: Any, src: Any) -> None:
        np.copyto(dst, src)

    def quantize(self, dst: Any, tmp: Any, src: Any, inv_scale: float) -> None:
        np.multiply(src, np.float32(inv_scale), out=tmp)
        np.rint(tmp, out=tmp)
        np.clip(tmp, -128, 127, out=tmp)
        np.copyto(dst, tmp, casting="unsafe")


def prepare(w: Workload, x: np.ndarray, out: np.ndarray) -> Callable[[], Any] | None:
    return strided.plan(_Numpy(), w, x, out)
