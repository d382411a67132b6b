"""PyTorch with one thread: strided views and ``Tensor.copy_`` into the preallocated output.

The same copies as numpy (``strided.py``); ``copy_`` of a permuted view is what
``permute(...).contiguous()`` runs, without allocating the result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from . import strided
from .common import Workload

NAME = "torch"
torch.set_num_threads(1)


def version() -> str:
    return f"{torch.__version__} ({torch.get_num_threads()} thread)"


class _Torch:
    def wrap(self, a: np.ndarray) -> Any:
        return torch.from_numpy(a)

    def strides(self, t: Any) -> tuple[int, ...]:
        return tuple(t.stride())

    def as_strided(self, t: Any, shape: tuple[int, ...], strides: tuple[int, ...]) -> Any:
        return t.as_strided(shape, strides)

    def copy(self, dst: Any, src: Any) -> None:
        dst.copy_(src)

    def quantize(self, dst: Any, tmp: Any, src: Any, inv_scale: float) -> None:
        torch.mul(src, inv_scale, out=tmp)
        torch.round(tmp, out=tmp)
        torch.clamp(tmp, -128, 127, out=tmp)
        dst.copy_(tmp)


def prepare(w: Workload, x: np.ndarray, out: np.ndarray) -> Callable[[], Any] | None:
    return strided.plan(_Torch(), w, x, out)
