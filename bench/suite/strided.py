"""A repack as copies between strided views, for the array libraries without layout support.

A repack is a copy between two views in logical-split coordinates (each dim
split into its layout's digits). When the splits differ and the blocked side
is padded, the padded logical tensor is staged in a buffer allocated at set-up
(a destination stage's padding is zeroed once there, so the timed calls never
write padding; ``pad`` would): one pass when the blocked side has no padding,
two passes otherwise. Quantize first writes ``round(x / scale)``, clipped and
cast, to an int8 staging buffer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from .common import QUANT_SCALE, Geometry, Workload, geometry, layouts, split_strides


class Backend(Protocol):
    def wrap(self, a: np.ndarray) -> Any: ...  # share a numpy array's memory
    def strides(self, t: Any) -> tuple[int, ...]: ...
    def as_strided(self, t: Any, shape: tuple[int, ...], strides: tuple[int, ...]) -> Any: ...
    def copy(self, dst: Any, src: Any) -> None: ...
    def quantize(self, dst: Any, tmp: Any, src: Any, inv_scale: float) -> None: ...


def _logical(b: Backend, buf: np.ndarray, g: Geometry) -> Any:
    """The split logical view (axes in logical-split order) of a physical buffer."""
    t = b.wrap(np.ascontiguousarray(buf).reshape(g.physical))
    phys_strides = b.strides(t)
    return b.as_strided(
        t, g.split, tuple(phys_strides[g.perm.index(a)] for a in range(len(g.split)))
    )


def _split(b: Backend, padded: Any, g: Geometry) -> Any:
    """A C-contiguous padded logical array seen with ``g``'s split axes."""
    return b.as_strided(padded, g.split, split_strides(b.strides(padded), g))


def _resplit(b: Backend, logical: Any, g: Geometry) -> Any:
    return b.as_strided(logical, g.split, split_strides(b.strides(logical), g))


def plan(b: Backend, w: Workload, x: np.ndarray, out: np.ndarray) -> Callable[[], Any] | None:
    """A zero-argument callable that repacks ``x`` into ``out`` (None if not expressible)."""
    if w.kind != "repack":
        return None
    src_l, dst_l = layouts(w)
    gs, gd = geometry(src_l, w.shape), geometry(dst_l, w.shape)
    steps: list[Callable[[], Any]] = []
    src = _logical(b, x, gs)
    src_plain = gs.plain
    if w.api == "vitis_q":
        q = b.wrap(np.empty(w.shape, np.int8))
        f = b.wrap(np.empty(w.shape, np.float32))
        raw = src
        steps.append(lambda: b.quantize(q, f, raw, 1 / QUANT_SCALE))
        src, src_plain = q, True
    dst = _logical(b, out, gd)
    if gs.split == gd.split:
        steps.append(lambda: b.copy(dst, src))
    elif src_plain and not gd.has_padding:
        src_as_dst = _resplit(b, src, gd)
        steps.append(lambda: b.copy(dst, src_as_dst))
    elif src_plain:
        tmp = np.zeros(gd.padded, out.dtype)
        tmp_data = b.wrap(tmp[tuple(slice(0, n) for n in gd.shape)])
        tmp_split = _split(b, b.wrap(tmp), gd)
        steps.append(lambda: b.copy(tmp_data, src))
        steps.append(lambda: b.copy(dst, tmp_split))
    elif gd.plain and not gs.has_padding:
        dst_as_src = _resplit(b, dst, gs)
        steps.append(lambda: b.copy(dst_as_src, src))
    elif gd.plain:
        tmp = np.empty(gs.padded, x.dtype)
        tmp_data = b.wrap(tmp[tuple(slice(0, n) for n in gs.shape)])
        tmp_split = _split(b, b.wrap(tmp), gs)
        steps.append(lambda: b.copy(tmp_split, src))
        steps.append(lambda: b.copy(dst, tmp_data))
    else:
        return None  # blocked to blocked: not in the suite

    def run() -> np.ndarray:
        for s in steps:
            s()
        return out

    return run
