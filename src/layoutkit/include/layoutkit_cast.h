/*
 * Element conversions fused into the repack kernel.
 *
 *   float -> integer : ONNX QuantizeLinear   q = saturate(rne(x / scale) + zero_point),
 *                      x / scale computed in float32 (fp16/bf16 widened exactly first),
 *                      NaN -> zero_point (layoutkit policy)
 *   integer -> float : ONNX DequantizeLinear y = (q - zero_point) * scale in float32,
 *                      then rounded to nearest even for fp16/bf16
 *   float -> float   : round to nearest even (fp32 <-> fp16 <-> bf16)
 *
 * Type codes are LK_T_*. Loops are written per (source, destination) pair so the
 * compiler vectorises the common ones; x86 builds add SSE4.1/AVX2 clones chosen at
 * run time (see layoutkit_interleave.h for the dispatch). Build with
 * -ffp-contract=off and without -ffast-math: the division must stay a division.
 */
#ifndef LAYOUTKIT_CAST_H
#define LAYOUTKIT_CAST_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "layoutkit_interleave.h"

enum {
    LK_T_F32 = 0,
    LK_T_F16 = 1,
    LK_T_BF16 = 2,
    LK_T_I8 = 3,
    LK_T_U8 = 4,
    LK_T_I16 = 5,
    LK_T_U16 = 6,
    LK_T_NTYPES = 7
};

static inline float lk_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t lk_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* IEEE binary16 -> binary32, exact (subnormals, infinities and NaN payloads kept). */
static inline float lk_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1fu) return lk_bits_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24, exact in float32 */
        float v = (float)man * 5.9604644775390625e-08f;
        return sign ? -v : v;
    }
    return lk_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

/* binary32 -> binary16, round to nearest even; NaN stays NaN (quiet). */
static inline uint16_t lk_f32_to_f16(float f) {
    uint32_t u = lk_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) /* inf or NaN */
        return (uint16_t)(sign | 0x7c00u | (a > 0x7f800000u ? (0x200u | ((a >> 13) & 0x3ffu)) : 0u));
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: inf */
    if (a < 0x38800000u) {
        /* result is subnormal or zero: value / 2^-24 rounded to nearest even */
        float v = lk_bits_f32(a) * 16777216.0f; /* exact: scales by 2^24 */
        return (uint16_t)(sign | (uint16_t)rintf(v));
    }
    uint32_t rounded = a + 0xfffu + ((a >> 13) & 1u); /* RNE at bit 13 */
    return (uint16_t)(sign | ((rounded - 0x38000000u) >> 13));
}

static inline float lk_bf16_to_f32(uint16_t b) { return lk_bits_f32((uint32_t)b << 16); }

/* binary32 -> bfloat16, round to nearest even; NaN stays NaN (quiet). */
static inline uint16_t lk_f32_to_bf16(float f) {
    uint32_t u = lk_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* Written as selects over values (isnan, not v != v; no call inside a branch)
 * so compilers if-convert and vectorise the quantize loops. */
static inline int lk_quant(float x, float scale, float zp, float lo, float hi) {
    float v = x / scale;
    float r = rintf(v) + zp;
    r = isnan(v) ? zp : r;
    r = r < lo ? lo : r;
    r = r > hi ? hi : r;
    return (int)r;
}

/* One loop per (source, destination) pair; s is the source stride in bytes.
 * The contiguous case gets its own loop so it vectorises. */
#define LK_CAST_LOOP(ST, DT, LOAD, STORE)                                     \
    {                                                                         \
        DT *d_ = (DT *)dst;                                                   \
        if (s == (ptrdiff_t)sizeof(ST)) {                                     \
            const ST *s_ = (const ST *)src;                                   \
            for (ptrdiff_t i_ = 0; i_ < n; i_++) d_[i_] = STORE(LOAD(s_[i_])); \
        } else {                                                              \
            for (ptrdiff_t i_ = 0; i_ < n; i_++) {                            \
                ST x_;                                                        \
                memcpy(&x_, (const char *)src + i_ * s, sizeof(ST));          \
                d_[i_] = STORE(LOAD(x_));                                     \
            }                                                                 \
        }                                                                     \
        return 0;                                                             \
    }

#define LK_LD_F32(x) (x)
#define LK_LD_F16(x) lk_f16_to_f32(x)
#define LK_LD_BF16(x) lk_bf16_to_f32(x)
#define LK_LD_DEQ(x) (((float)(x) - zp) * scale)
#define LK_ST_F32(v) (v)
#define LK_ST_F16(v) lk_f32_to_f16(v)
#define LK_ST_BF16(v) lk_f32_to_bf16(v)
#define LK_ST_I8(v) ((int8_t)lk_quant((v), scale, zp, -128.0f, 127.0f))
#define LK_ST_U8(v) ((uint8_t)lk_quant((v), scale, zp, 0.0f, 255.0f))
#define LK_ST_I16(v) ((int16_t)lk_quant((v), scale, zp, -32768.0f, 32767.0f))
#define LK_ST_U16(v) ((uint16_t)lk_quant((v), scale, zp, 0.0f, 65535.0f))

#define LK_CAST_TO_FLOATS(ST, LOAD)                                           \
    switch (dt) {                                                             \
    case LK_T_F32: LK_CAST_LOOP(ST, float, LOAD, LK_ST_F32)                   \
    case LK_T_F16: LK_CAST_LOOP(ST, uint16_t, LOAD, LK_ST_F16)                \
    case LK_T_BF16: LK_CAST_LOOP(ST, uint16_t, LOAD, LK_ST_BF16)              \
    default: break;                                                           \
    }

#define LK_CAST_FROM_FLOAT(ST, LOAD)                                          \
    switch (dt) {                                                             \
    case LK_T_F32: LK_CAST_LOOP(ST, float, LOAD, LK_ST_F32)                   \
    case LK_T_F16: LK_CAST_LOOP(ST, uint16_t, LOAD, LK_ST_F16)                \
    case LK_T_BF16: LK_CAST_LOOP(ST, uint16_t, LOAD, LK_ST_BF16)              \
    case LK_T_I8: LK_CAST_LOOP(ST, int8_t, LOAD, LK_ST_I8)                    \
    case LK_T_U8: LK_CAST_LOOP(ST, uint8_t, LOAD, LK_ST_U8)                   \
    case LK_T_I16: LK_CAST_LOOP(ST, int16_t, LOAD, LK_ST_I16)                 \
    case LK_T_U16: LK_CAST_LOOP(ST, uint16_t, LOAD, LK_ST_U16)                \
    default: break;                                                           \
    }

/*
 * dst[i] = convert(*(src + i * s)) for i < n; dst contiguous, s in bytes.
 * Returns 0 on success, -1 for an unsupported pair (validated earlier in Python).
 */
#define LK_DEFINE_CAST(NAME, ATTR)                                            \
    ATTR static int NAME(void *restrict dst, const void *restrict src,        \
                         ptrdiff_t n, ptrdiff_t s, int st, int dt,            \
                         float scale, float zp) {                             \
        switch (st) {                                                         \
        case LK_T_F32: LK_CAST_FROM_FLOAT(float, LK_LD_F32) break;            \
        case LK_T_F16: LK_CAST_FROM_FLOAT(uint16_t, LK_LD_F16) break;         \
        case LK_T_BF16: LK_CAST_FROM_FLOAT(uint16_t, LK_LD_BF16) break;       \
        case LK_T_I8: LK_CAST_TO_FLOATS(int8_t, LK_LD_DEQ) break;             \
        case LK_T_U8: LK_CAST_TO_FLOATS(uint8_t, LK_LD_DEQ) break;            \
        case LK_T_I16: LK_CAST_TO_FLOATS(int16_t, LK_LD_DEQ) break;           \
        case LK_T_U16: LK_CAST_TO_FLOATS(uint16_t, LK_LD_DEQ) break;          \
        default: break;                                                       \
        }                                                                     \
        return -1;                                                            \
    }

LK_DEFINE_CAST(lk_cast_portable, )
#ifdef LK_HAVE_X86_CLONES
LK_DEFINE_CAST(lk_cast_sse41, __attribute__((target("sse4.1"))))
LK_DEFINE_CAST(lk_cast_avx2, __attribute__((target("avx2"))))
#endif


#ifdef LK_HAVE_X86_CLONES
#include <immintrin.h>
/*
 * AVX2 float32 -> int8/uint8 quantize of a contiguous run, 32 elements a step.
 * x / scale is computed as x * (1/scale): the two differ by at most ~3 units in
 * the last place, which can change the rounded result only when the quotient
 * lies within that distance of a half-integer. Such steps (and any step where
 * 1/scale is not a normal float) are redone with a true division, so results
 * equal QuantizeLinear's divide exactly. Returns the number of elements done
 * (a multiple of 32); the caller finishes the tail.
 */
__attribute__((target("avx2"))) static ptrdiff_t lk_quantize_f32_avx2(void *restrict dst, const float *restrict src,
                                                                     ptrdiff_t n, int is_signed, float scale,
                                                                     float zp) {
    float inv = 1.0f / scale;
    if (!(isfinite(inv) && inv > 1.1754944e-38f)) return 0;
    const __m256 vinv = _mm256_set1_ps(inv), vscale = _mm256_set1_ps(scale), vzp = _mm256_set1_ps(zp);
    const __m256 lo = _mm256_set1_ps(is_signed ? -128.0f : 0.0f), hi = _mm256_set1_ps(is_signed ? 127.0f : 255.0f);
    const __m256 half = _mm256_set1_ps(0.5f), tol = _mm256_set1_ps(4.76837158e-07f); /* 2^-21 */
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    /* A power-of-two scale (whose reciprocal, checked above, is a normal float):
     * x * inv and x / scale are the same real number, so both correctly rounded
     * results are equal (subnormal and overflowing ones included); no step needs
     * checking. */
    int exact = 0;
    {
        int e;
        float m = frexpf(scale, &e);
        exact = m == 0.5f && scale > 0.0f;
    }
    ptrdiff_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256 v[4], r[4];
        __m256 near = _mm256_setzero_ps();
        for (int k = 0; k < 4; k++) {
            v[k] = _mm256_mul_ps(_mm256_loadu_ps(src + i + 8 * k), vinv);
            r[k] = _mm256_round_ps(v[k], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        }
        if (!exact) {
            for (int k = 0; k < 4; k++) {
                __m256 dist = _mm256_sub_ps(half, _mm256_and_ps(_mm256_sub_ps(v[k], r[k]), absmask));
                near = _mm256_or_ps(near, _mm256_cmp_ps(dist, _mm256_mul_ps(_mm256_and_ps(v[k], absmask), tol),
                                                        _CMP_LE_OQ));
            }
        }
        if (_mm256_movemask_ps(near)) {
            for (int k = 0; k < 4; k++) {
                v[k] = _mm256_div_ps(_mm256_loadu_ps(src + i + 8 * k), vscale);
                r[k] = _mm256_round_ps(v[k], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            }
        }
        __m256i q[4];
        for (int k = 0; k < 4; k++) {
            __m256 t = _mm256_add_ps(r[k], vzp);
            t = _mm256_blendv_ps(t, vzp, _mm256_cmp_ps(v[k], v[k], _CMP_UNORD_Q)); /* NaN -> zp */
            t = _mm256_min_ps(_mm256_max_ps(t, lo), hi);
            q[k] = _mm256_cvtps_epi32(t);
        }
        /* 32-bit -> 16-bit -> 8-bit; the packs work per 128-bit lane, so fix the order after. */
        __m256i w01 = _mm256_packs_epi32(q[0], q[1]);
        __m256i w23 = _mm256_packs_epi32(q[2], q[3]);
        __m256i b = is_signed ? _mm256_packs_epi16(w01, w23) : _mm256_packus_epi16(w01, w23);
        b = _mm256_permutevar8x32_epi32(b, order);
        _mm256_storeu_si256((__m256i *)((char *)dst + i), b);
    }
    return i;
}
#endif

static inline int lk_cast(void *restrict dst, const void *restrict src, ptrdiff_t n, ptrdiff_t s,
                          int st, int dt, float scale, float zp) {
#ifdef LK_HAVE_X86_CLONES
    if (lk_avx2() && st == LK_T_F32 && (dt == LK_T_I8 || dt == LK_T_U8) && s == 4 && n >= 32) {
        ptrdiff_t done = lk_quantize_f32_avx2(dst, (const float *)src, n, dt == LK_T_I8, scale, zp);
        dst = (char *)dst + done;
        src = (const char *)src + 4 * done;
        n -= done;
    }
    if (lk_avx2()) return lk_cast_avx2(dst, src, n, s, st, dt, scale, zp);
    if (lk_simd() != 0) return lk_cast_sse41(dst, src, n, s, st, dt, scale, zp);
#endif
    return lk_cast_portable(dst, src, n, s, st, dt, scale, zp);
}

#endif /* LAYOUTKIT_CAST_H */
