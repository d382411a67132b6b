"""The repack kernel: move elements along a plan computed in Python.

The kernel knows nothing of layouts. A plan is a list of *levels* in
destination memory order, each with an extent and a byte stride on each side.
Levels that belong to a dim with padding (or a ragged end) also carry that dim's
index and the weight of one step, and the plan gives, per such dim, the range of
the coordinate that holds data (``v``) and the range that exists in the
destination (``e``). The walk splits the destination into boxes that are entirely
data, entirely padding or absent, and hands each box to a strided copy or fill;
padding is written in the same pass as the data, in destination order.

Elements move by size (1, 2, 4, 8 bytes as unsigned ints; any other size by
memcpy), so every numpy dtype, structured ones included, is supported.
"""

from libc.stdint cimport int8_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset
from cpython.pycapsule cimport PyCapsule_New
from cpython.pyport cimport PY_SSIZE_T_MAX

cimport numpy as cnp

import numpy as np

cnp.import_array()

ctypedef fused elem_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t

cdef enum:
    MAX_LEVELS = 128
    MAX_DIMS = 32
    TILE = 1024         # elements per lane in the channel-interleave loops
    TBLOCK = 32         # tile edge of the generic transpose
    STAGE = 8192        # bytes of output staged in L1 before a streaming store
    STAGE_WORDS = 1032  # STAGE / 8 plus room to align the buffer to a cache line
    QUANT_STAGE = 262144  # bytes of quantized pixels staged (copy_quantize_batch), L2
    ROWPAD_SMALL = 512  # bytes: boxes of padded rows handled whole (copy_rowpad_small)
    ROWPAD_WORDS = 64   # ROWPAD_SMALL / 8
    RUN_GROUP = 8       # runs of a pixel copied together into their chunks (copy_small_rows)
    FILL_SLICE = 32768  # bytes of output padded, then given its data, at a time (in L1)
    PF_BOXES = 16       # tiny boxes prefetched ahead in copy_lanes
    ALIASED_ROWS_BLOCK = 8  # copy_levels: rows 2 KiB-aliased, this many through every box at a time
    OUT_PREFETCH_BYTES = 1024  # copy_lanes: boxes this large prefetch the next one's output
    LANE_BLOCK_BYTES = 1024     # copy_lanes: boxes batched (copy_lane_blocks) up to this
    LANE_BLOCK_L2_BYTES = 4096  # ... or this, when the operation fits L2
    ZIPN_BYTES = 256    # bytes of each lane per zip-kernel call (LK_ZIPN_MAX_BYTES)
    MAX_LANES = 256     # lanes per box in copy_lanes (above 64: runs of tiny lanes only)
    SMALL_CAST_BYTES = 2048  # converted boxes this small use a stack buffer in box2d_cast
    SMALL_CAST_WORDS = 256   # SMALL_CAST_BYTES / 8
    WHOLE_BOX_BYTES = 524288  # copy_then_cast: boxes up to this size repacked whole (L2)
    CAST_FIRST_BYTES = 16777216  # copy_then_cast: dense sources up to this converted first
    CAST_FIRST_ROWS = 32     # ... in place of the fused quantize of shorter rows
    SLICE_RUN_MIN = 8192     # threads: bytes of each lane a slice of level-0 digits reads
    SLICE_COLUMNS_MIN = 65536  # threads: bytes of each row a column slice writes
    PAD_RUNS_MAX_BYTES = 67108864  # fill_then_copy fills only the padding of outputs up to this
    PAD_RUNS_SMALL_BYTES = 1048576  # beyond this, only if its runs average PAD_RUN_MIN_BYTES
    PAD_RUN_MIN_BYTES = 256
    FILL_OUTER_PAD_BYTES = 67108864  # fill_then_copy: outputs padded in one dim held outside
    FILL_OUTER_PAD_CELL = 1024       # ... the innermost levels, in cells up to this size
    GIL_RELEASE_BYTES = 16384        # serial runs with smaller outputs keep the GIL

cdef Py_ssize_t ALL_LANES = PY_SSIZE_T_MAX

# Outputs whose footprint (source + destination bytes) reaches this are written
# with streaming stores; below it they stay in cache for whoever reads them next.
# 32 MiB, not 24: at 24-32 MiB one thread streamed no faster (NCHW <-> NHWC
# float32 of 1x3x1024x1024, 8x256x56x56 float16 families: 0.98-1.03x), and a
# 2-thread run, whose column slices keep cached stores, alternated with a
# streamed 1-thread run on one buffer scaled 1.3-1.6x instead of 1.7-1.9x
# (NHWC -> NCHW float32 1x3x1024x1024, exactly 24 MiB).
cdef Py_ssize_t stream_min_bytes = 32 << 20
# fill_then_copy for outputs up to this size (NHWC -> NHWC8h8w32c float32 of
# 1x2048x7x7, 512 KiB, 0.7x the time of the walk). Past the caches the second
# write still costs less than the walk's split of every H row at a ragged W:
# NHWC -> Crouton / Crouton4x1 uint8 of 1x3x299x299 (3 MB) 0.5x the time,
# 1x3x1000x999 (32 MB) 0.27x, Crouton2 float16 of 299x299 0.58x.
cdef Py_ssize_t fill_first_bytes = 64 << 20


def set_stream_threshold(Py_ssize_t nbytes):
    """Set the footprint from which plans stream their output; returns the old value.

    ``0`` streams everything (the tests use it to cover that path); a negative
    value never streams.
    """
    global stream_min_bytes
    old = stream_min_bytes
    stream_min_bytes = nbytes
    return old


MAX_PLAN_LEVELS = MAX_LEVELS
MAX_PLAN_DIMS = MAX_DIMS


cdef struct Plan:
    int nlev
    int ndim
    Py_ssize_t esize
    const int64_t* ext
    const int64_t* ss
    const int64_t* ds
    const int64_t* dim
    const int64_t* wt
    const int64_t* span          # (nlev + 1) x ndim
    const int64_t* last_noninner  # per dim: deepest level < nlev-1 holding it, or -1
    const int64_t* dcontig       # per level: dst C-contiguous from this level down
    const int64_t* below         # per level: elements in the box of levels [lev, nlev)
    const uint8_t* pad
    # Fused element conversion (cast_src < 0: none; elements move unchanged).
    Py_ssize_t src_esize
    int cast_src
    int cast_dst
    float scale
    float zero_point
    # Build output in an L1 staging buffer and stream it out (outputs > cache):
    # 0 no, 1 for boxes big enough to gain, 2 for every box (tests).
    int stream
    # Small outputs padded in two or more dims, each held by one level: the data
    # box to copy after filling all with padding (see fill_then_copy), or NULL.
    const int64_t* fill_box
    # With fill_box: whether its data boxes cover the whole output (a gather
    # that skips a layout's padding slots: nothing to fill first).
    bint boxes_cover
    # With fill_box: the padding left outside its data boxes as byte runs
    # [count, then start, length per run] from the output's base, ascending,
    # for fill_then_copy to fill alone; NULL to fill everything first.
    const int64_t* pad_runs
    # The source is a whole layout buffer, so every slot of a source pixel is
    # readable, those a box skips included (de-interleaves of some of a pixel's
    # slots may load all of them).
    bint src_whole


# ---------------------------------------------------------------------------
# Leaf kernels
# ---------------------------------------------------------------------------

cdef inline void fill_typed(elem_t* o, Py_ssize_t n, elem_t v) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        o[i] = v


cdef void fill_run(char* dst, Py_ssize_t n, const uint8_t* pad, Py_ssize_t es) noexcept nogil:
    """Write ``n`` copies of the ``es``-byte pattern ``pad`` at ``dst``."""
    cdef Py_ssize_t i
    if n <= 0:
        return
    i = 1
    while i < es and pad[i] == pad[0]:
        i += 1
    if i >= es:
        # One byte value (zero padding): memset's wide stores, where the typed
        # loop below compiles to 16-byte ones for the baseline target (NHWC ->
        # Crouton2 float16 of 1x2048x7x7 fills 256 KiB: 4 us of its 17).
        memset(dst, pad[0], n * es)
    elif es == 2:
        fill_typed(<uint16_t*>dst, n, (<const uint16_t*>pad)[0])
    elif es == 4:
        fill_typed(<uint32_t*>dst, n, (<const uint32_t*>pad)[0])
    elif es == 8:
        fill_typed(<uint64_t*>dst, n, (<const uint64_t*>pad)[0])
    else:
        for i in range(n):
            memcpy(dst + i * es, pad, es)


cdef extern from "layoutkit_interleave.h" nogil:
    void lk_copy_runs_3d(char* dst, Py_ssize_t dq, Py_ssize_t d0, Py_ssize_t dc,
                         const char* src, Py_ssize_t sq, Py_ssize_t s0, Py_ssize_t nq,
                         Py_ssize_t n0, Py_ssize_t nc, Py_ssize_t run)
    void lk_copy_rows(char* dst, Py_ssize_t dq, const char* src, Py_ssize_t sq, Py_ssize_t n,
                      Py_ssize_t run)
    void lk_fill_runs(char* dst, const int64_t* runs, Py_ssize_t nruns, Py_ssize_t lo,
                      Py_ssize_t hi, const uint8_t* pad, int es)
    void lk_copy_runs_2d(char* dst, Py_ssize_t dq, Py_ssize_t d0, const char* src,
                         Py_ssize_t sq, Py_ssize_t s0, Py_ssize_t nq, Py_ssize_t n0,
                         Py_ssize_t run)
    void lk_interleave(void* out, const void* const* lanes, Py_ssize_t m, int k,
                       Py_ssize_t ostride, int es)
    Py_ssize_t lk_interleave_stream(char* out, const void* const* lanes, Py_ssize_t m, int k,
                                    int es)
    int lk_zipn_applies(Py_ssize_t m, int k, int es, int lane_box)
    int lk_lane_rows(char* dst, Py_ssize_t dr, const char* src, Py_ssize_t sr, Py_ssize_t su,
                     Py_ssize_t sl, Py_ssize_t R, Py_ssize_t U, Py_ssize_t W, int K, int es)
    int lk_lane_rows_batch(char* dst, Py_ssize_t dr, const char* src, Py_ssize_t sr,
                           Py_ssize_t su, Py_ssize_t sl, Py_ssize_t sn, Py_ssize_t N,
                           Py_ssize_t R, Py_ssize_t U, Py_ssize_t W, int K, int es)
    int lk_lane_rows_unpack(char* dst, Py_ssize_t du, Py_ssize_t dl, Py_ssize_t dr,
                            const char* src, Py_ssize_t sr, Py_ssize_t U, Py_ssize_t R,
                            Py_ssize_t W, int K, int es)
    int lk_lane_rows_unpack_batch(char* dst, Py_ssize_t dn, Py_ssize_t du, Py_ssize_t dl,
                                  Py_ssize_t dr, const char* src, Py_ssize_t sr, Py_ssize_t ps,
                                  Py_ssize_t N, Py_ssize_t U, Py_ssize_t R, Py_ssize_t W, int K,
                                  int es)
    void lk_interleave_lane_box(void* out, const void* const* lanes, Py_ssize_t m, int k, int es)
    void lk_interleave_zipn_at(void* out, const void* const* lanes, Py_ssize_t off, Py_ssize_t m,
                               int k, int es)
    int lk_interleave_zipn_boxes(void* out, Py_ssize_t dstep, const void* const* lanes,
                                 Py_ssize_t off, Py_ssize_t sstep, Py_ssize_t nbox, Py_ssize_t m,
                                 int k, int es)
    void lk_transpose(char* dst, Py_ssize_t drow, const char* src, Py_ssize_t slane,
                      Py_ssize_t rows, Py_ssize_t lanes, int es)
    int lk_tile_lanes(int es)
    int lk_transpose_beats_staging(Py_ssize_t drow, Py_ssize_t rows, Py_ssize_t lanes, int es)
    void lk_stream_copy(char* dst, const char* src, size_t n)
    void lk_stream_fence()
    int lk_stream_native()
    void lk_set_footprint_hint(Py_ssize_t nbytes)
    int lk_small_operation()
    void lk_prefetch_lane(const char* p, Py_ssize_t nbytes)
    void lk_prefetch_t0(const char* p)
    void lk_prefetch_output(char* p, Py_ssize_t nbytes)
    Py_ssize_t lk_interleave_padded(char* out, const void* const* lanes, Py_ssize_t m, int k,
                                    int es, Py_ssize_t row, Py_ssize_t at, const void* pad,
                                    int stream)
    int lk_large_operation()
    int lk_stream_padded(int k, Py_ssize_t n)
    int lk_l2_operation()
    int lk_moves_at_most(Py_ssize_t nbytes)
    void lk_deinterleave(void* out, Py_ssize_t orow, const void* inp, Py_ssize_t m, int k,
                         Py_ssize_t istride, int es)
    const char* lk_simd_name()
    int lk_is_amd()
    int lk_split_avx512()
    ctypedef struct lk_grid_level:
        Py_ssize_t n, s, d
    enum:
        LK_GRID_IL4_U8
        LK_GRID_IL2_U16
        LK_GRID_DI4_U8
        LK_GRID_DI2_U16
    int lk_box_grid(int kind, char* dst, const char* src, const lk_grid_level* levels, int nl,
                    Py_ssize_t stride, Py_ssize_t m, int data, const void* pad)
    ctypedef struct lk_smallbox:
        Py_ssize_t win
        Py_ssize_t pitch
        int nsub
    int lk_smallbox_plan(lk_smallbox* k, int es, Py_ssize_t s0, Py_ssize_t d0, Py_ssize_t r_lo,
                         Py_ssize_t r_hi, Py_ssize_t s1, Py_ssize_t d1, Py_ssize_t l_lo,
                         Py_ssize_t l_hi, int pack, Py_ssize_t box, int nsub,
                         const uint8_t* pad)
    int lk_smallbox_grid(char* dst, const char* src, const lk_grid_level* levels, int nl,
                         const lk_smallbox* k, const char* hi, const char* span_hi, int stream)
    int lk_rowpad4_grid(char* dst, const char* src, const lk_grid_level* levels, int nl,
                        Py_ssize_t s1, int n1, int n0, int data, const void* pad)
    int lk_padpix_grid(char* dst, const char* src, const lk_grid_level* levels, int nl,
                       int pix, int data, const void* pad)


cdef extern from "layoutkit_chunks.h" nogil:
    int lk_chunk_rows(char* dst, Py_ssize_t pair, const char* src, Py_ssize_t sh, Py_ssize_t sw,
                      Py_ssize_t Eh, Py_ssize_t Ew, Py_ssize_t nh, Py_ssize_t nw, int K, int es,
                      const uint8_t* pad64)
    int lk_chunk_rows_fit(Py_ssize_t Ew, int K, int es, int pair)
    int lk_chunk_rows_unpack(char* pix, Py_ssize_t pair, const char* chunk, Py_ssize_t sh,
                             Py_ssize_t sw, Py_ssize_t Ew, Py_ssize_t nh, Py_ssize_t nw, int K,
                             int es)


cdef extern from "layoutkit_pool.h" nogil:
    ctypedef void (*lk_pool_fn)(void* ctx, Py_ssize_t item) noexcept nogil
    int lk_pool_run(int threads, Py_ssize_t nitems, lk_pool_fn fn, void* ctx)


cdef extern from "layoutkit_cast.h" nogil:
    int lk_cast(void* dst, const void* src, Py_ssize_t n, Py_ssize_t s, int st, int dt,
                float scale, float zp)
    Py_ssize_t lk_quantize_interleave(char* dst, Py_ssize_t drow, const char* src,
                                      Py_ssize_t lane_stride, Py_ssize_t n, int k, int lo, int hi,
                                      int dt, float scale, float zp, int pad)
    Py_ssize_t lk_quantize_interleave_boxes(char* dst, Py_ssize_t dbox, const char* src,
                                            Py_ssize_t sbox, Py_ssize_t nbox, Py_ssize_t drow,
                                            Py_ssize_t lane_stride, Py_ssize_t n, int k, int lo,
                                            int hi, int dt, float scale, float zp, int pad)
    enum:
        LK_T_F32
        LK_T_I8
        LK_T_U8


def simd_name():
    """The kernels in use: 'portable', 'sse4.1' (interleaves), 'sse4.1+avx2'
    (AVX2 transposes, de-interleaves and casts too) or 'sse4.1+avx2+avx512vbmi'
    (AVX-512 VBMI byte tiles too); ``LAYOUTKIT_SIMD=portable``, ``sse4.1`` or
    ``avx2`` selects a lesser build."""
    return lk_simd_name().decode()


def exact_shape(object shape):
    """Whether ``shape`` is a tuple of Python ints: the only shapes the call and
    geometry caches may key on (``3.0 == 3`` and ``True == 1`` hash alike, but
    must still be refused). Compiled: every repeated call asks it."""
    cdef Py_ssize_t k
    if type(shape) is not tuple:
        return False
    for k in range(len(<tuple>shape)):
        if type((<tuple>shape)[k]) is not int:
            return False
    return True


def tuned_for():
    """'amd' (Zen 4 and older), 'amd-zen5' (Zen 5 and later: AMD's memory-side
    choices, the AVX-512 kernels as on Intel) or 'other': the few kernel choices
    measured on one maker's CPUs only (``LAYOUTKIT_CPU_VENDOR=amd``, ``zen5`` or
    ``intel`` forces one)."""
    if not lk_is_amd():
        return "other"
    return "amd" if lk_split_avx512() else "amd-zen5"


cdef void inner2d(elem_t* o, Py_ssize_t on, const char* src, Py_ssize_t n0, Py_ssize_t s0,
                  Py_ssize_t n1, Py_ssize_t s1, Py_ssize_t lo, Py_ssize_t hi,
                  elem_t pv) noexcept nogil:
    """Copy an ``n0 x n1`` box into rows of ``o`` ``on`` elements apart (``on >= n1``);
    lanes outside [lo, hi) get ``pv``.

    ``src`` strides ``s0``/``s1`` are in bytes.
    """
    cdef Py_ssize_t i, j, i0, j0, i1, j1, m, kk
    cdef bint whole
    cdef Py_ssize_t es = sizeof(elem_t)
    cdef elem_t* row
    cdef const void* lanes[64]
    cdef elem_t padbuf[TILE]
    if s1 == es:
        # Rows are contiguous on both sides: short ones (32 channels of a
        # crouton pixel into NHWC) as inline moves, not a memcpy call each.
        if lo == 0 and hi == n1:
            lk_copy_rows(<char*>o, on * es, src, s0, n0, n1 * es)
            return
        for i in range(n0):
            row = o + i * on
            for j in range(lo):
                row[j] = pv
            copy_run(<char*>(row + lo), src + i * s0 + lo * es, (hi - lo) * es)
            for j in range(hi, n1):
                row[j] = pv
        return
    if s0 == es and n0 * es <= s1 <= 8 * es and s1 % es == 0 and n0 <= 8:
        # Channel de-interleave (NHWC -> NCHW or HCWN4c -> NCHW with few channels):
        # each output row is one channel, gathered from the packed source.
        if lo > 0 or hi < n1:
            for i in range(n0):
                row = o + i * on
                for j in range(lo):
                    row[j] = pv
                for j in range(hi, n1):
                    row[j] = pv
        if hi > lo:
            lk_deinterleave(o + lo, on, src + lo * s1, hi - lo, <int>n0, s1 // es, <int>es)
        return
    if s0 == es and n1 >= 16 and lk_tile_lanes(<int>es) and hi - lo >= lk_tile_lanes(<int>es):
        # Wide interleave: register-tile transposes, 64 rows at a time with
        # their padding lanes written first (same pass over the destination).
        if lo == 0 and hi == n1:
            lk_transpose(<char*>o, on * es, src, s1, n0, n1, <int>es)
            return
        m = ZIPN_BYTES // es
        if on == n1 and n1 <= 32 and lk_zipn_applies(m if m < n0 else n0, <int>n1, <int>es, 0):
            # Lanes partly padding (17-31 channels into NCHW32c / kCHW32 uint8):
            # the zip kernel of the whole group, its padding lanes read from a
            # buffer of pad values, in blocks of rows it takes, instead of a
            # tile transpose of the data lanes per 64 rows over a fill (1x24x56x56
            # and 1x17x112x112: 0.45-0.51x the time).
            fill_typed(padbuf, m, pv)
            i0 = 0
            while i0 < n0:
                i1 = i0 + m if i0 + m < n0 else n0
                for j in range(n1):
                    lanes[j] = src + j * s1 + i0 * es if lo <= j < hi else <const void*>padbuf
                lk_interleave_zipn_at(o + i0 * on, lanes, 0, i1 - i0, <int>n1, <int>es)
                i0 = i1
            return
        i0 = 0
        while i0 < n0:
            i1 = i0 + 64 if i0 + 64 < n0 else n0
            if (lo > 0 or hi < n1) and on == n1:
                # Dense rows: the block's padding in one fill, its data tiled
                # over it while in L1 (a fill per row was a memset call per
                # 16 bytes: 16 channels into NCHW32c took 2x the time).
                fill_run(<char*>(o + i0 * on), (i1 - i0) * on, <const uint8_t*>&pv, es)
            elif lo > 0 or hi < n1:
                for i in range(i0, i1):
                    row = o + i * on
                    for j in range(lo):
                        row[j] = pv
                    for j in range(hi, n1):
                        row[j] = pv
            lk_transpose(<char*>(o + i0 * on + lo), on * es, src + lo * s1 + i0 * es, s1,
                         i1 - i0, hi - lo, <int>es)
            i0 = i1
        return
    if s0 == es and n1 > 64 and 2 * (hi - lo) < n1:
        # Mostly padding (e.g. 3 channels in blocks of 32): per L1 tile, fill the
        # rows with padding, then drop the few data lanes in.
        i0 = 0
        while i0 < n0:
            m = n0 - i0 if n0 - i0 < TILE else TILE
            row = o + i0 * on
            if on == n1:
                fill_typed(row, m * n1, pv)
            else:
                for i in range(m):
                    fill_typed(row + i * on, n1, pv)
            for j in range(lo, hi):
                for i in range(m):
                    row[i * on + j] = (<const elem_t*>(src + j * s1 + (i0 + i) * es))[0]
            i0 += m
        return
    if s0 == es and on == n1 and hi - lo <= 8 and (2 * (hi - lo) <= n1 or
                                                   (hi - lo <= 4 and hi - lo < n1)):
        # Few data lanes in padded rows (3 channels into NCHW4c-32c, kCHW32,
        # kHWC8, HCWNC4/8 of one image): the data interleaved compactly, then
        # masked over pad vectors, for the row sizes the kernel takes (it
        # returns 0 for others; rows of more data than padding only by VBMI).
        for j in range(lo, hi):
            lanes[j - lo] = src + j * s1
        if lk_interleave_padded(<char*>o, lanes, n0, <int>(hi - lo), <int>es, n1 * es, lo * es,
                                &pv, lk_stream_padded(<int>(hi - lo), n1)) == n0:
            return
    if s0 == es:
        # Channel interleave: n1 lanes, each a contiguous source stream; padding
        # lanes read from a buffer of pad values. Tiles of TILE rows stay in L1.
        if lo > 0 or hi < n1:        # pad lanes read this buffer (small boxes: fill little)
            fill_typed(padbuf, n0 if n0 < TILE else TILE, pv)
        # Without pad lanes, one group of lanes goes in one call: each call
        # re-aligns its stores with a step of its own (NCHW -> NHWC uint8 of
        # 1x3x224x224 in 49 calls took 1.2x the time of one).
        whole = lo == 0 and hi == n1 and n1 <= 64
        i0 = 0
        while i0 < n0:
            m = n0 - i0 if n0 - i0 < TILE or whole else TILE
            j0 = 0
            while j0 < n1:
                kk = n1 - j0 if n1 - j0 < 64 else 64
                for j in range(kk):
                    if lo <= j0 + j < hi:
                        lanes[j] = src + (j0 + j) * s1 + i0 * es
                    else:
                        lanes[j] = padbuf
                lk_interleave(o + i0 * on + j0, lanes, m, <int>kk, on, <int>es)
                j0 += kk
            i0 += m
        return
    # Generic: pad lanes per row, then a tiled transpose of the data lanes.
    i0 = 0
    while i0 < n0:
        i1 = i0 + TBLOCK if i0 + TBLOCK < n0 else n0
        for i in range(i0, i1):
            row = o + i * on
            for j in range(lo):
                row[j] = pv
            for j in range(hi, n1):
                row[j] = pv
        j0 = lo
        while j0 < hi:
            j1 = j0 + TBLOCK if j0 + TBLOCK < hi else hi
            for j in range(j0, j1):
                for i in range(i0, i1):
                    o[i * on + j] = (<const elem_t*>(src + i * s0 + j * s1))[0]
            j0 = j1
        i0 = i1


cdef void inner2d_strided(elem_t* dummy, const char* src, char* dst, Py_ssize_t n0,
                          Py_ssize_t s0, Py_ssize_t d0, Py_ssize_t n1, Py_ssize_t s1,
                          Py_ssize_t d1, Py_ssize_t lo, Py_ssize_t hi,
                          elem_t pv) noexcept nogil:
    """Like inner2d for a destination that is not row-contiguous."""
    cdef Py_ssize_t i, j
    for i in range(n0):
        for j in range(n1):
            if lo <= j < hi:
                (<elem_t*>(dst + i * d0 + j * d1))[0] = \
                    (<const elem_t*>(src + i * s0 + j * s1))[0]
            else:
                (<elem_t*>(dst + i * d0 + j * d1))[0] = pv


cdef void inner2d_bytes(const char* src, char* dst, Py_ssize_t n0, Py_ssize_t s0,
                        Py_ssize_t d0, Py_ssize_t n1, Py_ssize_t s1, Py_ssize_t d1,
                        Py_ssize_t lo, Py_ssize_t hi, const uint8_t* pad,
                        Py_ssize_t es) noexcept nogil:
    """Any element size: one memcpy per element (or per row when rows are contiguous)."""
    cdef Py_ssize_t i, j
    for i in range(n0):
        if s1 == es and d1 == es:
            fill_run(dst + i * d0, lo, pad, es)
            memcpy(dst + i * d0 + lo * es, src + i * s0 + lo * es, (hi - lo) * es)
            fill_run(dst + i * d0 + hi * es, n1 - hi, pad, es)
            continue
        for j in range(n1):
            if lo <= j < hi:
                memcpy(dst + i * d0 + j * d1, src + i * s0 + j * s1, es)
            else:
                memcpy(dst + i * d0 + j * d1, pad, es)


cdef void box2d(const char* src, char* dst, Py_ssize_t n0, Py_ssize_t s0, Py_ssize_t d0,
                Py_ssize_t n1, Py_ssize_t s1, Py_ssize_t d1, Py_ssize_t lo, Py_ssize_t hi,
                const uint8_t* pad, Py_ssize_t es) noexcept nogil:
    """Dispatch a 2-D box on element size and destination contiguity."""
    # Rows contiguous in the destination, at any distance (a box that is a slice
    # of a wider one, as threads cut them, keeps the row kernels).
    cdef bint rows = d1 == es and (n0 == 1 or (d0 >= n1 * es and d0 % es == 0))
    cdef Py_ssize_t on = n1 if n0 == 1 else d0 // es
    if es == 1:
        if rows:
            inner2d(<uint8_t*>dst, on, src, n0, s0, n1, s1, lo, hi, (<const uint8_t*>pad)[0])
        else:
            inner2d_strided(<uint8_t*>NULL, src, dst, n0, s0, d0, n1, s1, d1, lo, hi,
                            (<const uint8_t*>pad)[0])
    elif es == 2:
        if rows:
            inner2d(<uint16_t*>dst, on, src, n0, s0, n1, s1, lo, hi, (<const uint16_t*>pad)[0])
        else:
            inner2d_strided(<uint16_t*>NULL, src, dst, n0, s0, d0, n1, s1, d1, lo, hi,
                            (<const uint16_t*>pad)[0])
    elif es == 4:
        if rows:
            inner2d(<uint32_t*>dst, on, src, n0, s0, n1, s1, lo, hi, (<const uint32_t*>pad)[0])
        else:
            inner2d_strided(<uint32_t*>NULL, src, dst, n0, s0, d0, n1, s1, d1, lo, hi,
                            (<const uint32_t*>pad)[0])
    elif es == 8:
        if rows:
            inner2d(<uint64_t*>dst, on, src, n0, s0, n1, s1, lo, hi, (<const uint64_t*>pad)[0])
        else:
            inner2d_strided(<uint64_t*>NULL, src, dst, n0, s0, d0, n1, s1, d1, lo, hi,
                            (<const uint64_t*>pad)[0])
    else:
        inner2d_bytes(src, dst, n0, s0, d0, n1, s1, d1, lo, hi, pad, es)


cdef inline void copy_one(const Plan* P, char* dst, const char* src) noexcept nogil:
    if P.cast_src < 0:
        memcpy(dst, src, P.esize)
    else:
        lk_cast(dst, src, 1, P.src_esize, P.cast_src, P.cast_dst, P.scale, P.zero_point)


cdef void box2d_cast(const Plan* P, const char* src, char* dst, Py_ssize_t n0, Py_ssize_t s0,
                     Py_ssize_t d0, Py_ssize_t n1, Py_ssize_t s1, Py_ssize_t d1,
                     Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    """A 2-D box with element conversion; lanes outside [lo, hi) get padding."""
    cdef Py_ssize_t es = P.esize
    cdef Py_ssize_t ses = P.src_esize
    cdef Py_ssize_t i, j, i0, m, tile
    cdef int padv
    cdef char* row
    cdef char* tmp = NULL
    cdef uint64_t small_tmp[SMALL_CAST_WORDS]
    if d1 == es and s1 == ses:
        # Rows contiguous on both sides: convert straight into each row.
        for i in range(n0):
            row = dst + i * d0
            fill_run(row, lo, P.pad, es)
            lk_cast(row + lo * es, src + i * s0 + lo * ses, hi - lo, ses,
                    P.cast_src, P.cast_dst, P.scale, P.zero_point)
            fill_run(row + hi * es, n1 - hi, P.pad, es)
        return
    if (s0 == ses and hi > lo and P.cast_src == LK_T_F32 and es == 1 and d1 == 1
            and d0 >= n1 and (n1 == 4 or n1 == 8 or n1 == 16)):
        # float32 channel planes into rows of 4/8/16 bytes (NCHW4c, HCWN4c of
        # int8): quantize and interleave in one pass where the CPU allows.
        padv = P.pad[0]
        if P.cast_dst == LK_T_I8:
            padv = (<const int8_t*>P.pad)[0]
        i0 = lk_quantize_interleave(dst, d0, src, s1, n0, <int>n1, <int>lo, <int>hi, P.cast_dst,
                                    P.scale, P.zero_point, padv)
        src += i0 * s0
        dst += i0 * d0
        n0 -= i0
        if n0 == 0:
            return
    if s0 == ses and hi > lo:
        # Lanes contiguous in the source: convert a tile of every data lane into
        # an L1 scratch buffer of the destination type, then interleave it with
        # the same kernels as a plain repack.
        tile = 65536 // (n1 * es)
        tile = 1024 if tile > 1024 else (8 if tile < 8 else tile)
        if n0 * n1 * es <= SMALL_CAST_BYTES:
            tile = n0           # a small box (the rows after the fused kernel's last step)
            tmp = <char*>small_tmp
        else:
            tmp = <char*>malloc(tile * n1 * es)
        if tmp != NULL:
            i0 = 0
            while i0 < n0:
                m = n0 - i0 if n0 - i0 < tile else tile
                for j in range(lo, hi):
                    lk_cast(tmp + j * m * es, src + j * s1 + i0 * s0, m, ses,
                            P.cast_src, P.cast_dst, P.scale, P.zero_point)
                box2d(tmp, dst + i0 * d0, m, es, d0, n1, m * es, d1, lo, hi, P.pad, es)
                i0 += m
            if tmp != <char*>small_tmp:
                free(tmp)
            return
    if d1 == es:
        # Destination rows contiguous: one strided conversion per row.
        for i in range(n0):
            row = dst + i * d0
            fill_run(row, lo, P.pad, es)
            lk_cast(row + lo * es, src + i * s0 + lo * s1, hi - lo, s1,
                    P.cast_src, P.cast_dst, P.scale, P.zero_point)
            fill_run(row + hi * es, n1 - hi, P.pad, es)
        return
    for i in range(n0):
        for j in range(n1):
            if lo <= j < hi:
                copy_one(P, dst + i * d0 + j * d1, src + i * s0 + j * s1)
            else:
                memcpy(dst + i * d0 + j * d1, P.pad, es)


cdef inline void box_direct(const Plan* P, const char* src, char* dst, Py_ssize_t n0,
                            Py_ssize_t s0, Py_ssize_t d0, Py_ssize_t n1, Py_ssize_t s1,
                            Py_ssize_t d1, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    if P.cast_src < 0:
        box2d(src, dst, n0, s0, d0, n1, s1, d1, lo, hi, P.pad, P.esize)
    else:
        box2d_cast(P, src, dst, n0, s0, d0, n1, s1, d1, lo, hi)


cdef bint interleave_streamed(const Plan* P, const char* src, char* dst, Py_ssize_t n0,
                              Py_ssize_t s0, Py_ssize_t d0, Py_ssize_t n1, Py_ssize_t s1,
                              Py_ssize_t d1, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    """A box of 4, 8 or 16 whole lanes of 2- or 4-byte elements into dense pixels,
    written with streaming stores (lk_interleave_stream; the last few pixels
    through the cache): in streamed runs, and for boxes of 64 KiB+ in runs of
    8 MiB+ (NCHW4c / NCHW8c float16 of 1x64x256x256, whole planes: 0.8x the
    time; not the short boxes of HCWNC4 float16 there, which took 1.15x).
    False where that does not apply."""
    cdef Py_ssize_t es = P.esize
    cdef Py_ssize_t done, j
    cdef const void* lanes[16]
    if not (P.cast_src < 0 and s0 == es and d1 == es and d0 == n1 * es and lo == 0
            and hi == n1 and (n1 == 4 or n1 == 8 or n1 == 16) and (es == 2 or es == 4)):
        return False
    if not (P.stream or (n0 * n1 * es >= 65536 and lk_large_operation())):
        return False
    for j in range(n1):
        lanes[j] = src + j * s1
    done = lk_interleave_stream(dst, lanes, n0, <int>n1, <int>es)
    if done == 0:
        return False
    if not P.stream:
        lk_stream_fence()  # the run fences streamed runs only
    if done < n0:
        box_direct(P, src + done * s0, dst + done * d0, n0 - done, s0, d0, n1, s1, d1, lo, hi)
    return True


cdef void box_out(const Plan* P, const char* src, char* dst, Py_ssize_t n0, Py_ssize_t s0,
                  Py_ssize_t d0, Py_ssize_t n1, Py_ssize_t s1, Py_ssize_t d1, Py_ssize_t lo,
                  Py_ssize_t hi) noexcept nogil:
    """A 2-D box; with ``P.stream``, built in L1 piece by piece and streamed out."""
    cdef Py_ssize_t es = P.esize
    cdef Py_ssize_t rows, cw, r0, c0, r, c, i, l2, h2, line, head
    cdef bint small, pf
    cdef uint64_t stage_mem[STAGE_WORDS]
    cdef char* stage = <char*>((<size_t>stage_mem + 63) & ~(<size_t>63))
    if interleave_streamed(P, src, dst, n0, s0, d0, n1, s1, d1, lo, hi):
        return
    small = n0 * n1 * es < 2 * STAGE or n1 * es < 256
    if not P.stream or d1 != es or (P.stream == 1 and small):
        box_direct(P, src, dst, n0, s0, d0, n1, s1, d1, lo, hi)
        return
    if (s0 == es and lo == 0 and hi == n1 and P.cast_src < 0
            and lk_transpose_beats_staging(d0, n0, n1, <int>es)):
        box_direct(P, src, dst, n0, s0, d0, n1, s1, d1, lo, hi)
        return
    if n1 * es * 4 <= STAGE:
        cw = n1                                       # whole rows, several per piece
        rows = STAGE // (n1 * es)
    else:
        rows = n0 if n0 < 64 else 64                  # a tile of rows x whole lines
        line = 64 // es if es < 64 else 1             # elements per cache line
        cw = STAGE // (rows * es) // line * line
        if cw < line:
            cw = line
            rows = STAGE // (cw * es) if STAGE >= cw * es else 1
        if cw > n1:
            cw = n1
    # Pieces start on destination lines (a shorter first piece when every row
    # starts the same distance into a line), so that only whole lines stream.
    # Elements that divide a line only: cw is then a whole number of lines and
    # the first piece keeps at least one element.
    head = (<size_t>dst) & 63
    if cw < n1 and d0 % 64 == 0 and 64 % es == 0 and head % es == 0 and head:
        head = cw - head // es
    else:
        head = cw
    pf = s0 == es and n1 >= 16
    r0 = 0
    while r0 < n0:
        r = n0 - r0 if n0 - r0 < rows else rows
        c0 = 0
        while c0 < n1:
            c = head if c0 == 0 else cw
            c = n1 - c0 if n1 - c0 < c else c
            l2 = lo - c0
            l2 = 0 if l2 < 0 else (c if l2 > c else l2)
            h2 = hi - c0
            h2 = l2 if h2 < l2 else (c if h2 > c else h2)
            if pf and r0 + r < n0:
                # This piece's lanes, one block of rows on: read again after the
                # rest of the row block, too many streams for the prefetchers.
                for i in range(l2, h2):
                    lk_prefetch_lane(src + (r0 + r) * s0 + (c0 + i) * s1, r * es)
            box_direct(P, src + r0 * s0 + c0 * s1, stage, r, s0, c * es, c, s1, es, l2, h2)
            if c == n1 and d0 == n1 * es:
                lk_stream_copy(dst + r0 * d0, stage, r * c * es)
            else:
                for i in range(r):
                    lk_stream_copy(dst + (r0 + i) * d0 + c0 * es, stage + i * c * es, c * es)
            c0 += c
        r0 += r


# ---------------------------------------------------------------------------
# Boxes over several levels
# ---------------------------------------------------------------------------

cdef inline Py_ssize_t clamp(int64_t v, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    return lo if v < lo else (hi if v > hi else <Py_ssize_t>v)


cdef inline Py_ssize_t abs_ssize(Py_ssize_t v) noexcept nogil:
    return -v if v < 0 else v


cdef inline bint advance(const Plan* P, int lev, int top, Py_ssize_t* idx,
                         const Py_ssize_t* ext, const char** src, char** dst) noexcept nogil:
    """Step the odometer over levels [lev, top) (level top-1 fastest), moving both
    pointers; False once every position has been visited."""
    cdef int k = top - 1
    while k >= lev:
        idx[k] += 1
        src[0] += P.ss[k]
        dst[0] += P.ds[k]
        if idx[k] < ext[k]:
            return True
        src[0] -= P.ss[k] * ext[k]
        dst[0] -= P.ds[k] * ext[k]
        idx[k] = 0
        k -= 1
    return False


cdef bint copy_small_boxes(const Plan* P, int lev, int a, Py_ssize_t g, const char* src,
                           char* dst, Py_ssize_t nfirst, Py_ssize_t r_lo, Py_ssize_t r_hi,
                           Py_ssize_t l_lo, Py_ssize_t l_hi, bint pack) noexcept nogil:
    """The box of levels [lev, nlev) as boxes whose data fits one 16-byte shuffle
    (lk_smallbox_grid): croutons of a few channels. A box is the innermost level
    (a = nlev - 1) or g rows of level a = nlev - 2 (g dividing its extent) by the
    innermost level; its data is rows [r_lo, r_hi) and lanes [l_lo, l_hi);
    packing, the rest of the box is padding. With g < the extent of level a
    (pixels of NHWC8h8w32c, a row each), each row's data sits at its start.
    False (nothing done) when the boxes do not fit or this platform has no
    kernel for them."""
    cdef int nlev = P.nlev
    cdef Py_ssize_t es = P.esize
    cdef Py_ssize_t n0 = 1, s0 = 0, d0 = 0, n1, s1, d1, reach, box, whole
    cdef int g0, j, k, nl, split = 0, nsub = 1
    cdef bint stream
    cdef lk_smallbox kb
    cdef lk_grid_level lv[4]
    cdef lk_grid_level t
    cdef Py_ssize_t idx[MAX_LEVELS]
    cdef Py_ssize_t ext[MAX_LEVELS]
    if a == nlev - 1:
        r_lo, r_hi = 0, 1
    if (P.cast_src >= 0 or a <= lev or 16 % es != 0 or nfirst <= 0
            or (r_hi - r_lo) * (l_hi - l_lo) * es > 16):
        return False    # checked first: called for every padded box of the walk
    n1, s1, d1 = P.ext[nlev - 1], P.ss[nlev - 1], P.ds[nlev - 1]
    if a == nlev - 2:
        if g <= 0 or P.ext[a] % g != 0:
            return False
        n0, s0, d0 = g, P.ss[a], P.ds[a]
        if g < P.ext[a]:
            split = 1       # level a is also a grid level, g rows at a time
            nsub = <int>g
    box = n0 * n1 * es
    if pack and not (d1 == es and (n0 == 1 or d0 == n1 * es)):
        return False       # the padding is written as one contiguous block per box
    if not lk_smallbox_plan(&kb, <int>es, s0, d0, r_lo, r_hi, s1, d1, l_lo, l_hi, pack, box,
                            nsub, P.pad):
        return False
    for k in range(lev, a):
        ext[k] = P.ext[k]
        idx[k] = 0
    ext[lev] = nfirst
    # The grid: levels [g0, a), then level a when split; outer levels beyond
    # four are walked here.
    g0 = a + split - 4 if a + split - lev > 4 else lev
    nl = a - g0
    stream = P.stream != 0 and pack and <size_t>dst % 16 == 0
    for j in range(nl):
        k = g0 + j
        lv[j].n, lv[j].s, lv[j].d = ext[k], P.ss[k], P.ds[k]
    if split:
        lv[nl].n, lv[nl].s, lv[nl].d = P.ext[a] // g, g * P.ss[a], g * P.ds[a]
        nl += 1
    for j in range(nl):
        stream = stream and lv[j].d % 16 == 0
    if not pack:
        # Unpacking reads a padded source several times the destination's size:
        # visit it in source order (Crouton4x1 -> NHWC 1x3x1024x1024: 0.6x the time).
        for j in range(1, nl):
            t = lv[j]
            k = j
            while k > 0 and abs_ssize(lv[k - 1].s) < abs_ssize(t.s):
                lv[k] = lv[k - 1]
                k -= 1
            lv[k] = t
    while True:
        # One past the last source byte of this grid: its last box's window.
        reach = kb.win
        if not pack:
            reach += (kb.nsub - 1) * kb.pitch    # a load per row
        for j in range(nl):
            if lv[j].s > 0:
                reach += (lv[j].n - 1) * lv[j].s
        # ... and of the grid with level lev whole (a thread's slice has part).
        whole = reach
        if g0 == lev and P.ss[lev] > 0:
            whole += (P.ext[lev] - nfirst) * P.ss[lev]
        if not lk_smallbox_grid(dst, src, lv, nl, &kb, src + reach, src + whole, stream):
            return False
        if not advance(P, lev, g0, idx, ext, &src, &dst):
            return True


cdef bint copy_pixel_boxes(const Plan* P, int lev, const char* src, char* dst,
                           Py_ssize_t nfirst, Py_ssize_t lo, Py_ssize_t hi,
                           bint pack) noexcept nogil:
    """copy_small_boxes for pixels (the innermost level) whose lanes [lo, hi) are
    data, packing padded ones or gathering out of them (NHWC8h8w32c of 3 channels):
    4 or 2 pixels per box when their data fits 16 bytes (uint8 1x3x224x224: 0.6x
    the time of a pixel per box packing, 0.76x unpacking), else one."""
    cdef int nlev = P.nlev
    cdef Py_ssize_t g = 4
    cdef Py_ssize_t es = P.esize, pix = P.ext[nlev - 1] * P.esize
    cdef lk_grid_level lv[4]
    cdef int g0, j, nl
    cdef Py_ssize_t idx[MAX_LEVELS]
    cdef Py_ssize_t ext[MAX_LEVELS]
    cdef uint64_t padmem[32]
    if (pack and lo == 0 and ((hi - lo) * es > 16 or (pix == 32 and (hi - lo) * es > 8))
            and P.cast_src < 0 and P.ss[nlev - 1] == es and P.ds[nlev - 1] == es
            and nlev - 1 > lev and pix <= 256):
        # Pixels of more data than one 16-byte shuffle takes (16-31 channels of
        # NHWC8h8w32c), or 9-16 bytes of 32-byte pixels (whose boxes do not
        # make the 64-byte pieces of lk_smallbox_pack_vbmi): a masked load over
        # the pad vector per 32-64 bytes of pixel (NHWC -> Crouton 1x16x112x112
        # uint8 0.62x the time, float16 0.65x; 1x24x56x56 0.46-0.58x).
        fill_run(<char*>padmem, 256 // es, P.pad, es)
        g0 = nlev - 5 if nlev - 1 - lev > 4 else lev
        nl = nlev - 1 - g0
        for j in range(lev, nlev - 1):
            ext[j] = P.ext[j]
            idx[j] = 0
        ext[lev] = nfirst
        for j in range(nl):
            lv[j].n, lv[j].s, lv[j].d = ext[g0 + j], P.ss[g0 + j], P.ds[g0 + j]
        if lk_padpix_grid(dst, src, lv, nl, <int>pix, <int>(hi * es), padmem):
            while advance(P, lev, g0, idx, ext, &src, &dst):
                lk_padpix_grid(dst, src, lv, nl, <int>pix, <int>(hi * es), padmem)
            return True
    while nlev - 2 > lev and g >= 2:
        if (P.ext[nlev - 2] % g == 0 and g * (hi - lo) * P.esize <= 16
                and copy_small_boxes(P, lev, nlev - 2, g, src, dst, nfirst, 0, g, lo, hi, pack)):
            return True
        g //= 2
    return copy_small_boxes(P, lev, nlev - 1, 1, src, dst, nfirst, 0, 1, lo, hi, pack)


cdef inline void copy_lane_box(char* dst, const char* src, const Py_ssize_t* lane_off,
                               const bint* lane_pad, const void* padbuf, Py_ssize_t m,
                               Py_ssize_t K, Py_ssize_t es) noexcept nogil:
    """One box of copy_lanes: K lanes of m elements interleaved, TILE rows at a time."""
    cdef const void* lanes[64]
    cdef Py_ssize_t i0 = 0, mm, j
    while i0 < m:
        mm = m - i0 if m - i0 < TILE else TILE
        for j in range(K):
            lanes[j] = padbuf if lane_pad[j] else src + lane_off[j] + i0 * es
        lk_interleave_lane_box(dst + i0 * K * es, lanes, mm, <int>K, <int>es)
        i0 += mm


cdef void copy_lane_box_streamed(char* dst, const char* src, const Py_ssize_t* lane_off,
                                 const bint* lane_pad, const void* padbuf, Py_ssize_t m,
                                 Py_ssize_t K, Py_ssize_t es) noexcept nogil:
    """copy_lane_box built in L1 a piece of rows at a time and streamed out, for
    outputs beyond the cache (stores through the cache read each destination
    line from memory first). NCHW -> HCWNC4 / HCWNC8 of 8x256x56x56, boxes of
    56 rows of 32 or 64 lanes (compare_builds.py): float32 0.63x / 0.67x the
    time; float16 gained nothing (0.99x / 1.04x), so it is for 4- and 8-byte
    elements only."""
    cdef uint64_t stage_mem[STAGE_WORDS]
    cdef char* stage = <char*>((<size_t>stage_mem + 63) & ~(<size_t>63))
    cdef Py_ssize_t row = K * es
    cdef Py_ssize_t fit = STAGE // row
    cdef Py_ssize_t pieces, per
    cdef Py_ssize_t r0 = 0, c
    if fit == 0:
        copy_lane_box(dst, src, lane_off, lane_pad, padbuf, m, K, es)
        return
    # Pieces of about equal rows, each within the stage: rounding the bytes
    # instead of the rows overflowed it (430 rows of 320 bytes: 17 pieces of 26).
    pieces = (m + fit - 1) // fit
    per = (m + pieces - 1) // pieces
    while r0 < m:
        c = m - r0 if m - r0 < per else per
        copy_lane_box(stage, src + r0 * es, lane_off, lane_pad, padbuf, c, K, es)
        lk_stream_copy(dst + r0 * row, stage, c * row)
        r0 += c


cdef inline bint advance_both(const Plan* P, const int* order, int nord, Py_ssize_t* idx,
                              const Py_ssize_t* ext, const char** src, char** dst) noexcept nogil:
    """``advance`` over the levels in ``order`` (the last fastest)."""
    cdef int j = nord - 1
    cdef int k
    while j >= 0:
        k = order[j]
        idx[k] += 1
        src[0] += P.ss[k]
        dst[0] += P.ds[k]
        if idx[k] < ext[k]:
            return True
        src[0] -= P.ss[k] * ext[k]
        dst[0] -= P.ds[k] * ext[k]
        idx[k] = 0
        j -= 1
    return False


cdef inline int order_by_source(const Plan* P, int lev, int top, int* order,
                                Py_ssize_t* idx) noexcept nogil:
    """Levels [lev, top) into ``order`` for advance_both, their odometer ``idx``
    zeroed, with the level of the smallest nonzero source step moved last
    (fastest); ties keep destination order. Returns the number of levels.

    For boxes that may be visited in any order: each lane is then read as a
    sequential stream (HCWN4c: H innermost, not C/4) instead of short pieces of
    far-away rows."""
    cdef int nord = 0, best, j, k
    for k in range(lev, top):
        idx[k] = 0
        order[nord] = k
        nord += 1
    best = nord - 1
    for j in range(nord):
        if P.ss[order[j]] != 0 and (P.ss[order[best]] == 0
                                    or abs_ssize(P.ss[order[j]]) < abs_ssize(P.ss[order[best]])):
            best = j
    if nord > 1 and best != nord - 1:
        k = order[best]
        for j in range(best, nord - 1):
            order[j] = order[j + 1]
        order[nord - 1] = k
    return nord


cdef inline void copy_tiny_lanes(char* dst, const char* src, const Py_ssize_t* lane_off,
                                 const bint* lane_pad, const char* padbuf, Py_ssize_t m,
                                 Py_ssize_t K, Py_ssize_t es) noexcept nogil:
    """copy_lane_box for lanes of at most 16 bytes: plain element moves."""
    cdef Py_ssize_t i, j
    cdef const char* p
    cdef const uint8_t* lp[64]
    cdef uint8_t* o = <uint8_t*>dst
    if es == 1:
        for j in range(K):
            lp[j] = <const uint8_t*>(padbuf if lane_pad[j] else src + lane_off[j])
        for i in range(m):       # destination order: one row of K lanes at a time
            for j in range(K):
                o[j] = lp[j][i]
            o += K
        return
    for j in range(K):
        p = padbuf if lane_pad[j] else src + lane_off[j]
        if es == 2:
            for i in range(m):
                (<uint16_t*>dst)[i * K + j] = (<const uint16_t*>p)[i]
        elif es == 4:
            for i in range(m):
                (<uint32_t*>dst)[i * K + j] = (<const uint32_t*>p)[i]
        else:
            for i in range(m):
                memcpy(dst + (i * K + j) * es, p + i * es, es)


cdef inline void copy_short(char* dst, const char* src, Py_ssize_t n) noexcept nogil:
    """Copy n <= 256 bytes as two overlapping fixed-size moves (more: memcpy)."""
    if n > 128 and n <= 256:
        # Runs of 112-224 bytes (HCWNC4 / HCWNC8 rows of 7x7 planes, float16
        # and float32) were a memcpy call each: 15% of f32 -> HCWNC4 int8.
        memcpy(dst, src, 128)
        memcpy(dst + n - 128, src + n - 128, 128)
    elif n > 64 and n <= 128:
        memcpy(dst, src, 64)
        memcpy(dst + n - 64, src + n - 64, 64)
    elif n >= 32 and n <= 64:
        memcpy(dst, src, 32)
        memcpy(dst + n - 32, src + n - 32, 32)
    elif n >= 16 and n < 32:
        memcpy(dst, src, 16)
        memcpy(dst + n - 16, src + n - 16, 16)
    elif n >= 8 and n < 16:
        memcpy(dst, src, 8)
        memcpy(dst + n - 8, src + n - 8, 8)
    elif n >= 4 and n < 8:
        memcpy(dst, src, 4)
        memcpy(dst + n - 4, src + n - 4, 4)
    else:
        memcpy(dst, src, n)


cdef inline void copy_run(char* dst, const char* src, Py_ssize_t nbytes) noexcept nogil:
    # Constant sizes compile to a few moves instead of a call to memcpy; other
    # sizes up to 64 bytes are two overlapping moves.
    if nbytes == 3:
        memcpy(dst, src, 3)
    elif nbytes == 4:
        memcpy(dst, src, 4)
    elif nbytes == 8:
        memcpy(dst, src, 8)
    elif nbytes == 6:
        memcpy(dst, src, 6)
    elif nbytes == 12:
        memcpy(dst, src, 12)
    elif nbytes == 16:
        memcpy(dst, src, 16)
    elif nbytes == 2:
        memcpy(dst, src, 2)
    elif nbytes == 1:
        dst[0] = src[0]
    elif nbytes == 32:
        memcpy(dst, src, 32)
    elif nbytes == 64:
        memcpy(dst, src, 64)
    elif nbytes == 128:
        memcpy(dst, src, 128)
    elif nbytes > 0:
        copy_short(dst, src, nbytes)


cdef bint copy_lane_blocks(const Plan* P, const int* order, int nord, Py_ssize_t* idx,
                           const Py_ssize_t* ext, const char* src, char* dst,
                           const Py_ssize_t* lane_off, const bint* lane_pad,
                           const void* padbuf, Py_ssize_t m, Py_ssize_t K) noexcept nogil:
    """copy_lanes when its lanes continue across the level visited fastest
    (``order[nord - 1]``, source step m elements): the boxes of that level are
    one interleave of longer lanes, built in an L1 buffer and copied out box by
    box. HCWN4c of 7x7 planes (boxes of 7 x 4 bytes, the 7 H rows of a plane in
    a row) and NHWC -> Crouton4x1 (8 boxes of 32 x 4 along the channels) paid a
    walk step, a prefetch and a kernel call per box."""
    cdef Py_ssize_t es = P.esize
    cdef int o = order[nord - 1]
    cdef int o2 = order[nord - 2] if nord >= 2 else -1
    cdef Py_ssize_t blk = m * K * es       # at most 512 bytes
    cdef Py_ssize_t nb = STAGE // blk
    cdef Py_ssize_t b, n, t, g0, g, q, span
    cdef Py_ssize_t sstep = P.ss[o], dstep = P.ds[o]
    cdef uint64_t stage_mem[STAGE_WORDS]
    cdef char* stage = <char*>((<size_t>stage_mem + 63) & ~(<size_t>63))
    if nb > ext[o]:
        nb = ext[o]
    span = ext[o] * blk
    if o2 >= 0 and nb == ext[o] and P.ds[o2] == blk and ext[o2] > 1 and STAGE // span >= 2:
        # The next level's boxes lie side by side in the destination (HCWN4c
        # of 7x7 planes: blocks of 4 channels, 28 bytes apart in each H row):
        # stage several of them and copy out row by row, so that the stores
        # run along the destination instead of 7 rows 14 KiB apart per block
        # (store misses were a third of the time).
        while True:
            g0 = 0
            while g0 < ext[o2]:
                g = ext[o2] - g0 if ext[o2] - g0 < STAGE // span else STAGE // span
                for q in range(g):
                    copy_lane_box(stage + q * span, src + (g0 + q) * P.ss[o2], lane_off,
                                  lane_pad, padbuf, ext[o] * m, K, es)
                for t in range(ext[o]):
                    lk_copy_rows(dst + t * dstep + g0 * blk, blk, stage + t * blk, span, g, blk)
                g0 += g
            if not advance_both(P, order, nord - 2, idx, ext, &src, &dst):
                return True
    while True:
        b = 0
        while b < ext[o]:
            n = ext[o] - b if ext[o] - b < nb else nb
            copy_lane_box(stage, src + b * sstep, lane_off, lane_pad, padbuf, n * m, K, es)
            for t in range(n):
                copy_run(dst + (b + t) * dstep, stage + t * blk, blk)
            b += n
        if not advance_both(P, order, nord - 1, idx, ext, &src, &dst):
            return True


cdef bint copy_box_grid(const Plan* P, const int* order, int nord, Py_ssize_t* idx,
                        const Py_ssize_t* ext, const char* src, char* dst, int kind,
                        const lk_grid_level* inner, int ninner, Py_ssize_t stride,
                        Py_ssize_t m, int data, const void* pad) noexcept nogil:
    """copy_lanes' boxes through lk_box_grid; False, with nothing written, where
    the grid kernels do not apply. An interleave reads its first ``data`` lanes;
    the others are padding (the pattern at ``pad``).

    The levels of ``order`` are visited in source order (smallest step
    fastest). The fastest of them and the ``ninner`` box levels of ``inner``,
    four levels in all, run per call; the odometer steps through the rest."""
    cdef lk_grid_level lv[4]
    cdef lk_grid_level tmp
    cdef int g = nord if nord < 4 - ninner else 4 - ninner
    cdef int j, k, t
    cdef int sorted_order[MAX_LEVELS]
    # Every level in source order (the smallest step fastest): each chunk of a
    # crouton is then read whole before the next.
    for j in range(nord):
        t = order[j]
        k = j
        while k > 0 and abs_ssize(P.ss[sorted_order[k - 1]]) < abs_ssize(P.ss[t]):
            sorted_order[k] = sorted_order[k - 1]
            k -= 1
        sorted_order[k] = t
    order = sorted_order
    for j in range(g):
        lv[j].n = ext[order[nord - g + j]]
        lv[j].s = P.ss[order[nord - g + j]]
        lv[j].d = P.ds[order[nord - g + j]]
    for j in range(ninner):
        lv[g + j] = inner[j]
    # The box levels in source order too: Crouton2 / Crouton4x1 -> NHWC took
    # the 32-channel chunks of each pixel in turns, 2 KiB apart, and on Zen 5
    # reading a few pages in turns draws half the bandwidth of reading them
    # one after the other from memory (18 against 38 GB/s, a C loop). Against
    # the turns, compare_builds.py, 3 rounds: Crouton2 float16 1x64x256x256
    # 0.41x the time, 8x256x56x56 0.66x; Crouton4x1 uint8 0.80x / 0.62x.
    for j in range(1, g + ninner):
        k = j
        while k > 0 and abs_ssize(lv[k - 1].s) < abs_ssize(lv[k].s):
            tmp = lv[k]
            lv[k] = lv[k - 1]
            lv[k - 1] = tmp
            k -= 1
    if not lk_box_grid(kind, dst, src, lv, g + ninner, stride, m, data, pad):
        return False
    while advance_both(P, order, nord - g, idx, ext, &src, &dst):
        lk_box_grid(kind, dst, src, lv, g + ninner, stride, m, data, pad)
    return True


cdef void copy_short_lanes(const Plan* P, const int* order, int nord, Py_ssize_t* idx,
                           const Py_ssize_t* ext, const char* src, char* dst,
                           const Py_ssize_t* lane_off, Py_ssize_t m, Py_ssize_t K,
                           bint prefetch_next) noexcept nogil:
    """copy_lanes' boxes of short lanes, none of them padding (NCHW8c /
    NCHW16c of 7x7 planes), where lk_zipn_applies: the lane table is built
    once, and each box passes its offset from the first box (building the
    table per box was a fifth of the time). Byte lanes without prefetches
    pass the boxes of the fastest outer level to the kernel in one call
    (1x2048x7x7, NCHW8c / NCHW16c uint8: 0.92x / 0.96x the time of a call per
    block; float16 and float32, several steps a box with the lane pointers on
    the stack, took 1.1-1.2x and keep a call per block)."""
    cdef const void* lanes[32]
    cdef const char* base = src
    cdef Py_ssize_t j
    cdef int o = order[nord - 1] if nord > 0 else -1
    for j in range(K):
        lanes[j] = src + lane_off[j]
    if o >= 0 and not prefetch_next:
        while lk_interleave_zipn_boxes(dst, P.ds[o], lanes, src - base, P.ss[o], ext[o], m,
                                       <int>K, <int>P.esize):
            if not advance_both(P, order, nord - 1, idx, ext, &src, &dst):
                return
    while True:
        if o >= 0 and prefetch_next and idx[o] + 1 < ext[o]:
            for j in range(K):
                lk_prefetch_lane(src + P.ss[o] + lane_off[j], m * P.esize)
            if not P.stream and m * K * P.esize >= OUT_PREFETCH_BYTES:
                lk_prefetch_output(dst + P.ds[o], m * K * P.esize)
        lk_interleave_zipn_at(dst, lanes, src - base, m, <int>K, <int>P.esize)
        if not advance_both(P, order, nord, idx, ext, &src, &dst):
            return


cdef bint copy_lanes(const Plan* P, int lev, const char* src, char* dst,
                     const Py_ssize_t* ext, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    """The box of levels [lev, nlev) as interleaves of many lanes, if it has that shape.

    Applies when a level L (the *row* level) is contiguous in the source and all
    levels below it form one contiguous run of K slots in the destination: e.g.
    HCWN4c of a batch, where each W row of the destination holds N x 4 lanes, each
    lane a contiguous W run of some source plane. The 2-D box path would see only
    the innermost two levels (N x 4 elements) per call. Also for a single level of
    lanes when rows are short (HCWN4c of 7x7 planes: 7 x 4 bytes per box; HTP
    Crouton4x1: 32 x 4), where a 2-D box call per box costs ~500 instructions
    (Crouton4x1 pack: 40 -> 12 M instructions per 4 MiB). Returns False otherwise.
    """
    cdef int nlev = P.nlev
    cdef Py_ssize_t es = P.esize
    cdef int L = -1, k, j, nord
    cdef int order[MAX_LEVELS]
    cdef Py_ssize_t K = 1, m, off
    cdef Py_ssize_t idx[MAX_LEVELS]
    cdef Py_ssize_t lane_off[MAX_LANES]
    cdef bint lane_pad[MAX_LANES]
    cdef uint64_t padbuf[TILE]
    cdef Py_ssize_t pf_idx[MAX_LEVELS]
    cdef Py_ssize_t pf_line[64]
    cdef Py_ssize_t pf_off[64]
    cdef Py_ssize_t npf = 0, end
    cdef Py_ssize_t grp_lane[64]
    cdef Py_ssize_t grp_n[64]
    cdef Py_ssize_t ngrp = 0
    cdef bint use_runs = False
    cdef lk_grid_level grid[1]
    cdef const char* pf_src = src
    cdef char* pf_dst = dst      # moved alongside pf_src, never written
    cdef bint pf_live = False
    cdef bint prefetch_next = True
    cdef bint even
    if P.cast_src >= 0 or nlev - lev < 3 or es > 8:
        return False
    k = nlev - 2
    while k >= lev:
        if P.ss[k] == es:
            L = k
            break
        k -= 1
    if L < 0 or L > nlev - 2 or P.ds[nlev - 1] != es:
        return False
    if L == nlev - 2 and ext[L] * es > 64 and not (
            es >= 2 and ext[L] * es <= ZIPN_BYTES and
            (ext[nlev - 1] <= 8 or (ext[nlev - 1] <= 32 and (es == 2 or lk_small_operation())))):
        # One level of lanes: the 2-D box kernels do better, but for short
        # rows, and for pixels of 4-32 wider elements from planes of up to 256
        # bytes, whose boxes the zip kernels and lane tiles take from one lane
        # table (in a batched call where the boxes lie side by side): NCHW8c /
        # NCHW4c float16 and float32 of 5x5 to 10x10 planes 0.75-0.99x the
        # time, NCHW16c / NCHW32c float16 0.68-1.03x (1x2048x7x7 NCHW8c 0.75x,
        # NCHW16c 0.68x). 16 and 32 float32 lanes only in operations within
        # L2 (1x2048x7x7 NCHW16c 0.76x, NCHW32c 0.91x; 8x512x7x7 1.0-1.03x).
        return False
    for k in range(nlev - 1, L, -1):
        if k < nlev - 1 and P.ds[k] != ext[k + 1] * P.ds[k + 1]:
            return False
        K *= ext[k]
        if K > MAX_LANES:
            return False
    m = ext[L]
    if P.ds[L] != K * es or m < 2 or (m < 4 and m * es > 16):
        return False
    # Lane j: its source offset and whether its innermost digit is padding.
    for k in range(L + 1, nlev):
        idx[k] = 0
    for j in range(K):
        off = 0
        for k in range(L + 1, nlev):
            off += idx[k] * P.ss[k]
        lane_off[j] = off
        lane_pad[j] = not (lo <= idx[nlev - 1] < hi)
        k = nlev - 1
        while k > L:
            idx[k] += 1
            if idx[k] < ext[k]:
                break
            idx[k] = 0
            k -= 1
    for j in range(K):
        if lane_pad[j]:
            fill_run(<char*>padbuf, TILE * 8 // es, P.pad, es)
            break
    # Boxes are independent runs of K * m destination slots, so the outer levels
    # may be visited in any order.
    nord = order_by_source(P, lev, L, order, idx)
    if lk_small_operation() and m * es > 16:
        # A small operation (its source in L2) whose boxes are each one run of
        # the source (NCHW -> NCHW8c-32c / kCHW32 of 7x7 planes: 8-32 lanes of
        # 49 bytes side by side) reads one sequential stream, which the
        # hardware prefetcher follows: prefetching every lane of the next box
        # only costs instructions (0.77-0.87x the time without, Xeon).
        # Lanes planes apart (HCWNC4 of 224x224) still gain from it.
        j = 1
        while j < K and lane_off[j] == lane_off[j - 1] + m * es and not lane_pad[j]:
            j += 1
        prefetch_next = j < K or lane_pad[0]
    if P.stream and es >= 4 and m * K * es >= 4096 and K <= 32:
        # Boxes staged and streamed (copy_lane_box_streamed) of up to 32
        # lanes: the lanes read as sequential streams the prefetchers follow,
        # and prefetching the next box only crowded them (HCWNC4 float32 of
        # 8x256x56x56: 0.91x the time without). 64 lanes (HCWNC8) keep it
        # (1.26x the time without).
        prefetch_next = False
    # Tiny lanes that lie side by side in the source (crouton -> NHWC of 64
    # channels: 32 lanes of 4 bytes make one 128-byte run) are de-interleaves of
    # whole runs, not element moves.
    if m * es <= 16:
        j = 0
        while j < K:
            if lane_pad[j]:
                ngrp = K     # padding lanes (packing): element moves
                break
            k = j + 1
            while k < K and not lane_pad[k] and lane_off[k] == lane_off[k - 1] + m * es:
                k += 1
            if ngrp == 64:
                ngrp = K     # too many runs: element moves
                break
            grp_lane[ngrp] = j
            grp_n[ngrp] = k - j
            ngrp += 1
            j = k
        use_runs = ngrp * 8 <= K
    if K > 64 and not (m * es <= 16 and use_runs):
        return False    # more lanes than the interleave kernels take (runs excepted)
    if use_runs and m * es == 4 and (m == 4 or m == 2):
        # Pixels of 4 bytes into rows (Crouton4x1 / Crouton2 -> NHWC): the runs
        # are the innermost box level of a grid when they are evenly spaced.
        off = lane_off[grp_lane[1]] if ngrp > 1 else 0
        j = 0
        while j < ngrp and grp_n[j] == grp_n[0] and grp_lane[j] == j * grp_n[0]:
            if lane_off[grp_lane[j]] != j * off:
                break
            j += 1
        if j == ngrp:
            grid[0].n, grid[0].s, grid[0].d = ngrp, off, grp_n[0] * es
            if copy_box_grid(P, order, nord, idx, ext, src, dst,
                             LK_GRID_DI4_U8 if m == 4 else LK_GRID_DI2_U16, grid, 1, K * es,
                             grp_n[0], m, NULL):
                return True
    if (not use_runs and K * es == 4 and (K == 4 or K == 2) and m * es <= 64
            and lane_off[1] <= 4096 and lane_off[1] >= -4096):
        # Short lanes a fixed stride apart (NHWC -> Crouton4x1 / Crouton2), the
        # last ones possibly padding (the last column group of 7x7 planes).
        j = 0
        while j < K and not lane_pad[j] and lane_off[j] == j * lane_off[1]:
            j += 1
        k = j
        while k < K and lane_pad[k]:
            k += 1
        if j > 0 and k == K and copy_box_grid(P, order, nord, idx, ext, src, dst,
                                              LK_GRID_IL4_U8 if K == 4 else LK_GRID_IL2_U16,
                                              grid, 0, lane_off[1], m, <int>j,
                                              <const void*>padbuf):
            return True
    if (nord > 0 and not use_runs and P.ss[order[nord - 1]] == m * es
            and ext[order[nord - 1]] > 1
            and m * K * es <= (LANE_BLOCK_L2_BYTES if lk_l2_operation() else LANE_BLOCK_BYTES)):
        # Small boxes only: larger ones gain nothing from batching and lose the
        # extra copy and the next box's prefetch (HCWN4c of 8 x 56 x 56: -25%).
        # Up to 1 KiB (64 byte lanes of 14x14 planes into HCWNC8 of a batch of
        # 8: 0.19x the time, where copy_lanes moved 14-byte lanes element by
        # element; HCWNC4 8x256x28x28 int8 0.79x), 4 KiB within L2 (HCWNC8
        # 8x256x14x14 float16 0.71x, 8x64x28x28 int8 0.55x); 1.8-3.5 KiB boxes
        # past L2 took 1.04-1.07x (HCWNC4 float16 8x256x28x28).
        return copy_lane_blocks(P, order, nord, idx, ext, src, dst, lane_off, lane_pad,
                                <const void*>padbuf, m, K)
    if m * es <= 16 and nord > 0 and not (use_runs and ngrp == 1 and lane_off[0] == 0
                                          and P.ss[order[nord - 1]] == K * m * es):
        # Tiny boxes far apart in the source (crouton -> NHWC: 12 bytes of every
        # 128): each box's loads miss the cache, and the prefetchers do not follow
        # the jumps. A second odometer runs PF_BOXES boxes ahead and prefetches
        # the distinct lines of that box (measured 25 -> 7 ms for 1x3x1024x1024).
        # Not for boxes that are one run each, back to back (unpacking NCHW16c:
        # the source is read in order; 0.58-0.9x the time without for uint8 of
        # 7x7 and 14x14 planes, NCHW4c float16 / float32 of 14x14 0.74-0.77x).
        npf = 0
        for j in range(K):
            if lane_pad[j]:
                continue
            for end in range(2):
                off = lane_off[j] + end * (m * es - 1)
                k = 0
                while k < npf and pf_line[k] != off >> 6:
                    k += 1
                if k == npf and npf < 64:
                    pf_line[npf] = off >> 6
                    pf_off[npf] = off
                    npf += 1
        for k in range(lev, L):
            pf_idx[k] = 0
        pf_src = src
        pf_live = True
        k = 0
        while pf_live and k < PF_BOXES:
            pf_live = advance_both(P, order, nord, pf_idx, ext, &pf_src, &pf_dst)
            k += 1
    if m * es > 16 and lk_zipn_applies(m, <int>K, <int>es, 1):
        # Where the loop below streams the stores (large operations, 4-byte
        # lanes), only lanes evenly spaced (the lane tiles' shape): those of
        # a batch (HCWNC4 float32 of 8x256x56x56, N x 4 lanes) took 1.75x the
        # time through the lane table, their stores through the cache.
        even = True
        if P.stream and es >= 4 and m * K * es >= 4096 and K > 1:
            j = 1
            while j < K and lane_off[j] == j * lane_off[1]:
                j += 1
            even = j == K
        j = 0
        while j < K and not lane_pad[j]:
            j += 1
        if j == K and even:
            copy_short_lanes(P, order, nord, idx, ext, src, dst, lane_off, m, K,
                             prefetch_next)
            return True
    while True:
        if m * es <= 16:
            # Tiny lanes (7x7 planes of 2048 channels): element moves in place; a
            # call, a prefetch and a lane table per box cost more than the box.
            if nord > 0 and pf_live:
                for k in range(npf):
                    lk_prefetch_t0(pf_src + pf_off[k])
                pf_live = advance_both(P, order, nord, pf_idx, ext, &pf_src, &pf_dst)
            if use_runs:
                for j in range(ngrp):
                    lk_deinterleave(dst + grp_lane[j] * es, K, src + lane_off[grp_lane[j]],
                                    grp_n[j], <int>m, m, <int>es)
            else:
                copy_tiny_lanes(dst, src, lane_off, lane_pad, <const char*>padbuf, m, K, es)
        else:
            if (nord > 0 and idx[order[nord - 1]] + 1 < ext[order[nord - 1]]
                    and prefetch_next):
                # Lanes are short and far apart: fetch the next box's while this one runs.
                k = order[nord - 1]
                for j in range(K):
                    if not lane_pad[j]:
                        lk_prefetch_lane(src + P.ss[k] + lane_off[j], m * es)
                if not P.stream and m * K * es >= OUT_PREFETCH_BYTES:
                    lk_prefetch_output(dst + P.ds[k], m * K * es)
            if P.stream and es >= 4 and m * K * es >= 4096:
                copy_lane_box_streamed(dst, src, lane_off, lane_pad, <const void*>padbuf, m, K,
                                       es)
            else:
                copy_lane_box(dst, src, lane_off, lane_pad, <const void*>padbuf, m, K, es)
        if not advance_both(P, order, nord, idx, ext, &src, &dst):
            return True


cdef void copy_small_rows(const Plan* P, int lev, const char* src, char* dst,
                          const Py_ssize_t* ext, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    """The box of levels [lev, nlev) whose innermost level is contiguous on both
    sides and short: every row is one small copy (plus its padding lanes)."""
    cdef int nlev = P.nlev
    cdef int k
    cdef Py_ssize_t es = P.esize
    cdef Py_ssize_t n1 = ext[nlev - 1]
    cdef Py_ssize_t run = (hi - lo) * es
    cdef bint padded = lo > 0 or hi < n1
    cdef Py_ssize_t idx[MAX_LEVELS]
    cdef int order[MAX_LEVELS]
    cdef int nord, inner
    # The rows of the second-innermost level go in a plain loop; the odometer
    # steps once per such block.
    cdef int a = nlev - 2 if nlev - 2 >= lev else lev
    cdef Py_ssize_t n0 = ext[a] if nlev - 2 >= lev else 1
    cdef Py_ssize_t s0 = P.ss[a] if nlev - 2 >= lev else 0
    cdef Py_ssize_t d0 = P.ds[a] if nlev - 2 >= lev else 0
    # A block that is one destination run (crouton: 8 rows of 32 channels) is
    # padded whole just before its data goes in, while it is in L1.
    cdef bint block_run = padded and (n0 == 1 or d0 == n1 * es)
    cdef bint dest_order
    cdef Py_ssize_t r, g
    cdef const char* gsrc
    cdef char* gdst
    # Unpadded runs of 16-128 bytes: the next level out goes in the loop too
    # (crouton <-> NHWC of 64 channels: 2 runs a pixel, 8 pixels a block), in
    # a C loop per run size (lk_copy_runs_2d). The odometer step per pixel cost
    # more than its two runs: compare_builds.py on Zen 4, Crouton -> NHWC
    # 1x64x256x256 uint8 0.76x the time, float32 0.65x; NHWC -> Crouton float32
    # 0.68x, 8x256x56x56 0.56x. The C loop against copy_run's size tests per
    # run: uint8 1x64x256x256 0.74x the time packing, 0.81x unpacking.
    cdef int b = (a - 1 if a - 1 >= lev and not padded
                  and (run == 16 or run == 32 or run == 64 or run == 128) else a)
    cdef Py_ssize_t nq = ext[b] if b < a else 1
    cdef Py_ssize_t sq = P.ss[b] if b < a else 0
    cdef Py_ssize_t dq = P.ds[b] if b < a else 0
    for k in range(lev, a):
        idx[k] = 0
    src += lo * es
    if b < a:
        # The blocks may go in any order: source order reads a crouton's chunks
        # front to back when unpacking, where destination order took 256 bytes
        # of 64 chunks 2-4 KiB apart per output row, a demand miss each once the
        # source has left the cache (compare_builds.py on Zen 4, Crouton -> NHWC
        # uint8 1x64x256x256 0.80-0.85x the time, float16 8x256x56x56 0.79-0.83x).
        # Packing's blocks are in source order already.
        nord = order_by_source(P, lev, b, order, idx)
        # Packing's pixels of several runs go one chunk at a time (the plain
        # loop at the end) on Intel when the operation moves at most 4 MiB (2
        # MiB for 128-byte runs) and its output was not filled first: each
        # chunk's rows are then written front to back, where a pixel's runs
        # went to chunks 2 KiB apart, two L1 sets. Otherwise pixels are read
        # front to back (the two branches below). NHWC -> Crouton on the Xeon,
        # 30 alternations in one process, three processes: 1x512x16x16 uint8 /
        # float16 / float32 0.58-0.66x the time, 1x256x56x56 uint8 0.57-0.6x,
        # float16 0.92x, 1x128x112x112 uint8 0.73x; past 4 MiB float16 lost
        # (1x128x112x112: 1.05-1.09x) and 8x256x56x56 was unchanged. A filled
        # output (7x7 planes) is in L1 already, and the pixel orders below
        # were measured faster on Zen 4.
        dest_order = (P.fill_box == NULL and lk_is_amd() == 0
                      and lk_moves_at_most((4 if run <= 64 else 2) << 20) != 0)
        if (not dest_order and nord > 0 and P.ss[order[nord - 1]] == run
                and ext[order[nord - 1]] > RUN_GROUP):
            # More runs a pixel (NHWC -> Crouton of 2048 channels: 64) go
            # RUN_GROUP at a time across every pixel: each pixel's group is
            # read front to back, where in destination order each run was a
            # miss (pixels 2 KiB apart share two L1 sets). uint8 of 1x2048x7x7
            # 0.84x the time, float16 / float32 unchanged.
            nord -= 1
            inner = order[nord]
            g = 0
            while g < ext[inner]:
                gsrc = src + g * P.ss[inner]
                gdst = dst + g * P.ds[inner]
                while True:
                    lk_copy_runs_3d(gdst, dq, d0, P.ds[inner], gsrc, sq, s0, nq, n0,
                                    min(RUN_GROUP, ext[inner] - g), run)
                    if not advance_both(P, order, nord, idx, ext, &gsrc, &gdst):
                        break
                g += RUN_GROUP
            return
        if (not dest_order and nord > 0 and P.ss[order[nord - 1]] == run
                and ext[order[nord - 1]] >= 4 and ext[order[nord - 1]] <= 8):
            # The fastest block level continues each run in the source (the
            # 32-channel runs of a pixel, packing): it goes innermost in the
            # loop, so every pixel is read front to back (NHWC -> Crouton
            # 8x256x56x56, 8 runs a pixel, compare_builds.py on Zen 4, two
            # sets of 5 rounds: uint8 0.73-0.78x the time, float16 0.77-0.85x,
            # float32 0.81-0.82x). Only for 4-8 runs:
            # a pixel's runs go to chunks a multiple of 4 KiB apart, one L1 set
            # (2048 channels, 64 runs: 1.1-1.4x the time), and 2 runs a pixel
            # (64 channels) gained nothing.
            nord -= 1
            inner = order[nord]
            while True:
                lk_copy_runs_3d(dst, dq, d0, P.ds[inner], src, sq, s0, nq, n0, ext[inner],
                                run)
                if not advance_both(P, order, nord, idx, ext, &src, &dst):
                    return
        while True:
            lk_copy_runs_2d(dst, dq, d0, src, sq, s0, nq, n0, run)
            if not advance_both(P, order, nord, idx, ext, &src, &dst):
                return
    while True:
        if block_run:
            fill_run(dst, n0 * n1, P.pad, es)
        for r in range(n0):
            if padded and not block_run:
                fill_run(dst + r * d0, lo, P.pad, es)
                fill_run(dst + r * d0 + hi * es, n1 - hi, P.pad, es)
            copy_run(dst + r * d0 + lo * es, src + r * s0, run)
        if not advance(P, lev, a, idx, ext, &src, &dst):
            return


cdef bint dense_source(const Plan* P, int lev, const Py_ssize_t* ext) noexcept nogil:
    """Whether the box of levels [lev, nlev) reads every source element of one
    dense run from its origin up (positive steps that, sorted, each span the
    ones below), so that element j of the run is at byte j * src_esize."""
    cdef int nlev = P.nlev
    cdef int k, best
    cdef Py_ssize_t run = P.src_esize
    cdef bint used[MAX_LEVELS]
    for k in range(lev, nlev):
        used[k] = ext[k] <= 1
        if ext[k] > 1 and P.ss[k] <= 0:
            return False
    while True:
        # The unused level of the smallest step must start where the run ends.
        best = -1
        for k in range(lev, nlev):
            if not used[k] and (best < 0 or P.ss[k] < P.ss[best]):
                best = k
        if best < 0:
            return True
        if P.ss[best] != run:
            return False
        run *= ext[best]
        used[best] = True


cdef inline bint cast_first_fits(const Plan* P, int lev, const Py_ssize_t* ext,
                                 Py_ssize_t limit) noexcept nogil:
    """Whether copy_then_cast converts this box's source first, as one dense run
    of at most ``limit`` bytes (CAST_FIRST_BYTES into a quarter the size, such as
    float32 -> int8), into narrower elements that it then repacks."""
    cdef Py_ssize_t n = P.src_esize
    cdef int k
    if P.esize >= P.src_esize:
        return False
    if 4 * P.esize <= P.src_esize and limit < CAST_FIRST_BYTES:
        limit = CAST_FIRST_BYTES
    for k in range(lev, P.nlev):
        n *= ext[k]
    return n <= limit and dense_source(P, lev, ext)


cdef void copy_then_cast(const Plan* P, int lev, const char* src, char* dst,
                         const Py_ssize_t* ext) noexcept nogil:
    """A box with an element conversion, contiguous in the destination, no padding.

    Rows this short (e.g. HCWN8c -> NCHW of 7x7 planes) would cost one conversion
    call per few elements; instead, pieces of ~8 KiB are repacked unconverted into
    an L1 buffer in destination order, then converted in one contiguous run.
    """
    cdef Plan Q = P[0]
    cdef Plan R
    cdef int nlev = P.nlev
    cdef int k, top
    cdef Py_ssize_t ses = P.src_esize
    cdef Py_ssize_t chunk, t, c, n_in_box, n, s_off, d_off, limit
    cdef int64_t ds2[MAX_LEVELS]
    cdef int64_t ss2[MAX_LEVELS]
    cdef uint64_t buf_mem[STAGE_WORDS]
    cdef char* buf = <char*>buf_mem
    cdef char* whole
    cdef uint64_t no_pad = 0
    # The same levels, written densely in source-sized elements. The box has
    # no padding, but the repack kernels load a pad element of their element
    # size, which the destination's pattern may be shorter than (float32 ->
    # bfloat16: 2 bytes).
    ds2[nlev - 1] = ses
    for k in range(nlev - 2, -1, -1):
        ds2[k] = ds2[k + 1] * P.ext[k + 1]
    Q.ds = ds2
    Q.esize = ses
    Q.cast_src = -1
    Q.stream = 0
    Q.pad = <const uint8_t*>&no_pad
    # Split at the first level whose digits are at most 8 KiB each (below).
    top = lev
    while top < nlev - 1 and ds2[top] > STAGE:
        top += 1
    # Where the innermost level is strided in the source and the pieces would
    # be gathers along it (one level, or rows of 256+ elements: NHWC -> NCHW,
    # NCHW16c -> NCHW), the whole box goes through the repack kernels in one
    # piece up to CAST_FIRST_BYTES (float32 -> float16 of 1x64x256x256, 7.1 ->
    # 1.9 ms; uint8 -> float32 7.1 -> 1.4 ms; of 1x3x224x224 20-60x less time).
    # Pieces of short rows are interleaves, which gained nothing from larger
    # pieces (NCHW -> NCHW8c float16 of 1x64x256x256: 1.5x the time in one).
    limit = (CAST_FIRST_BYTES if (P.ss[nlev - 1] != ses
                                  and (top == nlev - 1 or ext[nlev - 1] >= 256))
             else WHOLE_BOX_BYTES)
    # A narrowing conversion whose box reads one dense run of the source (f32 ->
    # HCWN4c int8 of 7x7 planes: the whole NCHW input) converts that run first,
    # then repacks the narrower elements with the byte kernels: a quarter of
    # the bytes through the repack.
    n = ext[lev] * ds2[lev] // ses
    if cast_first_fits(P, lev, ext, limit):
        whole = <char*>malloc(n * P.esize)
        if whole != NULL:
            lk_cast(whole, src, n, ses, P.cast_src, P.cast_dst, P.scale, P.zero_point)
            # The same plan over the converted run: source steps in its elements.
            R = P[0]
            for k in range(nlev):
                ss2[k] = P.ss[k] // ses * P.esize
            R.ss = ss2
            R.src_esize = P.esize
            R.cast_src = -1
            R.cast_dst = -1
            R.fill_box = NULL
            R.pad_runs = NULL
            copy_levels(&R, lev, whole, dst, ext[lev], 0, ALL_LANES)
            free(whole)
            return
    # A box that fits in L2 is repacked whole into one heap buffer and converted
    # in one run: split into 8 KiB pieces, the 7x7 planes of HCWN4c/8c made
    # boxes of a few bytes, each a walk step and a kernel call (2048 channels:
    # ~145 us for ~100 KiB).
    if n * ses > STAGE and n * ses <= limit:
        whole = <char*>malloc(n * ses)
        if whole != NULL:
            copy_levels(&Q, lev, src, whole, ext[lev], 0, ALL_LANES)
            lk_cast(dst, whole, n, ses, P.cast_src, P.cast_dst, P.scale, P.zero_point)
            free(whole)
            return
    n_in_box = 1
    for k in range(lev, top):
        n_in_box *= ext[k]
    for t in range(n_in_box):
        # Position of box t over levels [lev, top): offsets on both sides.
        c = t
        s_off = 0
        d_off = 0
        for k in range(top - 1, lev - 1, -1):
            s_off += (c % ext[k]) * P.ss[k]
            d_off += (c % ext[k]) * P.ds[k]
            c //= ext[k]
        chunk = STAGE // ds2[top] if ds2[top] <= STAGE else 1
        c = 0
        while c < ext[top]:
            n = ext[top] - c if ext[top] - c < chunk else chunk
            copy_levels(&Q, top, src + s_off + c * P.ss[top], buf, n, 0, ALL_LANES)
            lk_cast(dst + d_off + c * P.ds[top], buf, n * (ds2[top] // ses), ses,
                    P.cast_src, P.cast_dst, P.scale, P.zero_point)
            c += n


cdef inline bint fused_quantize_lanes(const Plan* P, const Py_ssize_t* ext) noexcept nogil:
    """The innermost two levels are float32 planes quantized into rows of 4/8/16
    int8/uint8 lanes (HCWN4c, NCHW8c...): box2d_cast's one-pass kernel applies."""
    cdef int nlev = P.nlev
    cdef Py_ssize_t k = ext[nlev - 1]
    return (P.cast_src == LK_T_F32 and (P.cast_dst == LK_T_I8 or P.cast_dst == LK_T_U8)
            and P.esize == 1 and P.ds[nlev - 1] == 1 and P.ds[nlev - 2] == k
            and P.ss[nlev - 2] == 4 and (k == 4 or k == 8 or k == 16))


cdef inline bint fused_quantize_batch(const Plan* P, const Py_ssize_t* ext) noexcept nogil:
    """Levels W, N, k at the bottom with float32 planes quantized into the k
    int8/uint8 lanes and W contiguous in the source (HCWN4c/8c/16c of N > 1)."""
    cdef int nlev = P.nlev
    cdef Py_ssize_t k = ext[nlev - 1]
    return (P.cast_src == LK_T_F32 and (P.cast_dst == LK_T_I8 or P.cast_dst == LK_T_U8)
            and P.esize == 1 and (k == 4 or k == 8 or k == 16) and ext[nlev - 2] > 1
            and P.ds[nlev - 1] == 1 and P.ds[nlev - 2] == k
            and P.ds[nlev - 3] == ext[nlev - 2] * k and P.ss[nlev - 3] == 4)


cdef bint copy_quantize_batch(const Plan* P, const int* order, int nord, Py_ssize_t* idx,
                              const Py_ssize_t* ext, const char* src, char* dst, Py_ssize_t n0,
                              Py_ssize_t drow, Py_ssize_t kk, Py_ssize_t s1, Py_ssize_t nb,
                              Py_ssize_t sb, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    """copy_quantize_rows for destination rows of ``nb`` whole pixels of ``kk`` (4
    or 8) bytes (HCWNC4/8 of a batch): each batch index's rows are quantized into
    dense pixels in an L2 stage, then the nb runs of pixels interleave as 4- or
    8-byte elements. Where the next boxes continue each lane's rows (H rows of a
    plane), one stage holds several boxes, so that every lane is read in long
    runs: N x k lanes of a row's bytes each, as the boxes alone read them, are
    more streams than the prefetchers follow (HCWNC8 f32 -> int8 8x256x56x56 on
    Zen 4, hot loop: 3.7 -> 1.6 ms; fused straight into the rows instead, each
    pixel went out as a separate small copy). False if it does not apply."""
    cdef int inner = order[nord - 1] if nord > 0 else -1
    cdef Py_ssize_t run = n0, rows, m, hb, i0, t, b
    cdef const void* lanes[64]
    cdef char* buf
    cdef char* stage
    if nb > 64 or nb < 2 or drow != nb * kk:
        return False
    if inner >= 0 and P.ss[inner] == n0 * 4:
        run = n0 * ext[inner]
    rows = QUANT_STAGE // (nb * kk) // 8 * 8
    if run < rows:
        rows = run
    if rows < 8 and rows < n0:
        return False
    buf = <char*>malloc(nb * kk * rows + 64)
    if buf == NULL:
        return False
    stage = <char*>((<size_t>buf + 63) & ~(<size_t>63))
    while True:
        if n0 <= rows:
            hb = rows // n0 if run > n0 else 1
            if hb > 1 and hb > ext[inner] - idx[inner]:
                hb = ext[inner] - idx[inner]
            m = n0 * hb
            for b in range(nb):
                box2d_cast(P, src + b * sb, stage + b * m * kk, m, 4, kk, kk, s1, 1, lo, hi)
            for t in range(hb):
                for b in range(nb):
                    lanes[b] = stage + (b * m + t * n0) * kk
                lk_interleave(dst + t * P.ds[inner] if t else dst, lanes, n0, <int>nb, nb,
                              <int>kk)
            for _ in range(hb - 1):
                advance_both(P, order, nord, idx, ext, &src, &dst)
        else:
            i0 = 0
            while i0 < n0:
                m = n0 - i0 if n0 - i0 < rows else rows
                for b in range(nb):
                    lanes[b] = stage + b * m * kk
                    box2d_cast(P, src + b * sb + i0 * 4, stage + b * m * kk, m, 4, kk, kk, s1,
                               1, lo, hi)
                lk_interleave(dst + i0 * drow, lanes, m, <int>nb, nb, <int>kk)
                i0 += m
        if not advance_both(P, order, nord, idx, ext, &src, &dst):
            free(buf)
            return True


cdef void copy_quantize_rows(const Plan* P, int lev, int a, const char* src, char* dst,
                             Py_ssize_t* ext, Py_ssize_t lo, Py_ssize_t hi, Py_ssize_t nb,
                             Py_ssize_t sb, Py_ssize_t db) noexcept nogil:
    """float32 planes quantized into rows of k int8/uint8 lanes (levels: a = the
    rows, then ``nb`` batch indices ``sb``/``db`` apart, then the k lanes), one
    fused box2d_cast call per row run and batch index.

    The outer level with the smallest source step goes innermost (H, not C/k),
    so each lane is read as a sequential stream; and each lane's piece of the
    box after next is prefetched, since N x k streams are more than the
    hardware prefetchers follow (HCWN4c 8x256x56x56: 7.1 -> 5 ms).
    """
    cdef int nlev = P.nlev
    cdef int nord, inner
    cdef int order[MAX_LEVELS]
    cdef Py_ssize_t idx[MAX_LEVELS]
    cdef Py_ssize_t n0 = ext[a], b, piece, lane, ahead
    cdef Py_ssize_t kk = ext[nlev - 1], s1 = P.ss[nlev - 1]
    cdef int padv
    # Fold outer levels into the rows where both sides continue them (NCHW4c: H x W).
    while a > lev and P.ss[a - 1] == n0 * P.ss[a] and P.ds[a - 1] == n0 * P.ds[a]:
        a -= 1
        n0 *= ext[a]
    nord = order_by_source(P, lev, a, order, idx)
    if (nb > 1 and (kk == 4 or kk == 8) and db == kk and P.ss[a] == 4
            and copy_quantize_batch(P, order, nord, idx, ext, src, dst, n0, P.ds[a], kk, s1,
                                    nb, sb, lo, hi)):
        return
    inner = order[nord - 1] if nord > 0 else -1
    if (nb == 1 and inner >= 0 and not P.stream and n0 <= 64 and P.cast_src == LK_T_F32
            and P.esize == 1 and P.ss[a] == 4 and (kk == 4 or kk == 8 or kk == 16) and hi > lo):
        # Short rows (HCWNC4 of 28-56-pixel rows, an operation within the caches):
        # the innermost level's boxes in one C loop, no prefetch (1x96x28x28: 0.5x
        # the time of a call per box).
        padv = P.pad[0]
        if P.cast_dst == LK_T_I8:
            padv = (<const int8_t*>P.pad)[0]
        while True:
            b = lk_quantize_interleave_boxes(dst, P.ds[inner], src, P.ss[inner], ext[inner],
                                             P.ds[a], s1, n0, <int>kk, <int>lo, <int>hi,
                                             P.cast_dst, P.scale, P.zero_point, padv)
            while b < ext[inner]:
                box_out(P, src + b * P.ss[inner], dst + b * P.ds[inner], n0, P.ss[a], P.ds[a],
                        kk, s1, 1, lo, hi)
                b += 1
            if not advance_both(P, order, nord - 1, idx, ext, &src, &dst):
                return
    piece = n0 * P.ss[a]      # lk_prefetch_lane takes at most 256 bytes of it
    while True:
        ahead = inner >= 0 and idx[inner] + 2 < ext[inner]
        for b in range(nb):
            if ahead:
                for lane in range(kk):
                    lk_prefetch_lane(src + b * sb + lane * s1 + 2 * P.ss[inner], piece)
            box_out(P, src + b * sb, dst + b * db, n0, P.ss[a], P.ds[a], kk, s1, 1, lo, hi)
        if not advance_both(P, order, nord, idx, ext, &src, &dst):
            return


cdef bint copy_deinterleaves(const Plan* P, int lev, const char* src, char* dst,
                             const Py_ssize_t* ext, Py_ssize_t min_bytes) noexcept nogil:
    """The box of levels [lev, nlev) as de-interleaves, if it has that shape.

    Applies when the innermost level is contiguous in the destination but
    strided in the source (a gather: every 2nd-8th element), and another level L
    holds the elements in between (source step one element): HTP Crouton4x1 ->
    NHWC, where each 128-byte source run is 32 channels x 4 pixels. Each run then
    is one de-interleave into the k = ext[L] destination rows instead of k
    gathers of single elements. Returns False otherwise, or when a call would
    move fewer than ``min_bytes``.
    """
    cdef int nlev = P.nlev
    cdef Py_ssize_t es = P.esize
    cdef Py_ssize_t m = ext[nlev - 1]
    cdef Py_ssize_t istride, orow
    cdef int L = -1, k, nord = 0
    cdef bint grid
    cdef int order[MAX_LEVELS]
    cdef Py_ssize_t idx[MAX_LEVELS]
    if P.ss[nlev - 1] % es or m < 2:
        return False
    istride = P.ss[nlev - 1] // es
    if istride < 2 or istride > 8:
        return False
    for k in range(lev, nlev - 1):
        if P.ss[k] == es:
            L = k
            break
    # One slot of each pixel (the 7th column of Crouton2's 7-wide planes) only
    # by the grid below.
    grid = (istride * es == 4 and (istride == 4 or istride == 2) and P.cast_src < 0
            and m * es >= 32 and L >= 0 and (ext[L] == istride or P.src_whole))
    if (L < 0 or ext[L] > istride or (ext[L] < 2 and not grid) or P.ds[L] % es
            or m * ext[L] * es < min_bytes):
        return False
    orow = P.ds[L] // es
    for k in range(lev, nlev - 1):
        if k != L:
            idx[k] = 0
            order[nord] = k
            nord += 1
    # The grid kernels load whole pixels from each box's start: a box that
    # starts on another slot (HWCN -> NCHW of 2 x 2 slots, its second channel
    # 2 bytes in; HCWN2c of a batch, each image's slots 2 bytes on) would read
    # past the last pixel. Every level but L, the outer ones included, must
    # step whole pixels.
    for k in range(nlev - 1):
        if k != L and P.ss[k] % (istride * es):
            grid = False
    if (grid
            and copy_box_grid(P, order, nord, idx, ext, src, dst,
                              LK_GRID_DI4_U8 if istride == 4 else LK_GRID_DI2_U16, NULL, 0,
                              P.ds[L], m, <int>ext[L], NULL)):
        # Pixels of 4 bytes (Crouton4x1 / Crouton2 -> NHWC of 2048 channels,
        # too many lanes for copy_lanes' runs): a grid of 128-byte shuffle
        # boxes, no call per box. With some of a pixel's slots skipped (the
        # padding columns of 7-wide planes) only from a whole layout buffer:
        # the kernels load every slot.
        return True
    if ext[L] < 2:
        return False
    while True:
        lk_deinterleave(dst, orow, src, m, <int>ext[L], istride, <int>es)
        if not advance_both(P, order, nord, idx, ext, &src, &dst):
            return True


cdef void copy_interleave_boxes(const Plan* P, const int* order, int nord, Py_ssize_t* idx,
                                const Py_ssize_t* ext, const char* src, char* dst, Py_ssize_t m,
                                Py_ssize_t k, Py_ssize_t s1) noexcept nogil:
    """Boxes of ``k`` (< 16) whole lanes ``s1`` bytes apart, ``m`` elements each,
    into dense pixels: one interleave call per box, no per-box dispatch."""
    cdef Py_ssize_t es = P.esize
    cdef const void* lanes[16]
    cdef Py_ssize_t j
    cdef Py_ssize_t done
    while True:
        for j in range(k):
            lanes[j] = src + j * s1
        done = 0
        if P.stream and (k == 4 or k == 8) and (es == 2 or es == 4):
            # Outputs beyond the cache: streaming stores (see lk_interleave_stream).
            done = lk_interleave_stream(dst, lanes, m, <int>k, <int>es)
            for j in range(k):
                lanes[j] = src + j * s1 + done * es
        lk_interleave(dst + done * k * es, lanes, m - done, <int>k, k, <int>es)
        if not advance_both(P, order, nord, idx, ext, &src, &dst):
            return


cdef void copy_levels(const Plan* P, int lev, const char* src, char* dst, Py_ssize_t nfirst,
                      Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    """Copy the box of levels [lev, nlev) (extent of ``lev`` replaced by ``nfirst``).

    Lanes of the innermost level outside [lo, hi) are padding; pass (0, ALL_LANES) for none.
    """
    cdef int nlev = P.nlev
    cdef Py_ssize_t es = P.esize
    cdef int a, k
    cdef bint deint, then_cast
    cdef int nord
    cdef int order[MAX_LEVELS]
    cdef Py_ssize_t n0, n1, s0, s1, d0, d1, m
    cdef const char* bsrc
    cdef char* bdst
    cdef Py_ssize_t idx[MAX_LEVELS]
    cdef Py_ssize_t ext[MAX_LEVELS]
    if lev >= nlev:
        if lo <= 0 < hi:
            copy_one(P, dst, src)
        else:
            memcpy(dst, P.pad, es)
        return
    for k in range(lev, nlev):
        ext[k] = P.ext[k]
    ext[lev] = nfirst
    if lo < 0:
        lo = 0
    if hi > ext[nlev - 1]:
        hi = ext[nlev - 1]
    if lo > ext[nlev - 1]:
        lo = ext[nlev - 1]
    if hi < lo:
        hi = lo
    if (nlev - lev == 4 and P.cast_src < 0 and lo == 0 and hi == ext[lev + 3]
            and P.ss[lev + 2] == es and P.ds[lev + 3] == es and P.ds[lev + 2] == ext[lev + 3] * es
            and P.ds[lev + 1] == ext[lev + 2] * ext[lev + 3] * es
            and lk_lane_rows(dst, P.ds[lev], src, P.ss[lev], P.ss[lev + 1], P.ss[lev + 3],
                             ext[lev], ext[lev + 1], ext[lev + 2], <int>ext[lev + 3], <int>es)):
        # HCWNCx of one image: rows of blocks of x channels (lk_lane_rows).
        return
    if (nlev - lev == 5 and P.cast_src < 0 and lo == 0 and hi == ext[lev + 4]
            and P.ss[lev + 2] == es and P.ds[lev + 4] == es and P.ds[lev + 3] == ext[lev + 4] * es
            and P.ds[lev + 2] == ext[lev + 3] * ext[lev + 4] * es
            and P.ds[lev + 1] == ext[lev + 2] * P.ds[lev + 2]
            and lk_lane_rows_batch(dst, P.ds[lev], src, P.ss[lev], P.ss[lev + 1], P.ss[lev + 4],
                                   P.ss[lev + 3], ext[lev + 3], ext[lev], ext[lev + 1],
                                   ext[lev + 2], <int>ext[lev + 4], <int>es)):
        # ... of a batch: levels H, blocks, W, N, lanes.
        return
    if (nlev - lev == 4 and P.cast_src < 0 and lo == 0 and hi == ext[lev + 3]
            and P.ss[lev + 1] == es and P.ds[lev + 3] == es and P.ss[lev + 3] == ext[lev + 1] * es
            and P.ss[lev] == ext[lev + 1] * ext[lev + 3] * es
            and lk_lane_rows_unpack(dst, P.ds[lev], P.ds[lev + 1], P.ds[lev + 2], src,
                                    P.ss[lev + 2], ext[lev], ext[lev + 2], ext[lev + 3],
                                    <int>ext[lev + 1], <int>es)):
        # ... and back into channel planes.
        return
    if (nlev - lev == 5 and P.cast_src < 0 and lo == 0 and hi == ext[lev + 4]
            and P.ss[lev + 2] == es and P.ds[lev + 4] == es and P.ss[lev] == ext[lev + 2] * es
            and P.ss[lev + 1] == ext[lev + 4] * P.ss[lev + 4]
            and lk_lane_rows_unpack_batch(dst, P.ds[lev], P.ds[lev + 1], P.ds[lev + 2],
                                          P.ds[lev + 3], src, P.ss[lev + 3], P.ss[lev + 4],
                                          ext[lev], ext[lev + 1], ext[lev + 3], ext[lev + 4],
                                          <int>ext[lev + 2], <int>es)):
        # ... of a batch (levels N, blocks, lanes, H, W).
        return
    if (P.cast_src >= 0 and nlev - lev >= 3 and ext[nlev - 3] >= 8
            and fused_quantize_batch(P, ext)):
        # HCWN4c of a batch: each destination row holds N x k lanes.
        copy_quantize_rows(P, lev, nlev - 3, src, dst, ext, lo, hi, ext[nlev - 2],
                           P.ss[nlev - 2], P.ds[nlev - 2])
        return
    # Conversions into a dense box repack in the source's elements, then convert
    # contiguous runs (copy_then_cast): rows under 256 elements, and rows read
    # strided from the source (NHWC -> NCHW, NCHW16c -> NCHW: box2d_cast would
    # convert a few elements per call, 0.01-0.1x a copy), except widening rows
    # of 1 KiB or less, whose lanes box2d_cast converts a tile at a time (NCHW
    # -> NHWC float16 -> float32 of 64 channels: 0.65x the time).
    then_cast = (P.cast_src >= 0 and nlev - lev >= 2 and P.dcontig[lev] and lo == 0
                 and hi == ext[nlev - 1]
                 and (ext[nlev - 1] < 256
                      or (P.ss[nlev - 1] != P.src_esize
                          and (P.esize <= P.src_esize or ext[nlev - 1] * P.esize > 1024))))
    if (P.cast_src >= 0 and nlev - lev >= 2 and ext[nlev - 2] >= 8
            and fused_quantize_lanes(P, ext)
            and not (then_cast and ext[nlev - 2] < CAST_FIRST_ROWS
                     and cast_first_fits(P, lev, ext, WHOLE_BOX_BYTES))):
        # Rows of fewer than CAST_FIRST_ROWS pixels whose source is one dense
        # run are converted first instead (below): f32 -> HCWNC4 / HCWNC8 int8
        # of 1x1024x14x14 took 3.9x / 2.5x the time here, one kernel call per
        # 14-pixel box, and of 1x512x28x28 1.5x / 1.15x; rows of 56 pixels
        # (1x256x56x56) 0.7x.
        copy_quantize_rows(P, lev, nlev - 2, src, dst, ext, lo, hi, 1, 0, 0)
        return
    if then_cast:
        copy_then_cast(P, lev, src, dst, ext)
        return
    if nlev - lev == 1:
        box_out(P, src, dst, 1, 0, 0, ext[lev], P.ss[lev], P.ds[lev], lo, hi)
        return
    if (lo == 0 and hi == ext[nlev - 1] and P.cast_src < 0
            and (copy_small_boxes(P, lev, nlev - 2, ext[nlev - 2], src, dst, nfirst, 0,
                                  ext[nlev - 2], 0, hi, False)
                 or copy_pixel_boxes(P, lev, src, dst, nfirst, 0, hi, False))):
        return
    deint = (P.cast_src < 0 and nlev - lev >= 3 and P.ds[nlev - 1] == es
             and P.ss[nlev - 1] != es and lo == 0 and hi == ext[nlev - 1])
    # Short runs that still make de-interleaves of at least 32 bytes go first:
    # the interleave walk would move such boxes (HCWN8c -> NCHW of 7x7 planes: 49
    # lanes of 8 bytes) element by element. Longer runs (croutons -> NHWC) do
    # better in that walk, which reads the source in order and prefetches.
    if deint and ext[nlev - 1] < 16 and copy_deinterleaves(P, lev, src, dst, ext, 32):
        return
    if P.ss[nlev - 1] != es and copy_lanes(P, lev, src, dst, ext, lo, hi):
        return
    if deint and copy_deinterleaves(P, lev, src, dst, ext, 0):
        return
    a = nlev - 2   # the two innermost levels form the 2-D box
    n0, s0, d0 = ext[a], P.ss[a], P.ds[a]
    n1, s1, d1 = ext[a + 1], P.ss[a + 1], P.ds[a + 1]
    # Fold the outer levels into the box's rows when both sides allow it.
    while a > lev and P.ss[a - 1] == n0 * s0 and P.ds[a - 1] == n0 * d0:
        a -= 1
        n0 *= ext[a]
    if (a > lev and n0 < 32 and P.cast_src < 0 and s1 == es and d1 == es
            and (n1 * es <= 64 or (n1 * es == 128 and lo == 0 and hi == n1))):
        # Short contiguous rows in small boxes (crouton <-> NHWC of 3 channels;
        # whole 32-channel runs of up to 128 bytes): one loop over every row of
        # the whole box instead of a call per box.
        copy_small_rows(P, lev, src, dst, ext, lo, hi)
        return
    # When the next box in source order continues the rows of this one, visit
    # the boxes in that order: each row becomes one stream (NCHW -> HCWNC4
    # 1x64x256x256, a box per H row and block of 4 channels, reads in destination
    # order 64 channel planes per H row; int8 0.8x, float16 0.75x the time).
    # Otherwise destination order (NHWC -> Crouton of floats: 1.1-1.2x the time).
    nord = order_by_source(P, lev, a, order, idx)
    if nord > 0 and (P.ss[order[nord - 1]] != n0 * s0 or n0 * s0 == 0):
        for k in range(nord):
            order[k] = lev + k
    # Whole dense pixels of a few lanes (HCWNC4/8 of channel planes, NCHW4c/8c
    # of 7x7 planes): the interleave called straight from the box loop. Going
    # through box_out -> box2d -> inner2d cost ~25 ns a box on Zen 4, their
    # frames' stores queueing behind the previous box's missing ones (HCWNC4
    # int8 1x64x256x256 0.59x the time, NCHW4c float16 / float32 1x2048x7x7
    # 0.50-0.55x). Rows of under 256 bytes: box_out would not stage them for
    # streaming either (P.stream 2, the tests' "stream every box", excepted).
    if (P.stream != 2 and P.cast_src < 0 and s0 == es and d1 == es and d0 == n1 * es
            and lo == 0 and hi == n1 and n1 < 16 and n0 <= TILE
            and (es == 1 or es == 2 or es == 4 or es == 8)):
        copy_interleave_boxes(P, order, nord, idx, ext, src, dst, n0, n1, s1)
        return
    if (P.cast_src < 0 and P.stream == 0 and s1 == es and d1 == es and lo == 0 and hi == n1
            and n0 >= 2 * ALIASED_ROWS_BLOCK and s0 % 2048 == 0 and d0 == n1 * es
            and 16 <= n1 * es <= 128 and nord > 0):
        # Runs of a pixel's channels from chunks a multiple of 2 KiB apart
        # (crouton -> NHWC of 2048 channels: 64 runs of a pixel, one from each
        # chunk): a box's loads fall in one or two L1 sets and the
        # prefetchers do not follow the steps. A block of chunks at a time
        # through every box instead, whose lines then spread over the sets
        # (C loop of 1x2048x7x7 float16: 0.62x the time, 4 or 8 chunks alike,
        # 16+ slower; compare_builds.py 1x2048x7x7 uint8 / float16 / float32
        # 0.70x / 0.62x / 0.86x).
        k = 0
        while k < n0:
            m = n0 - k if n0 - k < ALIASED_ROWS_BLOCK else ALIASED_ROWS_BLOCK
            bsrc = src + k * s0
            bdst = dst + k * d0
            while True:
                lk_copy_rows(bdst, d0, bsrc, s0, m, n1 * es)
                if not advance_both(P, order, nord, idx, ext, &bsrc, &bdst):
                    break
            k += m
        return
    while True:
        box_out(P, src, dst, n0, s0, d0, n1, s1, d1, lo, hi)
        if not advance_both(P, order, nord, idx, ext, &src, &dst):
            return


cdef void fill_levels(const Plan* P, int lev, char* dst, Py_ssize_t nfirst) noexcept nogil:
    """Write padding into every slot of the box of levels [lev, nlev)."""
    cdef int nlev = P.nlev
    cdef Py_ssize_t es = P.esize
    cdef int k
    cdef Py_ssize_t idx[MAX_LEVELS]
    cdef Py_ssize_t ext[MAX_LEVELS]
    if lev >= nlev:
        memcpy(dst, P.pad, es)
        return
    if P.dcontig[lev]:
        fill_run(dst, nfirst * P.below[lev + 1], P.pad, es)
        return
    for k in range(lev, nlev):
        ext[k] = P.ext[k]
        idx[k] = 0
    ext[lev] = nfirst
    while True:
        fill_run(dst, 1, P.pad, es)
        k = nlev - 1
        while k >= lev:
            idx[k] += 1
            dst += P.ds[k]
            if idx[k] < ext[k]:
                break
            dst -= P.ds[k] * ext[k]
            idx[k] = 0
            k -= 1
        if k < lev:
            return


# ---------------------------------------------------------------------------
# The walk: split the destination into data, padding and absent boxes
# ---------------------------------------------------------------------------

cdef inline Py_ssize_t full_extent(const Plan* P, int lev) noexcept nogil:
    return P.ext[lev] if lev < P.nlev else 1


cdef bint only_level_of(const Plan* P, int d, int lev, int at) noexcept nogil:
    """Whether, among levels [lev, nlev), only level ``at`` holds digits of dim ``d``."""
    cdef int k
    for k in range(lev, P.nlev):
        if k != at and P.dim[k] == d:
            return False
    return True


cdef inline void gather_rows(elem_t* o, const char* src, Py_ssize_t rlo, Py_ssize_t rhi,
                             Py_ssize_t n1, Py_ssize_t s0, Py_ssize_t s1) noexcept nogil:
    cdef Py_ssize_t i, j
    if n1 == 4:     # R4Crouton4x1: the compiler unrolls constant rows
        for i in range(rlo, rhi):
            for j in range(4):
                o[i * 4 + j] = (<const elem_t*>(src + i * s0 + j * s1))[0]
    elif n1 == 2:   # R4Crouton2
        for i in range(rlo, rhi):
            for j in range(2):
                o[i * 2 + j] = (<const elem_t*>(src + i * s0 + j * s1))[0]
    else:
        for i in range(rlo, rhi):
            for j in range(n1):
                o[i * n1 + j] = (<const elem_t*>(src + i * s0 + j * s1))[0]


cdef void copy_rowpad_small(const Plan* P, int lev, const char* src, char* dst,
                            const Py_ssize_t* ext, Py_ssize_t* idx, Py_ssize_t rlo,
                            Py_ssize_t rhi) noexcept nogil:
    """copy_rowpad for small boxes of contiguous rows (R4Crouton4x1: 32 rows of 4
    bytes, 3 of them data): per box, the padding rows from a pattern buffer and
    the data element by element, with no per-box dispatch."""
    cdef int nlev = P.nlev
    cdef int r = nlev - 2
    cdef Py_ssize_t es = P.esize
    cdef Py_ssize_t n0 = ext[r], n1 = ext[nlev - 1]
    cdef Py_ssize_t s0 = P.ss[r], s1 = P.ss[nlev - 1]
    cdef Py_ssize_t head = rlo * n1 * es, tail_at = rhi * n1 * es
    cdef Py_ssize_t tail = (n0 - rhi) * n1 * es
    cdef uint64_t padmem[ROWPAD_WORDS]
    cdef bint whole128 = n0 * n1 * es == 128
    cdef lk_grid_level lv[4]
    cdef int g0, j, nl
    fill_run(<char*>padmem, n0 * n1, P.pad, es)
    if rlo == 0 and rhi > 0 and n1 * es == 4 and n0 <= 32 and s0 == es:
        # Rows of 4 bytes (R4Crouton4x1 uint8 / R4Crouton2 float16 of 16-40
        # channels): the boxes of up to four outer levels per kernel call.
        g0 = r - 4 if r - lev > 4 else lev
        nl = r - g0
        for j in range(nl):
            lv[j].n, lv[j].s, lv[j].d = ext[g0 + j], P.ss[g0 + j], P.ds[g0 + j]
        if lk_rowpad4_grid(dst, src, lv, nl, s1, <int>n1, <int>n0, <int>rhi, padmem):
            while advance(P, lev, g0, idx, ext, &src, &dst):
                lk_rowpad4_grid(dst, src, lv, nl, s1, <int>n1, <int>n0, <int>rhi, padmem)
            return
    while True:
        if whole128:
            memcpy(dst, padmem, 128)  # a constant size: moves, not a call
        else:
            if head:
                memcpy(dst, padmem, head)
            if tail:
                memcpy(dst + tail_at, padmem, tail)
        if es == 1:
            gather_rows(<uint8_t*>dst, src, rlo, rhi, n1, s0, s1)
        elif es == 2:
            gather_rows(<uint16_t*>dst, src, rlo, rhi, n1, s0, s1)
        elif es == 4:
            gather_rows(<uint32_t*>dst, src, rlo, rhi, n1, s0, s1)
        else:
            gather_rows(<uint64_t*>dst, src, rlo, rhi, n1, s0, s1)
        if not advance(P, lev, r, idx, ext, &src, &dst):
            return


cdef void copy_rowpad(const Plan* P, int lev, const char* src, char* dst, Py_ssize_t nfirst,
                      int64_t vlo, int64_t vhi) noexcept nogil:
    """The box of levels [lev, nlev), where digits of level nlev-2 outside [vlo, vhi)
    are padding rows and everything else is data."""
    cdef int nlev = P.nlev
    cdef int r = nlev - 2
    cdef int k
    cdef Py_ssize_t es = P.esize
    cdef Py_ssize_t n0, n1, rlo, rhi, t
    cdef bint rows_contig
    cdef Py_ssize_t idx[MAX_LEVELS]
    cdef Py_ssize_t ext[MAX_LEVELS]
    for k in range(lev, nlev):
        ext[k] = P.ext[k]
        idx[k] = 0
    ext[lev] = nfirst
    n0 = ext[r]
    n1 = ext[nlev - 1]
    rlo = 0 if vlo < 0 else (n0 if vlo > n0 else vlo)
    rhi = rlo if vhi < rlo else (n0 if vhi > n0 else vhi)
    rows_contig = P.ds[nlev - 1] == es and P.ds[r] == n1 * es
    if (rows_contig and P.cast_src < 0 and n0 * n1 * es <= ROWPAD_SMALL and es <= 8
            and (es & (es - 1)) == 0):
        copy_rowpad_small(P, lev, src, dst, ext, idx, rlo, rhi)
        return
    while True:
        if rows_contig:
            fill_run(dst, rlo * n1, P.pad, es)
            fill_run(dst + rhi * P.ds[r], (n0 - rhi) * n1, P.pad, es)
        else:
            for t in range(rlo):
                fill_levels(P, nlev - 1, dst + t * P.ds[r], n1)
            for t in range(rhi, n0):
                fill_levels(P, nlev - 1, dst + t * P.ds[r], n1)
        if rhi > rlo:
            box_out(P, src + rlo * P.ss[r], dst + rlo * P.ds[r], rhi - rlo, P.ss[r], P.ds[r],
                    n1, P.ss[nlev - 1], P.ds[nlev - 1], 0, n1)
        if not advance(P, lev, r, idx, ext, &src, &dst):
            return


cdef void widen_box(const Plan* P, const int64_t* box, int lv, int64_t* ext, int64_t* below,
                    int64_t* dcontig) noexcept nogil:
    """A fill box's extents with level ``lv`` whole (its other digits padding),
    and the ``below`` / ``dcontig`` of that box, for copies that write them."""
    cdef int nlev = P.nlev
    cdef int k
    for k in range(nlev + 1):
        ext[k] = box[k]
    ext[lv] = P.ext[lv]
    below[nlev] = 1
    dcontig[nlev] = 1
    for k in range(nlev - 1, -1, -1):
        below[k] = below[k + 1] * ext[k]
        dcontig[k] = dcontig[k + 1] and P.ds[k] == below[k + 1] * P.esize


cdef void fill_then_copy(const Plan* P, Py_ssize_t t_lo, Py_ssize_t t_hi, const char* src,
                         char* dst) noexcept nogil:
    """Digits [t_lo, t_hi) of level 0 of a plan with fill boxes: padding
    everywhere, then the data as a few boxes without constraints. For small
    outputs padded in several dims (NHWC -> croutons of 7x7 planes), where the
    walk would make a call per H row of every channel block; writing the data
    twice costs less while the output stays in cache."""
    cdef Plan Q = P[0]
    cdef int nlev = P.nlev
    cdef int k, n
    cdef const int64_t* box
    cdef const char* s
    cdef char* o
    cdef Py_ssize_t lo, hi, first, count, inner = nlev - 1
    cdef bint group, pixels
    cdef int64_t ext[MAX_LEVELS + 1]
    cdef int64_t below[MAX_LEVELS + 1]
    cdef int64_t dcontig[MAX_LEVELS + 1]
    if P.pad_runs != NULL:
        lk_fill_runs(dst, P.pad_runs + 1, P.pad_runs[0], t_lo * P.ds[0], t_hi * P.ds[0], P.pad,
                     <int>P.esize)
    elif not P.boxes_cover:
        fill_levels(P, 0, dst + t_lo * P.ds[0], t_hi - t_lo)
    for n in range(P.fill_box[0]):
        box = P.fill_box + 1 + n * 4 * (nlev + 1)
        Q.ext = box
        Q.below = box + 2 * (nlev + 1)
        Q.dcontig = box + 3 * (nlev + 1)
        # The box's digits of level 0 within this slice of them.
        lo = box[nlev + 1] if box[nlev + 1] > t_lo else t_lo
        hi = box[nlev + 1] + box[0]
        if hi > t_hi:
            hi = t_hi
        if hi <= lo:
            continue
        s = src + lo * P.ss[0]
        o = dst + lo * P.ds[0]
        for k in range(1, nlev):
            s += box[nlev + 1 + k] * P.ss[k]
            o += box[nlev + 1 + k] * P.ds[k]
        first, count = box[nlev + 1 + inner], box[inner]
        if (not P.boxes_cover and nlev >= 3 and count == P.ext[inner]
                and P.ext[inner] * P.esize == 4 and box[inner - 1] < P.ext[inner - 1]
                and box[nlev + inner] == 0 and P.ss[inner - 1] == P.esize
                and P.ext[inner - 1] <= 32):
            # Channel rows of 4 bytes partly data (the last block of 40 channels
            # in R4Crouton4x1 / R4Crouton2 of ragged planes): the whole block,
            # its other rows padding, by copy_rowpad's grid kernel instead of
            # tiny lanes element by element (1x40x30x30 uint8 0.51x the time,
            # float16 0.6x; 1x40x57x61 uint8 0.44x). (_find_pad_runs mirrors
            # this rule.)
            widen_box(P, box, inner - 1, ext, below, dcontig)
            Q.ext, Q.below, Q.dcontig = ext, below, dcontig
            copy_rowpad(&Q, 0, s, o, hi - lo, 0, box[inner - 1])
            continue
        group = nlev >= 3 and P.ss[inner] != P.esize and P.ext[inner] * P.esize == 4
        pixels = P.pad_runs != NULL and first == 0 and P.ss[inner] == P.esize
        if not P.boxes_cover and count < P.ext[inner] and (group or pixels):
            # A partial group of interleaved lanes (the last 4-column group of
            # 7-wide Crouton4x1 planes: 3 columns): the whole group, its other
            # lanes padding, goes through the interleave grids instead of a
            # 2-D box call per 3 x 32 box. With pad runs, pixels of a few
            # contiguous lanes (3 channels of NHWC into 32-channel croutons)
            # are written whole by the padded-pixel kernels, so that the runs
            # hold only padding pixels and rows (NHWC -> Crouton of 1x3x299x299
            # uint8 0.69x the time, 1x3x1000x999 0.56x, float16 0.43-0.71x).
            # (_find_pad_runs mirrors this rule.)
            widen_box(P, box, inner, ext, below, dcontig)
            Q.ext, Q.below, Q.dcontig = ext, below, dcontig
            s -= first * P.ss[inner]
            o -= first * P.ds[inner]
            if group or not copy_pixel_boxes(&Q, 0, s, o, hi - lo, first, first + count, True):
                copy_levels(&Q, 0, s, o, hi - lo, first, first + count)
            continue
        copy_levels(&Q, 0, s, o, hi - lo, 0, ALL_LANES)


cdef struct ChunkGrid:
    # A pack plan's chunks (see match_chunk_grid): levels [0, hl) outside them,
    # rows h (level hl) of Ew pixels, K pixels a slot group.
    int hl, K, es, a, b
    Py_ssize_t Eh, Ew, sh, sw
    bint pairable


cdef bint match_chunk_grid(const Plan* P, const int64_t* rng, ChunkGrid* g) noexcept nogil:
    """Whether the plan is NHWC -> R4Crouton4x1 / R4Crouton2 with whole 32-channel
    blocks and padded planes: its last four levels [h, w / K, c, w % K] one chunk,
    which lk_chunk_rows writes front to back with its padding
    (layoutkit_chunks.h). Fills ``g``."""
    cdef int nlev = P.nlev
    cdef int es = <int>P.esize
    cdef int K, hl, wl, cl, a, b, lev, L, k
    cdef Py_ssize_t sw
    if P.ndim != 2 or P.cast_src >= 0 or P.stream or P.src_esize != P.esize:
        return False
    if not (es == 1 or es == 2) or nlev < 5 or P.dim[nlev - 1] < 0:
        return False
    hl, wl, cl = nlev - 4, nlev - 3, nlev - 2
    K = <int>P.ext[nlev - 1]
    sw = P.ss[nlev - 1]
    if (P.dim[nlev - 1] != P.dim[wl] or P.wt[nlev - 1] != 1 or P.ds[nlev - 1] != es
            or P.wt[wl] != K or P.ss[wl] != K * sw or P.ds[cl] != K * es):
        return False
    a, b = <int>P.dim[hl], <int>P.dim[wl]
    if (a < 0 or b < 0 or a == b or P.wt[hl] != 1 or P.dim[cl] >= 0 or P.ext[cl] != 32
            or P.ss[cl] != es or P.ds[wl] != 32 * K * es):
        return False
    if P.ds[hl] != P.ext[wl] * K * 32 * es:
        return False
    for k in range(2):
        # Every slot exists in the destination, data from the first on.
        if rng[4 * k] != 0 or rng[4 * k + 1] < P.span[k] or rng[4 * k + 2] != 0:
            return False
    for lev in range(hl):
        if P.dim[lev] >= 0 and P.dim[lev] != a and P.dim[lev] != b:
            return False
    L = hl - 1
    g.hl, g.K, g.es, g.a, g.b = hl, K, es, a, b
    g.Eh, g.Ew, g.sh, g.sw = P.ext[hl], P.ext[wl] * K, P.ss[hl], sw
    # Two chunks at once where the level above steps from one chunk of
    # channels to the next: each pixel's 64 (bytes) or 128 (half-words) bytes
    # are read together, two whole lines (Crouton2 float16 of 1x7x7x2048
    # 0.9x the time, 1x57x61x128 0.82x).
    g.pairable = P.dim[L] < 0 and P.ss[L] == 32 * es and P.ds[L] == g.Eh * P.ds[hl]
    return (lk_chunk_rows_fit(g.Ew, K, es, g.pairable) != 0
            and lk_chunk_rows_fit(g.Ew, K, es, False) != 0)


cdef void chunk_walk(const Plan* P, const int64_t* rng, const ChunkGrid* g, Py_ssize_t t_lo,
                     Py_ssize_t t_hi, char* pixels, char* chunks, bint unpack) noexcept nogil:
    """Digits [t_lo, t_hi) of level 0 of a matched pack plan, chunk by chunk:
    packed from ``pixels`` (its source) into ``chunks``, or, with ``unpack``,
    the chunks' data back into the pixels."""
    cdef int hl = g.hl, L = g.hl - 1, lev, k
    cdef Py_ssize_t pair, step, base_a, base_b, nh, nw, soff, doff
    cdef Py_ssize_t idx[MAX_LEVELS]
    cdef uint8_t pad64[64]
    if not unpack:
        for k in range(64):
            pad64[k] = P.pad[k % g.es]
    for lev in range(hl):
        idx[lev] = 0
    idx[0] = t_lo
    while idx[0] < t_hi:
        soff = doff = base_a = base_b = 0
        for lev in range(hl):
            soff += idx[lev] * P.ss[lev]
            doff += idx[lev] * P.ds[lev]
            if P.dim[lev] == g.a:
                base_a += idx[lev] * P.wt[lev]
            elif P.dim[lev] == g.b:
                base_b += idx[lev] * P.wt[lev]
        nh = clamp(rng[4 * g.a + 3] - base_a, 0, g.Eh)
        nw = clamp(rng[4 * g.b + 3] - base_b, 0, g.Ew)
        pair, step = 0, 1
        if g.pairable and idx[L] + 1 < (t_hi if L == 0 else P.ext[L]):
            pair, step = P.ds[L], 2
        if unpack:
            lk_chunk_rows_unpack(pixels + soff, pair, chunks + doff, g.sh, g.sw, g.Ew, nh, nw,
                                 g.K, g.es)
        else:
            lk_chunk_rows(chunks + doff, pair, pixels + soff, g.sh, g.sw, g.Eh, g.Ew, nh, nw,
                          g.K, g.es, pad64)
        idx[L] += step
        lev = L
        while lev > 0 and idx[lev] >= P.ext[lev]:
            idx[lev] = 0
            lev -= 1
            idx[lev] += 1


cdef void walk(const Plan* P, int lev, Py_ssize_t t_lo, Py_ssize_t t_hi, const char* src,
               char* dst, const int64_t* rng, bint padmode) noexcept nogil:
    # Digits [t_lo, t_hi) of level ``lev`` (the whole level except for the slices
    # threads take of level 0). rng holds, per constrained dim,
    # [e_lo, e_hi, v_lo, v_hi] relative to the digits already fixed above.
    cdef int nd = P.ndim
    cdef int nlev = P.nlev
    cdef int k, d, ncon = 0, necon = 0, con = -1
    cdef int64_t sp, a, b, w, e_lo, e_hi, v_lo, v_hi
    cdef Py_ssize_t t, t2, n, nxt
    cdef int64_t child[4 * MAX_DIMS]
    cdef bint d_econ = False
    cdef ChunkGrid grid
    if lev == 0 and not padmode and P.fill_box != NULL:
        if match_chunk_grid(P, rng, &grid):
            chunk_walk(P, rng, &grid, t_lo, t_hi, <char*>src, dst, False)
            return
        # A slice of the output at a time, so that the data goes into padded
        # lines still in L1 (1x2048x7x7, 32 KiB slices: NHWC -> Crouton uint8
        # / float16 / float32 0.84x / 0.74x / 0.87x the time, Crouton2 0.84x,
        # Crouton4x1 0.88x; 8 KiB slices took Crouton4x1 1.3x, a call per few
        # blocks).
        n = FILL_SLICE // P.ds[0] if 0 < P.ds[0] < FILL_SLICE else t_hi - t_lo
        t = t_lo
        while t < t_hi:
            t2 = t + n if t + n < t_hi else t_hi
            fill_then_copy(P, t, t2, src, dst)
            t = t2
        return
    for k in range(nd):
        sp = P.span[lev * nd + k]
        if rng[4 * k] > 0 or rng[4 * k + 1] < sp:
            ncon += 1
            necon += 1
            con = k
        elif not padmode and (rng[4 * k + 2] > 0 or rng[4 * k + 3] < sp):
            ncon += 1
            con = k
    if ncon == 0:
        if lev < nlev:
            if padmode:
                fill_levels(P, lev, dst + t_lo * P.ds[lev], t_hi - t_lo)
            else:
                copy_levels(P, lev, src + t_lo * P.ss[lev], dst + t_lo * P.ds[lev],
                            t_hi - t_lo, 0, ALL_LANES)
        elif padmode:
            memcpy(dst, P.pad, P.esize)
        else:
            copy_one(P, dst, src)
        return
    if lev >= nlev:
        # A single slot of a constrained dim: absent, or padding.
        if necon == 0:
            memcpy(dst, P.pad, P.esize)
        return
    if (ncon == 1 and necon == 0 and not padmode and P.dim[nlev - 1] == con
            and P.last_noninner[con] < lev):
        # Only the innermost level is constrained: copy with padded lanes.
        if copy_pixel_boxes(P, lev, src + t_lo * P.ss[lev], dst + t_lo * P.ds[lev],
                            t_hi - t_lo, clamp(rng[4 * con + 2], 0, P.ext[nlev - 1]),
                            clamp(rng[4 * con + 3], 0, P.ext[nlev - 1]), True):
            return
        copy_levels(P, lev, src + t_lo * P.ss[lev], dst + t_lo * P.ds[lev], t_hi - t_lo,
                    rng[4 * con + 2], rng[4 * con + 3])
        return

    if (ncon == 1 and necon == 0 and not padmode and lev < nlev - 2
            and P.dim[nlev - 2] == con and P.wt[nlev - 2] == 1
            and P.last_noninner[con] == nlev - 2 and only_level_of(P, con, lev, nlev - 2)):
        # Only the second-innermost level is constrained (channels padded to 32
        # outside a W block, as in R4Crouton4x1 / R4Crouton2): rows of padding.
        if copy_small_boxes(P, lev, nlev - 2, P.ext[nlev - 2], src + t_lo * P.ss[lev],
                            dst + t_lo * P.ds[lev], t_hi - t_lo,
                            clamp(rng[4 * con + 2], 0, P.ext[nlev - 2]),
                            clamp(rng[4 * con + 3], 0, P.ext[nlev - 2]), 0, P.ext[nlev - 1],
                            True):
            return
        copy_rowpad(P, lev, src + t_lo * P.ss[lev], dst + t_lo * P.ds[lev], t_hi - t_lo,
                    rng[4 * con + 2], rng[4 * con + 3])
        return

    for k in range(4 * nd):
        child[k] = rng[k]
    d = <int>P.dim[lev]
    n = t_hi
    nxt = full_extent(P, lev + 1)
    if d < 0 or not (rng[4 * d] > 0 or rng[4 * d + 1] < P.span[lev * nd + d]
                     or (not padmode and (rng[4 * d + 2] > 0
                                          or rng[4 * d + 3] < P.span[lev * nd + d]))):
        for t in range(t_lo, t_hi):
            walk(P, lev + 1, 0, nxt, src + t * P.ss[lev], dst + t * P.ds[lev], child, padmode)
        return

    d_econ = rng[4 * d] > 0 or rng[4 * d + 1] < P.span[lev * nd + d]
    w = P.wt[lev]
    e_lo, e_hi, v_lo, v_hi = rng[4 * d], rng[4 * d + 1], rng[4 * d + 2], rng[4 * d + 3]
    t = t_lo
    while t < n:
        a = t * w
        b = a + w
        if b <= e_lo or a >= e_hi:
            t += 1                                   # absent in the destination
            continue
        if not padmode and a >= v_lo and b <= v_hi:
            t2 = t + 1                               # a run of digits full of data
            while t2 < n and (t2 + 1) * w <= v_hi and (t2 + 1) * w <= e_hi:
                t2 += 1
            if ncon == 1:
                copy_levels(P, lev, src + t * P.ss[lev], dst + t * P.ds[lev], t2 - t, 0,
                            ALL_LANES)
            else:
                child[4 * d], child[4 * d + 1], child[4 * d + 2], child[4 * d + 3] = 0, w, 0, w
                while t < t2:
                    walk(P, lev + 1, 0, nxt, src + t * P.ss[lev], dst + t * P.ds[lev], child, False)
                    t += 1
            t = t2
        elif padmode or b <= v_lo or a >= v_hi:
            if a >= e_lo and b <= e_hi:
                t2 = t + 1                           # a run of digits that are all padding
                while t2 < n and (t2 + 1) * w <= e_hi and (
                        padmode or t2 * w >= v_hi or (t2 + 1) * w <= v_lo):
                    t2 += 1
                if necon - (1 if d_econ else 0) == 0:
                    fill_levels(P, lev, dst + t * P.ds[lev], t2 - t)
                else:
                    child[4 * d], child[4 * d + 1] = 0, w
                    while t < t2:
                        walk(P, lev + 1, 0, nxt, src, dst + t * P.ds[lev], child, True)
                        t += 1
                t = t2
            else:
                child[4 * d], child[4 * d + 1] = e_lo - a, e_hi - a
                walk(P, lev + 1, 0, nxt, src, dst + t * P.ds[lev], child, True)
                t += 1
        else:
            child[4 * d], child[4 * d + 1] = e_lo - a, e_hi - a
            child[4 * d + 2], child[4 * d + 3] = v_lo - a, v_hi - a
            walk(P, lev + 1, 0, nxt, src + t * P.ss[lev], dst + t * P.ds[lev], child, False)
            t += 1


cdef class RepackPlan:
    """A validated, immutable plan; ``run`` executes it with the GIL released.

    Built by ``layoutkit._engine``; the constructor checks array lengths but
    trusts the planner for the geometry.
    """

    cdef readonly object ext, ss, ds, dim, wt, ranges, span, last_noninner, dcontig, below
    cdef readonly object fill_box
    cdef readonly bint boxes_cover
    cdef readonly object pad_runs
    cdef readonly bint src_whole
    # Where this plan unpacks a crouton that the chunk kernels pack: the pack
    # plan (of the opposite direction), walked chunk by chunk the other way
    # (see use_chunks_back); else None.
    cdef readonly object chunks_back
    cdef ChunkGrid back_grid  # chunks_back's chunks, matched once
    cdef readonly int nlev, ndim, cast_src, cast_dst
    cdef readonly Py_ssize_t esize, src_esize, src_base, dst_base
    # The pad pattern's length: the array's itemsize, where the plan moves
    # wider elements (runs of a few elements, only where nothing is padded).
    cdef readonly Py_ssize_t pad_esize
    cdef readonly float scale, zero_point
    cdef Plan base   # pointers into the arrays above (kept alive, never written)

    def __init__(self, ext, ss, ds, dim, wt, ranges, span, int ndim, Py_ssize_t esize,
                 Py_ssize_t src_base=0, Py_ssize_t dst_base=0, Py_ssize_t src_esize=0,
                 int cast_src=-1, int cast_dst=-1, float scale=1.0, float zero_point=0.0,
                 bint src_whole=False, Py_ssize_t pad_esize=0):
        cdef int k, lv
        self.ext = np.ascontiguousarray(ext, dtype=np.int64)
        self.ss = np.ascontiguousarray(ss, dtype=np.int64)
        self.ds = np.ascontiguousarray(ds, dtype=np.int64)
        self.dim = np.ascontiguousarray(dim, dtype=np.int64)
        self.wt = np.ascontiguousarray(wt, dtype=np.int64)
        self.ranges = np.ascontiguousarray(ranges, dtype=np.int64)
        self.span = np.ascontiguousarray(span, dtype=np.int64)
        self.nlev = len(self.ext)
        self.ndim = ndim
        self.esize = esize
        self.pad_esize = pad_esize if pad_esize else esize
        self.src_base = src_base
        self.dst_base = dst_base
        self.src_esize = src_esize if src_esize else esize
        self.cast_src = cast_src
        self.cast_dst = cast_dst
        self.scale = scale
        self.zero_point = zero_point
        self.src_whole = src_whole
        if (cast_src < 0) != (cast_dst < 0) or cast_src >= 7 or cast_dst >= 7:
            raise ValueError("invalid element conversion codes")
        if cast_src < 0 and self.src_esize != esize:
            raise ValueError("element sizes differ but no conversion is given")
        if self.nlev > MAX_LEVELS:
            raise ValueError(f"plan has {self.nlev} levels; at most {MAX_LEVELS} are supported")
        if ndim > MAX_DIMS:
            raise ValueError(f"plan constrains {ndim} dims; at most {MAX_DIMS} are supported")
        for arr in (self.ss, self.ds, self.dim, self.wt):
            if len(arr) != self.nlev:
                raise ValueError("plan arrays differ in length")
        if len(self.ranges) < 4 * ndim or self.span.size < (self.nlev + 1) * max(ndim, 1):
            raise ValueError("plan range arrays are too short")
        last = np.full(max(ndim, 1), -1, dtype=np.int64)
        for lv in range(self.nlev - 1):
            k = <int>self.dim[lv]
            if k >= 0:
                last[k] = lv
        self.last_noninner = last
        below = np.ones(self.nlev + 1, dtype=np.int64)
        dcontig = np.zeros(self.nlev + 1, dtype=np.int64)
        dcontig[self.nlev] = 1
        for lv in range(self.nlev - 1, -1, -1):
            below[lv] = below[lv + 1] * self.ext[lv]
            dcontig[lv] = dcontig[lv + 1] and self.ds[lv] == below[lv + 1] * esize
        self.below = below
        self.dcontig = dcontig
        self.boxes_cover = False
        self.fill_box = self._find_fill_box()
        self.pad_runs = (self._find_pad_runs()
                         if self.fill_box is not None and not self.boxes_cover else None)
        self._fill_base()

    def _find_pad_runs(self):
        # The output bytes that fill_then_copy's data boxes leave unwritten, as
        # [count, start, length, ...]: filling only those, not the whole
        # output first, saves the second write of every data slot. The boxes
        # with a partial innermost level write its other lanes as padding in
        # the same pass, and those with part of a block of 4-byte channel rows
        # its other rows (widened as fill_then_copy does, by the same rules),
        # so the runs are the pixels, rows and blocks of padding only.
        # None where the whole fill is as cheap or the runs are not one
        # pattern's stores: elements other than 1, 2, 4 or 8 bytes, an output
        # that is not one dense block from its base, or more than
        # PAD_RUNS_MAX_BYTES of it.
        cdef int nlev = self.nlev, lv
        es = int(self.esize)
        ds = np.asarray(self.ds, dtype=np.int64)
        ext = np.asarray(self.ext, dtype=np.int64)
        total = int(self.below[0])
        if (es not in (1, 2, 4, 8) or not self.dcontig[0] or (ds < 0).any()
                or (ds % es).any() or total * es > PAD_RUNS_MAX_BYTES):
            return None
        if 0 < ds[0] <= FILL_SLICE:
            # walk() fills and copies FILL_SLICE bytes of the output at a time,
            # and the data then goes into lines the fill left in L1, where
            # writing it to lines not yet in L1 took longer than the fill it
            # saved (NHWC -> Crouton / Crouton4x1 of 1x2048x7x7, uint8: 1.36x
            # / 1.01x the time; float32 1.26x).
            return None
        boxes = []
        for box in self.fill_box[1:].reshape(-1, 4, nlev + 1):
            count = box[0, :nlev].copy()
            first = box[1, :nlev].copy()
            self._widen(first, count)
            boxes.append((first, count))
        # dcontig[0]: the levels are the output's dimensions in C order. Below
        # the deepest level some box takes in part, every box is whole, so the
        # coverage is worked out in cells of that level's digits.
        deep = max([lv for first, count in boxes for lv in range(nlev)
                    if first[lv] != 0 or count[lv] != ext[lv]], default=-1)
        covered = np.zeros(tuple(int(e) for e in ext[: deep + 1]), dtype=bool)
        for first, count in boxes:
            covered[tuple(slice(int(f), int(f + c)) for f, c in
                          zip(first[: deep + 1], count[: deep + 1]))] = True
        cell = int(self.below[deep + 1]) * es
        edges = np.diff(np.concatenate([[0], (~covered.reshape(-1)).view(np.int8), [0]]))
        starts = np.flatnonzero(edges == 1)
        ends = np.flatnonzero(edges == -1)
        if total * es > PAD_RUNS_SMALL_BYTES and len(starts) * PAD_RUN_MIN_BYTES > total * es:
            # Past L2, a run per pixel of padding channels (32-channel croutons of
            # 3 channels whose pixels are not written whole: NHWC -> Crouton2 of
            # 1x3x1000x999 float16) cost 2.5x the time of filling everything first.
            return None
        runs = np.empty(1 + 2 * len(starts), dtype=np.int64)
        runs[0] = len(starts)
        runs[1::2] = starts * cell
        runs[2::2] = (ends - starts) * cell
        runs.setflags(write=False)
        return runs

    def _widen(self, first, count):
        # The digits a fill box's copy writes, given pad runs: fill_then_copy
        # takes a partial innermost level whole (its other lanes padding), or
        # a partial block of 4-byte channel rows whole (its other rows
        # padding). Mirrors fill_then_copy's rules; updates first / count.
        cdef int nlev = self.nlev, inner = self.nlev - 1
        es = self.esize
        ext = self.ext
        if count[inner] < ext[inner]:
            if (first[inner] == 0 if self.ss[inner] == es
                    else nlev >= 3 and ext[inner] * es == 4):
                count[inner], first[inner] = ext[inner], 0
        elif (nlev >= 3 and ext[inner] * es == 4 and count[inner - 1] < ext[inner - 1]
                and first[inner - 1] == 0 and self.ss[inner - 1] == es
                and ext[inner - 1] <= 32):
            count[inner - 1] = ext[inner - 1]

    def _find_fill_box(self):
        # The data boxes of fill_then_copy, or None when the plan does not
        # qualify: [count, then per box ext | first digit | below | dcontig,
        # each nlev + 1 long]. A constrained dim held by one level gives a range
        # of its digits; one split over several levels (W = 7 as 2 x 4 columns of
        # R4Crouton4x1) a box per level: whole outer digits, then the last
        # partial one, and so on down.
        cdef int nlev = self.nlev, nd = self.ndim, lv, d
        if nlev < 3 or self.cast_src >= 0 or nd < 1:
            return None
        levels = [[lv for lv in range(nlev) if self.dim[lv] == d] for d in range(nd)]
        # A gather (every constrained dim's data is all the destination holds of
        # it: a crouton unpacked into NHWC of 45x61 pixels) needs no fill, so the
        # boxes apply at any size, where the walk split each H row at the ragged
        # W (Crouton4x1 -> NHWC of 2x17x45x61: 118 -> 65 us; 1x96x28x28 29 -> 8).
        gather = all(
            self.ranges[4 * d] == self.ranges[4 * d + 2] and self.ranges[4 * d] == 0
            and self.ranges[4 * d + 1] == self.ranges[4 * d + 3] for d in range(nd)
        )
        if not gather and nd == 1:
            # One padded dim whose innermost level sits above the two innermost
            # levels, in cells of up to FILL_OUTER_PAD_CELL bytes: the walk would
            # split every cell into data and padding, a step and a box call or
            # two each (3 channels into R4Crouton2x2Layout, whose 2x2 pixels sit
            # inside the 32 channels: 128-byte cells, 1.8 ms for 1x224x224x3
            # uint8 against 0.14 ms filled first). Larger cells cost the walk
            # less than a second pass over the output.
            if not levels[0]:
                return None
            lv = max(levels[0])
            if (lv >= nlev - 2 or self.below[lv] * self.esize > FILL_OUTER_PAD_CELL
                    or self.below[0] * self.esize > FILL_OUTER_PAD_BYTES):
                return None
        elif not gather and self.below[0] * self.esize > fill_first_bytes:
            return None
        span = self.span.reshape(-1)
        choices = []        # per dim: alternatives, each [(level, first, count)]
        for d in range(nd):
            e_lo, e_hi, v_lo, v_hi = (int(v) for v in self.ranges[4 * d : 4 * d + 4])
            lvs = levels[d]
            if not lvs or (not gather and (e_lo > 0 or e_hi < span[lvs[0] * nd + d])):
                return None
            if len(lvs) == 1:
                lv = lvs[0]
                lo, hi = max(v_lo, 0), min(v_hi, int(self.ext[lv]))
                if self.wt[lv] != 1 or span[lv * nd + d] != self.ext[lv] or hi <= lo:
                    return None
                choices.append([[(lv, lo, hi - lo)]])
            else:
                # Digits of the data's end v in the levels' mixed radix: box j
                # holds the levels before j at v's digits, level j below its
                # digit, the levels after j whole.
                hi = min(v_hi, int(span[lvs[0] * nd + d]))
                if (v_lo > 0 or hi <= 0 or self.wt[lvs[len(lvs) - 1]] != 1
                        or span[lvs[0] * nd + d] != self.ext[lvs[0]] * self.wt[lvs[0]]):
                    return None
                for j in range(len(lvs) - 1):
                    if self.wt[lvs[j]] != self.wt[lvs[j + 1]] * self.ext[lvs[j + 1]]:
                        return None
                digits = [(hi // int(self.wt[lv])) % int(self.ext[lv]) for lv in lvs]
                if hi == span[lvs[0] * nd + d]:
                    alts = [[(lv, 0, int(self.ext[lv])) for lv in lvs]]
                else:
                    alts = [[(lvs[i], digits[i], 1) for i in range(j)] + [(lvs[j], 0, digits[j])]
                            + [(lv, 0, int(self.ext[lv])) for lv in lvs[j + 1 :]]
                            for j in range(len(lvs)) if digits[j]]
                choices.append(alts)
        boxes = [[]]
        for alts in choices:
            boxes = [b + alt for b in boxes for alt in alts]
        if len(boxes) > 16:
            return None
        out = np.zeros((len(boxes), 4, nlev + 1), dtype=np.int64)
        for n, spec in enumerate(boxes):
            box = out[n]
            box[0, :nlev] = self.ext
            box[0, nlev] = 1
            for lv, first, count in spec:
                box[0, lv], box[1, lv] = count, first
            box[2, nlev], box[3, nlev] = 1, 1
            for lv in range(nlev - 1, -1, -1):
                box[2, lv] = box[2, lv + 1] * box[0, lv]
                box[3, lv] = box[3, lv + 1] and self.ds[lv] == box[2, lv + 1] * self.esize
        self.boxes_cover = gather
        return np.concatenate([[len(boxes)], out.ravel()]).astype(np.int64)

    cdef void _fill_base(self):
        cdef Plan* P = &self.base
        for arr in (self.ext, self.ss, self.ds, self.dim, self.wt, self.ranges, self.span,
                    self.last_noninner, self.dcontig, self.below):
            arr.setflags(write=False)
        if self.fill_box is not None:
            self.fill_box.setflags(write=False)
        P.nlev = self.nlev
        P.ndim = self.ndim
        P.esize = self.esize
        P.ext = <const int64_t*>cnp.PyArray_DATA(self.ext)
        P.ss = <const int64_t*>cnp.PyArray_DATA(self.ss)
        P.ds = <const int64_t*>cnp.PyArray_DATA(self.ds)
        P.dim = <const int64_t*>cnp.PyArray_DATA(self.dim)
        P.wt = <const int64_t*>cnp.PyArray_DATA(self.wt)
        P.span = <const int64_t*>cnp.PyArray_DATA(self.span)
        P.last_noninner = <const int64_t*>cnp.PyArray_DATA(self.last_noninner)
        P.dcontig = <const int64_t*>cnp.PyArray_DATA(self.dcontig)
        P.below = <const int64_t*>cnp.PyArray_DATA(self.below)
        P.pad = NULL
        P.src_esize = self.src_esize
        P.cast_src = self.cast_src
        P.cast_dst = self.cast_dst
        P.scale = self.scale
        P.zero_point = self.zero_point
        P.stream = 0
        P.src_whole = self.src_whole
        P.fill_box = NULL
        P.pad_runs = NULL
        P.boxes_cover = self.boxes_cover
        if self.fill_box is not None:
            P.fill_box = <const int64_t*>cnp.PyArray_DATA(self.fill_box)
        if self.pad_runs is not None:
            P.pad_runs = <const int64_t*>cnp.PyArray_DATA(self.pad_runs)

    def run(self, cnp.ndarray src not None, cnp.ndarray dst not None,
            cnp.ndarray pad not None, int threads=1):
        """Execute the plan from ``src`` (element [0,...,0] is the base) into ``dst``.

        With ``threads > 1`` the digits of the outermost level are split into
        slices that a native worker pool (layoutkit_pool.h) runs without the GIL; every
        slice writes its own part of ``dst``, so results equal one thread's.
        """
        cdef Py_ssize_t n0, n1, lev, n, per, items, span, run_min
        cdef SliceJob job
        cdef int rc
        if pad.nbytes < self.pad_esize:
            raise ValueError("pad pattern is shorter than one element")
        pad = self._kernel_pad(pad)
        if self._chunks_back_fits(dst):
            self._run_chunks_back(src, dst, threads)
            return
        n0 = self.ext[0] if self.nlev else 1
        n1 = self.ext[1] if self.nlev > 1 else 1
        lev = -1
        if threads > 1 and self.nlev == 2 and self.ndim == 0 and n1 > n0 and n1 >= 128 * threads:
            # One box of few long rows (NHWC -> NCHW of 64 channels): slicing the
            # rows would make each slice a thin box that reads every source line;
            # slice the inner level instead (its boxes keep all the rows).
            lev = 2
        elif threads > 1 and self.nlev >= 2 and n0 >= 2 * threads:
            lev = 0
        elif (threads > 1 and self.nlev >= 3 and self.dim[0] < 0 and n1 >= 2 * threads):
            # Few outer digits (a batch of 1, two channel blocks): split the next
            # level instead. Level 0 holds no constrained dim, so each of its
            # digits is walked from level 1 with the same ranges the walk uses.
            lev = 1
        if lev < 0:
            # Fewer outer digits than two per thread would leave threads idle or
            # split one interleaved stream (e.g. 3 channel planes): one thread.
            self._run_serial(src, dst, pad)
            return
        n = n0 if lev == 0 else n1
        # Slices of ~256 KiB of output, claimed one at a time by the threads.
        per = self.base.below[0] * self.esize // (n0 if lev == 1 else 1) // (256 << 10)
        # Each slice reads a run of every lane (level-0 digits) or writes a piece
        # of every row (column slices): `span` bytes of it over all slices. Runs
        # that short, slices taken by the threads in turn, defeat the
        # prefetchers: an H row of HCWNC of a batch is 224 bytes of each of 2048
        # planes, 2 threads 1.2-1.3x one thread; column pieces of NHWC -> NCHW of
        # 64 channels of 256x256 were 4 KiB, 1.2-1.4x. Runs of at least
        # `run_min` bytes, as many slices per thread each.
        span = 0
        if lev == 0:
            span, run_min = abs_ssize(self.base.ss[0]) * n, SLICE_RUN_MIN
        elif lev == 2:
            span, run_min = n1 * self.esize, SLICE_COLUMNS_MIN
        if 0 < span < run_min * per:
            per = max(threads, span // run_min // threads * threads)
        per = min(n, max(threads, per))
        items = n0 * per if lev == 1 else per
        job.P = self.base
        job.P.pad = <const uint8_t*>cnp.PyArray_DATA(pad)
        job.P.stream = self._stream_mode()
        if lev == 2 and job.P.stream == 1:
            # Column slices of a few long rows (NHWC -> NCHW of 3 channels) write
            # 3 planes per thread in short pieces: streamed from two threads
            # they ran 1.5-2x slower than cached stores.
            job.P.stream = 0
        job.rng = <const int64_t*>cnp.PyArray_DATA(self.ranges)
        job.src = <const char*>cnp.PyArray_DATA(src) + self.src_base
        job.dst = <char*>cnp.PyArray_DATA(dst) + self.dst_base
        job.lev = <int>lev
        job.n = n
        job.per = per
        with nogil:
            rc = lk_pool_run(threads, items, run_slice_item, &job)
        if rc == 0:
            return
        # No native pool on this platform: a Python thread pool runs the slices
        # (column slices of one box are left to a single thread there).
        if lev == 2:
            self._run_slice(src, dst, pad, 0, n0)
            return
        pool = _pool(threads)
        if lev == 0:
            futures = [pool.submit(self._run_slice, src, dst, pad, n * k // per, n * (k + 1) // per)
                       for k in range(per)]
        else:
            futures = [pool.submit(self._run_slice, src, dst, pad, n * k // per,
                                   n * (k + 1) // per, 1, d)
                       for d in range(n0) for k in range(per)]
        for f in futures:
            f.result()

    def run_into(self, cnp.ndarray src not None, object out, object out_dtype,
                 tuple shape, cnp.ndarray pad not None, Py_ssize_t serial_below):
        return self._run_into(src, out, out_dtype, shape, pad, serial_below)

    cdef object _run_into(self, cnp.ndarray src, object out, object out_dtype,
                          tuple shape, cnp.ndarray pad, Py_ssize_t serial_below):
        """``run`` on one thread into ``out`` after quick checks, or None when a check
        fails (the caller then checks ``out`` in full, for its error message).

        The checks: ``out`` an ndarray of ``out_dtype`` with the elements of
        ``shape`` (returned reshaped to it if its own shape differs, e.g. an
        adapter's), C-contiguous, writeable, under ``serial_below`` bytes (larger
        outputs may want threads), and apart from ``src`` (the span of its strides).
        """
        cdef cnp.ndarray o
        cdef int k, nd
        cdef Py_ssize_t lo, hi, step, olo, ohi, n = 1
        cdef bint same
        if type(out) is not np.ndarray:
            return None
        o = <cnp.ndarray>out
        nd = cnp.PyArray_NDIM(o)
        if cnp.PyArray_NBYTES(o) >= serial_below:
            return None
        if not (cnp.PyArray_IS_C_CONTIGUOUS(o) and cnp.PyArray_ISWRITEABLE(o)):
            return None
        for k in range(len(shape)):
            n *= <Py_ssize_t>shape[k]
        if n != cnp.PyArray_SIZE(o):
            return None
        same = nd == len(shape)
        k = 0
        while same and k < nd:
            same = cnp.PyArray_DIMS(o)[k] == <Py_ssize_t>shape[k]
            k += 1
        if not (<object>cnp.PyArray_DESCR(o) is out_dtype or o.dtype == out_dtype):
            return None
        if cnp.PyArray_SIZE(o) == 0 or cnp.PyArray_SIZE(src) == 0:
            return None
        lo = hi = <Py_ssize_t>cnp.PyArray_DATA(src)
        for k in range(cnp.PyArray_NDIM(src)):
            step = (cnp.PyArray_DIMS(src)[k] - 1) * cnp.PyArray_STRIDES(src)[k]
            if step < 0:
                lo += step
            else:
                hi += step
        hi += cnp.PyArray_ITEMSIZE(src)
        olo = <Py_ssize_t>cnp.PyArray_DATA(o)
        ohi = olo + cnp.PyArray_NBYTES(o)
        if olo < hi and lo < ohi:
            return None
        if cnp.PyArray_NBYTES(pad) < self.pad_esize:
            raise ValueError("pad pattern is shorter than one element")
        self._run_serial(src, o, self._kernel_pad(pad))
        return o if same else o.reshape(shape)

    cdef cnp.ndarray _kernel_pad(self, cnp.ndarray pad):
        # A plan of wider elements than the array's (runs of a few elements as
        # one, pad_esize < esize) has no padding, but its kernels load a pad
        # element of esize bytes: give them the pattern repeated that far.
        if cnp.PyArray_NBYTES(pad) >= self.esize:
            return pad
        return np.resize(pad, self.esize)

    def use_chunks_back(self, RepackPlan pack not None):
        """Unpack by walking ``pack``, the plan packing this plan's destination
        into its source, backwards a chunk at a time, where the chunk kernels
        take it (NHWC <- R4Crouton4x1 / R4Crouton2 of padded planes: each chunk
        read in order, its data de-interleaved into 64-byte pieces of pixels,
        its padding never read). Returns whether the plan now does."""
        cdef ChunkGrid g
        if (self.cast_src >= 0 or pack.cast_src >= 0 or pack.esize != self.esize
                or pack.src_base or pack.dst_base or self.src_base or self.dst_base):
            return False
        if not match_chunk_grid(&pack.base, <const int64_t*>cnp.PyArray_DATA(pack.ranges), &g):
            return False
        if g.sw % 64 or g.sh % 64:
            # Pixel pieces that are not whole lines (see _chunks_back_fits).
            return False
        if g.sw == 4096:
            # Pixels 4 KiB apart, whose stores share one L1 set and alias the
            # chunk loads' low address bits, went either way against the walk:
            # Crouton2 float16 of 1x7x7x2048 1.25x the time, 1x12x12x2048 1.2x,
            # Crouton4x1 of 1x7x7x4096 1.5x, but 1x15x15x2048 0.52x and
            # 1x9x9x4096 0.7x. Left to the walk. (Elsewhere: Crouton4x1 0.27-0.85x
            # the time, 1x7x7x2048 0.83x; Crouton2 0.44-1.0x.)
            return False
        self.chunks_back = pack
        self.back_grid = g
        return True

    cdef inline bint _chunks_back_fits(self, cnp.ndarray dst):
        # Its pieces of pixels go out as 64-byte stores: into an output not on
        # a line they straddle two lines each, and took 1.75x the time of the
        # walk (Crouton4x1 -> NHWC uint8 of 1x7x7x2048, output 16 bytes into a
        # line: 8.6 us against 4.7 on a line, the walk 5.1-6.3).
        return (self.chunks_back is not None
                and (<size_t>cnp.PyArray_DATA(dst)) % 64 == 0)

    cdef void _run_chunks_back(self, cnp.ndarray src, cnp.ndarray dst, int threads):
        cdef RepackPlan pack = <RepackPlan>self.chunks_back
        cdef ChunkJob job
        cdef int rc = 1
        job.P = pack.base
        job.rng = <const int64_t*>cnp.PyArray_DATA(pack.ranges)
        job.g = self.back_grid
        job.pixels = <char*>cnp.PyArray_DATA(dst)
        job.chunks = <char*>cnp.PyArray_DATA(src)
        job.n = job.P.ext[0]
        job.per = min(job.n, 4 * threads)
        if cnp.PyArray_NBYTES(dst) < GIL_RELEASE_BYTES:
            chunk_walk(&job.P, job.rng, &job.g, 0, job.n, job.pixels, job.chunks, True)
            return
        with nogil:
            if threads > 1 and job.n >= 2 * threads:
                rc = lk_pool_run(threads, job.per, run_chunk_item, &job)
            if rc != 0:
                chunk_walk(&job.P, job.rng, &job.g, 0, job.n, job.pixels, job.chunks, True)

    cdef void _run_serial(self, cnp.ndarray src, cnp.ndarray dst, cnp.ndarray pad):
        if self._chunks_back_fits(dst):
            self._run_chunks_back(src, dst, 1)
            return
        cdef Plan P = self.base
        cdef const int64_t* rng = <const int64_t*>cnp.PyArray_DATA(self.ranges)
        cdef const char* s = <const char*>cnp.PyArray_DATA(src) + self.src_base
        cdef char* o = <char*>cnp.PyArray_DATA(dst) + self.dst_base
        cdef Py_ssize_t n0 = P.ext[0] if P.nlev else 1
        P.pad = <const uint8_t*>cnp.PyArray_DATA(pad)
        P.stream = self._stream_mode()
        # Small outputs keep the GIL: releasing and taking it back costs about
        # as much as moving a few KiB.
        if cnp.PyArray_NBYTES(dst) < GIL_RELEASE_BYTES:
            walk(&P, 0, 0, n0, s, o, rng, False)
            if P.stream:
                lk_stream_fence()
            return
        with nogil:
            walk(&P, 0, 0, n0, s, o, rng, False)
            if P.stream:
                lk_stream_fence()

    cdef int _stream_mode(self):
        # Called as a run starts: also tells the kernels how large the run is.
        cdef Py_ssize_t footprint = self.base.below[0] * (self.esize + self.src_esize)
        lk_set_footprint_hint(footprint)
        if stream_min_bytes == 0:
            return 2
        if lk_stream_native() != 0 and stream_min_bytes > 0 and footprint >= stream_min_bytes:
            return 1
        return 0

    def _run_slice(self, cnp.ndarray src, cnp.ndarray dst, cnp.ndarray pad,
                   Py_ssize_t t_lo, Py_ssize_t t_hi, int lev=0, Py_ssize_t d0=0):
        # Digits [t_lo, t_hi) of level ``lev``: 0, or 1 under digit d0 of level 0
        # (only when level 0 holds no constrained dim, so the ranges are the root's).
        cdef Plan P = self.base
        cdef const int64_t* rng = <const int64_t*>cnp.PyArray_DATA(self.ranges)
        cdef const char* s
        cdef char* o
        pad = self._kernel_pad(pad)
        P.pad = <const uint8_t*>cnp.PyArray_DATA(pad)
        P.stream = self._stream_mode()
        s = <const char*>cnp.PyArray_DATA(src) + self.src_base
        o = <char*>cnp.PyArray_DATA(dst) + self.dst_base
        if lev == 1:
            s += d0 * P.ss[0]
            o += d0 * P.ds[0]
        with nogil:
            walk(&P, lev, t_lo, t_hi, s, o, rng, False)
            if P.stream:
                lk_stream_fence()


cdef struct SliceJob:
    Plan P
    const int64_t* rng
    const char* src
    char* dst
    # The level split into slices: 0; 1 under each digit of level 0; 2: level 1
    # of a two-level plan, each slice a box of all its rows.
    int lev
    Py_ssize_t n      # digits of that level
    Py_ssize_t per    # slices of it


cdef void run_slice_item(void* ctx, Py_ssize_t item) noexcept nogil:
    """Slice ``item`` of a threaded run (the pool's task function)."""
    cdef const SliceJob* J = <const SliceJob*>ctx
    cdef Py_ssize_t d = 0, k = item
    cdef Plan Q
    cdef int64_t ext[2]
    cdef int64_t below[3]
    cdef int64_t dcontig[3]
    if J.lev == 1:
        d = item // J.per
        k = item % J.per
    cdef Py_ssize_t lo = J.n * k // J.per
    cdef Py_ssize_t hi = J.n * (k + 1) // J.per
    if lo < hi and J.lev == 2:
        # Columns [lo, hi) of the plan's single box, as a plan of their own.
        Q = J.P
        ext[0], ext[1] = J.P.ext[0], hi - lo
        below[0], below[1], below[2] = ext[0] * ext[1], ext[1], 1
        dcontig[0] = J.P.dcontig[0] if hi - lo == J.n else 0
        dcontig[1], dcontig[2] = J.P.dcontig[1], J.P.dcontig[2]
        Q.ext, Q.below, Q.dcontig = ext, below, dcontig
        copy_levels(&Q, 0, J.src + lo * Q.ss[1], J.dst + lo * Q.ds[1], ext[0], 0, ALL_LANES)
        if Q.stream:
            lk_stream_fence()
    elif lo < hi:
        walk(&J.P, J.lev, lo, hi, J.src + d * J.P.ss[0], J.dst + d * J.P.ds[0], J.rng, False)
        if J.P.stream:
            lk_stream_fence()


cdef struct ChunkJob:
    Plan P              # the pack plan walked backwards
    const int64_t* rng
    ChunkGrid g
    char* pixels
    char* chunks
    Py_ssize_t n        # digits of its level 0
    Py_ssize_t per      # slices of them


cdef void run_chunk_item(void* ctx, Py_ssize_t item) noexcept nogil:
    """Slice ``item`` of a threaded chunk-by-chunk unpack (the pool's task)."""
    cdef const ChunkJob* J = <const ChunkJob*>ctx
    cdef Py_ssize_t lo = J.n * item // J.per
    cdef Py_ssize_t hi = J.n * (item + 1) // J.per
    if lo < hi:
        chunk_walk(&J.P, J.rng, &J.g, lo, hi, J.pixels, J.chunks, True)


cdef struct PlanRun:
    Plan P
    const int64_t* rng
    Py_ssize_t src_base
    Py_ssize_t dst_base


cdef void run_plan_c(const void* impl, const char* src, char* dst) noexcept nogil:
    """Run a whole plan on one thread: the C entry point of ``layoutkit.kernels``."""
    cdef const PlanRun* R = <const PlanRun*>impl
    cdef Plan P = R.P
    walk(&P, 0, 0, P.ext[0] if P.nlev else 1, src + R.src_base, dst + R.dst_base, R.rng, False)
    if P.stream:
        lk_stream_fence()


cdef class _Repeat:
    # One kept call: the input's geometry, the other arguments, what they planned.
    cdef object descr
    cdef int nd
    cdef Py_ssize_t dims[MAX_DIMS]
    cdef Py_ssize_t strides[MAX_DIMS]
    cdef tuple args
    cdef RepackPlan plan
    cdef tuple result_shape
    cdef object out_dtype
    cdef cnp.ndarray pad


cdef inline bint same_argument(object a, object b):
    # ``a == b`` of the same type: True and 1, 3.0 and 3 are different arguments.
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False


cdef class RepeatCalls:
    """Recent successful calls, recognised in C.

    Calls repeat with the same arguments (a preprocessing loop over frames).
    After one full validation a call is kept under the input array's dtype,
    shape and strides and a tuple of its other arguments (compared by type and
    value); a repeat then skips validation and planning: ``run`` checks ``out``
    and runs the kept plan on the calling thread. The most recent ``size``
    calls are kept, the newest first.
    """

    cdef list slots
    cdef int size

    def __init__(self, int size=32):
        self.slots = []
        self.size = max(1, size)

    cdef _Repeat _find(self, object x, tuple args):
        cdef cnp.ndarray a
        cdef _Repeat r
        cdef int k, nd
        cdef Py_ssize_t n
        if type(x) is not np.ndarray:
            return None
        a = <cnp.ndarray>x
        nd = cnp.PyArray_NDIM(a)
        n = len(args)
        for r in self.slots:
            if <object>cnp.PyArray_DESCR(a) is not r.descr or nd != r.nd or n != len(r.args):
                continue
            k = 0
            while k < nd and cnp.PyArray_DIMS(a)[k] == r.dims[k] and \
                    cnp.PyArray_STRIDES(a)[k] == r.strides[k]:
                k += 1
            if k < nd:
                continue
            k = 0
            while k < n and same_argument(args[k], r.args[k]):
                k += 1
            if k == n:
                return r
        return None

    def find(self, object x, tuple args not None):
        """The kept ``(plan, result_shape, out_dtype, pad)`` of this call, or None."""
        cdef _Repeat r = self._find(x, args)
        if r is None:
            return None
        return r.plan, r.result_shape, r.out_dtype, r.pad

    def run(self, object x, tuple args not None, object out, object threads):
        """The result of a kept call run on one thread, or None: not kept, or
        ``threads`` other than None or 1, or an output of 2 MiB or more with
        ``threads=None`` (the environment may ask for threads), or an ``out``
        that needs the full checks."""
        cdef _Repeat r
        cdef Py_ssize_t serial_below
        cdef cnp.ndarray result
        if threads is None:
            serial_below = 2 << 20
        elif type(threads) is int and <object>threads == 1:
            serial_below = PY_SSIZE_T_MAX
        else:
            return None
        r = self._find(x, args)
        if r is None:
            return None
        if out is not None:
            return r.plan._run_into(<cnp.ndarray>x, out, r.out_dtype, r.result_shape, r.pad,
                                    serial_below)
        result = np.empty(r.result_shape, dtype=r.out_dtype)
        if cnp.PyArray_NBYTES(result) >= serial_below:
            return None
        if cnp.PyArray_SIZE(result) == 0 or cnp.PyArray_SIZE(<cnp.ndarray>x) == 0:
            return None
        r.plan._run_serial(<cnp.ndarray>x, result, r.pad)
        return result

    def keep(self, cnp.ndarray x not None, tuple args not None, RepackPlan plan not None,
             tuple result_shape not None, object out_dtype, cnp.ndarray pad not None):
        """Keep a call that succeeded (replacing an older one of the same arguments)."""
        cdef _Repeat r
        cdef int k, nd = cnp.PyArray_NDIM(x)
        if nd > MAX_DIMS or cnp.PyArray_NBYTES(pad) < plan.esize:
            return
        old = self._find(x, args)
        if old is not None:
            self.slots.remove(old)
        r = _Repeat()
        r.descr = <object>cnp.PyArray_DESCR(x)
        r.nd = nd
        for k in range(nd):
            r.dims[k] = cnp.PyArray_DIMS(x)[k]
            r.strides[k] = cnp.PyArray_STRIDES(x)[k]
        r.args = args
        r.plan = plan
        r.result_shape = result_shape
        r.out_dtype = out_dtype
        r.pad = pad
        self.slots.insert(0, r)
        del self.slots[self.size:]

    def alias(self, object x, tuple kept not None, tuple args not None,
              tuple result_shape not None):
        """Keep ``args`` on ``x`` as the call ``kept`` on ``x`` already kept, its
        result in ``result_shape`` (an adapter's call that is exactly that call,
        e.g. ``vitis.to_hw`` of a plain pack). False when ``kept`` is not kept."""
        cdef _Repeat r = self._find(x, kept)
        cdef Py_ssize_t a = 1, b = 1
        if r is None:
            return False
        for v in result_shape:
            a *= <Py_ssize_t>v
        for v in r.result_shape:
            b *= <Py_ssize_t>v
        if a != b:
            return False
        self.keep(<cnp.ndarray>x, args, r.plan, result_shape, r.out_dtype, r.pad)
        return True

    def clear(self):
        """Forget every kept call."""
        self.slots = []

    def __len__(self):
        return len(self.slots)


# The calls of pack, unpack and convert (layoutkit._engine).
repeated_calls = RepeatCalls(32)


cdef class CPlan:
    """A plan bound to its padding pattern, for C callers (``layoutkit.kernels``).

    ``capsule()`` returns a PyCapsule named ``"layoutkit.repack_run"`` whose
    pointer is ``{void (*run)(const void*, const char*, char*), const void* impl}``;
    the CPlan must stay alive while the pointer is used.
    """

    cdef PlanRun run_state
    cdef void* entry[2]
    cdef readonly RepackPlan plan
    cdef readonly object pad

    def __init__(self, RepackPlan plan not None, cnp.ndarray pad not None):
        if pad.nbytes < plan.pad_esize or not pad.flags.c_contiguous:
            raise ValueError("pad must be a contiguous pattern of at least one element")
        self.plan = plan
        self.pad = plan._kernel_pad(pad).copy()
        self.pad.setflags(write=False)
        self.run_state.P = plan.base
        self.run_state.P.pad = <const uint8_t*>cnp.PyArray_DATA(self.pad)
        self.run_state.P.stream = min(plan._stream_mode(), 1)  # C callers: never the tests' 2
        self.run_state.rng = <const int64_t*>cnp.PyArray_DATA(plan.ranges)
        self.run_state.src_base = plan.src_base
        self.run_state.dst_base = plan.dst_base
        self.entry[0] = <void*>run_plan_c
        self.entry[1] = <void*>&self.run_state

    def capsule(self):
        return PyCapsule_New(<void*>self.entry, b"layoutkit.repack_run", NULL)


_POOL = None
_POOL_SIZE = 0


def _pool(int threads):
    """A process-wide thread pool, grown on demand (threads only wait on the kernel)."""
    global _POOL, _POOL_SIZE
    if _POOL is None or _POOL_SIZE < threads:
        from concurrent.futures import ThreadPoolExecutor

        if _POOL is not None:
            _POOL.shutdown(wait=False)
        _POOL = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="layoutkit")
        _POOL_SIZE = threads
    return _POOL
