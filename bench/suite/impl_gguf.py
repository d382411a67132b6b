"""The ``gguf`` package's numpy quantizers (``gguf.quants``); no ``out=``, so they allocate."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from importlib.metadata import version as _dist_version
from typing import Any

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants as gq

from .common import Workload

NAME = "gguf"


def version() -> str:
    return _dist_version("gguf")


def prepare(w: Workload, x: np.ndarray, out: np.ndarray) -> Callable[[], Any] | None:
    if w.kind != "ggml":
        return None
    t = T[w.ggml_type]
    if w.ggml_op == "quantize":
        if w.ggml_type.endswith("_K"):
            return None  # gguf cannot quantize K-quants

        def run() -> Any:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return gq.quantize(x, t)

        return run

    def deq() -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.asarray(gq.dequantize(x, t), np.float32)

    return deq
