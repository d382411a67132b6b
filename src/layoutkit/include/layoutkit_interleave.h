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


/* 0 = portable, 1 = sse4.1, 2 = avx2 */
static int lk_simd_level = -1;

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

#endif /* LAYOUTKIT_INTERLEAVE_H */
