# cython: language_level=3
"""layoutkit's kernels for other Cython extensions: ``cimport layoutkit.kernels``.

Plans are built in Python, where layouts are parsed and checked; the objects
carry plain C structs that your extension runs inside its own ``nogil`` code:

    from layoutkit.kernels cimport RepackKernel, lk_repack

    def to_device_layout(RepackKernel k, const unsigned char[::1] src,
                         unsigned char[::1] dst):
        if src.shape[0] < k.c_plan.src_bytes or dst.shape[0] < k.c_plan.dst_bytes:
            raise ValueError("buffers too small")
        with nogil:
            lk_repack(&k.c_plan, &src[0], &dst[0])

and in Python: ``k = layoutkit.kernels.RepackKernel("NCHW", "NCHW4c", (1, 3, 224, 224),
"uint8")``. Build with ``include_path=[layoutkit.get_include()]`` (Cython also
finds this file on ``sys.path``). Everything here is ABI-stable within a major
version: fields are only ever added at the end of the structs.
"""


ctypedef void (*lk_repack_fn)(const void* impl, const char* src, char* dst) noexcept nogil
ctypedef void (*lk_quant_blocks_fn)(const float* x, unsigned char* y, Py_ssize_t nb) noexcept nogil
ctypedef void (*lk_dequant_blocks_fn)(const unsigned char* x, float* y,
                                      Py_ssize_t nb) noexcept nogil
ctypedef void (*lk_quant_row_fn)(const float* x, unsigned char* y, Py_ssize_t n,
                                 const float* imatrix) noexcept nogil


cdef struct lk_repack_plan:
    lk_repack_fn run            # opaque: use lk_repack()
    const void* impl            # opaque, owned by the RepackKernel
    Py_ssize_t src_bytes        # bytes the source buffer must hold
    Py_ssize_t dst_bytes        # bytes the destination buffer must hold (padding included)
    Py_ssize_t src_itemsize
    Py_ssize_t dst_itemsize


cdef struct lk_ggml_kernel:
    int type_id                 # ggml's type id (GGML_TYPE_Q4_0 = 2, ...)
    Py_ssize_t block_size       # values per block
    Py_ssize_t type_size        # bytes per block
    lk_quant_blocks_fn quantize        # NULL if the type cannot be quantized
    lk_dequant_blocks_fn dequantize    # NULL if the type cannot be dequantized
    lk_quant_row_fn quantize_imatrix   # NULL if ggml's quantizer takes no weights


cdef class RepackKernel:
    """A planned conversion (see kernels.pyx); ``c_plan`` is what C code runs."""
    cdef lk_repack_plan c_plan
    cdef readonly object src_layout, dst_layout, shape, src_dtype, dst_dtype
    cdef readonly object _cplan


cdef class GgmlKernel:
    """One GGML type's row kernels (see kernels.pyx); ``c_kernel`` is what C code runs."""
    cdef lk_ggml_kernel c_kernel
    cdef readonly object type_name
    cdef readonly object _capsule


cdef inline int lk_repack(const lk_repack_plan* plan, const void* src, void* dst) noexcept nogil:
    """Run the conversion: read ``plan.src_bytes`` at ``src``, write ``plan.dst_bytes`` at ``dst``.

    Returns 0, or -1 for a NULL argument. Buffers must not overlap.
    """
    if plan == NULL or plan.run == NULL or src == NULL or dst == NULL:
        return -1
    plan.run(plan.impl, <const char*>src, <char*>dst)
    return 0


cdef inline int lk_ggml_quantize_row(const lk_ggml_kernel* k, const float* x, void* y,
                                     Py_ssize_t n, const float* imatrix) noexcept nogil:
    """Quantize ``n`` floats (a whole number of blocks) into ``n / block_size * type_size`` bytes.

    ``imatrix``: ``n`` importance weights or NULL; types whose ggml quantizer takes
    none ignore it, as ``ggml_quantize_chunk`` does. Returns 0, -1 for bad
    arguments, -2 if the type cannot be quantized.
    """
    if k == NULL or x == NULL or y == NULL or n < 0 or k.block_size <= 0 or n % k.block_size:
        return -1
    if imatrix != NULL and k.quantize_imatrix != NULL:
        k.quantize_imatrix(x, <unsigned char*>y, n, imatrix)
        return 0
    if k.quantize == NULL:
        return -2
    k.quantize(x, <unsigned char*>y, n // k.block_size)
    return 0


cdef inline int lk_ggml_dequantize_row(const lk_ggml_kernel* k, const void* x, float* y,
                                       Py_ssize_t n) noexcept nogil:
    """Dequantize ``n`` values (a whole number of blocks) from ``x`` into ``y``.

    Returns 0, -1 for bad arguments, -2 if the type cannot be dequantized.
    """
    if k == NULL or x == NULL or y == NULL or n < 0 or k.block_size <= 0 or n % k.block_size:
        return -1
    if k.dequantize == NULL:
        return -2
    k.dequantize(<const unsigned char*>x, y, n // k.block_size)
    return 0
