"""Planned kernels for C and Cython callers (declarations in ``kernels.pxd``).

``RepackKernel`` plans one conversion (layouts, logical shape, dtype, optional
fused quantize/cast) exactly as :func:`layoutkit.convert` would run it and
exposes the plan as a C struct; ``GgmlKernel`` exposes one GGML type's block
quantizer/dequantizer. Other extensions ``cimport layoutkit.kernels`` and call
``lk_repack`` / ``lk_ggml_quantize_row`` / ``lk_ggml_dequantize_row`` with the GIL
released. The Python methods ``run``, ``quantize`` and ``dequantize`` go through
the same C entry points (and check buffer sizes first).
"""

from cpython.pycapsule cimport PyCapsule_GetPointer

import numpy as np

from . import _engine, _ggml_quants, ggml
from ._errors import LayoutError
from ._repack import CPlan
from .ggml import DTypeError


cdef class RepackKernel:
    """A conversion planned once for C callers.

    Parameters are those of :func:`layoutkit.convert`, with the element type
    given up front: ``RepackKernel(src, dst, shape, dtype, pad_value=0, *,
    dst_dtype=None, scale=None, zero_point=None)``; ``dst_dtype`` (with ``scale``
    / ``zero_point``) fuses a quantize, dequantize or float cast into the pass.

    Attributes: ``src_bytes`` / ``dst_bytes`` (buffer sizes, padding included),
    ``src_shape`` / ``dst_shape`` (physical shapes), ``src_dtype`` / ``dst_dtype``.

    >>> import numpy as np, layoutkit as lk
    >>> k = lk.kernels.RepackKernel("NCHW", "NCHW4c", (1, 3, 1, 2), "uint8")
    >>> k.src_bytes, k.dst_bytes
    (6, 8)
    >>> k.run(np.arange(6, dtype=np.uint8)).ravel().tolist()
    [0, 2, 4, 0, 1, 3, 5, 0]
    """

    def __init__(self, src, dst, shape, dtype, pad_value=0, *, dst_dtype=None, scale=None,
                 zero_point=None):
        cdef void** entry
        src_l, dst_l = _engine._layout_pair(src, dst)
        sh = src_l.check_shape(shape)
        if 0 in sh:
            raise LayoutError(f"shape={sh}: a kernel needs every extent >= 1")
        try:
            dt = np.dtype(dtype)
        except TypeError as exc:
            raise LayoutError(f"dtype={dtype!r}: not a numpy dtype ({exc})") from None
        if dt.hasobject:
            raise LayoutError(f"dtype={dt}: holds Python objects; kernels move raw elements")
        _engine.check_element_size(dt, "dtype")
        src_l.check_dtype(dt, "dtype")
        conv = _engine.conversion(dt, dst_dtype, scale, zero_point)
        out_dt = conv.dst if conv is not None else dt
        dst_l.check_dtype(out_dt, "dst_dtype" if conv is not None else "dtype")
        pad = _engine._pad_bytes(pad_value, out_dt)
        plan = _engine._cached_plan(src_l, dst_l, sh, dt.itemsize, None, conv)
        if plan is None:
            raise LayoutError(
                f"{src_l} -> {dst_l}: no single-pass plan (block sizes that do not nest, or "
                "left pads that differ on a dim the source blocks); "
                "the C API runs single-pass plans only - convert through an unblocked layout"
            )
        self._cplan = CPlan(plan, np.ascontiguousarray(pad))
        entry = <void**>PyCapsule_GetPointer(self._cplan.capsule(), b"layoutkit.repack_run")
        self.c_plan.run = <lk_repack_fn>entry[0]
        self.c_plan.impl = <const void*>entry[1]
        self.c_plan.src_itemsize = dt.itemsize
        self.c_plan.dst_itemsize = out_dt.itemsize
        self.c_plan.src_bytes = src_l.size(sh) * dt.itemsize
        self.c_plan.dst_bytes = dst_l.size(sh) * out_dt.itemsize
        self.src_layout, self.dst_layout, self.shape = src_l, dst_l, sh
        self.src_dtype, self.dst_dtype = dt, out_dt

    @property
    def src_bytes(self):
        return self.c_plan.src_bytes

    @property
    def dst_bytes(self):
        return self.c_plan.dst_bytes

    @property
    def src_shape(self):
        return self.src_layout.physical_shape(self.shape)

    @property
    def dst_shape(self):
        return self.dst_layout.physical_shape(self.shape)

    def run(self, src, out=None):
        """Convert ``src`` (``src_bytes`` of ``src_dtype``) through the C entry point."""
        arr = np.ascontiguousarray(src)
        if arr.dtype != self.src_dtype or arr.nbytes != self.c_plan.src_bytes:
            raise LayoutError(
                f"src: expected {self.c_plan.src_bytes} bytes of {self.src_dtype}, "
                f"got {arr.nbytes} bytes of {arr.dtype}"
            )
        if out is None:
            out = np.empty(self.dst_shape, self.dst_dtype)
        elif (not isinstance(out, np.ndarray) or out.dtype != self.dst_dtype
              or out.nbytes != self.c_plan.dst_bytes or not out.flags.c_contiguous
              or not out.flags.writeable or np.may_share_memory(out, arr)):
            raise LayoutError(
                f"out: expected a writeable C-contiguous {self.dst_dtype} array of "
                f"{self.c_plan.dst_bytes} bytes not overlapping src"
            )
        _run_repack(self, arr, out)
        return out

    def __repr__(self):
        conv = "" if self.src_dtype == self.dst_dtype else f" -> {self.dst_dtype}"
        return (f"RepackKernel({self.src_layout!r} -> {self.dst_layout!r}, shape={self.shape}, "
                f"{self.src_dtype}{conv})")


cdef _run_repack(RepackKernel k, object src, object dst):
    cdef const unsigned char[::1] s = src.reshape(-1).view(np.uint8)
    cdef unsigned char[::1] d = dst.reshape(-1).view(np.uint8)
    with nogil:
        lk_repack(&k.c_plan, &s[0], &d[0])


def _float_values(x, name):
    """``x`` as a flat contiguous float32 array; refuses non-float input as ggml.quantize does."""
    arr = ggml._as_array(x, name)
    if not ggml._is_float_dtype(arr.dtype):
        raise DTypeError(
            f"{name}: expected a float array (float16/32/64 or bfloat16), got dtype {arr.dtype}"
        )
    return np.ascontiguousarray(arr, dtype=np.float32).reshape(-1)


cdef class GgmlKernel:
    """One GGML type's block kernels for C callers.

    ``GgmlKernel("Q4_K")`` (a name, id or ``ggml.GGMLType``). ``c_kernel`` holds
    the type id, block size, bytes per block and the kernels (NULL where the type
    has none); ``quantize`` / ``dequantize`` here run the same C code on numpy rows.

    >>> import numpy as np, layoutkit as lk
    >>> k = lk.kernels.GgmlKernel("Q8_0")
    >>> q = k.quantize(np.linspace(-1, 1, 32, dtype=np.float32))
    >>> q.nbytes, float(abs(k.dequantize(q) - np.linspace(-1, 1, 32)).max()) < 0.01
    (34, True)
    """

    def __init__(self, ggml_type):
        cdef void** fns
        from . import ggml

        info = ggml.type_info(ggml_type)
        if info.removed or info.block_size <= 0:
            raise LayoutError(f"ggml_type={ggml_type!r}: {info.name} has no block layout")
        self._capsule = _ggml_quants.row_kernels_capsule(info.id)
        fns = <void**>PyCapsule_GetPointer(self._capsule, b"layoutkit.ggml_row_kernels")
        self.c_kernel.type_id = info.id
        self.c_kernel.block_size = info.block_size
        self.c_kernel.type_size = info.type_size
        self.c_kernel.quantize = <lk_quant_blocks_fn>fns[0]
        self.c_kernel.dequantize = <lk_dequant_blocks_fn>fns[1]
        self.c_kernel.quantize_imatrix = <lk_quant_row_fn>fns[2]
        self.type_name = info.name

    @property
    def block_size(self):
        return self.c_kernel.block_size

    @property
    def type_size(self):
        return self.c_kernel.type_size

    def quantize(self, x, imatrix=None):
        """Quantize one row of floats (a whole number of blocks, cast to float32) through
        the C entry point; integer input is refused, as by ``ggml.quantize``."""
        cdef const float[::1] xv
        cdef const float[::1] wv
        cdef unsigned char[::1] yv
        cdef const float* w = NULL
        cdef int rc
        cdef Py_ssize_t n
        arr = _float_values(x, "x")
        n = arr.shape[0]
        if n == 0 or n % self.c_kernel.block_size:
            raise LayoutError(
                f"x: {n} values is not a positive multiple of {self.type_name}'s block size "
                f"{self.c_kernel.block_size}"
            )
        out = np.empty(n // self.c_kernel.block_size * self.c_kernel.type_size, np.uint8)
        xv = arr
        yv = out
        if imatrix is not None:
            weights = _float_values(imatrix, "imatrix")
            if weights.shape[0] != n:
                raise LayoutError(f"imatrix: expected {n} weights, got {weights.shape[0]}")
            wv = weights
            w = &wv[0]
        with nogil:
            rc = lk_ggml_quantize_row(&self.c_kernel, &xv[0], &yv[0], n, w)
        if rc == -2:
            raise LayoutError(f"{self.type_name}: layoutkit has no quantizer for this type")
        return out

    def dequantize(self, q):
        """Dequantize whole blocks (uint8 or bytes) to float32 through the C entry point."""
        cdef const unsigned char[::1] qv
        cdef float[::1] yv
        cdef int rc
        cdef Py_ssize_t n
        arr = np.ascontiguousarray(ggml._as_blocks(q, self.type_name)).reshape(-1)
        if arr.shape[0] == 0 or arr.shape[0] % self.c_kernel.type_size:
            raise LayoutError(
                f"q: {arr.shape[0]} bytes is not a positive multiple of {self.type_name}'s "
                f"block of {self.c_kernel.type_size} bytes"
            )
        n = arr.shape[0] // self.c_kernel.type_size * self.c_kernel.block_size
        out = np.empty(n, np.float32)
        qv = arr
        yv = out
        with nogil:
            rc = lk_ggml_dequantize_row(&self.c_kernel, &qv[0], &yv[0], n)
        if rc == -2:
            raise LayoutError(f"{self.type_name}: layoutkit has no dequantizer for this type")
        return out

    def __repr__(self):
        return f"GgmlKernel({self.type_name!r})"
