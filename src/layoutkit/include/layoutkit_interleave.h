/*
 * Channel-interleave micro-kernels for the layoutkit repack kernel.
 *
 *   out[i*ostride + j] = lane[j][i]      for i < m, j < k
 *
 * Each lane is a contiguous stream of m elements of es bytes (a source channel,
 * or a buffer of padding values). The loops are written with compile-time lane
 * counts (2, 3, 4, 8, 16) so the compiler vectorises the interleaving stores; wider
 * interleaves go lane by lane (measured faster than a 32-way unrolled loop). x86-64's baseline
 * (SSE2) has no byte shuffle, which leaves 3-lane byte interleaves scalar, so on
 * GCC/Clang x86 the same portable C is also compiled for SSE4.1 and AVX2 and the
 * best version is picked once at run time from the CPU's features. Every other
 * platform (and MSVC) uses the portable build, which the tests cover everywhere
 * via LAYOUTKIT_SIMD=portable.
 */
#ifndef LAYOUTKIT_INTERLEAVE_H
#define LAYOUTKIT_INTERLEAVE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(_MSC_VER) && !defined(restrict)
#define restrict __restrict
#endif

#define LK_IL_LOOP(T, K)                                                   \
    do {                                                                   \
        T *restrict o_ = (T *)out;                                         \
        for (ptrdiff_t i_ = 0; i_ < m; i_++)                               \
            for (int j_ = 0; j_ < (K); j_++)                               \
                o_[i_ * (K) + j_] = ((const T *)lanes[j_])[i_];            \
    } while (0)

#define LK_IL_SWITCH_K(T)                                                  \
    switch (ostride == k ? k : 0) {                                        \
    case 2: LK_IL_LOOP(T, 2); return;                                      \
    case 3: LK_IL_LOOP(T, 3); return;                                      \
    case 4: LK_IL_LOOP(T, 4); return;                                      \
    case 8: LK_IL_LOOP(T, 8); return;                                      \
    case 16: LK_IL_LOOP(T, 16); return;                                    \
    default: {                                                             \
        T *restrict o_ = (T *)out;                                         \
        for (int j_ = 0; j_ < k; j_++) {                                   \
            const T *l_ = (const T *)lanes[j_];                            \
            for (ptrdiff_t i_ = 0; i_ < m; i_++) o_[i_ * ostride + j_] = l_[i_]; \
        }                                                                  \
        return;                                                            \
    }                                                                      \
    }

#define LK_DEFINE_INTERLEAVE(NAME, ATTR)                                   \
    ATTR static void NAME(void *restrict out, const void *const *lanes,    \
                          ptrdiff_t m, int k, ptrdiff_t ostride, int es) { \
        switch (es) {                                                      \
        case 1: LK_IL_SWITCH_K(uint8_t)                                    \
        case 2: LK_IL_SWITCH_K(uint16_t)                                   \
        case 4: LK_IL_SWITCH_K(uint32_t)                                   \
        case 8: LK_IL_SWITCH_K(uint64_t)                                   \
        default:                                                           \
            for (ptrdiff_t i_ = 0; i_ < m; i_++)                           \
                for (int j_ = 0; j_ < k; j_++)                             \
                    memcpy((char *)out + (i_ * ostride + j_) * es,         \
                           (const char *)lanes[j_] + i_ * es, (size_t)es); \
        }                                                                  \
    }

LK_DEFINE_INTERLEAVE(lk_interleave_portable, )

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define LK_HAVE_X86_CLONES 1
LK_DEFINE_INTERLEAVE(lk_interleave_sse41, __attribute__((target("sse4.1"))))
LK_DEFINE_INTERLEAVE(lk_interleave_avx2, __attribute__((target("avx2"))))
#endif


/* 0 = portable, 1 = sse4.1, 2 = avx2: the build used for interleaves. */
static int lk_simd_level = -1;
/* Whether the CPU runs AVX2 (element conversions prefer it: wider divides). */
static int lk_avx2_ok = -1;

static int lk_detect_simd(void) {
    const char *force = getenv("LAYOUTKIT_SIMD");
    if (force && strcmp(force, "portable") == 0) return 0;
#ifdef LK_HAVE_X86_CLONES
    __builtin_cpu_init();
    if (force && strcmp(force, "sse4.1") == 0) return __builtin_cpu_supports("sse4.1") ? 1 : 0;
    /* SSE4.1 first: AVX2's lane-crossing permutes make 3-lane byte interleaves slower. */
    if (__builtin_cpu_supports("sse4.1")) return 1;
    if (__builtin_cpu_supports("avx2")) return 2;
#endif
    return 0;
}

static inline int lk_simd(void) {
    if (lk_simd_level < 0) lk_simd_level = lk_detect_simd();
    return lk_simd_level;
}

static inline int lk_avx2(void) {
    if (lk_avx2_ok < 0) {
        int ok = 0;
#ifdef LK_HAVE_X86_CLONES
        if (lk_simd() != 0) {
            __builtin_cpu_init();
            ok = __builtin_cpu_supports("avx2") ? 1 : 0;
        }
#endif
        lk_avx2_ok = ok;
    }
    return lk_avx2_ok;
}

static inline void lk_interleave(void *restrict out, const void *const *lanes, ptrdiff_t m,
                                 int k, ptrdiff_t ostride, int es) {
#ifdef LK_HAVE_X86_CLONES
    int level = lk_simd();
    if (level == 1) { lk_interleave_sse41(out, lanes, m, k, ostride, es); return; }
    if (level == 2) { lk_interleave_avx2(out, lanes, m, k, ostride, es); return; }
#endif
    lk_interleave_portable(out, lanes, m, k, ostride, es);
}

static inline const char *lk_simd_name(void) {
    switch (lk_simd()) {
    case 1: return "sse4.1";
    case 2: return "avx2";
    default: return "portable";
    }
}

/*
 * Tile transposes for wide interleaves (many lanes):
 *
 *   dst[i*drow + j*es] = src[j*slane + i*es]     for i < rows, j < lanes
 *
 * (strides in bytes). On x86-64, SSE2 is part of the baseline, so full tiles of
 * 16x16 bytes, 8x8 16-bit, 4x4 32-bit or 2x2 64-bit elements are transposed in
 * registers with log2(N) rounds of unpacks (round r pairs vector j with j+N/2,
 * low half to 2j, high half to 2j+1); edges and other platforms use scalar
 * loops over small blocks.
 */
#if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
#include <emmintrin.h>
#define LK_HAVE_SSE2 1

#define LK_TRANSPOSE_TILE(NAME, N, UNPLO, UNPHI)                                 \
    static inline void NAME(char *d, ptrdiff_t ds, const char *s, ptrdiff_t ss) { \
        __m128i r[N], t[N];                                                      \
        for (int k = 0; k < (N); k++)                                            \
            r[k] = _mm_loadu_si128((const __m128i *)(s + k * ss));               \
        for (int round = 1; round < (N); round *= 2) {                           \
            for (int j = 0; j < (N) / 2; j++) {                                  \
                t[2 * j] = UNPLO(r[j], r[j + (N) / 2]);                          \
                t[2 * j + 1] = UNPHI(r[j], r[j + (N) / 2]);                      \
            }                                                                    \
            for (int k = 0; k < (N); k++) r[k] = t[k];                           \
        }                                                                        \
        for (int k = 0; k < (N); k++)                                            \
            _mm_storeu_si128((__m128i *)(d + k * ds), r[k]);                     \
    }

LK_TRANSPOSE_TILE(lk_tile_8, 16, _mm_unpacklo_epi8, _mm_unpackhi_epi8)
LK_TRANSPOSE_TILE(lk_tile_16, 8, _mm_unpacklo_epi16, _mm_unpackhi_epi16)
LK_TRANSPOSE_TILE(lk_tile_32, 4, _mm_unpacklo_epi32, _mm_unpackhi_epi32)
LK_TRANSPOSE_TILE(lk_tile_64, 2, _mm_unpacklo_epi64, _mm_unpackhi_epi64)
#endif

/* Lanes per register tile for an element size (0: no register tiles here). */
static inline int lk_tile_lanes(int es) {
#ifdef LK_HAVE_SSE2
    switch (es) {
    case 1: return 16;
    case 2: return 8;
    case 4: return 4;
    case 8: return 2;
    }
#endif
    (void)es;
    return 0;
}

static void lk_transpose(char *restrict dst, ptrdiff_t drow, const char *restrict src,
                         ptrdiff_t slane, ptrdiff_t rows, ptrdiff_t lanes, int es) {
    ptrdiff_t i = 0, j;
    int n = lk_simd() == 0 ? 0 : lk_tile_lanes(es);
#ifdef LK_HAVE_SSE2
    if (n) {
        /* Cache blocking: a block of rows whose destination rows fit in ~64 KiB
         * (L2), filled one group of lanes (a cache line of each row) at a time,
         * one register tile of lanes down the whole block. Each lane is then read
         * as one sequential stream, which the prefetchers follow even when lanes
         * sit a power of two apart (the planes of an NCHW tensor share cache sets). */
        ptrdiff_t block = drow > 0 ? (65536 / drow) / n * n : n;
        ptrdiff_t group = 64 / es; /* lanes: one cache line of each destination row */
        if (block < 4 * n) block = 4 * n;
        if (group < n) group = n;
        ptrdiff_t full_rows = rows - rows % n;
        ptrdiff_t full_lanes = lanes - lanes % n;
        ptrdiff_t line_rows = 64 / es;
        char stage[16 * 64];
        for (; i < full_rows; i += block) {
            ptrdiff_t iend = i + block < full_rows ? i + block : full_rows;
            for (ptrdiff_t jg = 0; jg < full_lanes; jg += group) {
                ptrdiff_t jend = jg + group < full_lanes ? jg + group : full_lanes;
                for (j = jg; j < jend; j += n) {
                    ptrdiff_t ii = i;
                    /* Stage one 64-byte line of each of the n lanes in a small
                     * buffer, then transpose 4 tiles from it: every source line is
                     * read once, whole, even when n lanes collide in one cache set. */
                    for (; ii + line_rows <= iend; ii += line_rows) {
                        for (int k = 0; k < n; k++)
                            memcpy(stage + k * 64, src + (j + k) * slane + ii * es, 64);
                        for (ptrdiff_t r = 0; r < line_rows; r += n) {
                            char *d = dst + (ii + r) * drow + j * es;
                            const char *s = stage + r * es;
                            switch (es) {
                            case 1: lk_tile_8(d, drow, s, 64); break;
                            case 2: lk_tile_16(d, drow, s, 64); break;
                            case 4: lk_tile_32(d, drow, s, 64); break;
                            default: lk_tile_64(d, drow, s, 64); break;
                            }
                        }
                    }
                    for (; ii < iend; ii += n) {
                        char *d = dst + ii * drow + j * es;
                        const char *s = src + j * slane + ii * es;
                        switch (es) {
                        case 1: lk_tile_8(d, drow, s, slane); break;
                        case 2: lk_tile_16(d, drow, s, slane); break;
                        case 4: lk_tile_32(d, drow, s, slane); break;
                        default: lk_tile_64(d, drow, s, slane); break;
                        }
                    }
                }
            }
            for (j = full_lanes; j < lanes; j++)
                for (ptrdiff_t ii = i; ii < iend; ii++)
                    memcpy(dst + ii * drow + j * es, src + j * slane + ii * es, (size_t)es);
        }
        i = full_rows;
    }
#endif
    /* Remaining rows (all rows without register tiles), in 8-row blocks. */
    for (; i < rows; i += 8) {
        ptrdiff_t i1 = i + 8 < rows ? i + 8 : rows;
        for (j = 0; j < lanes; j++)
            for (ptrdiff_t ii = i; ii < i1; ii++)
                memcpy(dst + ii * drow + j * es, src + j * slane + ii * es, (size_t)es);
    }
}

#endif /* LAYOUTKIT_INTERLEAVE_H */
