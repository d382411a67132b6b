"""ggml's own C code from ``ggml-python`` (optional): the reference quantizers and dequantizers.

Quantize runs ``ggml_quantize_chunk`` (no importance matrix: ggml's
``quantize_row_*_ref``), dequantize ``dequantize_row_*`` from
``libggml-base.so`` through ctypes, both into preallocated outputs, one thread.
"""

from __future__ import annotations

import ctypes
import pathlib
from collections.abc import Callable
from importlib.metadata import version as _dist_version
from typing import Any

import ggml as cg
import numpy as np

import layoutkit as lk

from .common import Workload

NAME = "ggml-c"
if not hasattr(cg, "ggml_quantize_chunk"):
    raise ImportError("the installed 'ggml' module is not ggml-python")
_BASE = ctypes.CDLL(str(pathlib.Path(cg.__file__).parent / "lib" / "libggml-base.so"))
_FP = ctypes.POINTER(ctypes.c_float)
_VP = ctypes.c_void_p


def version() -> str:
    return f"ggml-python {_dist_version('ggml-python')}"


def prepare(w: Workload, x: np.ndarray, out: np.ndarray) -> Callable[[], Any] | None:
    if w.kind != "ggml":
        return None
    info = lk.ggml.type_info(w.ggml_type)
    if w.ggml_op == "quantize":
        rows, n = x.reshape(-1, x.shape[-1]).shape
        xp, op = x.ctypes.data_as(_FP), out.ctypes.data_as(_VP)
        quantize_chunk = cg.ggml_quantize_chunk

        def q() -> np.ndarray:
            quantize_chunk(info.id, xp, op, 0, rows, n, None)
            return out

        return q
    f = getattr(_BASE, f"dequantize_row_{info.ggml_name}", None)
    if f is None:
        return None
    f.argtypes = (_VP, _FP, ctypes.c_int64)
    f.restype = None
    count = out.size
    qp, yp = x.ctypes.data_as(_VP), out.ctypes.data_as(_FP)

    def d() -> np.ndarray:
        f(qp, yp, count)
        return out

    return d
