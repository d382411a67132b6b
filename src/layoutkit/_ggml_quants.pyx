"""GGML block quantization kernels (byte-exact ports of ggml's reference C code).

Every kernel works on whole blocks laid out back to back: ``nb`` blocks of
``block_size`` float32 values in, ``nb * type_size`` bytes out (or the reverse).
The arithmetic mirrors ggml's ``quantize_row_*_ref`` / ``dequantize_row_*``
operation by operation in IEEE binary32 (every constant is a float, sums and
max searches run sequentially in element order, no fused multiply-add: setup.py
compiles with ``-ffp-contract=off``). Validation happens in ``layoutkit.ggml``;
the ``def`` entry points below re-check the buffer sizes so that a direct call
can never read or write out of bounds.
"""

from libc.math cimport fabsf, floorf, ldexpf, log2f, sqrtf
from libc.stdint cimport int8_t, int32_t, uint8_t, uint16_t, uint32_t
from libc.string cimport memcpy, memset
from libc.stdlib cimport free, malloc
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_New

cimport numpy as cnp

import numpy as np

cnp.import_array()

# ---------------------------------------------------------------------------
# type ids (ggml enum ggml_type)
# ---------------------------------------------------------------------------
cdef enum:
    T_F32 = 0
    T_F16 = 1
    T_Q4_0 = 2
    T_Q4_1 = 3
    T_Q5_0 = 6
    T_Q5_1 = 7
    T_Q8_0 = 8
    T_Q8_1 = 9
    T_Q2_K = 10
    T_Q3_K = 11
    T_Q4_K = 12
    T_Q5_K = 13
    T_Q6_K = 14
    T_Q8_K = 15
    T_IQ2_XXS = 16
    T_IQ2_XS = 17
    T_IQ3_XXS = 18
    T_IQ1_S = 19
    T_IQ4_NL = 20
    T_IQ3_S = 21
    T_IQ2_S = 22
    T_IQ4_XS = 23
    T_IQ1_M = 29
    T_BF16 = 30
    T_TQ1_0 = 34
    T_TQ2_0 = 35
    T_MXFP4 = 39
    T_NVFP4 = 40
    T_Q1_0 = 41
    T_Q2_0 = 42

# ---------------------------------------------------------------------------
# AVX2 builds of the hottest kernels (Q4_0, Q8_0 quantize and dequantize)
# ---------------------------------------------------------------------------
# The same operations as q_q4_0 / q_q8_0 below, written in C so that GCC/clang
# can compile them a second time for AVX2 (8 floats per vector instead of 4)
# and pick them at run time. target("avx2") does not enable FMA, and setup.py
# builds with -ffp-contract=off, so every result is rounded exactly as in the
# portable kernels (the tests compare both bit for bit). Elsewhere (MSVC,
# non-x86) only the portable Cython kernels exist.
# LAYOUTKIT_GGML_KERNELS=portable forces the portable kernels.
cdef extern from *:
    """
    #include <stdint.h>
    #include <stdlib.h>
    #include <string.h>
    #include <math.h>
    #if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) && !defined(_WIN32)
    #define LKG_HAVE_AVX2 1
    #define LKG_AVX2 __attribute__((target("avx2")))
    #include <immintrin.h>
    #include <cpuid.h>

    static inline uint32_t lkg_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
    static inline float lkg_flt(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

    /* GGML_FP32_TO_FP16: round to nearest even, overflow to inf, NaN -> sign|0x7E00 */
    static inline void lkg_put_fp16(uint8_t *p, float f) {
        uint32_t u = lkg_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7FFFFFFFu, h, m;
        if (a > 0x7F800000u) h = sign | 0x7E00u;
        else if (a >= 0x477FF000u) h = sign | 0x7C00u;
        else if (a >= 0x38800000u) {
            m = a - 0x38000000u;
            m = m + 0x0FFFu + ((m >> 13) & 1u);
            h = sign | (m >> 13);
        } else {
            float v = lkg_flt(a) * 16777216.0f;
            v = (v + 8388608.0f) - 8388608.0f;
            h = sign | (uint32_t)v;
        }
        p[0] = (uint8_t)(h & 0xFFu);
        p[1] = (uint8_t)(h >> 8);
    }

    LKG_AVX2 static inline int32_t lkg_hmax(__m256i v) {
        __m128i m = _mm_max_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        m = _mm_max_epi32(m, _mm_shuffle_epi32(m, 0x4E));
        m = _mm_max_epi32(m, _mm_shuffle_epi32(m, 0xB1));
        return _mm_cvtsi128_si32(m);
    }

    LKG_AVX2 static inline uint32_t lkg_hmaxu(__m256i v) {
        __m128i m = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0x4E));
        m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0xB1));
        return (uint32_t)_mm_cvtsi128_si32(m);
    }

    /* 32 int32 lanes holding values 0..255 -> 32 bytes in element order */
    LKG_AVX2 static inline void lkg_store_bytes32(uint8_t *p, __m256i t0, __m256i t1,
                                                  __m256i t2, __m256i t3) {
        const __m256i b = _mm256_packus_epi16(_mm256_packus_epi32(t0, t1),
                                              _mm256_packus_epi32(t2, t3));
        const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        _mm256_storeu_si256((__m256i *)p, _mm256_permutevar8x32_epi32(b, order));
    }

    LKG_AVX2 static void lkg_q4_0_avx2(const float *x, uint8_t *y, Py_ssize_t nb) {
        const __m256i absmask = _mm256_set1_epi32(0x7FFFFFFF);
        const __m256i infbits = _mm256_set1_epi32(0x7F800000);
        const __m256i zero = _mm256_setzero_si256();
        const __m256i fifteen = _mm256_set1_epi32(15);
        const __m256 half8 = _mm256_set1_ps(8.5f);
        for (Py_ssize_t i = 0; i < nb; i++) {
            const float *xb = x + 32 * i;
            uint8_t *yb = y + 18 * i;
            /* the first element with the largest |x| (NaN skipped), in one pass: the
               largest |x| among positive elements is the signed max of the bit
               patterns, among negative ones the unsigned max (sign bit set) */
            __m256i smax = _mm256_set1_epi32(INT32_MIN), umax = zero;
            for (int k = 0; k < 4; k++) {
                const __m256i u = _mm256_loadu_si256((const __m256i *)(xb + 8 * k));
                smax = _mm256_max_epi32(smax, u);
                umax = _mm256_max_epu32(umax, u);
            }
            const int32_t sm = lkg_hmax(smax);
            const uint32_t um = lkg_hmaxu(umax);
            int32_t p = sm > 0 ? sm : 0;
            int32_t n = um >= 0x80000000u ? (int32_t)(um & 0x7FFFFFFFu) : 0;
            if (p > 0x7F800000 || n > 0x7F800000) {  /* NaN present: redo, skipping NaN */
                __m256i pos = zero, neg = zero;
                for (int k = 0; k < 4; k++) {
                    const __m256i u = _mm256_loadu_si256((const __m256i *)(xb + 8 * k));
                    __m256i a = _mm256_and_si256(u, absmask);
                    a = _mm256_andnot_si256(_mm256_cmpgt_epi32(a, infbits), a);
                    const __m256i isneg = _mm256_cmpgt_epi32(zero, u);
                    pos = _mm256_max_epi32(pos, _mm256_andnot_si256(isneg, a));
                    neg = _mm256_max_epi32(neg, _mm256_and_si256(isneg, a));
                }
                p = lkg_hmax(pos);
                n = lkg_hmax(neg);
            }
            /* branch-free: the sign of the max is random data */
            uint32_t mbits = p > n ? (uint32_t)p : ((uint32_t)n | 0x80000000u);
            if (p == n) {
                mbits = 0;
                if (p != 0) {                         /* +a and -a tie: the first one wins */
                    int j = 0;
                    while ((int32_t)(lkg_bits(xb[j]) & 0x7FFFFFFFu) != p) j++;
                    mbits = lkg_bits(xb[j]);
                }
            }
            const float mx = lkg_flt(mbits);
            const float d = mx * -0.125f;   /* == max / -8: both round the same exact value */
            const float id = d != 0.0f ? 1.0f / d : 0.0f;
            lkg_put_fp16(yb, d);
            const __m256 vid = _mm256_set1_ps(id);
            __m256i q[4];
            for (int k = 0; k < 4; k++) {
                const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(xb + 8 * k), vid);
                const __m256i t = _mm256_cvttps_epi32(_mm256_add_ps(v, half8));
                /* MIN(15, (int8_t)t): t is in [0, 16] whenever x*id is finite (|x*id|
                   <= 8 up to rounding), and NaN/inf give INT_MIN whose int8 is 0;
                   so clamping to [0, 15] is exact */
                q[k] = _mm256_max_epi32(_mm256_min_epi32(t, fifteen), zero);
            }
            /* qs[j] = xi[j] | xi[j + 16] << 4 */
            const __m256i lo = _mm256_or_si256(q[0], _mm256_slli_epi32(q[2], 4));
            const __m256i hi = _mm256_or_si256(q[1], _mm256_slli_epi32(q[3], 4));
            const __m256i w = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xD8);
            const __m128i b = _mm_packus_epi16(_mm256_castsi256_si128(w),
                                               _mm256_extracti128_si256(w, 1));
            _mm_storeu_si128((__m128i *)(yb + 2), b);
        }
    }

    LKG_AVX2 static void lkg_q8_0_avx2(const float *x, uint8_t *y, Py_ssize_t nb) {
        const __m256i absmask = _mm256_set1_epi32(0x7FFFFFFF);
        const __m256i lowbyte = _mm256_set1_epi32(0xFF);
        const __m256 phalf = _mm256_set1_ps(0.5f), nhalf = _mm256_set1_ps(-0.5f);
        for (Py_ssize_t i = 0; i < nb; i++) {
            const float *xb = x + 32 * i;
            uint8_t *yb = y + 34 * i;
            __m256i am = _mm256_setzero_si256();
            for (int k = 0; k < 4; k++) {
                const __m256i u = _mm256_loadu_si256((const __m256i *)(xb + 8 * k));
                am = _mm256_max_epi32(am, _mm256_and_si256(u, absmask));
            }
            const int32_t a = lkg_hmax(am);
            float amax;
            if (a <= 0x7F800000) {
                amax = lkg_flt((uint32_t)a);
            } else {                                  /* NaN: replay C's MAX() loop */
                amax = 0.0f;
                for (int j = 0; j < 32; j++) {
                    const float av = fabsf(xb[j]);
                    amax = amax > av ? amax : av;
                }
            }
            const float d = amax / 127.0f;
            const float id = d != 0.0f ? 1.0f / d : 0.0f;
            lkg_put_fp16(yb, d);
            if (id > 3.4028234663852886e+38f) {       /* 1/d overflowed, see q_q8_0 */
                memset(yb + 2, 0, 32);
                continue;
            }
            const __m256 vid = _mm256_set1_ps(id);
            __m256i q[4];
            for (int k = 0; k < 4; k++) {
                /* roundf: truncate, then step away from zero when |fraction| >= 0.5 */
                const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(xb + 8 * k), vid);
                __m256i t = _mm256_cvttps_epi32(v);
                const __m256 fr = _mm256_sub_ps(v, _mm256_cvtepi32_ps(t));
                t = _mm256_sub_epi32(t, _mm256_castps_si256(_mm256_cmp_ps(fr, phalf, _CMP_GE_OQ)));
                t = _mm256_add_epi32(t, _mm256_castps_si256(_mm256_cmp_ps(fr, nhalf, _CMP_LE_OQ)));
                q[k] = _mm256_and_si256(t, lowbyte);                       /* (int8_t) */
            }
            lkg_store_bytes32(yb + 2, q[0], q[1], q[2], q[3]);
        }
    }

    static inline float lkg_fp16_to_fp32(uint16_t h) {   /* as fp16_to_fp32 below */
        const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
        if (e == 0) return lkg_flt(sign | lkg_bits((float)m * 5.9604644775390625e-08f));
        if (e == 31) return lkg_flt(sign | 0x7F800000u | (m ? (0x00400000u | (m << 13)) : 0u));
        return lkg_flt(sign | ((e + 112u) << 23) | (m << 13));
    }

    /* Large outputs are written with non-temporal stores: a fresh result array
       is not in cache anyway, and skipping the read-for-ownership saves a third
       of the memory traffic. From 8 MiB on AMD, where smaller ones stay in the
       cache (a 4 MiB dequantize into a reused out= ran 1.5x faster with cached
       stores on Zen 4); from 2 MiB elsewhere (Xeon, Sapphire Rapids: Q8_0
       256x4096, 4 MiB, 247 -> 188 us into a reused out=, where ggml's C took
       224 us). numpy's large arrays are 16-byte aligned. */
    static Py_ssize_t lkg_stream_min_blocks_v = 0;
    static inline Py_ssize_t lkg_stream_min_blocks(void) {
        if (lkg_stream_min_blocks_v == 0) {
            __builtin_cpu_init();
            lkg_stream_min_blocks_v = __builtin_cpu_is("amd") ? 65536 : 16384;
        }
        return lkg_stream_min_blocks_v;
    }
    #define LKG_STREAM_MIN_BLOCKS lkg_stream_min_blocks()

    LKG_AVX2 static inline void lkg_put8(float *p, __m256 v, int stream) {
        if (stream) {
            _mm_stream_ps(p, _mm256_castps256_ps128(v));
            _mm_stream_ps(p + 4, _mm256_extractf128_ps(v, 1));
        } else {
            _mm256_storeu_ps(p, v);
        }
    }

    LKG_AVX2 static void lkg_dq_q8_0_avx2(const uint8_t *x, float *y, Py_ssize_t nb) {
        const int stream = ((uintptr_t)y & 15u) == 0 && nb >= LKG_STREAM_MIN_BLOCKS;
        for (Py_ssize_t i = 0; i < nb; i++) {
            const uint8_t *xb = x + 34 * i;
            float *yb = y + 32 * i;
            const __m256 d = _mm256_set1_ps(lkg_fp16_to_fp32((uint16_t)(xb[0] | (xb[1] << 8))));
            for (int k = 0; k < 4; k++) {
                const __m128i q8 = _mm_loadl_epi64((const __m128i *)(xb + 2 + 8 * k));
                const __m256i q = _mm256_cvtepi8_epi32(q8);
                lkg_put8(yb + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(q), d), stream);
            }
        }
        if (stream) _mm_sfence();
    }

    LKG_AVX2 static void lkg_dq_q4_0_avx2(const uint8_t *x, float *y, Py_ssize_t nb) {
        const int stream = ((uintptr_t)y & 15u) == 0 && nb >= LKG_STREAM_MIN_BLOCKS;
        const __m256i eight = _mm256_set1_epi32(8), low = _mm256_set1_epi32(0xF);
        for (Py_ssize_t i = 0; i < nb; i++) {
            const uint8_t *xb = x + 18 * i;
            float *yb = y + 32 * i;
            const __m256 d = _mm256_set1_ps(lkg_fp16_to_fp32((uint16_t)(xb[0] | (xb[1] << 8))));
            for (int k = 0; k < 2; k++) {
                const __m128i b8 = _mm_loadl_epi64((const __m128i *)(xb + 2 + 8 * k));
                const __m256i b = _mm256_cvtepu8_epi32(b8);
                const __m256i lo = _mm256_sub_epi32(_mm256_and_si256(b, low), eight);
                const __m256i hi = _mm256_sub_epi32(_mm256_srli_epi32(b, 4), eight);
                lkg_put8(yb + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(lo), d), stream);
                lkg_put8(yb + 16 + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(hi), d), stream);
            }
        }
        if (stream) _mm_sfence();
    }

    /* AVX2 usable: CPUID leaf 7 EBX bit 5, and the OS saves YMM state (OSXSAVE + XCR0) */
    static int lkg_cpu_has_avx2(void) {
        unsigned int a, b, c, d, lo, hi;
        if (__get_cpuid_max(0, NULL) < 7) return 0;
        __cpuid(1, a, b, c, d);
        if (!(c & (1u << 27)) || !(c & (1u << 28))) return 0;
        __asm__ __volatile__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        (void)hi;
        if ((lo & 6u) != 6u) return 0;
        __cpuid_count(7, 0, a, b, c, d);
        return (int)((b >> 5) & 1u);
    }

    static int lkg_level = -1;
    static int lkg_simd_level(int force) {
        if (force >= 0) {
            lkg_level = (force >= 2 && lkg_cpu_has_avx2()) ? 2 : 0;
        } else if (lkg_level < 0) {
            const char *env = getenv("LAYOUTKIT_GGML_KERNELS");
            lkg_level = (env && strcmp(env, "portable") == 0) ? 0 : (lkg_cpu_has_avx2() ? 2 : 0);
        }
        return lkg_level;
    }
    #else
    static void lkg_q4_0_avx2(const float *x, uint8_t *y, Py_ssize_t nb) {
        (void)x; (void)y; (void)nb;
    }
    static void lkg_q8_0_avx2(const float *x, uint8_t *y, Py_ssize_t nb) {
        (void)x; (void)y; (void)nb;
    }
    static void lkg_dq_q8_0_avx2(const uint8_t *x, float *y, Py_ssize_t nb) {
        (void)x; (void)y; (void)nb;
    }
    static void lkg_dq_q4_0_avx2(const uint8_t *x, float *y, Py_ssize_t nb) {
        (void)x; (void)y; (void)nb;
    }
    static int lkg_simd_level(int force) { (void)force; return 0; }
    #endif
    """
    int lkg_simd_level(int force) nogil
    void lkg_q4_0_avx2(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil
    void lkg_q8_0_avx2(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil
    void lkg_dq_q4_0_avx2(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil
    void lkg_dq_q8_0_avx2(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil


ctypedef void (*quant_fn)(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil
ctypedef void (*dequant_fn)(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil

# ---------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------
cdef int8_t KVALUES_IQ4NL[16]
cdef int8_t KVALUES_FP4[16]
cdef float KV_IQ4F[16]
cdef uint8_t KSIGNS_IQ2XS[128]
cdef float UE4M3_HALF[256]
cdef uint8_t IQ2XXS_GRID[256 * 8]
cdef uint8_t IQ2XS_GRID[512 * 8]
cdef uint8_t IQ2S_GRID[1024 * 8]
cdef uint8_t IQ3XXS_GRID[256 * 4]
cdef uint8_t IQ3S_GRID[512 * 4]
cdef int8_t IQ1S_GRID[2048 * 8]


cdef void _init_tables():
    cdef int i, bits, e, m
    cdef float raw
    iq4nl = (-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113)
    fp4 = (0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12)
    for i in range(16):
        KVALUES_IQ4NL[i] = iq4nl[i]
        KVALUES_FP4[i] = fp4[i]
        KV_IQ4F[i] = <float>iq4nl[i]
    for i in range(128):
        # ksigns_iq2xs: 7 sign bits plus an eighth bit that makes the parity even
        bits = i
        bits = (bits & 0x55) + ((bits >> 1) & 0x55)
        bits = (bits & 0x33) + ((bits >> 2) & 0x33)
        bits = (bits & 0x0F) + ((bits >> 4) & 0x0F)
        KSIGNS_IQ2XS[i] = <uint8_t>(i | ((bits & 1) << 7))
    for i in range(256):
        # ggml_ue4m3_to_fp32: unsigned E4M3 (bias 7) times 0.5
        if i == 0 or i == 0x7F:
            UE4M3_HALF[i] = <float>0.0
            continue
        e = (i >> 3) & 0xF
        m = i & 0x7
        if e == 0:
            raw = ldexpf(<float>m, -9)
        else:
            raw = ldexpf(<float>1.0 + <float>m / <float>8.0, e - 7)
        UE4M3_HALF[i] = raw * <float>0.5

    from . import _ggml_grids as g
    cdef const uint8_t[::1] src
    src = g.IQ2XXS_GRID
    memcpy(IQ2XXS_GRID, &src[0], 256 * 8)
    src = g.IQ2XS_GRID
    memcpy(IQ2XS_GRID, &src[0], 512 * 8)
    src = g.IQ2S_GRID
    memcpy(IQ2S_GRID, &src[0], 1024 * 8)
    src = g.IQ3XXS_GRID
    memcpy(IQ3XXS_GRID, &src[0], 256 * 4)
    src = g.IQ3S_GRID
    memcpy(IQ3S_GRID, &src[0], 512 * 4)
    src = g.IQ1S_GRID
    memcpy(IQ1S_GRID, &src[0], 2048 * 8)


_init_tables()

# ---------------------------------------------------------------------------
# scalar helpers
# ---------------------------------------------------------------------------
cdef inline uint32_t fbits(float f) noexcept nogil:
    cdef uint32_t u
    memcpy(&u, &f, 4)
    return u


cdef inline float bitsf(uint32_t u) noexcept nogil:
    cdef float f
    memcpy(&f, &u, 4)
    return f


cdef inline uint16_t fp32_to_fp16(float f) noexcept nogil:
    """GGML_FP32_TO_FP16: round to nearest even, overflow to inf, NaN -> sign|0x7E00."""
    cdef uint32_t u = fbits(f)
    cdef uint32_t sign = (u >> 16) & 0x8000
    cdef uint32_t a = u & 0x7FFFFFFF
    cdef uint32_t m
    cdef float v
    if a > 0x7F800000:
        return <uint16_t>(sign | 0x7E00)
    if a >= 0x477FF000:                     # >= 65520 rounds to infinity
        return <uint16_t>(sign | 0x7C00)
    if a >= 0x38800000:                     # normal half (>= 2^-14)
        m = a - 0x38000000                  # rebias the exponent from 127 to 15
        m = m + 0x0FFF + ((m >> 13) & 1)    # round the 13 dropped bits to nearest even
        return <uint16_t>(sign | (m >> 13))
    # subnormal half or zero: round |f| * 2^24 to an integer, ties to even
    v = bitsf(a) * <float>16777216.0        # exact (power of two)
    v = (v + <float>8388608.0) - <float>8388608.0
    return <uint16_t>(sign | <uint32_t>v)


cdef inline float fp16_to_fp32(uint16_t h) noexcept nogil:
    """GGML_FP16_TO_FP32: exact; signalling NaNs come out quiet (as ggml's multiply does)."""
    cdef uint32_t sign = (<uint32_t>(h & 0x8000)) << 16
    cdef uint32_t e = (h >> 10) & 0x1F
    cdef uint32_t m = h & 0x3FF
    cdef float v
    if e == 0:
        v = <float>m * <float>5.9604644775390625e-08     # m * 2^-24, exact
        return bitsf(sign | fbits(v))
    if e == 31:
        if m == 0:
            return bitsf(sign | 0x7F800000)
        return bitsf(sign | 0x7FC00000 | (m << 13))
    return bitsf(sign | ((e + 112) << 23) | (m << 13))


cdef inline float rd_half(const uint8_t *p) noexcept nogil:
    return fp16_to_fp32(<uint16_t>(p[0] | (<uint16_t>p[1] << 8)))


cdef inline void wr_half(uint8_t *p, float f) noexcept nogil:
    cdef uint16_t h = fp32_to_fp16(f)
    p[0] = <uint8_t>(h & 0xFF)
    p[1] = <uint8_t>(h >> 8)


cdef inline uint32_t rd_u32(const uint8_t *p) noexcept nogil:
    return ((<uint32_t>p[0]) | (<uint32_t>p[1] << 8)
            | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24))


cdef inline uint16_t rd_u16(const uint8_t *p) noexcept nogil:
    return <uint16_t>(p[0] | (<uint16_t>p[1] << 8))


cdef inline int32_t round_away(float v) noexcept nogil:
    """``(int)roundf(v)``, half away from zero, branch-free, exact for |v| < 2^31.

    NaN gives INT_MIN (x86's answer to the undefined conversion); callers whose
    argument can be infinite handle that case themselves (see ``q_q8_0``).
    """
    cdef int32_t t = <int32_t>v
    cdef float fr = v - <float>t            # exact for |v| < 2^31
    return t + (fr >= <float>0.5) - (fr <= <float>-0.5)


cdef inline float e8m0_to_fp32_half(uint8_t e) noexcept nogil:
    if e < 2:
        return bitsf((<uint32_t>0x00200000) << e)
    return bitsf((<uint32_t>(e - 1)) << 23)


cdef inline float absmax_first(const float *x, int n) noexcept nogil:
    """The first element with the largest |x| (sign kept), +0.0 if none is non-zero.

    Same result as ggml's ``if (amax < fabsf(v)) { amax = fabsf(v); max = v; }``
    (NaN never wins the strict comparison), computed on the integer bit
    patterns in one branch-free pass that vectorises: the largest |x| among the
    positive and among the negative elements decide the sign, and only a tie
    between +a and -a needs a search for the first one.
    """
    cdef int32_t pos = 0, neg = 0, a, p, q
    cdef uint32_t u
    cdef int j
    for j in range(n):
        u = fbits(x[j])
        a = <int32_t>(u & 0x7FFFFFFF)
        a = a if a <= 0x7F800000 else 0
        p = 0 if (u >> 31) else a
        q = a if (u >> 31) else 0
        pos = p if p > pos else pos
        neg = q if q > neg else neg
    # branch-free select (the sign of the max is random data)
    u = <uint32_t>pos if pos > neg else (<uint32_t>neg | (<uint32_t>1 << 31))
    if pos == neg:
        u = 0
        if pos != 0:
            j = 0                           # +a and -a tie: the first one wins
            while <int32_t>(fbits(x[j]) & 0x7FFFFFFF) != pos:
                j += 1
            u = fbits(x[j])
    return bitsf(u)


cdef inline float amax_seq(const float *x, int n) noexcept nogil:
    """ggml's ``amax = MAX(amax, fabsf(v))`` loop from 0 (MAX(a, b) = a > b ? a : b)."""
    cdef int32_t am = 0, a
    cdef int j
    cdef float amax, av
    for j in range(n):
        a = <int32_t>(fbits(x[j]) & 0x7FFFFFFF)
        am = a if a > am else am
    if am <= 0x7F800000:
        return bitsf(<uint32_t>am)                    # no NaN: the plain maximum
    amax = <float>0.0                       # NaN present: replay the C loop exactly
    for j in range(n):
        av = fabsf(x[j])
        amax = amax if amax > av else av
    return amax


# ---------------------------------------------------------------------------
# quantizers
# ---------------------------------------------------------------------------
cdef void q_f32(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil:
    memcpy(y, x, <size_t>nb * 4)


cdef void q_f16(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef uint16_t h
    for i in range(nb):
        h = fp32_to_fp16(x[i])
        y[2 * i] = <uint8_t>(h & 0xFF)
        y[2 * i + 1] = <uint8_t>(h >> 8)


cdef void q_bf16(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef uint32_t u, h
    for i in range(nb):
        u = fbits(x[i])
        if (u & 0x7FFFFFFF) > 0x7F800000:
            h = (u >> 16) | 0x40
        else:
            h = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
        y[2 * i] = <uint8_t>(h & 0xFF)
        y[2 * i + 1] = <uint8_t>((h >> 8) & 0xFF)


cdef void q_q4_0(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int j, q0, q1
    cdef const float *xb
    cdef uint8_t *yb
    cdef float mx, d, idv, v0, v1
    for i in range(nb):
        xb = x + 32 * i
        yb = y + 18 * i
        mx = absmax_first(xb, 32)
        d = mx / <float>-8.0
        idv = <float>1.0 / d if d != 0 else <float>0.0
        wr_half(yb, d)
        for j in range(16):
            v0 = xb[j] * idv
            v1 = xb[j + 16] * idv
            q0 = <int8_t><int32_t>(v0 + <float>8.5)
            q1 = <int8_t><int32_t>(v1 + <float>8.5)
            q0 = q0 if q0 < 15 else 15
            q1 = q1 if q1 < 15 else 15
            yb[2 + j] = <uint8_t>(<uint8_t>q0 | (<uint8_t>q1 << 4))


cdef void q_q5_0(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int j, q0, q1
    cdef const float *xb
    cdef uint8_t *yb
    cdef float mx, d, idv, v0, v1
    cdef uint32_t qh
    cdef uint8_t b0, b1
    for i in range(nb):
        xb = x + 32 * i
        yb = y + 22 * i
        mx = absmax_first(xb, 32)
        d = mx / <float>-16.0
        idv = <float>1.0 / d if d != 0 else <float>0.0
        wr_half(yb, d)
        qh = 0
        for j in range(16):
            v0 = xb[j] * idv
            v1 = xb[j + 16] * idv
            q0 = <int8_t><int32_t>(v0 + <float>16.5)
            q1 = <int8_t><int32_t>(v1 + <float>16.5)
            b0 = <uint8_t>(q0 if q0 < 31 else 31)
            b1 = <uint8_t>(q1 if q1 < 31 else 31)
            yb[6 + j] = <uint8_t>((b0 & 0x0F) | ((b1 & 0x0F) << 4))
            qh |= (<uint32_t>((b0 & 0x10) >> 4)) << j
            qh |= (<uint32_t>((b1 & 0x10) >> 4)) << (j + 16)
        yb[2] = <uint8_t>(qh & 0xFF)
        yb[3] = <uint8_t>((qh >> 8) & 0xFF)
        yb[4] = <uint8_t>((qh >> 16) & 0xFF)
        yb[5] = <uint8_t>(qh >> 24)


cdef inline void minmax_seq(const float *x, int n, float *mn, float *mx) noexcept nogil:
    cdef float lo = <float>3.4028234663852886e+38, hi = <float>-3.4028234663852886e+38, v
    cdef int j
    for j in range(n):
        v = x[j]
        if v < lo:
            lo = v
        if v > hi:
            hi = v
    mn[0] = lo
    mx[0] = hi


cdef void q_q4_1(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int j, q0, q1
    cdef const float *xb
    cdef uint8_t *yb
    cdef float mn, mx, d, idv, v0, v1
    for i in range(nb):
        xb = x + 32 * i
        yb = y + 20 * i
        minmax_seq(xb, 32, &mn, &mx)
        d = (mx - mn) / <float>15.0
        idv = <float>1.0 / d if d != 0 else <float>0.0
        wr_half(yb, d)
        wr_half(yb + 2, mn)
        for j in range(16):
            v0 = (xb[j] - mn) * idv
            v1 = (xb[j + 16] - mn) * idv
            q0 = <int8_t><int32_t>(v0 + <float>0.5)
            q1 = <int8_t><int32_t>(v1 + <float>0.5)
            q0 = q0 if q0 < 15 else 15
            q1 = q1 if q1 < 15 else 15
            yb[4 + j] = <uint8_t>(<uint8_t>q0 | (<uint8_t>q1 << 4))


cdef void q_q5_1(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int j
    cdef const float *xb
    cdef uint8_t *yb
    cdef float mn, mx, d, idv, v0, v1
    cdef uint32_t qh
    cdef uint8_t b0, b1
    for i in range(nb):
        xb = x + 32 * i
        yb = y + 24 * i
        minmax_seq(xb, 32, &mn, &mx)
        d = (mx - mn) / <float>31.0
        idv = <float>1.0 / d if d != 0 else <float>0.0
        wr_half(yb, d)
        wr_half(yb + 2, mn)
        qh = 0
        for j in range(16):
            v0 = (xb[j] - mn) * idv
            v1 = (xb[j + 16] - mn) * idv
            b0 = <uint8_t><int32_t>(v0 + <float>0.5)
            b1 = <uint8_t><int32_t>(v1 + <float>0.5)
            yb[8 + j] = <uint8_t>((b0 & 0x0F) | ((b1 & 0x0F) << 4))
            qh |= (<uint32_t>((b0 & 0x10) >> 4)) << j
            qh |= (<uint32_t>((b1 & 0x10) >> 4)) << (j + 16)
        yb[4] = <uint8_t>(qh & 0xFF)
        yb[5] = <uint8_t>((qh >> 8) & 0xFF)
        yb[6] = <uint8_t>((qh >> 16) & 0xFF)
        yb[7] = <uint8_t>(qh >> 24)


cdef void q_q8_0(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int j
    cdef const float *xb
    cdef uint8_t *yb
    cdef float d, idv
    for i in range(nb):
        xb = x + 32 * i
        yb = y + 34 * i
        d = amax_seq(xb, 32) / <float>127.0
        idv = <float>1.0 / d if d != 0 else <float>0.0
        wr_half(yb, d)
        if idv > <float>3.4028234663852886e+38:
            # 1/d overflowed (amax below ~2^-121): every x*id is +-inf or NaN, which
            # ggml's roundf -> int8 conversion turns into 0 on x86-64
            memset(yb + 2, 0, 32)
            continue
        for j in range(32):
            yb[2 + j] = <uint8_t>round_away(xb[j] * idv)


cdef void q_q8_1(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int j, s
    cdef const float *xb
    cdef uint8_t *yb
    cdef float d, idv
    cdef uint8_t q
    for i in range(nb):
        xb = x + 32 * i
        yb = y + 36 * i
        d = amax_seq(xb, 32) / <float>127.0
        idv = <float>1.0 / d if d != 0 else <float>0.0
        wr_half(yb, d)
        s = 0
        if idv > <float>3.4028234663852886e+38:
            idv = <float>0.0            # every code is 0 (see q_q8_0)
        for j in range(32):
            q = <uint8_t>round_away(xb[j] * idv)
            yb[4 + j] = q
            s += <int8_t>q
        wr_half(yb + 2, <float>s * d)


cdef inline int tq_trit(float v) noexcept nogil:
    return round_away(v) + 1


cdef void q_tq1_0(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int j, m, n
    cdef const float *xb
    cdef uint8_t *yb
    cdef float d, idv
    cdef uint8_t q
    for i in range(nb):
        xb = x + 256 * i
        yb = y + 54 * i
        d = amax_seq(xb, 256)
        idv = <float>1.0 / d if d != 0 else <float>0.0
        if idv > <float>3.4028234663852886e+38:
            # 1/d overflowed: C's lroundf(+-inf or NaN) + 1 gives trit 1 on x86-64, as id = 0 does
            idv = <float>0.0
        # qs[0..31]: elements m + 32n, n = 0..4 (first element is the most significant trit)
        for m in range(32):
            q = 0
            for n in range(5):
                q = <uint8_t>(q * 3)
                q = <uint8_t>(q + tq_trit(xb[m + 32 * n] * idv))
            yb[m] = <uint8_t>((<uint16_t>q * 256 + 242) // 243)
        # qs[32..47]: elements 160 + m + 16n
        for m in range(16):
            q = 0
            for n in range(5):
                q = <uint8_t>(q * 3)
                q = <uint8_t>(q + tq_trit(xb[160 + m + 16 * n] * idv))
            yb[32 + m] = <uint8_t>((<uint16_t>q * 256 + 242) // 243)
        # qh[0..3]: elements 240 + j + 4m, m = 0..3, then a zero fifth trit
        for j in range(4):
            q = 0
            for m in range(4):
                q = <uint8_t>(q * 3)
                q = <uint8_t>(q + tq_trit(xb[240 + j + 4 * m] * idv))
            q = <uint8_t>(q * 3)
            yb[48 + j] = <uint8_t>((<uint16_t>q * 256 + 242) // 243)
        wr_half(yb + 52, d)


cdef void q_tq2_0(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int k, m, n
    cdef const float *xb
    cdef uint8_t *yb
    cdef float d, idv
    cdef uint8_t q
    for i in range(nb):
        xb = x + 256 * i
        yb = y + 66 * i
        d = amax_seq(xb, 256)
        idv = <float>1.0 / d if d != 0 else <float>0.0
        if idv > <float>3.4028234663852886e+38:
            # 1/d overflowed: C's lroundf(+-inf or NaN) + 1 gives trit 1 on x86-64, as id = 0 does
            idv = <float>0.0
        for k in range(2):
            for m in range(32):
                q = 0
                for n in range(4):
                    q = <uint8_t>(q + ((tq_trit(xb[128 * k + m + 32 * n] * idv) & 3) << (2 * n)))
                yb[32 * k + m] = q
        wr_half(yb + 64, d)


cdef inline int best_index_fp4(float v, float e) noexcept nogil:
    cdef int best = 0, k
    cdef float best_err = fabsf(<float>KVALUES_FP4[0] * e - v), err
    for k in range(1, 16):
        err = fabsf(<float>KVALUES_FP4[k] * e - v)
        if err < best_err:
            best = k
            best_err = err
    return best


cdef void q_mxfp4(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int j
    cdef const float *xb
    cdef uint8_t *yb
    cdef float amax, av, d
    cdef uint8_t e
    for i in range(nb):
        xb = x + 32 * i
        yb = y + 17 * i
        amax = <float>0.0
        for j in range(32):
            av = fabsf(xb[j])
            if amax < av:
                amax = av
        if amax > <float>0.0:
            e = <uint8_t><int32_t>(floorf(log2f(amax)) - <float>2.0 + <float>127.0)
        else:
            e = 0
        d = e8m0_to_fp32_half(e)
        yb[0] = e
        for j in range(16):
            yb[1 + j] = <uint8_t>(best_index_fp4(xb[j], d) | (best_index_fp4(xb[j + 16], d) << 4))


cdef inline uint8_t fp32_to_ue4m3(float v) noexcept nogil:
    """ggml_fp32_to_ue4m3 (NVFP4 sub-block scales)."""
    cdef uint32_t b
    cdef int fexp, fman, ue, man
    if not (v > <float>0.0):
        return 0
    if v > <float>448.0:
        v = <float>448.0
    b = fbits(v)
    fexp = <int>((b >> 23) & 0xFF) - 127
    fman = <int>((b >> 20) & 0x7)
    ue = fexp + 7
    if ue <= 0:
        man = <int>(v * <float>512.0 + <float>0.5)
        if man > 7:
            man = 7
        if man < 1:
            return 0
        return <uint8_t>man
    if ue >= 15:
        return 0x7E
    man = fman + <int>((b >> 19) & 1)
    if man > 7:
        man = 0
        ue += 1
    if ue >= 15:
        return 0x7E
    return <uint8_t>((ue << 3) | man)


cdef void q_nvfp4(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int s, j
    cdef const float *xb
    cdef uint8_t *yb
    cdef float amax, av, d
    cdef uint8_t ue
    for i in range(nb):
        yb = y + 36 * i
        for s in range(4):
            xb = x + 64 * i + 16 * s
            amax = <float>0.0
            for j in range(16):
                av = fabsf(xb[j])
                if amax < av:
                    amax = av
            ue = fp32_to_ue4m3(amax / <float>6.0)
            yb[s] = ue
            d = UE4M3_HALF[ue]
            for j in range(8):
                yb[4 + 8 * s + j] = <uint8_t>(best_index_fp4(xb[j], d)
                                              | (best_index_fp4(xb[8 + j], d) << 4))


cdef void q_q1_0(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int j
    cdef const float *xb
    cdef uint8_t *yb
    cdef float s
    for i in range(nb):
        xb = x + 128 * i
        yb = y + 18 * i
        s = <float>0.0
        for j in range(128):
            s = s + fabsf(xb[j])
        wr_half(yb, s / <float>128.0)
        memset(yb + 2, 0, 16)
        for j in range(128):
            if xb[j] >= <float>0.0:
                yb[2 + j // 8] |= <uint8_t>(1 << (j % 8))


cdef void q_q2_0(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int j, q
    cdef const float *xb
    cdef uint8_t *yb
    cdef float amax, av, idv
    for i in range(nb):
        xb = x + 64 * i
        yb = y + 18 * i
        amax = <float>0.0
        for j in range(64):
            av = fabsf(xb[j])
            if av > amax:
                amax = av
        idv = <float>1.0 / amax if amax > <float>0.0 else <float>0.0
        wr_half(yb, amax)
        memset(yb + 2, 0, 16)
        for j in range(64):
            q = round_away(xb[j] * idv) + 1
            q = 0 if q < 0 else (3 if q > 3 else q)
            yb[2 + j // 4] |= <uint8_t>(q << ((j % 4) * 2))


cdef inline int nearest_int(float v) noexcept nogil:
    cdef float t = v + <float>12582912.0
    return <int>(fbits(t) & 0x007FFFFF) - 0x00400000


cdef void q_q8_k(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil:
    # the output is zero-filled by the caller: ggml leaves bsums unwritten for zero blocks
    cdef Py_ssize_t i
    cdef int j, li, s, v
    cdef const float *xb
    cdef uint8_t *yb
    cdef float mx, amax, av, iscale, d
    cdef uint32_t db
    for i in range(nb):
        xb = x + 256 * i
        yb = y + 292 * i
        mx = <float>0.0
        amax = <float>0.0
        for j in range(256):
            av = fabsf(xb[j])
            if av > amax:
                amax = av
                mx = xb[j]
        if not amax:
            memset(yb, 0, 260)
            continue
        iscale = <float>-127.0 / mx
        for j in range(256):
            v = nearest_int(iscale * xb[j])
            yb[4 + j] = <uint8_t>(v if v < 127 else 127)
        for j in range(16):
            s = 0
            for li in range(16):
                s += <int8_t>yb[4 + 16 * j + li]
            yb[260 + 2 * j] = <uint8_t>(s & 0xFF)
            yb[261 + 2 * j] = <uint8_t>((s >> 8) & 0xFF)
        d = <float>1.0 / iscale
        db = fbits(d)
        yb[0] = <uint8_t>(db & 0xFF)
        yb[1] = <uint8_t>((db >> 8) & 0xFF)
        yb[2] = <uint8_t>((db >> 16) & 0xFF)
        yb[3] = <uint8_t>(db >> 24)


# ---------------------------------------------------------------------------
# K-quant reference quantizers (quantize_row_q{2..6}_K_ref, no importance matrix)
# ---------------------------------------------------------------------------
cdef float make_qkx2_quants(int n, int nmax, const float *x, const float *weights,
                            uint8_t *L, float *the_min, uint8_t *Laux, float rmin,
                            float rdelta, int nstep, bint use_mad,
                            bint qkx3) noexcept nogil:
    """ggml's make_qkx2_quants: asymmetric scale and min by weighted least squares.

    ``qkx3=True`` gives make_qkx3_quants (the importance-matrix search), which
    differs only in treating ``max <= min`` (not just ``==``) as a flat group.
    """
    cdef float mn = x[0], mx = x[0]
    cdef float sum_w = weights[0]
    cdef float sum_x = sum_w * x[0]
    cdef float w, iscale, scale, best_error, diff, sum_l, sum_l2, sum_xl, D
    cdef float this_scale, this_min, cur_error
    cdef int i, lv, step
    for i in range(1, n):
        if x[i] < mn:
            mn = x[i]
        if x[i] > mx:
            mx = x[i]
        w = weights[i]
        sum_w += w
        sum_x += w * x[i]
    if mn > 0:
        mn = <float>0.0
    if (mx <= mn) if qkx3 else (mx == mn):
        for i in range(n):
            L[i] = 0
        the_min[0] = -mn
        return <float>0.0
    iscale = <float>nmax / (mx - mn)
    scale = <float>1.0 / iscale
    best_error = <float>0.0
    for i in range(n):
        lv = nearest_int(iscale * (x[i] - mn))
        L[i] = <uint8_t>(0 if lv < 0 else (nmax if lv > nmax else lv))
        diff = scale * <float>L[i] + mn - x[i]
        diff = fabsf(diff) if use_mad else diff * diff
        best_error += weights[i] * diff
    if nstep < 1:
        the_min[0] = -mn
        return scale
    for step in range(nstep + 1):
        iscale = (rmin + rdelta * <float>step + <float>nmax) / (mx - mn)
        sum_l = <float>0.0
        sum_l2 = <float>0.0
        sum_xl = <float>0.0
        for i in range(n):
            lv = nearest_int(iscale * (x[i] - mn))
            lv = 0 if lv < 0 else (nmax if lv > nmax else lv)
            Laux[i] = <uint8_t>lv
            w = weights[i]
            sum_l += w * <float>lv
            sum_l2 += w * <float>lv * <float>lv
            sum_xl += w * <float>lv * x[i]
        D = sum_w * sum_l2 - sum_l * sum_l
        if D > 0:
            this_scale = (sum_w * sum_xl - sum_x * sum_l) / D
            this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D
            if this_min > 0:
                this_min = <float>0.0
                this_scale = sum_xl / sum_l2
            cur_error = <float>0.0
            for i in range(n):
                diff = this_scale * <float>Laux[i] + this_min - x[i]
                diff = fabsf(diff) if use_mad else diff * diff
                cur_error += weights[i] * diff
            if cur_error < best_error:
                for i in range(n):
                    L[i] = Laux[i]
                best_error = cur_error
                scale = this_scale
                mn = this_min
    the_min[0] = -mn
    return scale


# ---------------------------------------------------------------------------
# K-quant searches, eight groups at a time (GCC/clang vector extensions)
# ---------------------------------------------------------------------------
# ggml's make_qkx2_quants / make_qkx3_quants run one group of 16 or 32 values
# at a time, and their weighted sums are sequential: each addition waits for
# the previous one. Here eight groups of a super-block run side by side, one
# per vector lane: every lane performs exactly ggml's operations in ggml's
# order (the same IEEE float32 results, -ffp-contract=off), so the bytes are
# the same, but eight dependency chains overlap. Branches become per-lane
# selects. Without GCC/clang vector extensions (MSVC) the scalar Cython
# search runs instead.
cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define LKG_HAVE_VEC 1
    typedef float lkv8f __attribute__((vector_size(32), aligned(32)));
    typedef int32_t lkv8i __attribute__((vector_size(32), aligned(32)));

    #define LKV_INL static inline __attribute__((always_inline))
    LKV_INL lkv8f lkv_bf(lkv8i a) { lkv8f r; memcpy(&r, &a, 32); return r; }
    LKV_INL lkv8i lkv_bi(lkv8f a) { lkv8i r; memcpy(&r, &a, 32); return r; }
    LKV_INL lkv8f lkv_sel(lkv8i m, lkv8f a, lkv8f b) {
        return lkv_bf((lkv_bi(a) & m) | (lkv_bi(b) & ~m));
    }
    LKV_INL lkv8i lkv_seli(lkv8i m, lkv8i a, lkv8i b) { return (a & m) | (b & ~m); }
    LKV_INL lkv8f lkv_abs(lkv8f a) { return lkv_bf(lkv_bi(a) & 0x7FFFFFFF); }
    LKV_INL lkv8i lkv_nearest(lkv8f v) {      /* ggml's nearest_int, per lane */
        return (lkv_bi(v + 12582912.0f) & 0x007FFFFF) - 0x00400000;
    }
    LKV_INL lkv8i lkv_clamp(lkv8i l, int lo, int hi) {
        l = lkv_seli(l < lo, (lkv8i){0} + lo, l);
        return lkv_seli(l > hi, (lkv8i){0} + hi, l);
    }
    LKV_INL lkv8f lkv_f(lkv8i l) { return __builtin_convertvector(l, lkv8f); }

    /* make_qkx2_quants (qkx3 = 0) or make_qkx3_quants (qkx3 = 1) for 8 groups of n <= 32
       values: group g is x[g*n .. g*n+n), weights w[g*n ..]; codes to L[g*n ..]. */
    #define LKG_DEFINE_QKX8(NAME, ATTR) \
    static ATTR void NAME(int n, int nmax, const float *x, const float *w, uint8_t *L, \
                          float *scale_out, float *min_out, float rmin, float rdelta, \
                          int nstep, int use_mad, int qkx3) { \
        lkv8f xv[32], wv[32]; \
        lkv8i Lv[32], La[32]; \
        for (int i = 0; i < n; i++) \
            for (int g = 0; g < 8; g++) { xv[i][g] = x[g * n + i]; wv[i][g] = w[g * n + i]; } \
        lkv8f mn = xv[0], mx = xv[0], sum_w = wv[0], sum_x = wv[0] * xv[0]; \
        for (int i = 1; i < n; i++) { \
            mn = lkv_sel(xv[i] < mn, xv[i], mn); \
            mx = lkv_sel(xv[i] > mx, xv[i], mx); \
            sum_w += wv[i]; \
            sum_x += wv[i] * xv[i]; \
        } \
        const lkv8f zero = {0}; \
        mn = lkv_sel(mn > 0.0f, zero, mn); \
        const lkv8i flat = qkx3 ? (mx <= mn) : (mx == mn); \
        const lkv8f mn0 = mn; \
        lkv8f iscale = (float)nmax / (mx - mn); \
        lkv8f scale = 1.0f / iscale; \
        lkv8f best = zero; \
        for (int i = 0; i < n; i++) { \
            Lv[i] = lkv_clamp(lkv_nearest(iscale * (xv[i] - mn)), 0, nmax); \
            lkv8f diff = scale * lkv_f(Lv[i]) + mn - xv[i]; \
            diff = use_mad ? lkv_abs(diff) : diff * diff; \
            best += wv[i] * diff; \
        } \
        if (nstep >= 1) { \
            for (int is = 0; is <= nstep; is++) { \
                /* ggml keeps searching from the best min found so far */ \
                iscale = (rmin + rdelta * is + nmax) / (mx - mn); \
                lkv8f sum_l = zero, sum_l2 = zero, sum_xl = zero; \
                for (int i = 0; i < n; i++) { \
                    La[i] = lkv_clamp(lkv_nearest(iscale * (xv[i] - mn)), 0, nmax); \
                    const lkv8f lf = lkv_f(La[i]), wl = wv[i] * lf; \
                    sum_l += wl; \
                    sum_l2 += wl * lf; \
                    sum_xl += wl * xv[i]; \
                } \
                const lkv8f D = sum_w * sum_l2 - sum_l * sum_l; \
                const lkv8i ok = D > 0.0f; \
                if (!((ok[0] | ok[1] | ok[2] | ok[3] | ok[4] | ok[5] | ok[6] | ok[7]))) continue; \
                lkv8f this_scale = (sum_w * sum_xl - sum_x * sum_l) / D; \
                lkv8f this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D; \
                const lkv8i pos = this_min > 0.0f; \
                this_min = lkv_sel(pos, zero, this_min); \
                this_scale = lkv_sel(pos, sum_xl / sum_l2, this_scale); \
                lkv8f err = zero; \
                for (int i = 0; i < n; i++) { \
                    lkv8f diff = this_scale * lkv_f(La[i]) + this_min - xv[i]; \
                    diff = use_mad ? lkv_abs(diff) : diff * diff; \
                    err += wv[i] * diff; \
                } \
                const lkv8i better = ok & (err < best); \
                for (int i = 0; i < n; i++) Lv[i] = lkv_seli(better, La[i], Lv[i]); \
                best = lkv_sel(better, err, best); \
                scale = lkv_sel(better, this_scale, scale); \
                mn = lkv_sel(better, this_min, mn); \
            } \
        } \
        for (int g = 0; g < 8; g++) { \
            if (flat[g]) { \
                memset(L + g * n, 0, (size_t)n); \
                scale_out[g] = 0.0f; \
                min_out[g] = -mn0[g]; \
                continue; \
            } \
            for (int i = 0; i < n; i++) L[g * n + i] = (uint8_t)Lv[i][g]; \
            scale_out[g] = scale[g]; \
            min_out[g] = -mn[g]; \
        } \
    }

    /* make_qx_quants(n, nmax, x, L, rmse_type = 1, qw) for 8 groups of n <= 32 values
       (weights qw, or x*x when qw is NULL): codes l + nmax to L, scales to scale_out. */
    #define LKG_DEFINE_QX8(NAME, ATTR) \
    static ATTR void NAME(int n, int nmax, const float *x, const float *qw, int8_t *L, \
                          float *scale_out) { \
        lkv8f xv[32], wv[32], wx[32]; \
        lkv8i Lv[32]; \
        const lkv8f zero = {0}; \
        for (int i = 0; i < n; i++) \
            for (int g = 0; g < 8; g++) { \
                xv[i][g] = x[g * n + i]; \
                wv[i][g] = qw ? qw[g * n + i] : x[g * n + i] * x[g * n + i]; \
            } \
        lkv8f amax = zero, mx = zero; \
        for (int i = 0; i < n; i++) { \
            wx[i] = wv[i] * xv[i]; \
            const lkv8f ax = lkv_abs(xv[i]); \
            const lkv8i m = ax > amax; \
            amax = lkv_sel(m, ax, amax); \
            mx = lkv_sel(m, xv[i], mx); \
        } \
        const lkv8i flat = amax < 1e-15f; \
        lkv8f iscale = (float)(-nmax) / mx; \
        lkv8f sumlx = zero, suml2 = zero; \
        for (int i = 0; i < n; i++) { \
            Lv[i] = lkv_clamp(lkv_nearest(iscale * xv[i]), -nmax, nmax - 1); \
            const lkv8f lf = lkv_f(Lv[i]); \
            sumlx += wx[i] * lf; \
            suml2 += wv[i] * lf * lf; \
        } \
        lkv8f scale = lkv_sel(suml2 != 0.0f, sumlx / suml2, zero); \
        lkv8f best = scale * sumlx; \
        for (int is = -9; is <= 9; is++) { \
            if (is == 0) continue; \
            iscale = -((float)nmax + 0.1f * (float)is) / mx; \
            lkv8i La[32]; \
            sumlx = zero; \
            suml2 = zero; \
            for (int i = 0; i < n; i++) { \
                La[i] = lkv_clamp(lkv_nearest(iscale * xv[i]), -nmax, nmax - 1); \
                const lkv8f lf = lkv_f(La[i]); \
                sumlx += wx[i] * lf; \
                suml2 += wv[i] * lf * lf; \
            } \
            const lkv8i take = (suml2 > 0.0f) & (sumlx * sumlx > best * suml2); \
            for (int i = 0; i < n; i++) Lv[i] = lkv_seli(take, La[i], Lv[i]); \
            const lkv8f sc = sumlx / suml2; \
            scale = lkv_sel(take, sc, scale); \
            best = lkv_sel(take, sc * sumlx, best); \
        } \
        for (int g = 0; g < 8; g++) { \
            if (flat[g]) { \
                memset(L + g * n, 0, (size_t)n); \
                scale_out[g] = 0.0f; \
                continue; \
            } \
            for (int i = 0; i < n; i++) L[g * n + i] = (int8_t)(Lv[i][g] + nmax); \
            scale_out[g] = scale[g]; \
        } \
    }

    /* make_q3_quants(n, nmax, x, L, do_rmse = 1) for 8 groups of n <= 32 values: the
       coordinate descent runs in every lane until that lane's sweep changes nothing. */
    #define LKG_DEFINE_Q38(NAME, ATTR) \
    static ATTR void NAME(int n, int nmax, const float *x, int8_t *L, float *scale_out) { \
        lkv8f xv[32], wv[32], wx[32]; \
        lkv8i Lv[32]; \
        const lkv8f zero = {0}; \
        for (int i = 0; i < n; i++) \
            for (int g = 0; g < 8; g++) xv[i][g] = x[g * n + i]; \
        lkv8f amax = zero, mx = zero; \
        for (int i = 0; i < n; i++) { \
            wv[i] = xv[i] * xv[i]; \
            wx[i] = wv[i] * xv[i]; \
            const lkv8f ax = lkv_abs(xv[i]); \
            const lkv8i m = ax > amax; \
            amax = lkv_sel(m, ax, amax); \
            mx = lkv_sel(m, xv[i], mx); \
        } \
        const lkv8i flat = amax < 1e-15f; \
        const lkv8f iscale = (float)(-nmax) / mx; \
        lkv8f sumlx = zero, suml2 = zero; \
        for (int i = 0; i < n; i++) { \
            Lv[i] = lkv_clamp(lkv_nearest(iscale * xv[i]), -nmax, nmax - 1); \
            const lkv8f lf = lkv_f(Lv[i]); \
            sumlx += wx[i] * lf; \
            suml2 += wv[i] * lf * lf; \
        } \
        lkv8i active = ~flat; \
        for (int itry = 0; itry < 5; itry++) { \
            lkv8i changed = {0}; \
            for (int i = 0; i < n; i++) { \
                const lkv8f lf = lkv_f(Lv[i]); \
                lkv8f slx = sumlx - wx[i] * lf; \
                const lkv8i pos = active & (slx > 0.0f); \
                if (!(pos[0] | pos[1] | pos[2] | pos[3] | pos[4] | pos[5] | pos[6] | pos[7])) \
                    continue; \
                lkv8f sl2 = suml2 - wv[i] * lf * lf; \
                const lkv8i nl = lkv_clamp(lkv_nearest(xv[i] * sl2 / slx), -nmax, nmax - 1); \
                const lkv8f nf = lkv_f(nl); \
                slx += wx[i] * nf; \
                sl2 += wv[i] * nf * nf; \
                const lkv8i take = pos & (nl != Lv[i]) & (sl2 > 0.0f) \
                                   & (slx * slx * suml2 > sumlx * sumlx * sl2); \
                Lv[i] = lkv_seli(take, nl, Lv[i]); \
                sumlx = lkv_sel(take, slx, sumlx); \
                suml2 = lkv_sel(take, sl2, suml2); \
                changed |= take; \
            } \
            active &= changed; \
            if (!(active[0] | active[1] | active[2] | active[3] | active[4] | active[5] \
                  | active[6] | active[7])) \
                break; \
        } \
        for (int g = 0; g < 8; g++) { \
            if (flat[g]) { \
                memset(L + g * n, 0, (size_t)n); \
                scale_out[g] = 0.0f; \
                continue; \
            } \
            for (int i = 0; i < n; i++) L[g * n + i] = (int8_t)(Lv[i][g] + nmax); \
            scale_out[g] = suml2[g] > 0.0f ? sumlx[g] / suml2[g] : 0.0f; \
        } \
    }

    LKG_DEFINE_Q38(lkg_q3_8_generic, )
    #if defined(LKG_HAVE_AVX2)
    LKG_DEFINE_Q38(lkg_q3_8_avx2, LKG_AVX2)
    #endif
    static void lkg_q3_8(int n, int nmax, const float *x, int8_t *L, float *scale_out) {
    #if defined(LKG_HAVE_AVX2)
        if (lkg_simd_level(-1) == 2) { lkg_q3_8_avx2(n, nmax, x, L, scale_out); return; }
    #endif
        lkg_q3_8_generic(n, nmax, x, L, scale_out);
    }

    LKG_DEFINE_QX8(lkg_qx_8_generic, )
    #if defined(LKG_HAVE_AVX2)
    LKG_DEFINE_QX8(lkg_qx_8_avx2, LKG_AVX2)
    #endif
    static void lkg_qx_8(int n, int nmax, const float *x, const float *qw, int8_t *L,
                         float *scale_out) {
    #if defined(LKG_HAVE_AVX2)
        if (lkg_simd_level(-1) == 2) { lkg_qx_8_avx2(n, nmax, x, qw, L, scale_out); return; }
    #endif
        lkg_qx_8_generic(n, nmax, x, qw, L, scale_out);
    }

    LKG_DEFINE_QKX8(lkg_qkx_8_generic, )
    #if defined(LKG_HAVE_AVX2)
    LKG_DEFINE_QKX8(lkg_qkx_8_avx2, LKG_AVX2)
    #endif
    static void lkg_qkx_8(int n, int nmax, const float *x, const float *w, uint8_t *L,
                          float *scale_out, float *min_out, float rmin, float rdelta,
                          int nstep, int use_mad, int qkx3) {
    #if defined(LKG_HAVE_AVX2)
        if (lkg_simd_level(-1) == 2) {
            lkg_qkx_8_avx2(n, nmax, x, w, L, scale_out, min_out, rmin, rdelta, nstep, use_mad,
                           qkx3);
            return;
        }
    #endif
        lkg_qkx_8_generic(n, nmax, x, w, L, scale_out, min_out, rmin, rdelta, nstep, use_mad,
                          qkx3);
    }
    #else
    #define LKG_HAVE_VEC 0
    static void lkg_qx_8(int n, int nmax, const float *x, const float *qw, int8_t *L,
                         float *scale_out) {
        (void)n; (void)nmax; (void)x; (void)qw; (void)L; (void)scale_out;
    }
    static void lkg_q3_8(int n, int nmax, const float *x, int8_t *L, float *scale_out) {
        (void)n; (void)nmax; (void)x; (void)L; (void)scale_out;
    }
    static void lkg_qkx_8(int n, int nmax, const float *x, const float *w, uint8_t *L,
                          float *scale_out, float *min_out, float rmin, float rdelta,
                          int nstep, int use_mad, int qkx3) {
        (void)n; (void)nmax; (void)x; (void)w; (void)L; (void)scale_out; (void)min_out;
        (void)rmin; (void)rdelta; (void)nstep; (void)use_mad; (void)qkx3;
    }
    #endif
    """
    int LKG_HAVE_VEC
    void lkg_qkx_8(int n, int nmax, const float *x, const float *w, uint8_t *L,
                   float *scale_out, float *min_out, float rmin, float rdelta,
                   int nstep, int use_mad, int qkx3) noexcept nogil
    void lkg_qx_8(int n, int nmax, const float *x, const float *qw, int8_t *L,
                  float *scale_out) noexcept nogil
    void lkg_q3_8(int n, int nmax, const float *x, int8_t *L, float *scale_out) noexcept nogil


cdef inline void qkx_groups(int ngroups, int n, int nmax, const float *x, const float *w,
                            uint8_t *L, float *scales, float *mins, float rmin, float rdelta,
                            int nstep, bint use_mad, bint qkx3) noexcept nogil:
    """make_qkx2/3_quants over ``ngroups`` consecutive groups of ``n`` values (weights ``w``)."""
    cdef uint8_t Laux[32]
    cdef int g
    if LKG_HAVE_VEC and ngroups % 8 == 0:
        for g in range(0, ngroups, 8):
            lkg_qkx_8(n, nmax, x + g * n, w + g * n, L + g * n, scales + g, mins + g,
                      rmin, rdelta, nstep, use_mad, qkx3)
        return
    for g in range(ngroups):
        scales[g] = make_qkx2_quants(n, nmax, x + g * n, w + g * n, L + g * n, &mins[g], Laux,
                                     rmin, rdelta, nstep, use_mad, qkx3)


cdef inline void qx_groups(int ngroups, int n, int nmax, const float *x, const float *qw,
                           int8_t *L, float *scales) noexcept nogil:
    """make_qx_quants(rmse_type=1) over ``ngroups`` consecutive groups of ``n`` values."""
    cdef int g
    if LKG_HAVE_VEC and ngroups % 8 == 0:
        for g in range(0, ngroups, 8):
            lkg_qx_8(n, nmax, x + g * n, qw + g * n if qw != NULL else NULL, L + g * n,
                     scales + g)
        return
    for g in range(ngroups):
        scales[g] = make_qx_quants_rmse1(n, nmax, x + g * n, L + g * n,
                                         qw + g * n if qw != NULL else NULL)


cdef float make_qx_quants_rmse1(int n, int nmax, const float *x, int8_t *L,
                                const float *qw) noexcept nogil:
    """ggml's make_qx_quants(n, nmax, x, L, rmse_type=1, qw): symmetric; weights qw, or x^2."""
    cdef float mx = 0, amax = 0, ax, iscale, sumlx, suml2, w, scale, best
    cdef int i, lv, step
    for i in range(n):
        ax = fabsf(x[i])
        if ax > amax:
            amax = ax
            mx = x[i]
    if amax < <float>1e-15:
        for i in range(n):
            L[i] = 0
        return <float>0.0
    iscale = <float>(-nmax) / mx
    sumlx = <float>0.0
    suml2 = <float>0.0
    for i in range(n):
        lv = nearest_int(iscale * x[i])
        lv = -nmax if lv < -nmax else (nmax - 1 if lv > nmax - 1 else lv)
        L[i] = <int8_t>(lv + nmax)
        w = qw[i] if qw != NULL else x[i] * x[i]
        sumlx += w * x[i] * <float>lv
        suml2 += w * <float>lv * <float>lv
    scale = sumlx / suml2 if suml2 != 0 else <float>0.0
    best = scale * sumlx
    for step in range(-9, 10):
        if step == 0:
            continue
        iscale = -(<float>nmax + <float>0.1 * <float>step) / mx
        sumlx = <float>0.0
        suml2 = <float>0.0
        for i in range(n):
            lv = nearest_int(iscale * x[i])
            lv = -nmax if lv < -nmax else (nmax - 1 if lv > nmax - 1 else lv)
            w = qw[i] if qw != NULL else x[i] * x[i]
            sumlx += w * x[i] * <float>lv
            suml2 += w * <float>lv * <float>lv
        if suml2 > 0 and sumlx * sumlx > best * suml2:
            for i in range(n):
                lv = nearest_int(iscale * x[i])
                lv = -nmax if lv < -nmax else (nmax - 1 if lv > nmax - 1 else lv)
                L[i] = <int8_t>(nmax + lv)
            scale = sumlx / suml2
            best = scale * sumlx
    return scale


cdef float make_q3_quants_rmse(int n, int nmax, const float *x, int8_t *L) noexcept nogil:
    """ggml's make_q3_quants(n, nmax, x, L, do_rmse=true)."""
    cdef float mx = 0, amax = 0, ax, iscale, sumlx, suml2, w, slx, sl2
    cdef int i, lv, new_l, _itry, n_changed
    for i in range(n):
        ax = fabsf(x[i])
        if ax > amax:
            amax = ax
            mx = x[i]
    if amax < <float>1e-15:
        for i in range(n):
            L[i] = 0
        return <float>0.0
    iscale = <float>(-nmax) / mx
    sumlx = <float>0.0
    suml2 = <float>0.0
    for i in range(n):
        lv = nearest_int(iscale * x[i])
        lv = -nmax if lv < -nmax else (nmax - 1 if lv > nmax - 1 else lv)
        L[i] = <int8_t>lv
        w = x[i] * x[i]
        sumlx += w * x[i] * <float>lv
        suml2 += w * <float>lv * <float>lv
    for _itry in range(5):
        n_changed = 0
        for i in range(n):
            w = x[i] * x[i]
            slx = sumlx - w * x[i] * <float>L[i]
            if slx > 0:
                sl2 = suml2 - w * <float>L[i] * <float>L[i]
                new_l = nearest_int(x[i] * sl2 / slx)
                new_l = -nmax if new_l < -nmax else (nmax - 1 if new_l > nmax - 1 else new_l)
                if new_l != L[i]:
                    slx += w * x[i] * <float>new_l
                    sl2 += w * <float>new_l * <float>new_l
                    if sl2 > 0 and slx * slx * suml2 > sumlx * sumlx * sl2:
                        L[i] = <int8_t>new_l
                        sumlx = slx
                        suml2 = sl2
                        n_changed += 1
        if not n_changed:
            break
    for i in range(n):
        L[i] = <int8_t>(L[i] + nmax)
    return sumlx / suml2 if suml2 > 0 else <float>0.0


cdef inline void pack_2bit(const uint8_t *L, uint8_t *qs) noexcept nogil:
    """Q2_K/Q3_K low bits: qs[j/4 + lv] holds L[j+lv], L[j+lv+32], L[j+lv+64], L[j+lv+96]."""
    cdef int j, li
    for j in range(0, 256, 128):
        for li in range(32):
            qs[j // 4 + li] = <uint8_t>(L[j + li] | (L[j + li + 32] << 2)
                                        | (L[j + li + 64] << 4) | (L[j + li + 96] << 6))


cdef void q_q2_k(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int j, li, lv
    cdef const float *xb
    cdef uint8_t *yb
    cdef uint8_t L[256]
    cdef float weights[256]
    cdef float mins[16]
    cdef float scales[16]
    cdef float max_scale, max_min, iscale, d, dm
    for i in range(nb):
        xb = x + 256 * i
        yb = y + 84 * i
        max_scale = <float>0.0
        max_min = <float>0.0
        for li in range(256):
            weights[li] = fabsf(xb[li])
        qkx_groups(16, 16, 3, xb, weights, L, scales, mins, <float>-0.5, <float>0.1, 15,
                   True, False)
        for j in range(16):
            if scales[j] > max_scale:
                max_scale = scales[j]
            if mins[j] > max_min:
                max_min = mins[j]
        if max_scale > 0:
            iscale = <float>15.0 / max_scale
            for j in range(16):
                yb[j] = <uint8_t>nearest_int(iscale * scales[j])
            wr_half(yb + 80, max_scale / <float>15.0)
        else:
            for j in range(16):
                yb[j] = 0
            wr_half(yb + 80, <float>0.0)
        if max_min > 0:
            iscale = <float>15.0 / max_min
            for j in range(16):
                yb[j] = <uint8_t>(yb[j] | (nearest_int(iscale * mins[j]) << 4))
            wr_half(yb + 82, max_min / <float>15.0)
        else:
            wr_half(yb + 82, <float>0.0)
        for j in range(16):
            d = rd_half(yb + 80) * <float>(yb[j] & 0xF)
            if not d:
                continue
            dm = rd_half(yb + 82) * <float>(yb[j] >> 4)
            for li in range(16):
                lv = nearest_int((xb[16 * j + li] + dm) / d)
                L[16 * j + li] = <uint8_t>(0 if lv < 0 else (3 if lv > 3 else lv))
        pack_2bit(L, yb + 16)


cdef void q_q3_k(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int j
    cdef int8_t l8
    cdef const float *xb
    cdef uint8_t *yb
    cdef int8_t L[256]
    cdef float scales[16]
    cdef float max_scale, amax, s, iscale
    for i in range(nb):
        xb = x + 256 * i
        yb = y + 110 * i
        max_scale = <float>0.0
        amax = <float>0.0
        if LKG_HAVE_VEC:
            lkg_q3_8(16, 4, xb, L, scales)
            lkg_q3_8(16, 4, xb + 128, L + 128, scales + 8)
        else:
            for j in range(16):
                scales[j] = make_q3_quants_rmse(16, 4, xb + 16 * j, L + 16 * j)
        for j in range(16):
            s = fabsf(scales[j])
            if s > amax:
                amax = s
                max_scale = scales[j]
        memset(yb + 96, 0, 12)
        if max_scale:
            iscale = <float>-32.0 / max_scale
            for j in range(16):
                l8 = <int8_t>nearest_int(iscale * scales[j])
                l8 = <int8_t>((-32 if l8 < -32 else (31 if l8 > 31 else l8)) + 32)
                q3_k_put_scale(yb + 96, j, l8)
            wr_half(yb + 108, <float>1.0 / iscale)
        else:
            wr_half(yb + 108, <float>0.0)
        q3_k_finish(xb, yb, L)


cdef inline void q3_k_put_scale(uint8_t *s, int j, int8_t l8) noexcept nogil:
    """Store 6-bit scale ``j`` (0..63) into Q3_K's 12 scale bytes (pre-zeroed)."""
    if j < 8:
        s[j] = <uint8_t>(l8 & 0xF)
    else:
        s[j - 8] |= <uint8_t>((l8 & 0xF) << 4)
    l8 = <int8_t>(l8 >> 4)
    s[8 + j % 4] |= <uint8_t>(l8 << (2 * (j // 4)))


cdef void q3_k_finish(const float *xb, uint8_t *yb, int8_t *L) noexcept nogil:
    """Q3_K second pass against the stored scales, then the hmask / 2-bit packing."""
    cdef int j, li, lv, m
    cdef int8_t sc
    cdef float d
    cdef uint8_t hm
    for j in range(16):
        sc = <int8_t>((yb[96 + j] & 0xF) if j < 8 else (yb[96 + j - 8] >> 4))
        sc = <int8_t>((sc | (((yb[96 + 8 + j % 4] >> (2 * (j // 4))) & 3) << 4)) - 32)
        d = rd_half(yb + 108) * <float>sc
        if not d:
            continue
        for li in range(16):
            lv = nearest_int(xb[16 * j + li] / d)
            L[16 * j + li] = <int8_t>((-4 if lv < -4 else (3 if lv > 3 else lv)) + 4)
    memset(yb, 0, 32)
    m = 0
    hm = 1
    for j in range(256):
        if L[j] > 3:
            yb[m] |= hm
            L[j] = <int8_t>(L[j] - 4)
        m += 1
        if m == 32:
            m = 0
            hm = <uint8_t>(hm << 1)
    pack_2bit(<const uint8_t *>L, yb + 32)


cdef inline void kquant_scales_mins(const float *scales, const float *mins, float max_scale,
                                    float max_min, uint8_t *s) noexcept nogil:
    """Q4_K/Q5_K: 8 six-bit scales and mins packed into 12 bytes."""
    cdef float inv_scale = <float>63.0 / max_scale if max_scale > 0 else <float>0.0
    cdef float inv_min = <float>63.0 / max_min if max_min > 0 else <float>0.0
    cdef uint8_t ls, lm
    cdef int j
    for j in range(8):
        ls = <uint8_t>nearest_int(inv_scale * scales[j])
        lm = <uint8_t>nearest_int(inv_min * mins[j])
        ls = ls if ls < 63 else 63
        lm = lm if lm < 63 else 63
        if j < 4:
            s[j] = ls
            s[j + 4] = lm
        else:
            s[j + 4] = <uint8_t>((ls & 0xF) | ((lm & 0xF) << 4))
            s[j - 4] |= <uint8_t>((ls >> 4) << 6)
            s[j] |= <uint8_t>((lm >> 4) << 6)


cdef inline void kquant_32_pass(const float *xb, float *scales, float *mins, uint8_t *L,
                                int nmax, float rmin, int nstep, float *max_scale,
                                float *max_min) noexcept nogil:
    cdef float weights[256]
    cdef float sum_x2, av_x
    cdef int j, li
    max_scale[0] = <float>0.0
    max_min[0] = <float>0.0
    for j in range(8):
        sum_x2 = <float>0.0
        for li in range(32):
            sum_x2 += xb[32 * j + li] * xb[32 * j + li]
        av_x = sqrtf(sum_x2 / <float>32.0)
        for li in range(32):
            weights[32 * j + li] = av_x + fabsf(xb[32 * j + li])
    qkx_groups(8, 32, nmax, xb, weights, L, scales, mins, rmin, <float>0.1, nstep, False, False)
    for j in range(8):
        if scales[j] > max_scale[0]:
            max_scale[0] = scales[j]
        if mins[j] > max_min[0]:
            max_min[0] = mins[j]


cdef inline void kquant_requant_32(const float *xb, const uint8_t *yb, uint8_t *L,
                                   int nmax) noexcept nogil:
    cdef uint8_t sc, m
    cdef float d, dm
    cdef int j, li, lv
    for j in range(8):
        scale_min_k4(j, yb + 4, &sc, &m)
        d = rd_half(yb) * <float>sc
        if not d:
            continue
        dm = rd_half(yb + 2) * <float>m
        for li in range(32):
            lv = nearest_int((xb[32 * j + li] + dm) / d)
            L[32 * j + li] = <uint8_t>(0 if lv < 0 else (nmax if lv > nmax else lv))


cdef inline void q4_k_pack(const uint8_t *L, uint8_t *yb) noexcept nogil:
    cdef int j, li
    for j in range(0, 256, 64):
        for li in range(32):
            yb[16 + j // 2 + li] = <uint8_t>(L[j + li] | (L[j + li + 32] << 4))


cdef inline void q5_k_pack(const uint8_t *L, uint8_t *yb) noexcept nogil:
    cdef int j, li, l1, l2
    cdef uint8_t m1 = 1, m2 = 2
    memset(yb + 16, 0, 32)
    for j in range(0, 256, 64):
        for li in range(32):
            l1 = L[j + li]
            if l1 > 15:
                l1 -= 16
                yb[16 + li] |= m1
            l2 = L[j + li + 32]
            if l2 > 15:
                l2 -= 16
                yb[16 + li] |= m2
            yb[48 + j // 2 + li] = <uint8_t>(l1 | (l2 << 4))
        m1 = <uint8_t>(m1 << 2)
        m2 = <uint8_t>(m2 << 2)


cdef void q_q4_k(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef const float *xb
    cdef uint8_t *yb
    cdef uint8_t L[256]
    cdef float scales[8]
    cdef float mins[8]
    cdef float max_scale, max_min
    for i in range(nb):
        xb = x + 256 * i
        yb = y + 144 * i
        kquant_32_pass(xb, scales, mins, L, 15, <float>-1.0, 20, &max_scale, &max_min)
        kquant_scales_mins(scales, mins, max_scale, max_min, yb + 4)
        wr_half(yb, max_scale / <float>63.0)
        wr_half(yb + 2, max_min / <float>63.0)
        kquant_requant_32(xb, yb, L, 15)
        q4_k_pack(L, yb)


cdef void q_q5_k(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef const float *xb
    cdef uint8_t *yb
    cdef uint8_t L[256]
    cdef float scales[8]
    cdef float mins[8]
    cdef float max_scale, max_min
    for i in range(nb):
        xb = x + 256 * i
        yb = y + 176 * i
        kquant_32_pass(xb, scales, mins, L, 31, <float>-0.5, 15, &max_scale, &max_min)
        kquant_scales_mins(scales, mins, max_scale, max_min, yb + 4)
        wr_half(yb, max_scale / <float>63.0)
        wr_half(yb + 2, max_min / <float>63.0)
        kquant_requant_32(xb, yb, L, 31)
        q5_k_pack(L, yb)


cdef void q6_k_block(const float *xb, uint8_t *yb, const float *qw) noexcept nogil:
    """One Q6_K super-block: quantize_row_q6_K_ref (qw NULL) or _impl (qw = imatrix slice)."""
    cdef int j, li, lv, ib, v
    cdef uint8_t *ql
    cdef uint8_t *qh
    cdef int8_t L[256]
    cdef float scales[16]
    cdef float max_scale = 0, max_abs_scale = 0, a, iscale, d
    qx_groups(16, 16, 32, xb, qw, L, scales)
    for ib in range(16):
        a = fabsf(scales[ib])
        if a > max_abs_scale:
            max_abs_scale = a
            max_scale = scales[ib]
    if max_abs_scale < <float>1e-15:
        memset(yb, 0, 210)
        return
    iscale = <float>-128.0 / max_scale
    wr_half(yb + 208, <float>1.0 / iscale)
    for ib in range(16):
        v = nearest_int(iscale * scales[ib])
        yb[192 + ib] = <uint8_t><int8_t>(v if v < 127 else 127)
    for j in range(16):
        d = rd_half(yb + 208) * <float>(<int8_t>yb[192 + j])
        if not d:
            continue
        for li in range(16):
            lv = nearest_int(xb[16 * j + li] / d)
            L[16 * j + li] = <int8_t>((-32 if lv < -32 else (31 if lv > 31 else lv)) + 32)
    ql = yb
    qh = yb + 128
    for j in range(0, 256, 128):
        for li in range(32):
            ql[li] = <uint8_t>((L[j + li] & 0xF) | ((L[j + li + 64] & 0xF) << 4))
            ql[li + 32] = <uint8_t>((L[j + li + 32] & 0xF) | ((L[j + li + 96] & 0xF) << 4))
            qh[li] = <uint8_t>((L[j + li] >> 4) | ((L[j + li + 32] >> 4) << 2)
                               | ((L[j + li + 64] >> 4) << 4) | ((L[j + li + 96] >> 4) << 6))
        ql += 64
        qh += 32


cdef void q_q6_k(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(nb):
        q6_k_block(x + 256 * i, y + 210 * i, NULL)


# ---------------------------------------------------------------------------
# importance-matrix quantizers (ggml's quantize_row_*_impl, one row at a time)
# and IQ4_NL / IQ4_XS (quantize_iq4_nl / quantize_iq4_xs, what ggml_quantize_chunk calls)
# ---------------------------------------------------------------------------
ctypedef void (*row_fn)(const float *x, uint8_t *y, Py_ssize_t n, const float *qw) noexcept nogil


cdef float make_qp_quants(int n, int nmax, const float *x, uint8_t *L,
                          const float *qw) noexcept nogil:
    """ggml's make_qp_quants: non-negative codes 0..nmax for the scales/mins of a super-block.

    ``L`` is uint8 as in ggml, so a negative code wraps exactly as it does there.
    """
    cdef float mx = 0, iscale, scale, best_mse, diff, w, iscale_is, scale_is, mse
    cdef float sumlx, suml2, slx, sl2
    cdef int i, lv, step, _itry, n_changed, new_l
    for i in range(n):
        mx = mx if mx > x[i] else x[i]
    if mx < <float>1e-15:
        for i in range(n):
            L[i] = 0
        return <float>0.0
    iscale = <float>nmax / mx
    for i in range(n):
        L[i] = <uint8_t>nearest_int(iscale * x[i])
    scale = <float>1.0 / iscale
    best_mse = <float>0.0
    for i in range(n):
        diff = x[i] - scale * <float>L[i]
        best_mse += qw[i] * diff * diff
    for step in range(-4, 5):
        if step == 0:
            continue
        iscale_is = (<float>0.1 * <float>step + <float>nmax) / mx
        scale_is = <float>1.0 / iscale_is
        mse = <float>0.0
        for i in range(n):
            lv = nearest_int(iscale_is * x[i])
            lv = nmax if lv > nmax else lv
            diff = x[i] - scale_is * <float>lv
            mse += qw[i] * diff * diff
        if mse < best_mse:
            best_mse = mse
            iscale = iscale_is
    sumlx = <float>0.0
    suml2 = <float>0.0
    for i in range(n):
        lv = nearest_int(iscale * x[i])
        lv = nmax if lv > nmax else lv
        L[i] = <uint8_t>lv
        w = qw[i]
        sumlx += w * x[i] * <float>lv
        suml2 += w * <float>lv * <float>lv
    for _itry in range(5):
        n_changed = 0
        for i in range(n):
            w = qw[i]
            slx = sumlx - w * x[i] * <float>L[i]
            sl2 = suml2 - w * <float>L[i] * <float>L[i]
            if slx > 0 and sl2 > 0:
                new_l = nearest_int(x[i] * sl2 / slx)
                new_l = nmax if new_l > nmax else new_l
                if new_l != L[i]:
                    slx += w * x[i] * <float>new_l
                    sl2 += w * <float>new_l * <float>new_l
                    if slx * slx * suml2 > sumlx * sumlx * sl2:
                        L[i] = <uint8_t>new_l
                        sumlx = slx
                        suml2 = sl2
                        n_changed += 1
        if not n_changed:
            break
    return sumlx / suml2 if suml2 > 0 else <float>0.0


cdef inline float row_sigma2(const float *x, Py_ssize_t n) noexcept nogil:
    """sum(x^2) / n with ggml's sequential fp32 sum (legacy types: the whole row)."""
    cdef float s = 0
    cdef Py_ssize_t j
    for j in range(n):
        s += x[j] * x[j]
    return s / <float>n


cdef inline void imatrix_weights(const float *xb, const float *qw, float sigma2, float *w,
                                 int n) noexcept nogil:
    cdef int j
    for j in range(n):
        w[j] = qw[j] * sqrtf(sigma2 + xb[j] * xb[j])


cdef void qw_q4_0(const float *x, uint8_t *y, Py_ssize_t n, const float *qw) noexcept nogil:
    cdef float weight[32]
    cdef int8_t L[32]
    cdef float sigma2 = row_sigma2(x, n), d
    cdef Py_ssize_t ib
    cdef int j
    cdef uint8_t *yb
    for ib in range(n // 32):
        imatrix_weights(x + 32 * ib, qw + 32 * ib, sigma2, weight, 32)
        d = make_qx_quants_rmse1(32, 8, x + 32 * ib, L, weight)
        yb = y + 18 * ib
        wr_half(yb, d)
        for j in range(16):
            yb[2 + j] = <uint8_t>(L[j] | (L[j + 16] << 4))


cdef void qw_q5_0(const float *x, uint8_t *y, Py_ssize_t n, const float *qw) noexcept nogil:
    cdef float weight[32]
    cdef int8_t L[32]
    cdef float sigma2 = row_sigma2(x, n), d
    cdef Py_ssize_t ib
    cdef int j
    cdef uint32_t qh
    cdef uint8_t *yb
    for ib in range(n // 32):
        imatrix_weights(x + 32 * ib, qw + 32 * ib, sigma2, weight, 32)
        d = make_qx_quants_rmse1(32, 16, x + 32 * ib, L, weight)
        yb = y + 22 * ib
        wr_half(yb, d)
        qh = 0
        for j in range(16):
            yb[6 + j] = <uint8_t>((L[j] & 0xF) | ((L[j + 16] & 0xF) << 4))
            qh |= (<uint32_t>((L[j] >> 4) & 1)) << j
            qh |= (<uint32_t>((L[j + 16] >> 4) & 1)) << (j + 16)
        memcpy(yb + 2, &qh, 4)


cdef inline void qw_x_1(const float *x, uint8_t *y, Py_ssize_t n, const float *qw, int nmax,
                        int type_size) noexcept nogil:
    """Q4_1 (nmax 15) / Q5_1 (nmax 31) with an importance matrix (make_qkx3_quants)."""
    cdef float weight[32]
    cdef uint8_t L[32]
    cdef uint8_t Laux[32]
    cdef float sigma2 = row_sigma2(x, n), d, mn
    cdef Py_ssize_t ib
    cdef int j
    cdef uint32_t qh
    cdef uint8_t *yb
    for ib in range(n // 32):
        imatrix_weights(x + 32 * ib, qw + 32 * ib, sigma2, weight, 32)
        d = make_qkx2_quants(32, nmax, x + 32 * ib, weight, L, &mn, Laux, <float>-0.9,
                             <float>0.05, 36, False, True)
        yb = y + type_size * ib
        wr_half(yb, d)
        wr_half(yb + 2, -mn)
        if nmax == 15:
            for j in range(16):
                yb[4 + j] = <uint8_t>(L[j] | (L[j + 16] << 4))
        else:
            qh = 0
            for j in range(16):
                yb[8 + j] = <uint8_t>((L[j] & 0xF) | ((L[j + 16] & 0xF) << 4))
                qh |= (<uint32_t>((L[j] >> 4) & 1)) << j
                qh |= (<uint32_t>((L[j + 16] >> 4) & 1)) << (j + 16)
            memcpy(yb + 4, &qh, 4)


cdef void qw_q4_1(const float *x, uint8_t *y, Py_ssize_t n, const float *qw) noexcept nogil:
    qw_x_1(x, y, n, qw, 15, 20)


cdef void qw_q5_1(const float *x, uint8_t *y, Py_ssize_t n, const float *qw) noexcept nogil:
    qw_x_1(x, y, n, qw, 31, 24)


cdef inline float block_sum_x2(const float *x) noexcept nogil:
    cdef float s = 0
    cdef int j
    for j in range(256):
        s += x[j] * x[j]
    return s


cdef void qw_q2_k(const float *x, uint8_t *y, Py_ssize_t n, const float *qw) noexcept nogil:
    cdef uint8_t L[256]
    cdef float mins[16]
    cdef float scales[16]
    cdef float sw[16]
    cdef float weight[256]
    cdef uint8_t Ls[16]
    cdef uint8_t Lm[16]
    cdef Py_ssize_t i
    cdef int j, li, lv
    cdef const float *xb
    cdef uint8_t *yb
    cdef float sigma2, dm, mm, d, m
    for i in range(n // 256):
        xb = x + 256 * i
        yb = y + 84 * i
        sigma2 = block_sum_x2(xb) / <float>256.0
        imatrix_weights(xb, qw + 256 * i, sigma2, weight, 256)
        for j in range(16):
            sw[j] = <float>0.0
            for li in range(16):
                sw[j] += weight[16 * j + li]
        qkx_groups(16, 16, 3, xb, weight, L, scales, mins, <float>-0.9, <float>0.05, 36,
                   False, True)
        dm = make_qp_quants(16, 15, scales, Ls, sw)
        mm = make_qp_quants(16, 15, mins, Lm, sw)
        wr_half(yb + 80, dm)
        wr_half(yb + 82, mm)
        dm = rd_half(yb + 80)
        mm = rd_half(yb + 82)
        for j in range(16):
            yb[j] = <uint8_t>(Ls[j] | (Lm[j] << 4))
        for j in range(16):
            d = dm * <float>(yb[j] & 0xF)
            if not d:
                continue
            m = mm * <float>(yb[j] >> 4)
            for li in range(16):
                lv = nearest_int((xb[16 * j + li] + m) / d)
                L[16 * j + li] = <uint8_t>(0 if lv < 0 else (3 if lv > 3 else lv))
        pack_2bit(L, yb + 16)


cdef void qw_q3_k(const float *x, uint8_t *y, Py_ssize_t n, const float *qw) noexcept nogil:
    cdef int8_t L[256]
    cdef float scales[16]
    cdef float weight[256]
    cdef float sw[16]
    cdef int8_t Ls[16]
    cdef Py_ssize_t i
    cdef int j, li
    cdef const float *xb
    cdef uint8_t *yb
    cdef float sigma2, sumw, d_block
    for i in range(n // 256):
        xb = x + 256 * i
        yb = y + 110 * i
        sigma2 = <float>2.0 * block_sum_x2(xb) / <float>256.0
        imatrix_weights(xb, qw + 256 * i, sigma2, weight, 256)
        for j in range(16):
            sumw = <float>0.0
            for li in range(16):
                sumw += weight[16 * j + li]
            sw[j] = sumw
        qx_groups(16, 16, 4, xb, weight, L, scales)
        memset(yb + 96, 0, 12)
        d_block = make_qx_quants_rmse1(16, 32, scales, Ls, sw)
        for j in range(16):
            q3_k_put_scale(yb + 96, j, Ls[j])
        wr_half(yb + 108, d_block)
        q3_k_finish(xb, yb, L)


cdef inline void qw_q45_k(const float *x, uint8_t *y, Py_ssize_t n, const float *qw, int nmax,
                          int type_size) noexcept nogil:
    """Q4_K (nmax 15) / Q5_K (nmax 31) with an importance matrix."""
    cdef uint8_t L[256]
    cdef uint8_t Ls[8]
    cdef uint8_t Lm[8]
    cdef float mins[8]
    cdef float scales[8]
    cdef float sw[8]
    cdef float weights[256]
    cdef Py_ssize_t i
    cdef int j, li
    cdef const float *xb
    cdef uint8_t *yb
    cdef uint8_t *s
    cdef uint8_t ls, lm
    cdef float sigma2, sumw, d_block, m_block
    for i in range(n // 256):
        xb = x + 256 * i
        yb = y + type_size * i
        sigma2 = <float>2.0 * block_sum_x2(xb) / <float>256.0
        imatrix_weights(xb, qw + 256 * i, sigma2, weights, 256)
        for j in range(8):
            sumw = <float>0.0
            for li in range(32):
                sumw += weights[32 * j + li]
            sw[j] = sumw
        qkx_groups(8, 32, nmax, xb, weights, L, scales, mins, <float>-0.9, <float>0.05, 36,
                   False, True)
        d_block = make_qp_quants(8, 63, scales, Ls, sw)
        m_block = make_qp_quants(8, 63, mins, Lm, sw)
        s = yb + 4
        for j in range(8):
            ls = Ls[j]
            lm = Lm[j]
            if nmax == 31:                  # only ggml's Q5_K clamps here
                ls = ls if ls < 63 else 63
                lm = lm if lm < 63 else 63
            if j < 4:
                s[j] = ls
                s[j + 4] = lm
            else:
                s[j + 4] = <uint8_t>((ls & 0xF) | ((lm & 0xF) << 4))
                s[j - 4] |= <uint8_t>((ls >> 4) << 6)
                s[j] |= <uint8_t>((lm >> 4) << 6)
        wr_half(yb, d_block)
        wr_half(yb + 2, m_block)
        kquant_requant_32(xb, yb, L, nmax)
        if nmax == 15:
            q4_k_pack(L, yb)
        else:
            q5_k_pack(L, yb)


cdef void qw_q4_k(const float *x, uint8_t *y, Py_ssize_t n, const float *qw) noexcept nogil:
    qw_q45_k(x, y, n, qw, 15, 144)


cdef void qw_q5_k(const float *x, uint8_t *y, Py_ssize_t n, const float *qw) noexcept nogil:
    qw_q45_k(x, y, n, qw, 31, 176)


cdef void qw_q6_k(const float *x, uint8_t *y, Py_ssize_t n, const float *qw) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n // 256):
        q6_k_block(x + 256 * i, y + 210 * i, qw + 256 * i)


cdef inline int best_index_iq4(float v) noexcept nogil:
    """ggml's best_index_int8(16, kvalues_iq4nl, v): nearest value, ties to the upper one.

    ggml binary-searches for the bracketing pair val[mu-1] <= v < val[mu]; here
    ``mu - 1`` is counted with branch-free compares (the same pair for every
    non-NaN v; NaN, which fails every compare, gets ggml's answer 15), then the
    same float comparison picks the nearer end.
    """
    cdef int ml = 0, k
    if v <= KV_IQ4F[0]:
        return 0
    if v >= KV_IQ4F[15]:
        return 15
    if v != v:
        return 15
    for k in range(1, 15):
        ml += KV_IQ4F[k] <= v
    return ml if v - KV_IQ4F[ml] < KV_IQ4F[ml + 1] - v else ml + 1


cdef void iq4_superblock(const float *x, int sbs, uint8_t *dh, uint8_t *q4, uint8_t *scales_h,
                         uint8_t *scales_l, const float *qw) noexcept nogil:
    """ggml's quantize_row_iq4_nl_impl with ntry = 7 (ggml_quantize_chunk's setting).

    ``sbs`` = 32 (IQ4_NL) or 256 (IQ4_XS, which adds 6-bit sub-block scales).
    """
    cdef float scales[8]
    cdef float weight[32]
    cdef uint8_t L[256]
    cdef float sigma2 = 0, max_scale = 0, amax_scale = 0, amax, mx, ax, d, idv, al, q, w
    cdef float sumqx, sumq2, best, abs_d, dl, idl
    cdef int j, ib, itry, lv, ls
    cdef int nblk = sbs // 32
    cdef const float *xb
    cdef uint8_t *Lb
    cdef uint16_t sh
    cdef float v0 = <float>KVALUES_IQ4NL[0]
    for j in range(sbs):
        sigma2 += x[j] * x[j]
    sigma2 *= <float>2.0 / <float>sbs
    memset(q4, 0, sbs // 2)
    wr_half(dh, <float>0.0)
    for ib in range(nblk):
        xb = x + 32 * ib
        Lb = L + 32 * ib
        if qw != NULL:
            imatrix_weights(xb, qw + 32 * ib, sigma2, weight, 32)
        else:
            for j in range(32):
                weight[j] = xb[j] * xb[j]
        amax = 0
        mx = 0
        for j in range(32):
            ax = fabsf(xb[j])
            if ax > amax:
                amax = ax
                mx = xb[j]
        if amax < <float>1e-15:
            scales[ib] = 0
            memset(Lb, 0, 32)              # ggml leaves L unset here and never reads it
            continue
        d = -mx / v0
        idv = <float>1.0 / d
        sumqx = 0
        sumq2 = 0
        for j in range(32):
            al = idv * xb[j]
            lv = best_index_iq4(al)
            Lb[j] = <uint8_t>lv
            q = <float>KVALUES_IQ4NL[lv]
            w = weight[j]
            sumqx += w * q * xb[j]
            sumq2 += w * q * q
        d = sumqx / sumq2 if sumq2 > 0 else <float>0.0
        best = d * sumqx
        for itry in range(-7, 8):
            idv = <float>(itry + KVALUES_IQ4NL[0]) / mx
            sumqx = 0
            sumq2 = 0
            for j in range(32):
                al = idv * xb[j]
                lv = best_index_iq4(al)
                q = <float>KVALUES_IQ4NL[lv]
                w = weight[j]
                sumqx += w * q * xb[j]
                sumq2 += w * q * q
            if sumq2 > 0 and sumqx * sumqx > best * sumq2:
                d = sumqx / sumq2
                best = d * sumqx
        scales[ib] = d
        abs_d = fabsf(d)
        if abs_d > amax_scale:
            amax_scale = abs_d
            max_scale = d
    if nblk > 1:
        sh = 0
        d = -max_scale / <float>32.0
        wr_half(dh, d)
        idv = <float>1.0 / d if d != 0 else <float>0.0
        for ib in range(nblk):
            ls = nearest_int(idv * scales[ib])
            ls = -32 if ls < -32 else (31 if ls > 31 else ls)
            dl = d * <float>ls
            idl = <float>1.0 / dl if dl != 0 else <float>0.0
            Lb = L + 32 * ib
            xb = x + 32 * ib
            for j in range(32):
                Lb[j] = <uint8_t>best_index_iq4(idl * xb[j])
            ls += 32
            if ib % 2 == 0:
                scales_l[ib // 2] = <uint8_t>(ls & 0xF)
            else:
                scales_l[ib // 2] |= <uint8_t>((ls & 0xF) << 4)
            sh |= <uint16_t>((ls >> 4) << (2 * ib))
        scales_h[0] = <uint8_t>(sh & 0xFF)
        scales_h[1] = <uint8_t>(sh >> 8)
    else:
        wr_half(dh, scales[0])
        idv = <float>1.0 / scales[0] if scales[0] != 0 else <float>0.0
        for j in range(32):
            L[j] = <uint8_t>best_index_iq4(idv * x[j])
    for ib in range(sbs // 32):
        for j in range(16):
            q4[16 * ib + j] = <uint8_t>(L[32 * ib + j] | (L[32 * ib + 16 + j] << 4))


cdef void q_iq4_nl(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(nb):
        iq4_superblock(x + 32 * i, 32, y + 18 * i, y + 18 * i + 2, NULL, NULL, NULL)


cdef void q_iq4_xs(const float *x, uint8_t *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef uint8_t *yb
    for i in range(nb):
        yb = y + 136 * i
        iq4_superblock(x + 256 * i, 256, yb, yb + 8, yb + 2, yb + 4, NULL)


cdef void qw_iq4_nl(const float *x, uint8_t *y, Py_ssize_t n, const float *qw) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n // 32):
        iq4_superblock(x + 32 * i, 32, y + 18 * i, y + 18 * i + 2, NULL, NULL, qw + 32 * i)


cdef void qw_iq4_xs(const float *x, uint8_t *y, Py_ssize_t n, const float *qw) noexcept nogil:
    cdef Py_ssize_t i
    cdef uint8_t *yb
    for i in range(n // 256):
        yb = y + 136 * i
        iq4_superblock(x + 256 * i, 256, yb, yb + 8, yb + 2, yb + 4, qw + 256 * i)


# ---------------------------------------------------------------------------
# dequantizers
# ---------------------------------------------------------------------------
cdef void dq_f32(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    memcpy(y, x, <size_t>nb * 4)


cdef void dq_f16(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(nb):
        y[i] = rd_half(x + 2 * i)


cdef void dq_bf16(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(nb):
        y[i] = bitsf((<uint32_t>x[2 * i] << 16) | (<uint32_t>x[2 * i + 1] << 24))


cdef void dq_q4_0(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int j
    cdef const uint8_t *xb
    cdef float *yb
    cdef float d
    cdef uint8_t qs[16]
    for i in range(nb):
        xb = x + 18 * i
        yb = y + 32 * i
        d = rd_half(xb)
        memcpy(qs, xb + 2, 16)      # a local copy: the stores below cannot alias it
        for j in range(16):
            yb[j] = <float>((qs[j] & 0x0F) - 8) * d
        for j in range(16):
            yb[j + 16] = <float>((qs[j] >> 4) - 8) * d


cdef void dq_q4_1(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int j
    cdef const uint8_t *xb
    cdef float *yb
    cdef float d, m, t
    for i in range(nb):
        xb = x + 20 * i
        yb = y + 32 * i
        d = rd_half(xb)
        m = rd_half(xb + 2)
        for j in range(16):
            t = <float>(xb[4 + j] & 0x0F) * d
            yb[j] = t + m
            t = <float>(xb[4 + j] >> 4) * d
            yb[j + 16] = t + m


cdef void dq_q5_0(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int j
    cdef const uint8_t *xb
    cdef float *yb
    cdef float d
    cdef uint32_t qh
    for i in range(nb):
        xb = x + 22 * i
        yb = y + 32 * i
        d = rd_half(xb)
        qh = rd_u32(xb + 2)
        for j in range(16):
            yb[j] = <float>(<int>((xb[6 + j] & 0x0F) | (((qh >> j) << 4) & 0x10)) - 16) * d
            yb[j + 16] = <float>(<int>((xb[6 + j] >> 4) | ((qh >> (j + 12)) & 0x10)) - 16) * d


cdef void dq_q5_1(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int j
    cdef const uint8_t *xb
    cdef float *yb
    cdef float d, m, t
    cdef uint32_t qh
    for i in range(nb):
        xb = x + 24 * i
        yb = y + 32 * i
        d = rd_half(xb)
        m = rd_half(xb + 2)
        qh = rd_u32(xb + 4)
        for j in range(16):
            t = <float>(<int>((xb[8 + j] & 0x0F) | (((qh >> j) << 4) & 0x10))) * d
            yb[j] = t + m
            t = <float>(<int>((xb[8 + j] >> 4) | ((qh >> (j + 12)) & 0x10))) * d
            yb[j + 16] = t + m


cdef void dq_q8_0(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int j
    cdef const uint8_t *xb
    cdef float *yb
    cdef float d
    cdef int8_t qs[32]
    for i in range(nb):
        xb = x + 34 * i
        yb = y + 32 * i
        d = rd_half(xb)
        memcpy(qs, xb + 2, 32)
        for j in range(32):
            yb[j] = <float>qs[j] * d


cdef void dq_q8_1(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int j
    cdef const uint8_t *xb
    cdef float *yb
    cdef float d
    for i in range(nb):
        xb = x + 36 * i
        yb = y + 32 * i
        d = rd_half(xb)
        for j in range(32):
            yb[j] = <float>(<int8_t>xb[4 + j]) * d


cdef void dq_q2_k(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    # block_q2_K: scales[16], qs[64], d, dmin
    cdef Py_ssize_t i
    cdef int _n, _j, li, shift, isc
    cdef const uint8_t *xb
    cdef const uint8_t *q
    cdef float *yb
    cdef float d, mn, dl, ml, t
    cdef uint8_t sc
    for i in range(nb):
        xb = x + 84 * i
        yb = y + 256 * i
        d = rd_half(xb + 80)
        mn = rd_half(xb + 82)
        q = xb + 16
        isc = 0
        for _n in range(2):
            shift = 0
            for _j in range(4):
                sc = xb[isc]
                isc += 1
                dl = d * <float>(sc & 0xF)
                ml = mn * <float>(sc >> 4)
                for li in range(16):
                    t = dl * <float>((q[li] >> shift) & 3)
                    yb[0] = t - ml
                    yb += 1
                sc = xb[isc]
                isc += 1
                dl = d * <float>(sc & 0xF)
                ml = mn * <float>(sc >> 4)
                for li in range(16):
                    t = dl * <float>((q[li + 16] >> shift) & 3)
                    yb[0] = t - ml
                    yb += 1
                shift += 2
            q += 32


cdef void dq_q3_k(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    # block_q3_K: hmask[32], qs[64], scales[12], d
    cdef Py_ssize_t i
    cdef int _n, _j, li, shift, isc, k, lo, hi, hbit
    cdef const uint8_t *xb
    cdef const uint8_t *q
    cdef const uint8_t *hm
    cdef const uint8_t *s
    cdef float *yb
    cdef float dall, dl
    cdef int sc[16]
    for i in range(nb):
        xb = x + 110 * i
        yb = y + 256 * i
        hm = xb
        q = xb + 32
        s = xb + 96
        dall = rd_half(xb + 108)
        for k in range(16):
            lo = (s[k] & 0xF) if k < 8 else (s[k - 8] >> 4)
            hi = (s[8 + k % 4] >> (2 * (k // 4))) & 3
            sc[k] = (lo | (hi << 4)) - 32
        isc = 0
        hbit = 0
        for _n in range(2):
            shift = 0
            for _j in range(4):
                # code = low 2 bits - 4 when the hmask bit is clear
                for k in range(2):
                    dl = dall * <float>sc[isc]
                    isc += 1
                    for li in range(16 * k, 16 * k + 16):
                        yb[li - 16 * k] = dl * <float>(
                            <int>((q[li] >> shift) & 3)
                            - ((((hm[li] >> hbit) & 1) ^ 1) << 2))
                    yb += 16
                shift += 2
                hbit += 1
            q += 32


cdef inline void scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m) noexcept nogil:
    if j < 4:
        d[0] = q[j] & 63
        m[0] = q[j + 4] & 63
    else:
        d[0] = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4)
        m[0] = (q[j + 4] >> 4) | ((q[j] >> 6) << 4)


cdef extern from *:
    """
    static inline float lkg_fp16_to_fp32_any(uint16_t h) {   /* as fp16_to_fp32 below */
        const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
        uint32_t u;
        float f;
        if (e == 0) {
            f = (float)m * 5.9604644775390625e-08f;
            memcpy(&u, &f, 4);
            u |= sign;
        } else if (e == 31) {
            u = sign | 0x7F800000u | (m ? (0x00400000u | (m << 13)) : 0u);
        } else {
            u = sign | ((e + 112u) << 23) | (m << 13);
        }
        memcpy(&f, &u, 4);
        return f;
    }

    /* get_scale_min_k4: the 6-bit scale and min of sub-block j (0-7) of a
       Q4_K / Q5_K block's 12 packed scale bytes (scale_min_k4 below, in C). */
    static inline void lkg_scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m) {
        if (j < 4) { *d = q[j] & 63; *m = q[j + 4] & 63; }
        else { *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
               *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4); }
    }

    /* dequantize_row_q5_K's loops in C with restrict pointers (no aliasing between
       the codes and the floats), so that the compiler vectorises them; one fp32
       multiply and one subtract per value, as in ggml. */
    #define LKG_DEFINE_DQ5K(NAME, ATTR) \
    static ATTR void NAME(const uint8_t *__restrict x, float *__restrict y, Py_ssize_t nb) { \
        for (Py_ssize_t i = 0; i < nb; i++) { \
            const uint8_t *__restrict xb = x + 176 * i; \
            float *__restrict yb = y + 256 * i; \
            const float d = lkg_fp16_to_fp32_any((uint16_t)(xb[0] | (xb[1] << 8))); \
            const float mn = lkg_fp16_to_fp32_any((uint16_t)(xb[2] | (xb[3] << 8))); \
            const uint8_t *sc = xb + 4, *qh = xb + 16, *ql = xb + 48; \
            for (int j = 0; j < 4; j++) { \
                uint8_t s1, m1, s2, m2; \
                lkg_scale_min_k4(2 * j, sc, &s1, &m1); \
                lkg_scale_min_k4(2 * j + 1, sc, &s2, &m2); \
                const float d1 = d * s1, mm1 = mn * m1, d2 = d * s2, mm2 = mn * m2; \
                const uint8_t u1 = (uint8_t)(1u << (2 * j)), u2 = (uint8_t)(2u << (2 * j)); \
                for (int l = 0; l < 32; l++) \
                    yb[l] = d1 * (float)((ql[l] & 0xF) + ((qh[l] & u1) ? 16 : 0)) - mm1; \
                for (int l = 0; l < 32; l++) \
                    yb[32 + l] = d2 * (float)((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - mm2; \
                yb += 64; \
                ql += 32; \
            } \
        } \
    }

    /* dequantize_row_q4_K, the same way */
    #define LKG_DEFINE_DQ4K(NAME, ATTR) \
    static ATTR void NAME(const uint8_t *__restrict x, float *__restrict y, Py_ssize_t nb) { \
        for (Py_ssize_t i = 0; i < nb; i++) { \
            const uint8_t *__restrict xb = x + 144 * i; \
            float *__restrict yb = y + 256 * i; \
            const float d = lkg_fp16_to_fp32_any((uint16_t)(xb[0] | (xb[1] << 8))); \
            const float mn = lkg_fp16_to_fp32_any((uint16_t)(xb[2] | (xb[3] << 8))); \
            const uint8_t *sc = xb + 4, *q = xb + 16; \
            for (int j = 0; j < 4; j++) { \
                uint8_t s1, m1, s2, m2; \
                lkg_scale_min_k4(2 * j, sc, &s1, &m1); \
                lkg_scale_min_k4(2 * j + 1, sc, &s2, &m2); \
                const float d1 = d * s1, mm1 = mn * m1, d2 = d * s2, mm2 = mn * m2; \
                for (int l = 0; l < 32; l++) yb[l] = d1 * (float)(q[l] & 0xF) - mm1; \
                for (int l = 0; l < 32; l++) yb[32 + l] = d2 * (float)(q[l] >> 4) - mm2; \
                yb += 64; \
                q += 32; \
            } \
        } \
    }

    LKG_DEFINE_DQ4K(lkg_dq_q4_k_generic, )
    #if defined(LKG_HAVE_AVX2)
    /* The same arithmetic (a product, then the min subtracted: no fused
       multiply-add) eight elements at a time, streamed, for outputs of 8 MiB+
       (8192 blocks of 1 KiB; 32 MiB on AMD): 4096x4096, 64 MiB, took 0.38x
       the time of the compiler's version of the loop above written through
       the cache (alternating in one process; 1.45x np.copyto against ggml's
       C 0.62x). At 4 MiB that version, its output left in cache, took 0.9x
       the time of this one either way. */
    LKG_AVX2 static void lkg_dq_q4_k_stream(const uint8_t *x, float *y, Py_ssize_t nb) {
        const int stream = 1;   /* lkg_put8's streaming stores */
        const __m256i low = _mm256_set1_epi32(0xF);
        for (Py_ssize_t i = 0; i < nb; i++) {
            const uint8_t *xb = x + 144 * i;
            float *yb = y + 256 * i;
            const float d = lkg_fp16_to_fp32_any((uint16_t)(xb[0] | (xb[1] << 8)));
            const float mn = lkg_fp16_to_fp32_any((uint16_t)(xb[2] | (xb[3] << 8)));
            const uint8_t *sc = xb + 4, *q = xb + 16;
            for (int j = 0; j < 4; j++) {
                uint8_t s1, m1, s2, m2;
                lkg_scale_min_k4(2 * j, sc, &s1, &m1);
                lkg_scale_min_k4(2 * j + 1, sc, &s2, &m2);
                const __m256 d1 = _mm256_set1_ps(d * s1), mm1 = _mm256_set1_ps(mn * m1);
                const __m256 d2 = _mm256_set1_ps(d * s2), mm2 = _mm256_set1_ps(mn * m2);
                for (int k = 0; k < 4; k++) {
                    const __m128i b8 = _mm_loadl_epi64((const __m128i *)(q + 8 * k));
                    const __m256i b = _mm256_cvtepu8_epi32(b8);
                    const __m256 lo = _mm256_cvtepi32_ps(_mm256_and_si256(b, low));
                    const __m256 hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(b, 4));
                    lkg_put8(yb + 8 * k, _mm256_sub_ps(_mm256_mul_ps(d1, lo), mm1), stream);
                    lkg_put8(yb + 32 + 8 * k, _mm256_sub_ps(_mm256_mul_ps(d2, hi), mm2), stream);
                }
                yb += 64;
                q += 32;
            }
        }
        if (stream) _mm_sfence();
    }
    #endif
    #if defined(LKG_HAVE_AVX2)
    LKG_DEFINE_DQ4K(lkg_dq_q4_k_avx2, LKG_AVX2)
    #endif
    static void lkg_dq_q4_k(const uint8_t *x, float *y, Py_ssize_t nb) {
    #if defined(LKG_HAVE_AVX2)
        if (lkg_simd_level(-1) == 2 && ((uintptr_t)y & 15u) == 0
                && nb * 2 >= LKG_STREAM_MIN_BLOCKS) {
            lkg_dq_q4_k_stream(x, y, nb);
            return;
        }
        if (lkg_simd_level(-1) == 2) { lkg_dq_q4_k_avx2(x, y, nb); return; }
    #endif
        lkg_dq_q4_k_generic(x, y, nb);
    }

    LKG_DEFINE_DQ5K(lkg_dq_q5_k_generic, )
    #if defined(LKG_HAVE_AVX2)
    LKG_DEFINE_DQ5K(lkg_dq_q5_k_avx2, LKG_AVX2)
    #endif
    static void lkg_dq_q5_k(const uint8_t *x, float *y, Py_ssize_t nb) {
    #if defined(LKG_HAVE_AVX2)
        if (lkg_simd_level(-1) == 2) { lkg_dq_q5_k_avx2(x, y, nb); return; }
    #endif
        lkg_dq_q5_k_generic(x, y, nb);
    }
    """
    void lkg_dq_q5_k(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil
    void lkg_dq_q4_k(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil


cdef void dq_q4_k(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    # block_q4_K: d, dmin, scales[12], qs[128]
    lkg_dq_q4_k(x, y, nb)


cdef void dq_q5_k(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    # block_q5_K: d, dmin, scales[12], qh[32], qs[128]
    lkg_dq_q5_k(x, y, nb)


cdef void dq_q6_k(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    # block_q6_K: ql[128], qh[64], scales[16] (int8), d
    cdef Py_ssize_t i
    cdef int _n, li, isc, q1, q2, q3, q4
    cdef const uint8_t *xb
    cdef const uint8_t *ql
    cdef const uint8_t *qh
    cdef const int8_t *sc
    cdef float *yb
    cdef float d, s1, s2, s3, s4
    for i in range(nb):
        xb = x + 210 * i
        yb = y + 256 * i
        ql = xb
        qh = xb + 128
        sc = <const int8_t *>(xb + 192)
        d = rd_half(xb + 208)
        for _n in range(2):
            for isc in range(2):            # elements 16*isc.. of each 32: scale isc (+2, +4, +6)
                s1 = d * <float>sc[isc]
                s2 = d * <float>sc[isc + 2]
                s3 = d * <float>sc[isc + 4]
                s4 = d * <float>sc[isc + 6]
                for li in range(16 * isc, 16 * isc + 16):
                    q1 = <int>((ql[li] & 0xF) | (((qh[li] >> 0) & 3) << 4)) - 32
                    q2 = <int>((ql[li + 32] & 0xF) | (((qh[li] >> 2) & 3) << 4)) - 32
                    q3 = <int>((ql[li] >> 4) | (((qh[li] >> 4) & 3) << 4)) - 32
                    q4 = <int>((ql[li + 32] >> 4) | (((qh[li] >> 6) & 3) << 4)) - 32
                    yb[li] = s1 * <float>q1
                    yb[li + 32] = s2 * <float>q2
                    yb[li + 64] = s3 * <float>q3
                    yb[li + 96] = s4 * <float>q4
            yb += 128
            ql += 64
            qh += 32
            sc += 8


cdef void dq_q8_k(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int j
    cdef const uint8_t *xb
    cdef float d
    for i in range(nb):
        xb = x + 292 * i
        d = bitsf(rd_u32(xb))
        for j in range(256):
            y[256 * i + j] = d * <float>(<int8_t>xb[4 + j])


cdef void dq_tq1_0(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int n, m, j
    cdef const uint8_t *xb
    cdef float *yb
    cdef float d
    cdef uint8_t q
    cdef int xi
    cdef uint8_t pow3[5]
    pow3[0] = 1
    pow3[1] = 3
    pow3[2] = 9
    pow3[3] = 27
    pow3[4] = 81
    for i in range(nb):
        xb = x + 54 * i
        yb = y + 256 * i
        d = rd_half(xb + 52)
        for n in range(5):
            for m in range(32):
                q = <uint8_t>(xb[m] * pow3[n])
                xi = (<uint16_t>q * 3) >> 8
                yb[0] = <float>(xi - 1) * d
                yb += 1
        for n in range(5):
            for m in range(16):
                q = <uint8_t>(xb[32 + m] * pow3[n])
                xi = (<uint16_t>q * 3) >> 8
                yb[0] = <float>(xi - 1) * d
                yb += 1
        for n in range(4):
            for j in range(4):
                q = <uint8_t>(xb[48 + j] * pow3[n])
                xi = (<uint16_t>q * 3) >> 8
                yb[0] = <float>(xi - 1) * d
                yb += 1


cdef void dq_tq2_0(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int k, li, m
    cdef const uint8_t *xb
    cdef float *yb
    cdef float d
    for i in range(nb):
        xb = x + 66 * i
        yb = y + 256 * i
        d = rd_half(xb + 64)
        for k in range(2):
            for li in range(4):
                for m in range(32):
                    yb[0] = <float>(<int>((xb[32 * k + m] >> (2 * li)) & 3) - 1) * d
                    yb += 1


cdef void dq_mxfp4(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int j
    cdef const uint8_t *xb
    cdef float *yb
    cdef float d
    for i in range(nb):
        xb = x + 17 * i
        yb = y + 32 * i
        d = e8m0_to_fp32_half(xb[0])
        for j in range(16):
            yb[j] = <float>KVALUES_FP4[xb[1 + j] & 0x0F] * d
            yb[j + 16] = <float>KVALUES_FP4[xb[1 + j] >> 4] * d


cdef void dq_nvfp4(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int s, j
    cdef const uint8_t *xb
    cdef float *yb
    cdef float d
    cdef uint8_t b
    for i in range(nb):
        xb = x + 36 * i
        for s in range(4):
            d = UE4M3_HALF[xb[s]]
            yb = y + 64 * i + 16 * s
            for j in range(8):
                b = xb[4 + 8 * s + j]
                yb[j] = <float>KVALUES_FP4[b & 0x0F] * d
                yb[j + 8] = <float>KVALUES_FP4[b >> 4] * d


cdef void dq_q1_0(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int j
    cdef const uint8_t *xb
    cdef float d, nd
    for i in range(nb):
        xb = x + 18 * i
        d = rd_half(xb)
        nd = -d
        for j in range(128):
            y[128 * i + j] = d if ((xb[2 + j // 8] >> (j % 8)) & 1) else nd


cdef void dq_q2_0(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int j
    cdef const uint8_t *xb
    cdef float d
    for i in range(nb):
        xb = x + 18 * i
        d = rd_half(xb)
        for j in range(64):
            y[64 * i + j] = <float>(<int>((xb[2 + j // 4] >> ((j % 4) * 2)) & 3) - 1) * d


cdef void dq_iq4_nl(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int j
    cdef const uint8_t *xb
    cdef float *yb
    cdef float d
    for i in range(nb):
        xb = x + 18 * i
        yb = y + 32 * i
        d = rd_half(xb)
        for j in range(16):
            yb[j] = d * <float>KVALUES_IQ4NL[xb[2 + j] & 0xF]
            yb[j + 16] = d * <float>KVALUES_IQ4NL[xb[2 + j] >> 4]


cdef void dq_iq4_xs(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    # block_iq4_xs: d, scales_h (uint16), scales_l[4], qs[128]
    cdef Py_ssize_t i
    cdef int ib, j, ls
    cdef const uint8_t *xb
    cdef const uint8_t *qs
    cdef float *yb
    cdef float d, dl
    cdef uint16_t sh
    for i in range(nb):
        xb = x + 136 * i
        yb = y + 256 * i
        d = rd_half(xb)
        sh = rd_u16(xb + 2)
        qs = xb + 8
        for ib in range(8):
            ls = ((xb[4 + ib // 2] >> (4 * (ib % 2))) & 0xF) | (((sh >> (2 * ib)) & 3) << 4)
            dl = d * <float>(ls - 32)
            for j in range(16):
                yb[j] = dl * <float>KVALUES_IQ4NL[qs[j] & 0xF]
                yb[j + 16] = dl * <float>KVALUES_IQ4NL[qs[j] >> 4]
            yb += 32
            qs += 16


cdef inline void put_signed(float *y, float db, const uint8_t *grid, uint8_t signs,
                            int n) noexcept nogil:
    cdef int j
    cdef float t
    for j in range(n):
        t = db * <float>grid[j]
        y[j] = -t if (signs >> j) & 1 else t


cdef void dq_iq2_xxs(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    # block_iq2_xxs: d, qs uint16[32]; per 32 elements two uint32:
    # 4 grid indices, then 4x7 sign bits and a 4-bit scale
    cdef Py_ssize_t i
    cdef int ib, li
    cdef const uint8_t *xb
    cdef const uint8_t *a
    cdef float *yb
    cdef float d, db
    cdef uint32_t aux1
    for i in range(nb):
        xb = x + 66 * i
        yb = y + 256 * i
        d = rd_half(xb)
        for ib in range(8):
            a = xb + 2 + 8 * ib
            aux1 = rd_u32(a + 4)
            db = d * (<float>0.5 + <float>(aux1 >> 28)) * <float>0.25
            for li in range(4):
                put_signed(yb, db, IQ2XXS_GRID + 8 * a[li],
                           KSIGNS_IQ2XS[(aux1 >> (7 * li)) & 127], 8)
                yb += 8


cdef void dq_iq2_xs(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    # block_iq2_xs: d, qs uint16[32] (9-bit grid index | 7-bit sign index), scales[8]
    cdef Py_ssize_t i
    cdef int ib, li
    cdef const uint8_t *xb
    cdef float *yb
    cdef float d
    cdef float db[2]
    cdef uint16_t v
    for i in range(nb):
        xb = x + 74 * i
        yb = y + 256 * i
        d = rd_half(xb)
        for ib in range(8):
            db[0] = d * (<float>0.5 + <float>(xb[66 + ib] & 0xF)) * <float>0.25
            db[1] = d * (<float>0.5 + <float>(xb[66 + ib] >> 4)) * <float>0.25
            for li in range(4):
                v = rd_u16(xb + 2 + 2 * (4 * ib + li))
                put_signed(yb, db[li // 2], IQ2XS_GRID + 8 * (v & 511), KSIGNS_IQ2XS[v >> 9], 8)
                yb += 8


cdef void dq_iq2_s(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    # block_iq2_s: d, qs[64] (32 grid low bytes, then 32 sign bytes), qh[8], scales[8]
    cdef Py_ssize_t i
    cdef int ib, li, idx
    cdef const uint8_t *xb
    cdef const uint8_t *qs
    cdef const uint8_t *signs
    cdef const uint8_t *qh
    cdef float *yb
    cdef float d
    cdef float db[2]
    for i in range(nb):
        xb = x + 82 * i
        yb = y + 256 * i
        d = rd_half(xb)
        qs = xb + 2
        signs = xb + 2 + 32
        qh = xb + 66
        for ib in range(8):
            db[0] = d * (<float>0.5 + <float>(xb[74 + ib] & 0xF)) * <float>0.25
            db[1] = d * (<float>0.5 + <float>(xb[74 + ib] >> 4)) * <float>0.25
            for li in range(4):
                idx = qs[li] | ((qh[ib] << (8 - 2 * li)) & 0x300)
                put_signed(yb, db[li // 2], IQ2S_GRID + 8 * idx, signs[li], 8)
                yb += 8
            qs += 4
            signs += 4


cdef void dq_iq3_xxs(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    # block_iq3_xxs: d, qs[64] grid indices, then 8 uint32 of 4x7 sign bits + 4-bit scale
    cdef Py_ssize_t i
    cdef int ib, li
    cdef const uint8_t *xb
    cdef const uint8_t *qs
    cdef float *yb
    cdef float d, db
    cdef uint32_t aux
    cdef uint8_t signs
    for i in range(nb):
        xb = x + 98 * i
        yb = y + 256 * i
        d = rd_half(xb)
        qs = xb + 2
        for ib in range(8):
            aux = rd_u32(xb + 2 + 64 + 4 * ib)
            db = d * (<float>0.5 + <float>(aux >> 28)) * <float>0.5
            for li in range(4):
                signs = KSIGNS_IQ2XS[(aux >> (7 * li)) & 127]
                put_signed(yb, db, IQ3XXS_GRID + 4 * qs[2 * li], signs, 4)
                put_signed(yb + 4, db, IQ3XXS_GRID + 4 * qs[2 * li + 1], <uint8_t>(signs >> 4), 4)
                yb += 8
            qs += 8


cdef void dq_iq3_s(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    # block_iq3_s: d, qs[64], qh[8], signs[32], scales[4]
    cdef Py_ssize_t i
    cdef int ib, li, half, i1, i2
    cdef const uint8_t *xb
    cdef const uint8_t *qs
    cdef const uint8_t *qh
    cdef const uint8_t *signs
    cdef float *yb
    cdef float d, db
    for i in range(nb):
        xb = x + 110 * i
        yb = y + 256 * i
        d = rd_half(xb)
        qs = xb + 2
        qh = xb + 66
        signs = xb + 74
        for ib in range(0, 8, 2):
            for half in range(2):
                if half == 0:
                    db = d * <float>(1 + 2 * (xb[106 + ib // 2] & 0xF))
                else:
                    db = d * <float>(1 + 2 * (xb[106 + ib // 2] >> 4))
                for li in range(4):
                    i1 = qs[2 * li] | ((qh[half] << (8 - 2 * li)) & 256)
                    i2 = qs[2 * li + 1] | ((qh[half] << (7 - 2 * li)) & 256)
                    put_signed(yb, db, IQ3S_GRID + 4 * i1, signs[li], 4)
                    put_signed(yb + 4, db, IQ3S_GRID + 4 * i2, <uint8_t>(signs[li] >> 4), 4)
                    yb += 8
                qs += 8
                signs += 4
            qh += 2


cdef void dq_iq1_s(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    # block_iq1_s: d, qs[32], qh uint16[8]
    cdef Py_ssize_t i
    cdef int ib, li, j, idx
    cdef const uint8_t *xb
    cdef const uint8_t *qs
    cdef const int8_t *grid
    cdef float *yb
    cdef float d, dl, delta
    cdef uint16_t qh
    for i in range(nb):
        xb = x + 50 * i
        yb = y + 256 * i
        d = rd_half(xb)
        qs = xb + 2
        for ib in range(8):
            qh = rd_u16(xb + 34 + 2 * ib)
            dl = d * <float>(2 * ((qh >> 12) & 7) + 1)
            delta = <float>-0.125 if (qh & 0x8000) else <float>0.125
            for li in range(4):
                idx = qs[li] | (((qh >> (3 * li)) & 7) << 8)
                grid = IQ1S_GRID + 8 * idx
                for j in range(8):
                    yb[j] = dl * (<float>grid[j] + delta)
                yb += 8
            qs += 4


cdef void dq_iq1_m(const uint8_t *x, float *y, Py_ssize_t nb) noexcept nogil:
    # block_iq1_m: qs[32], qh[16], scales[8] (4 uint16; the fp16 scale is their top nibbles)
    cdef Py_ssize_t i
    cdef int ib, li, j
    cdef const uint8_t *xb
    cdef const uint8_t *qs
    cdef const uint8_t *qh
    cdef const int8_t *grid
    cdef float *yb
    cdef float d, dl1, dl2, dl
    cdef uint16_t sc[4]
    cdef uint16_t scale
    cdef int idx[4]
    cdef float delta[4]
    for i in range(nb):
        xb = x + 56 * i
        yb = y + 256 * i
        for li in range(4):
            sc[li] = rd_u16(xb + 48 + 2 * li)
        scale = <uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0)
                           | ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000))
        d = fp16_to_fp32(scale)
        qs = xb
        qh = xb + 32
        for ib in range(8):
            dl1 = d * <float>(2 * ((sc[ib // 2] >> (6 * (ib % 2) + 0)) & 0x7) + 1)
            dl2 = d * <float>(2 * ((sc[ib // 2] >> (6 * (ib % 2) + 3)) & 0x7) + 1)
            idx[0] = qs[0] | ((qh[0] << 8) & 0x700)
            idx[1] = qs[1] | ((qh[0] << 4) & 0x700)
            idx[2] = qs[2] | ((qh[1] << 8) & 0x700)
            idx[3] = qs[3] | ((qh[1] << 4) & 0x700)
            delta[0] = <float>-0.125 if (qh[0] & 0x08) else <float>0.125
            delta[1] = <float>-0.125 if (qh[0] & 0x80) else <float>0.125
            delta[2] = <float>-0.125 if (qh[1] & 0x08) else <float>0.125
            delta[3] = <float>-0.125 if (qh[1] & 0x80) else <float>0.125
            for li in range(4):
                dl = dl1 if li < 2 else dl2
                grid = IQ1S_GRID + 8 * idx[li]
                for j in range(8):
                    yb[j] = dl * (<float>grid[j] + delta[li])
                yb += 8
            qs += 4
            qh += 2


# ---------------------------------------------------------------------------
# dispatch
# ---------------------------------------------------------------------------
cdef quant_fn _quant_fn(int t) noexcept nogil:
    if t == T_F32:
        return q_f32
    if t == T_F16:
        return q_f16
    if t == T_BF16:
        return q_bf16
    if t == T_Q4_0:
        return lkg_q4_0_avx2 if lkg_simd_level(-1) == 2 else q_q4_0
    if t == T_Q4_1:
        return q_q4_1
    if t == T_Q5_0:
        return q_q5_0
    if t == T_Q5_1:
        return q_q5_1
    if t == T_Q8_0:
        return lkg_q8_0_avx2 if lkg_simd_level(-1) == 2 else q_q8_0
    if t == T_Q8_1:
        return q_q8_1
    if t == T_Q8_K:
        return q_q8_k
    if t == T_Q2_K:
        return q_q2_k
    if t == T_Q3_K:
        return q_q3_k
    if t == T_Q4_K:
        return q_q4_k
    if t == T_Q5_K:
        return q_q5_k
    if t == T_Q6_K:
        return q_q6_k
    if t == T_TQ1_0:
        return q_tq1_0
    if t == T_TQ2_0:
        return q_tq2_0
    if t == T_MXFP4:
        return q_mxfp4
    if t == T_NVFP4:
        return q_nvfp4
    if t == T_Q1_0:
        return q_q1_0
    if t == T_Q2_0:
        return q_q2_0
    if t == T_IQ4_NL:
        return q_iq4_nl
    if t == T_IQ4_XS:
        return q_iq4_xs
    return NULL


cdef row_fn _row_fn(int t) noexcept nogil:
    """Quantizers that use an importance matrix (ggml's quantize_row_*_impl), per row."""
    if t == T_Q4_0:
        return qw_q4_0
    if t == T_Q4_1:
        return qw_q4_1
    if t == T_Q5_0:
        return qw_q5_0
    if t == T_Q5_1:
        return qw_q5_1
    if t == T_Q2_K:
        return qw_q2_k
    if t == T_Q3_K:
        return qw_q3_k
    if t == T_Q4_K:
        return qw_q4_k
    if t == T_Q5_K:
        return qw_q5_k
    if t == T_Q6_K:
        return qw_q6_k
    if t == T_IQ4_NL:
        return qw_iq4_nl
    if t == T_IQ4_XS:
        return qw_iq4_xs
    return NULL


cdef dequant_fn _dequant_fn(int t) noexcept nogil:
    if t == T_F32:
        return dq_f32
    if t == T_F16:
        return dq_f16
    if t == T_BF16:
        return dq_bf16
    if t == T_Q4_0:
        return lkg_dq_q4_0_avx2 if lkg_simd_level(-1) == 2 else dq_q4_0
    if t == T_Q4_1:
        return dq_q4_1
    if t == T_Q5_0:
        return dq_q5_0
    if t == T_Q5_1:
        return dq_q5_1
    if t == T_Q8_0:
        return lkg_dq_q8_0_avx2 if lkg_simd_level(-1) == 2 else dq_q8_0
    if t == T_Q8_1:
        return dq_q8_1
    if t == T_Q2_K:
        return dq_q2_k
    if t == T_Q3_K:
        return dq_q3_k
    if t == T_Q4_K:
        return dq_q4_k
    if t == T_Q5_K:
        return dq_q5_k
    if t == T_Q6_K:
        return dq_q6_k
    if t == T_Q8_K:
        return dq_q8_k
    if t == T_IQ2_XXS:
        return dq_iq2_xxs
    if t == T_IQ2_XS:
        return dq_iq2_xs
    if t == T_IQ2_S:
        return dq_iq2_s
    if t == T_IQ3_XXS:
        return dq_iq3_xxs
    if t == T_IQ3_S:
        return dq_iq3_s
    if t == T_IQ1_S:
        return dq_iq1_s
    if t == T_IQ1_M:
        return dq_iq1_m
    if t == T_IQ4_NL:
        return dq_iq4_nl
    if t == T_IQ4_XS:
        return dq_iq4_xs
    if t == T_TQ1_0:
        return dq_tq1_0
    if t == T_TQ2_0:
        return dq_tq2_0
    if t == T_MXFP4:
        return dq_mxfp4
    if t == T_NVFP4:
        return dq_nvfp4
    if t == T_Q1_0:
        return dq_q1_0
    if t == T_Q2_0:
        return dq_q2_0
    return NULL


def kernels(str force=None):
    """The Q4_0/Q8_0 (de)quantize kernels in use: ``"avx2"`` or ``"portable"``.

    ``force="portable"`` or ``"avx2"`` switches (``"avx2"`` only if the CPU has it);
    the environment variable ``LAYOUTKIT_GGML_KERNELS=portable`` sets the default.
    """
    cdef int level
    if force is None:
        level = lkg_simd_level(-1)
    elif force == "portable":
        level = lkg_simd_level(0)
    elif force == "avx2":
        level = lkg_simd_level(2)
    else:
        raise ValueError(f"force={force!r}: expected 'portable' or 'avx2'")
    return "avx2" if level == 2 else "portable"


def can_quantize(int type_id):
    """True if a quantize kernel exists for the ggml type id."""
    return _quant_fn(type_id) != NULL


def can_dequantize(int type_id):
    """True if a dequantize kernel exists for the ggml type id."""
    return _dequant_fn(type_id) != NULL


cdef extern from "layoutkit_pool.h" nogil:
    ctypedef void (*lk_pool_fn)(void* ctx, Py_ssize_t item) noexcept nogil
    int lk_pool_run(int threads, Py_ssize_t nitems, lk_pool_fn fn, void* ctx)
    int lk_pool_native()


cdef struct BlockJob:
    quant_fn quant          # one of quant / dequant / row is set
    dequant_fn dequant
    row_fn row
    const float* qw
    const char* src
    char* dst
    Py_ssize_t n            # blocks (rows for ``row``)
    Py_ssize_t per          # blocks (rows) per item
    Py_ssize_t src_step     # bytes per block (row) on each side
    Py_ssize_t dst_step
    Py_ssize_t n_per_row


cdef void block_item(void* ctx, Py_ssize_t item) noexcept nogil:
    """Blocks (or rows) ``[item * per, ...)`` of a threaded run: the pool's task."""
    cdef const BlockJob* J = <const BlockJob*>ctx
    cdef Py_ssize_t lo = item * J.per
    cdef Py_ssize_t hi = lo + J.per if lo + J.per < J.n else J.n
    cdef Py_ssize_t r
    if J.quant != NULL:
        J.quant(<const float*>(J.src + lo * J.src_step), <uint8_t*>(J.dst + lo * J.dst_step),
                hi - lo)
    elif J.dequant != NULL:
        J.dequant(<const uint8_t*>(J.src + lo * J.src_step), <float*>(J.dst + lo * J.dst_step),
                  hi - lo)
    else:
        for r in range(lo, hi):
            J.row(<const float*>(J.src + r * J.src_step), <uint8_t*>(J.dst + r * J.dst_step),
                  J.n_per_row, J.qw)


cdef int run_blocks(BlockJob* job, int threads) noexcept nogil:
    """Run ``job`` on ``threads`` threads (a few items per thread, so a slowed core
    takes fewer); -1 when the platform has no native pool."""
    if threads <= 1:
        job.per = job.n
        block_item(job, 0)
        return 0
    job.per = (job.n + 4 * threads - 1) // (4 * threads)
    return lk_pool_run(threads, (job.n + job.per - 1) // job.per, block_item, job)


def native_pool():
    """True if ``threads=`` runs on the native worker pool (False: Windows builds)."""
    return lk_pool_native() != 0


def quantize_blocks(int type_id, Py_ssize_t block_size, Py_ssize_t type_size,
                    const float[::1] x, uint8_t[::1] out, int threads=1):
    """Quantize ``len(x) // block_size`` whole blocks of ``x`` into ``out`` (GIL released;
    ``threads > 1`` splits the blocks across the native pool)."""
    cdef quant_fn fn = _quant_fn(type_id)
    cdef BlockJob job
    cdef int rc
    cdef Py_ssize_t nb
    if fn == NULL:
        raise ValueError(f"no quantize kernel for ggml type id {type_id}")
    if block_size <= 0 or type_size <= 0 or x.shape[0] % block_size != 0:
        raise ValueError("x must hold whole blocks")
    nb = x.shape[0] // block_size
    if out.shape[0] != nb * type_size:
        raise ValueError(f"out must hold {nb * type_size} bytes, got {out.shape[0]}")
    if nb == 0:
        return
    job.quant, job.dequant, job.row = fn, NULL, NULL
    job.src, job.dst = <const char*>&x[0], <char*>&out[0]
    job.n, job.src_step, job.dst_step = nb, block_size * sizeof(float), type_size
    with nogil:
        rc = run_blocks(&job, threads)
        if rc != 0:
            fn(&x[0], &out[0], nb)


def uses_imatrix(int type_id):
    """True if ggml's quantizer for the type id uses importance weights."""
    return _row_fn(type_id) != NULL


def quantize_rows_imatrix(int type_id, Py_ssize_t n_per_row, Py_ssize_t block_size,
                          Py_ssize_t type_size, const float[::1] x, const float[::1] qw,
                          uint8_t[::1] out, int threads=1):
    """Quantize whole rows of ``n_per_row`` values with importance weights ``qw`` (GIL released).

    One weight per column (``len(qw) == n_per_row``), as ggml_quantize_chunk takes them.
    """
    cdef row_fn fn = _row_fn(type_id)
    cdef BlockJob job
    cdef int rc
    cdef Py_ssize_t nrows, r, row_bytes
    if fn == NULL:
        raise ValueError(f"no importance-matrix quantizer for ggml type id {type_id}")
    if (n_per_row <= 0 or block_size <= 0 or type_size <= 0 or n_per_row % block_size != 0
            or x.shape[0] % n_per_row != 0):
        raise ValueError("x must hold whole rows of whole blocks")
    if qw.shape[0] != n_per_row:
        raise ValueError(f"qw must hold {n_per_row} weights, got {qw.shape[0]}")
    nrows = x.shape[0] // n_per_row
    row_bytes = n_per_row // block_size * type_size
    if out.shape[0] != nrows * row_bytes:
        raise ValueError(f"out must hold {nrows * row_bytes} bytes, got {out.shape[0]}")
    if nrows == 0:
        return
    job.quant, job.dequant, job.row, job.qw = NULL, NULL, fn, &qw[0]
    job.src, job.dst = <const char*>&x[0], <char*>&out[0]
    job.n, job.n_per_row = nrows, n_per_row
    job.src_step, job.dst_step = n_per_row * sizeof(float), row_bytes
    with nogil:
        rc = run_blocks(&job, threads)
        if rc != 0:
            for r in range(nrows):
                fn(&x[r * n_per_row], &out[r * row_bytes], n_per_row, &qw[0])


def dequantize_blocks(int type_id, Py_ssize_t block_size, Py_ssize_t type_size,
                      const uint8_t[::1] q, float[::1] out, int threads=1):
    """Dequantize ``len(q) // type_size`` whole blocks of ``q`` into ``out`` (GIL released;
    ``threads > 1`` splits the blocks across the native pool)."""
    cdef dequant_fn fn = _dequant_fn(type_id)
    cdef BlockJob job
    cdef int rc
    cdef Py_ssize_t nb
    if fn == NULL:
        raise ValueError(f"no dequantize kernel for ggml type id {type_id}")
    if block_size <= 0 or type_size <= 0 or q.shape[0] % type_size != 0:
        raise ValueError("q must hold whole blocks")
    nb = q.shape[0] // type_size
    if out.shape[0] != nb * block_size:
        raise ValueError(f"out must hold {nb * block_size} floats, got {out.shape[0]}")
    if nb == 0:
        return
    job.quant, job.dequant, job.row = NULL, fn, NULL
    job.src, job.dst = <const char*>&q[0], <char*>&out[0]
    job.n, job.src_step, job.dst_step = nb, type_size, block_size * sizeof(float)
    with nogil:
        rc = run_blocks(&job, threads)
        if rc != 0:
            fn(&q[0], &out[0], nb)


cdef bint _plain_array(object a, int type_num, bint writeable):
    # A C-contiguous, aligned ndarray of this type (and writeable) of 1+ dims.
    cdef cnp.ndarray arr
    if type(a) is not np.ndarray:
        return False
    arr = <cnp.ndarray>a
    return (cnp.PyArray_NDIM(arr) >= 1 and cnp.PyArray_TYPE(arr) == type_num and
            cnp.PyArray_IS_C_CONTIGUOUS(arr) and cnp.PyArray_ISALIGNED(arr) and
            (not writeable or cnp.PyArray_ISWRITEABLE(arr)))


def blocks_into(bint quantize, int type_id, Py_ssize_t block_size, Py_ssize_t type_size,
                object src, object out):
    """One thread's quantize (float32 -> blocks) or dequantize (blocks -> float32)
    of ``src`` into ``out`` when both are already what the call needs: the
    repeat of a call validated before, checked in C. ``src`` C-contiguous and
    aligned, whole blocks in its last dim; ``out`` of the other type and the
    matching shape, C-contiguous, writeable and apart from ``src``. Returns
    ``out``, or None when a check fails (the caller then validates in full)."""
    cdef cnp.ndarray s, o
    cdef int k, nd
    cdef Py_ssize_t n, want, nb, lo, hi
    cdef quant_fn qf = _quant_fn(type_id) if quantize else NULL
    cdef dequant_fn df = NULL if quantize else _dequant_fn(type_id)
    cdef const char* sp
    cdef char* op
    if (qf == NULL and df == NULL) or block_size <= 0 or type_size <= 0:
        return None
    if not (_plain_array(src, cnp.NPY_FLOAT32 if quantize else cnp.NPY_UINT8, False) and
            _plain_array(out, cnp.NPY_UINT8 if quantize else cnp.NPY_FLOAT32, True)):
        return None
    s, o = <cnp.ndarray>src, <cnp.ndarray>out
    nd = cnp.PyArray_NDIM(s)
    if cnp.PyArray_NDIM(o) != nd:
        return None
    for k in range(nd - 1):
        if cnp.PyArray_DIMS(s)[k] != cnp.PyArray_DIMS(o)[k]:
            return None
    n = cnp.PyArray_DIMS(s)[nd - 1]
    if quantize:
        want = n // block_size * type_size
        if n % block_size:
            return None
    else:
        want = n // type_size * block_size
        if n % type_size:
            return None
    if cnp.PyArray_DIMS(o)[nd - 1] != want:
        return None
    lo, hi = <Py_ssize_t>cnp.PyArray_DATA(s), <Py_ssize_t>cnp.PyArray_DATA(o)
    if lo < hi + cnp.PyArray_NBYTES(o) and hi < lo + cnp.PyArray_NBYTES(s):
        return None
    nb = cnp.PyArray_SIZE(s) // (block_size if quantize else type_size)
    sp, op = <const char*>cnp.PyArray_DATA(s), <char*>cnp.PyArray_DATA(o)
    if nb * type_size < 16384:  # small: keep the GIL (releasing it costs more)
        if quantize:
            qf(<const float*>sp, <uint8_t*>op, nb)
        else:
            df(<const uint8_t*>sp, <float*>op, nb)
        return out
    with nogil:
        if quantize:
            qf(<const float*>sp, <uint8_t*>op, nb)
        else:
            df(<const uint8_t*>sp, <float*>op, nb)
    return out


cdef void _free_row_kernels(object capsule) noexcept:
    free(PyCapsule_GetPointer(capsule, b"layoutkit.ggml_row_kernels"))


def row_kernels_capsule(int type_id):
    """The type's C kernels for ``layoutkit.kernels``: a PyCapsule named
    ``"layoutkit.ggml_row_kernels"`` holding three function pointers, each NULL
    when absent: quantize ``nb`` blocks, dequantize ``nb`` blocks, and quantize one
    row of ``n`` values with importance weights."""
    cdef void** fns = <void**>malloc(3 * sizeof(void*))
    if fns == NULL:
        raise MemoryError()
    fns[0] = <void*>_quant_fn(type_id)
    fns[1] = <void*>_dequant_fn(type_id)
    fns[2] = <void*>_row_fn(type_id)
    return PyCapsule_New(<void*>fns, b"layoutkit.ggml_row_kernels", _free_row_kernels)


def fp32_to_fp16_bits(const float[::1] x, uint16_t[::1] out):
    """ggml's GGML_FP32_TO_FP16 over an array (bit patterns out)."""
    cdef Py_ssize_t i, n = x.shape[0]
    if out.shape[0] != n:
        raise ValueError("out must have the length of x")
    with nogil:
        for i in range(n):
            out[i] = fp32_to_fp16(x[i])


def fp16_bits_to_fp32(const uint16_t[::1] h, float[::1] out):
    """ggml's GGML_FP16_TO_FP32 over an array of bit patterns."""
    cdef Py_ssize_t i, n = h.shape[0]
    if out.shape[0] != n:
        raise ValueError("out must have the length of h")
    with nogil:
        for i in range(n):
            out[i] = fp16_to_fp32(h[i])
