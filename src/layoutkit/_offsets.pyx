"""Vectorised index -> offset computation for any layout.

Each physical axis ("digit") of a layout belongs to one logical dim ``dim``,
steps ``weight`` units of that dim's padded coordinate, wraps at ``modulus``
(0 for an outer part, which does not wrap) and moves ``stride`` elements.
"""

from libc.stdint cimport int64_t


cdef void _offsets(const int64_t[:, ::1] idx, const int64_t[::1] left_pad,
                   const int64_t[::1] ddim, const int64_t[::1] dweight,
                   const int64_t[::1] dmod, const int64_t[::1] dstride,
                   int64_t[::1] out) noexcept nogil:
    cdef Py_ssize_t r, k
    cdef int64_t p, digit, off
    for r in range(idx.shape[0]):
        off = 0
        for k in range(ddim.shape[0]):
            p = idx[r, ddim[k]] + left_pad[ddim[k]]
            digit = p // dweight[k]
            if dmod[k]:
                digit = digit % dmod[k]
            off += digit * dstride[k]
        out[r] = off


def offsets_kernel(const int64_t[:, ::1] idx, const int64_t[::1] left_pad,
                   const int64_t[::1] ddim, const int64_t[::1] dweight,
                   const int64_t[::1] dmod, const int64_t[::1] dstride,
                   int64_t[::1] out):
    """Fill ``out[r]`` with the element offset of ``idx[r]`` (indices already validated)."""
    if out.shape[0] != idx.shape[0]:
        raise ValueError("out and idx differ in length")
    cdef Py_ssize_t n = ddim.shape[0]
    if dweight.shape[0] != n or dmod.shape[0] != n or dstride.shape[0] != n:
        raise ValueError("digit arrays differ in length")
    with nogil:
        _offsets(idx, left_pad, ddim, dweight, dmod, dstride, out)
