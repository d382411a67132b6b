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
from . import ggml, htp, larod, tensorrt, vitis
from .codegen import emit_c

__all__ = [
    "Layout",
    "LayoutError",
    "__version__",
    "convert",
    "emit_c",
    "ggml",
    "htp",
    "larod",
    "tensorrt",
    "vitis",
]
