# Stub for the Cython module kernels.pyx (C API objects; C declarations in kernels.pxd).
from typing import Any

import numpy as np
import numpy.typing as npt
from typing_extensions import disjoint_base

from .layout import Layout

@disjoint_base
class RepackKernel:
    src_layout: Layout
    dst_layout: Layout
    shape: tuple[int, ...]
    src_dtype: np.dtype
    dst_dtype: np.dtype
    def __init__(
        self,
        src: Any,
        dst: Any,
        shape: Any,
        dtype: Any,
        pad_value: Any = 0,
        *,
        dst_dtype: Any = None,
        scale: Any = None,
        zero_point: Any = None,
    ) -> None: ...
    @property
    def src_bytes(self) -> int: ...
    @property
    def dst_bytes(self) -> int: ...
    @property
    def src_shape(self) -> tuple[int, ...]: ...
    @property
    def dst_shape(self) -> tuple[int, ...]: ...
    def run(self, src: Any, out: np.ndarray | None = None) -> np.ndarray: ...

@disjoint_base
class GgmlKernel:
    type_name: str
    def __init__(self, ggml_type: Any) -> None: ...
    @property
    def block_size(self) -> int: ...
    @property
    def type_size(self) -> int: ...
    def quantize(self, x: Any, imatrix: Any = None) -> npt.NDArray[np.uint8]: ...
    def dequantize(self, q: Any) -> npt.NDArray[np.float32]: ...
