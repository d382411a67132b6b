"""layoutkit: describe, inspect and convert tensor memory layouts.

>>> import numpy as np, layoutkit as lk
>>> x = np.arange(24, dtype=np.uint8).reshape(1, 3, 2, 4)
>>> lk.Layout("NCHW4c").pack(x).shape
(1, 1, 2, 4, 4)
"""

from ._engine import convert
from ._errors import LayoutError
from .layout import Layout

__version__ = "0.1.0"

# The system adapters build on the core names above.
from . import ggml, htp, kernels, larod, tensorrt, vitis
from .codegen import emit_c


def get_include() -> str:
    """The directory to put on Cython's include path for ``cimport layoutkit.kernels``.

    It holds the ``layoutkit`` package (``layoutkit/kernels.pxd``); the C headers
    the kernels use are in ``layoutkit/include`` below it.
    """
    import os

    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


__all__ = [
    "Layout",
    "LayoutError",
    "__version__",
    "convert",
    "emit_c",
    "get_include",
    "ggml",
    "htp",
    "kernels",
    "larod",
    "tensorrt",
    "vitis",
]
