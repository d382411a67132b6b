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
 * lies within that distance of a half-integer. Such steps are redone with a
 * true division (and a 1/scale that is not a normal float is left to the
 * caller's scalar loop), so results
 * equal QuantizeLinear's divide exactly. A power-of-two scale needs no check:
 * x * inv and x / scale are then the same real number, so their correctly
 * rounded values are equal.
 *
 * The rounding is the conversion's own (round to nearest even under the
 * default MXCSR, checked). The integers are packed to int16 with saturation,
 * the zero point added with saturation there, and packed to 8 bits: every
 * value beyond +-32767 saturates the same way as the exact one would. A step
 * whose conversion gave INT_MIN anywhere (NaN, or a quotient out of int32's
 * range) is redone by lk_quant32_avx2, which clamps quotients below 2^30 and
 * zeroes NaN, so it lands on the zero point. Returns the number of elements
 * done (a multiple of 32); the caller finishes the tail.
 */
__attribute__((target("avx2"))) static inline __m256i lk_quant32_avx2(__m256 v) {
    v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));       /* NaN -> 0 */
    v = _mm256_min_ps(v, _mm256_set1_ps(1073741824.0f));       /* no positive overflow */
    return _mm256_cvtps_epi32(v);                                /* below -2^31: INT_MIN */
}

/* The conversion alone, the fast path of lk_quant32_avx2: INT_MIN marks NaN and
 * out-of-range quotients (and true values of -2^31, which saturate alike) in
 * *odd, and a step with any mark is redone through lk_quant32_avx2. */
__attribute__((target("avx2"))) static inline __m256i lk_cvt_marked_avx2(__m256 v, __m256i *odd) {
    __m256i q = _mm256_cvtps_epi32(v);
    *odd = _mm256_or_si256(*odd, _mm256_cmpeq_epi32(q, _mm256_set1_epi32(INT32_MIN)));
    return q;
}

/* v within 2^-12 of a half-integer, where x * inv may round otherwise than
 * x / scale. The two differ by at most 3 * 2^-24 * |v|, under 2^-12 while
 * |v| <= 1024; beyond that both saturate every 8-bit result alike, so the test
 * may say anything there. */
__attribute__((target("avx2"))) static inline __m256 lk_near_tie_avx2(__m256 v) {
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 r = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm256_cmp_ps(_mm256_and_ps(_mm256_sub_ps(v, r), absmask),
                         _mm256_set1_ps(0.5f - 1.0f / 4096), _CMP_GE_OQ);
}

/* Four vectors of int32 to 32 bytes, saturating: packs to int16, the zero point
 * added there (with saturation), packs to 8 bits. The packs work per 128-bit
 * half: byte order is [q0 0-3, q1 0-3, q2 0-3, q3 0-3 | q0 4-7, ...]. */
__attribute__((target("avx2"))) static inline __m256i lk_pack_bytes_avx2(
    __m256i q0, __m256i q1, __m256i q2, __m256i q3, __m256i vzp, int has_zp, int is_signed) {
    __m256i w01 = _mm256_packs_epi32(q0, q1);
    __m256i w23 = _mm256_packs_epi32(q2, q3);
    if (has_zp) {
        w01 = _mm256_adds_epi16(w01, vzp);
        w23 = _mm256_adds_epi16(w23, vzp);
    }
    return is_signed ? _mm256_packs_epi16(w01, w23) : _mm256_packus_epi16(w01, w23);
}

/* Whether the AVX2 quantizers may run with this scale: 1/scale a normal float and
 * the default rounding mode. *exact: a power-of-two scale (no near-tie check). */
static inline int lk_quant_scale_ok(float scale, int *exact) {
    float inv = 1.0f / scale;
    int e;
    if (!(isfinite(inv) && inv > 1.1754944e-38f)) return 0;
    if (_MM_GET_ROUNDING_MODE() != _MM_ROUND_NEAREST) return 0;
    *exact = frexpf(scale, &e) == 0.5f && scale > 0.0f;
    return 1;
}

__attribute__((target("avx2"))) static ptrdiff_t lk_quantize_f32_avx2(void *restrict dst, const float *restrict src,
                                                                     ptrdiff_t n, int is_signed, float scale,
                                                                     float zp) {
    int exact;
    if (!lk_quant_scale_ok(scale, &exact)) return 0;
    const __m256 vinv = _mm256_set1_ps(1.0f / scale), vscale = _mm256_set1_ps(scale);
    const __m256i vzp = _mm256_set1_epi16((short)zp);
    int has_zp = zp != 0.0f;
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    ptrdiff_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256 v0 = _mm256_mul_ps(_mm256_loadu_ps(src + i), vinv);
        __m256 v1 = _mm256_mul_ps(_mm256_loadu_ps(src + i + 8), vinv);
        __m256 v2 = _mm256_mul_ps(_mm256_loadu_ps(src + i + 16), vinv);
        __m256 v3 = _mm256_mul_ps(_mm256_loadu_ps(src + i + 24), vinv);
        if (!exact && _mm256_movemask_ps(_mm256_or_ps(_mm256_or_ps(lk_near_tie_avx2(v0), lk_near_tie_avx2(v1)),
                                                      _mm256_or_ps(lk_near_tie_avx2(v2), lk_near_tie_avx2(v3))))) {
            v0 = _mm256_div_ps(_mm256_loadu_ps(src + i), vscale);
            v1 = _mm256_div_ps(_mm256_loadu_ps(src + i + 8), vscale);
            v2 = _mm256_div_ps(_mm256_loadu_ps(src + i + 16), vscale);
            v3 = _mm256_div_ps(_mm256_loadu_ps(src + i + 24), vscale);
        }
        __m256i odd = _mm256_setzero_si256();
        __m256i q0 = lk_cvt_marked_avx2(v0, &odd), q1 = lk_cvt_marked_avx2(v1, &odd);
        __m256i q2 = lk_cvt_marked_avx2(v2, &odd), q3 = lk_cvt_marked_avx2(v3, &odd);
        if (!_mm256_testz_si256(odd, odd)) {
            q0 = lk_quant32_avx2(v0);
            q1 = lk_quant32_avx2(v1);
            q2 = lk_quant32_avx2(v2);
            q3 = lk_quant32_avx2(v3);
        }
        __m256i b = lk_pack_bytes_avx2(q0, q1, q2, q3, vzp, has_zp, is_signed);
        b = _mm256_permutevar8x32_epi32(b, order); /* the packs' per-half order, fixed */
        _mm256_storeu_si256((__m256i *)((char *)dst + i), b);
    }
    return i;
}

/* lk_near_tie_avx2 for 16-bit results, which saturate alike only past
 * |v| = 2^17: the window grows with |v| (|v| * 2^-21, over the 3 * 2^-24 * |v|
 * by which x * inv and x / scale may differ). */
__attribute__((target("avx2"))) static inline __m256 lk_near_tie16_avx2(__m256 v) {
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 r = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 off = _mm256_sub_ps(_mm256_set1_ps(0.5f),
                               _mm256_and_ps(_mm256_sub_ps(v, r), absmask)); /* to the tie */
    __m256 tol = _mm256_add_ps(_mm256_mul_ps(_mm256_and_ps(v, absmask), _mm256_set1_ps(0x1p-21f)),
                               _mm256_set1_ps(0x1p-24f));
    return _mm256_cmp_ps(off, tol, _CMP_LE_OQ);
}

/* float32 -> int16 / uint16, 16 elements a step, the arithmetic of
 * lk_quantize_f32_avx2 but with the zero point added in 32 bits before the
 * saturating pack: int16's range is close enough to the quotients that
 * saturating first would change results (-32800 + 100 must give -32700).
 * Quotients are clamped to +-2^30 first, so adding the zero point cannot wrap;
 * beyond that every result saturates alike. */
__attribute__((target("avx2"))) static ptrdiff_t lk_quantize16_f32_avx2(void *restrict dst,
                                                                       const float *restrict src,
                                                                       ptrdiff_t n, int is_signed,
                                                                       float scale, float zp) {
    int exact;
    if (!lk_quant_scale_ok(scale, &exact)) return 0;
    const __m256 vinv = _mm256_set1_ps(1.0f / scale), vscale = _mm256_set1_ps(scale);
    const __m256i vzp = _mm256_set1_epi32((int)zp);
    const __m256i lo = _mm256_set1_epi32(-(1 << 30)), hi = _mm256_set1_epi32(1 << 30);
    ptrdiff_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 v0 = _mm256_mul_ps(_mm256_loadu_ps(src + i), vinv);
        __m256 v1 = _mm256_mul_ps(_mm256_loadu_ps(src + i + 8), vinv);
        if (!exact &&
            _mm256_movemask_ps(_mm256_or_ps(lk_near_tie16_avx2(v0), lk_near_tie16_avx2(v1)))) {
            v0 = _mm256_div_ps(_mm256_loadu_ps(src + i), vscale);
            v1 = _mm256_div_ps(_mm256_loadu_ps(src + i + 8), vscale);
        }
        __m256i odd = _mm256_setzero_si256();
        __m256i q0 = lk_cvt_marked_avx2(v0, &odd), q1 = lk_cvt_marked_avx2(v1, &odd);
        if (!_mm256_testz_si256(odd, odd)) {
            q0 = lk_quant32_avx2(v0);
            q1 = lk_quant32_avx2(v1);
        }
        q0 = _mm256_add_epi32(_mm256_min_epi32(_mm256_max_epi32(q0, lo), hi), vzp);
        q1 = _mm256_add_epi32(_mm256_min_epi32(_mm256_max_epi32(q1, lo), hi), vzp);
        __m256i w = is_signed ? _mm256_packs_epi32(q0, q1) : _mm256_packus_epi32(q0, q1);
        _mm256_storeu_si256((__m256i *)((char *)dst + 2 * i), _mm256_permute4x64_epi64(w, 0xD8));
    }
    return i;
}

#ifdef LK_HAVE_VBMI_TILES
/* lk_quantize_f32_avx2 with 512-bit registers, 64 elements a step, the same
 * arithmetic: x * (1/scale), near-tie steps redone by division (unless the
 * scale is a power of two), steps with a marked conversion redone clamped,
 * packs to int16 with the zero point added there, packs to 8 bits, and a
 * dword permute undoing the packs' per-128-bit order. Intel with AVX-512,
 * and Zen 5 (not Zen 4: lk_split_avx512): a float32 -> int8 pack of
 * 1x3x224x224 to 8x256x14x14
 * took 0.65-0.74x the time of the AVX2 loop, and the quantize-first path of
 * NCHW float32 -> HCWNC4 / HCWNC8 int8 of 1x2048x7x7 0.84-0.9x. Returns the
 * elements done (a multiple of 64). */
__attribute__((target("avx2,avx512f,avx512bw"))) static ptrdiff_t lk_quantize_f32_avx512(
    void *restrict dst, const float *restrict src, ptrdiff_t n, int is_signed, float scale,
    float zp) {
    int exact;
    if (!lk_quant_scale_ok(scale, &exact)) return 0;
    const __m512 vinv = _mm512_set1_ps(1.0f / scale), vscale = _mm512_set1_ps(scale);
    const __m512 tie = _mm512_set1_ps(0.5f - 1.0f / 4096), cap = _mm512_set1_ps(1073741824.0f);
    const __m512i vzp = _mm512_set1_epi16((short)zp), imin = _mm512_set1_epi32(INT32_MIN);
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const int has_zp = zp != 0.0f;
    ptrdiff_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m512 v[4];
        __mmask16 near = 0, odd = 0;
        __m512i q[4];
        for (int j = 0; j < 4; j++) v[j] = _mm512_mul_ps(_mm512_loadu_ps(src + i + 16 * j), vinv);
        if (!exact) {
            for (int j = 0; j < 4; j++) {
                const __m512 r = _mm512_roundscale_ps(v[j], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                near |= _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(v[j], r)), tie, _CMP_GE_OQ);
            }
            if (near)
                for (int j = 0; j < 4; j++) v[j] = _mm512_div_ps(_mm512_loadu_ps(src + i + 16 * j), vscale);
        }
        for (int j = 0; j < 4; j++) {
            q[j] = _mm512_cvtps_epi32(v[j]);
            odd |= _mm512_cmpeq_epi32_mask(q[j], imin);
        }
        if (odd)
            for (int j = 0; j < 4; j++) {
                /* NaN -> 0, no positive overflow; below -2^31: INT_MIN. */
                const __m512 c = _mm512_min_ps(_mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v[j], v[j], _CMP_ORD_Q), v[j]), cap);
                q[j] = _mm512_cvtps_epi32(c);
            }
        __m512i w01 = _mm512_packs_epi32(q[0], q[1]), w23 = _mm512_packs_epi32(q[2], q[3]);
        if (has_zp) {
            w01 = _mm512_adds_epi16(w01, vzp);
            w23 = _mm512_adds_epi16(w23, vzp);
        }
        const __m512i b = is_signed ? _mm512_packs_epi16(w01, w23) : _mm512_packus_epi16(w01, w23);
        _mm512_storeu_si512((char *)dst + i, _mm512_permutexvar_epi32(order, b));
    }
    return i;
}
#endif

/* The fused quantize-interleaves ask for each lane's line 2 KiB ahead: the
 * 4-16 lanes (planes of float32) are streams the hardware prefetchers ran
 * too short a distance ahead of, hot (from L3) as well as from memory.
 * compare_builds.py on Zen 5, f32 -> HCWNC4 / HCWNC8 int8: 1x64x256x256
 * 0.56x / 0.58x the time, 8x256x56x56 0.72x / 0.92x, 1x3x1024x1024 (three
 * lanes and padding) 0.94-1.03x; 512 bytes ahead gained less. */
#define LK_QUANT_PREFETCH_BYTES 2048
static inline void lk_quant_prefetch_lanes(const char *p, ptrdiff_t ls, int lo, int hi) {
    for (int j = lo; j < hi; j++) __builtin_prefetch(p + j * ls + LK_QUANT_PREFETCH_BYTES);
}

/*
 * Quantize and interleave in one pass: float32 lanes (channel planes) into rows
 * of k one-byte slots, k = 4, 8 or 16 (NCHW4c, HCWN4c/8c/16c of int8/uint8):
 *
 *   out[i * k + j] = quantize(lane j's element i)   for lo <= j < hi,
 *                    pad                            otherwise,
 *
 * lane j starting at src + j * lane_stride, its elements contiguous. Eight rows
 * a step: each group of four lanes is converted and packed to bytes as in
 * lk_quantize_f32_avx2 (a pad lane enters as pad - zero_point, so the zero
 * point added to every lane leaves it at pad), and one shuffle turns each
 * 4 x 4 block of bytes from lane-major to row-major. Returns the rows done (a
 * multiple of 8; 0 when the scale or the rounding mode does not allow it).
 */
__attribute__((target("avx2"), always_inline)) static inline ptrdiff_t lk_quantize_interleave_k(
    char *restrict dst, const char *restrict src, ptrdiff_t lane_stride, ptrdiff_t n, const int k,
    const int lo, const int hi, const int is_signed, const int exact, float scale, float zp, int pad) {
    const __m256 vinv = _mm256_set1_ps(1.0f / scale), vscale = _mm256_set1_ps(scale);
    const __m256i vzp = _mm256_set1_epi16((short)zp);
    const __m256i vpad = _mm256_set1_epi32(pad - (int)zp);
    const __m256i rowmajor = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
                                              0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    ptrdiff_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i quad[4];
        if ((i & 15) == 0) lk_quant_prefetch_lanes(src + i * 4, lane_stride, lo, hi);
        for (int t = 0; t < k / 4; t++) {
            __m256 v[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                           _mm256_setzero_ps()}; /* pad lanes: unused */
            __m256 near = _mm256_setzero_ps();
            for (int u = 0; u < 4; u++) {
                int j = 4 * t + u;
                if (j >= lo && j < hi) {
                    v[u] = _mm256_mul_ps(_mm256_loadu_ps((const float *)(src + j * lane_stride) + i), vinv);
                    if (!exact) near = _mm256_or_ps(near, lk_near_tie_avx2(v[u]));
                }
            }
            if (!exact && _mm256_movemask_ps(near))
                for (int u = 0; u < 4; u++) {
                    int j = 4 * t + u;
                    if (j >= lo && j < hi)
                        v[u] = _mm256_div_ps(_mm256_loadu_ps((const float *)(src + j * lane_stride) + i), vscale);
                }
            __m256i q[4], odd = _mm256_setzero_si256();
            for (int u = 0; u < 4; u++) {
                int j = 4 * t + u;
                q[u] = j >= lo && j < hi ? lk_cvt_marked_avx2(v[u], &odd) : vpad;
            }
            if (!_mm256_testz_si256(odd, odd))
                for (int u = 0; u < 4; u++) {
                    int j = 4 * t + u;
                    if (j >= lo && j < hi) q[u] = lk_quant32_avx2(v[u]);
                }
            __m256i b = lk_pack_bytes_avx2(q[0], q[1], q[2], q[3], vzp, 1, is_signed);
            /* each half: rows 0-3 (4-7) of the four lanes, lane-major -> row-major */
            quad[t] = _mm256_shuffle_epi8(b, rowmajor);
        }
        char *o = dst + i * k;
        if (k == 4) {
            _mm256_storeu_si256((__m256i *)o, quad[0]);
        } else if (k == 8) {
            __m256i a = _mm256_unpacklo_epi32(quad[0], quad[1]); /* rows 0,1 | 4,5 */
            __m256i b = _mm256_unpackhi_epi32(quad[0], quad[1]); /* rows 2,3 | 6,7 */
            _mm256_storeu_si256((__m256i *)o, _mm256_permute2x128_si256(a, b, 0x20));
            _mm256_storeu_si256((__m256i *)(o + 32), _mm256_permute2x128_si256(a, b, 0x31));
        } else {
            __m256i a01 = _mm256_unpacklo_epi32(quad[0], quad[1]), b01 = _mm256_unpackhi_epi32(quad[0], quad[1]);
            __m256i a23 = _mm256_unpacklo_epi32(quad[2], quad[3]), b23 = _mm256_unpackhi_epi32(quad[2], quad[3]);
            __m256i r0 = _mm256_unpacklo_epi64(a01, a23); /* row 0 | row 4 */
            __m256i r1 = _mm256_unpackhi_epi64(a01, a23); /* row 1 | row 5 */
            __m256i r2 = _mm256_unpacklo_epi64(b01, b23); /* row 2 | row 6 */
            __m256i r3 = _mm256_unpackhi_epi64(b01, b23); /* row 3 | row 7 */
            _mm256_storeu_si256((__m256i *)o, _mm256_permute2x128_si256(r0, r1, 0x20));
            _mm256_storeu_si256((__m256i *)(o + 32), _mm256_permute2x128_si256(r2, r3, 0x20));
            _mm256_storeu_si256((__m256i *)(o + 64), _mm256_permute2x128_si256(r0, r1, 0x31));
            _mm256_storeu_si256((__m256i *)(o + 96), _mm256_permute2x128_si256(r2, r3, 0x31));
        }
    }
    return i;
}

/* One copy of the loop per lane count, signedness and scale kind, so each is
 * fully unrolled; within it, the usual lane sets (all data; one or three data
 * lanes then padding: grey and RGB images) get their own copies with the pad
 * lanes known at compile time, any other set the loop with run-time tests. */
#define LK_QI_CASE(K, S, X)                                                               \
    __attribute__((target("avx2"))) static ptrdiff_t lk_qi_##K##_##S##_##X(                \
        char *restrict dst, const char *restrict src, ptrdiff_t ls, ptrdiff_t n, int lo, int hi, \
        float scale, float zp, int pad) {                                                 \
        if (lo == 0 && hi == (K))                                                         \
            return lk_quantize_interleave_k(dst, src, ls, n, K, 0, K, S, X, scale, zp, pad); \
        if (lo == 0 && hi == 3)                                                           \
            return lk_quantize_interleave_k(dst, src, ls, n, K, 0, 3, S, X, scale, zp, pad); \
        if (lo == 0 && hi == 1)                                                           \
            return lk_quantize_interleave_k(dst, src, ls, n, K, 0, 1, S, X, scale, zp, pad); \
        return lk_quantize_interleave_k(dst, src, ls, n, K, lo, hi, S, X, scale, zp, pad);  \
    }
#define LK_QI_CASES(K) LK_QI_CASE(K, 0, 0) LK_QI_CASE(K, 0, 1) LK_QI_CASE(K, 1, 0) LK_QI_CASE(K, 1, 1)
LK_QI_CASES(4)
LK_QI_CASES(8)
LK_QI_CASES(16)

typedef ptrdiff_t (*lk_qi_fn)(char *restrict, const char *restrict, ptrdiff_t, ptrdiff_t, int, int,
                              float, float, int);

__attribute__((target("avx2"))) static ptrdiff_t lk_quantize_interleave_avx2(
    char *restrict dst, const char *restrict src, ptrdiff_t lane_stride, ptrdiff_t n, int k, int lo,
    int hi, int is_signed, float scale, float zp, int pad) {
    static const lk_qi_fn fns[3][2][2] = {
        {{lk_qi_4_0_0, lk_qi_4_0_1}, {lk_qi_4_1_0, lk_qi_4_1_1}},
        {{lk_qi_8_0_0, lk_qi_8_0_1}, {lk_qi_8_1_0, lk_qi_8_1_1}},
        {{lk_qi_16_0_0, lk_qi_16_0_1}, {lk_qi_16_1_0, lk_qi_16_1_1}},
    };
    int exact;
    if (!(k == 4 || k == 8 || k == 16) || lo < 0 || hi > k || lo >= hi) return 0;
    if (!lk_quant_scale_ok(scale, &exact)) return 0;
    return fns[k == 4 ? 0 : k == 8 ? 1 : 2][is_signed != 0][exact](dst, src, lane_stride, n, lo, hi,
                                                                    scale, zp, pad);
}
#endif

#ifdef LK_HAVE_VBMI_TILES
/*
 * Three float32 planes quantized into pixels of k = 4 or 8 bytes, the rest the
 * pad value (an RGB image into NCHW4c / HCWNC4 / HCWNC8 of int8 or uint8), 64
 * pixels a step
 * with AVX-512: the arithmetic of lk_quantize_interleave_k on 16 floats a
 * vector (x * (1/scale), the steps near a tie redone by division; NaN and out
 * of range by lk_quant32; the conversion's own rounding; packs to int16, the
 * zero point added there, packs to 8 bits, all saturating). The packs work
 * within 128-bit lanes, so byte p of a lane's register holds pixel
 * pi(p) = 16 ((p % 16) / 4) + 4 (p / 16) + p % 4 (pi is its own inverse); the
 * index of each 64-byte output register folds that order into the
 * interleave (one vpermt2b of planes 0 and 1, a vpermb of plane 2 merged over
 * its slots, the pad over the others), as lk_interleave3p_vbmi does. Returns
 * the pixels done (a multiple of 64), 0 where the scale does not allow it.
 */
#define LK_QI3_PI(P) (16 * (((P) % 16) / 4) + 4 * ((P) / 16) + (P) % 4)
/* Output register j of pixels of K bytes: byte p is slot p % K of pixel
 * 64 j / K + p / K (slots past 2 take the pad, whatever the index says). */
#define LK_QI3_IDX(K, j, p) (((p) % (K) == 1 ? 64 : 0) + LK_QI3_PI(64 / (K) * (j) + (p) / (K)))
#define LK_QI3_IDX4(j, p) LK_QI3_IDX(4, j, p)
#define LK_QI3_IDX8(j, p) LK_QI3_IDX(8, j, p)
/* Pixels of 4 bytes: registers 0-3; of 8 bytes: registers 0-7 (rows 4-11). */
static const uint8_t lk_qi3_vbmi_index[12][64] __attribute__((aligned(64))) = {
    {LK_IDX64J(LK_QI3_IDX4, 0)}, {LK_IDX64J(LK_QI3_IDX4, 1)}, {LK_IDX64J(LK_QI3_IDX4, 2)},
    {LK_IDX64J(LK_QI3_IDX4, 3)}, {LK_IDX64J(LK_QI3_IDX8, 0)}, {LK_IDX64J(LK_QI3_IDX8, 1)},
    {LK_IDX64J(LK_QI3_IDX8, 2)}, {LK_IDX64J(LK_QI3_IDX8, 3)}, {LK_IDX64J(LK_QI3_IDX8, 4)},
    {LK_IDX64J(LK_QI3_IDX8, 5)}, {LK_IDX64J(LK_QI3_IDX8, 6)}, {LK_IDX64J(LK_QI3_IDX8, 7)},
};
#undef LK_QI3_IDX4
#undef LK_QI3_IDX8
#undef LK_QI3_IDX
#undef LK_QI3_PI

LK_VBMI static ptrdiff_t lk_quantize_interleave3_vbmi(char *restrict dst, const char *restrict src,
                                                      ptrdiff_t lane_stride, ptrdiff_t n, int k,
                                                      int is_signed, float scale, float zp,
                                                      int pad) {
    int exact;
    if ((k != 4 && k != 8) || n < 64 || !lk_quant_scale_ok(scale, &exact)) return 0;
    const __m512 vinv = _mm512_set1_ps(1.0f / scale), vscale = _mm512_set1_ps(scale);
    const __m512 near_tie = _mm512_set1_ps(0.5f - 1.0f / 4096), huge = _mm512_set1_ps(1073741824.0f);
    const __m512i vzp = _mm512_set1_epi16((short)zp), int_min = _mm512_set1_epi32(INT32_MIN);
    const __m512i padv = _mm512_set1_epi8((char)pad);
    const __mmask64 lane2 = k == 4 ? 0x4444444444444444ULL : 0x0404040404040404ULL;
    const __mmask64 padm = k == 4 ? 0x8888888888888888ULL : 0xF8F8F8F8F8F8F8F8ULL;
    __m512i idx[8];
    for (int j = 0; j < k; j++)
        idx[j] = _mm512_load_si512((const void *)lk_qi3_vbmi_index[(k == 4 ? 0 : 4) + j]);
    ptrdiff_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m512i packed[3];
        for (int l = 0; l < 3; l++) {
            const float *s = (const float *)(src + l * lane_stride) + i;
            __m512 v[4];
            __mmask16 near = 0, odd = 0;
            for (int u = 0; u < 4; u++) {
                v[u] = _mm512_mul_ps(_mm512_loadu_ps(s + 16 * u), vinv);
                if (!exact) {
                    __m512 r = _mm512_roundscale_ps(v[u], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                    near |= _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(v[u], r)), near_tie,
                                               _CMP_GE_OQ);
                }
            }
            if (near)
                for (int u = 0; u < 4; u++) v[u] = _mm512_div_ps(_mm512_loadu_ps(s + 16 * u), vscale);
            __m512i q[4];
            for (int u = 0; u < 4; u++) {
                q[u] = _mm512_cvtps_epi32(v[u]);
                odd |= _mm512_cmpeq_epi32_mask(q[u], int_min);
            }
            if (odd)
                for (int u = 0; u < 4; u++) {
                    /* NaN -> 0, no positive overflow; below -2^31 stays INT_MIN */
                    __m512 w = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v[u], v[u], _CMP_ORD_Q), v[u]);
                    q[u] = _mm512_cvtps_epi32(_mm512_min_ps(w, huge));
                }
            __m512i w01 = _mm512_adds_epi16(_mm512_packs_epi32(q[0], q[1]), vzp);
            __m512i w23 = _mm512_adds_epi16(_mm512_packs_epi32(q[2], q[3]), vzp);
            packed[l] = is_signed ? _mm512_packs_epi16(w01, w23) : _mm512_packus_epi16(w01, w23);
        }
        for (int j = 0; j < k; j++) {
            __m512i v = _mm512_permutex2var_epi8(packed[0], idx[j], packed[1]);
            v = _mm512_mask_permutexvar_epi8(v, lane2, idx[j], packed[2]);
            _mm512_storeu_si512(dst + k * i + 64 * j, _mm512_mask_mov_epi8(v, padm, padv));
        }
    }
    return i;
}

/* Four float32 lanes ls apart (those in [lo, hi) data, the others pad), 16
 * rows from s, quantized with the arithmetic above into one register whose
 * dword r holds row r's four bytes. */
__attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512vbmi"), always_inline)) static inline __m512i
lk_q16x4_avx512(const char *s, ptrdiff_t ls, const int j0, const int lo, const int hi,
                const int is_signed, const int exact, __m512 vinv, __m512 vscale, __m512i vzp,
                __m512i vpad) {
    const __m512 near_tie = _mm512_set1_ps(0.5f - 1.0f / 4096), huge = _mm512_set1_ps(1073741824.0f);
    const __m512i rowmajor = _mm512_broadcast_i32x4(
        _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
    __m512 v[4];
    __m512i q[4];
    __mmask16 near = 0, odd = 0;
    for (int u = 0; u < 4; u++) {
        v[u] = _mm512_setzero_ps();
        if (j0 + u >= lo && j0 + u < hi) {
            v[u] = _mm512_mul_ps(_mm512_loadu_ps((const float *)(s + (j0 + u) * ls)), vinv);
            if (!exact) {
                __m512 r = _mm512_roundscale_ps(v[u], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                near |= _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(v[u], r)), near_tie,
                                           _CMP_GE_OQ);
            }
        }
    }
    if (!exact && near)
        for (int u = 0; u < 4; u++)
            if (j0 + u >= lo && j0 + u < hi)
                v[u] = _mm512_div_ps(_mm512_loadu_ps((const float *)(s + (j0 + u) * ls)), vscale);
    for (int u = 0; u < 4; u++) {
        if (j0 + u >= lo && j0 + u < hi) {
            q[u] = _mm512_cvtps_epi32(v[u]);
            odd |= _mm512_cmpeq_epi32_mask(q[u], _mm512_set1_epi32(INT32_MIN));
        } else {
            q[u] = vpad;
        }
    }
    if (odd)
        for (int u = 0; u < 4; u++)
            if (j0 + u >= lo && j0 + u < hi) {
                /* NaN -> 0, no positive overflow; below -2^31 stays INT_MIN */
                __m512 w = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v[u], v[u], _CMP_ORD_Q), v[u]);
                q[u] = _mm512_cvtps_epi32(_mm512_min_ps(w, huge));
            }
    __m512i w01 = _mm512_adds_epi16(_mm512_packs_epi32(q[0], q[1]), vzp);
    __m512i w23 = _mm512_adds_epi16(_mm512_packs_epi32(q[2], q[3]), vzp);
    /* each 128-bit chunk c: rows 4c..4c+3 of the four lanes, lane-major */
    __m512i b = is_signed ? _mm512_packs_epi16(w01, w23) : _mm512_packus_epi16(w01, w23);
    return _mm512_shuffle_epi8(b, rowmajor);
}

/* lk_quantize_interleave_k with AVX-512: k (4, 8, 16) lanes into rows of k
 * bytes, 16 rows a step; returns the rows done (a multiple of 16). */
__attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512vbmi"), always_inline)) static inline ptrdiff_t
lk_quantize_rows16_k(char *restrict dst, const char *restrict src, ptrdiff_t ls, ptrdiff_t n,
                     const int k, const int lo, const int hi, const int is_signed, const int exact,
                     float scale, float zp, int pad) {
    const __m512 vinv = _mm512_set1_ps(1.0f / scale), vscale = _mm512_set1_ps(scale);
    const __m512i vzp = _mm512_set1_epi16((short)zp), vpad = _mm512_set1_epi32(pad - (int)zp);
    const __m512i lo_pairs = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
    const __m512i hi_pairs = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
    ptrdiff_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const char *s = src + i * 4;
        char *o = dst + i * k;
        __m512i q[4];
        lk_quant_prefetch_lanes(s, ls, lo, hi);
        for (int g = 0; g < k / 4; g++)
            q[g] = lk_q16x4_avx512(s, ls, 4 * g, lo, hi, is_signed, exact, vinv, vscale, vzp, vpad);
        if (k == 4) {
            _mm512_storeu_si512(o, q[0]);
        } else if (k == 8) {
            /* chunk c of lo: rows 4c, 4c+1; of hi: 4c+2, 4c+3 */
            __m512i l = _mm512_unpacklo_epi32(q[0], q[1]), h = _mm512_unpackhi_epi32(q[0], q[1]);
            _mm512_storeu_si512(o, _mm512_permutex2var_epi64(l, lo_pairs, h));
            _mm512_storeu_si512(o + 64, _mm512_permutex2var_epi64(l, hi_pairs, h));
        } else {
            __m512i ab0 = _mm512_unpacklo_epi32(q[0], q[1]), ab1 = _mm512_unpackhi_epi32(q[0], q[1]);
            __m512i cd0 = _mm512_unpacklo_epi32(q[2], q[3]), cd1 = _mm512_unpackhi_epi32(q[2], q[3]);
            /* r[x]: chunk c holds row 4c + x */
            __m512i r0 = _mm512_unpacklo_epi64(ab0, cd0), r1 = _mm512_unpackhi_epi64(ab0, cd0);
            __m512i r2 = _mm512_unpacklo_epi64(ab1, cd1), r3 = _mm512_unpackhi_epi64(ab1, cd1);
            __m512i x01 = _mm512_permutex2var_epi64(r0, lo_pairs, r1); /* rows 0,1 | 4,5 */
            __m512i x23 = _mm512_permutex2var_epi64(r2, lo_pairs, r3); /* rows 2,3 | 6,7 */
            __m512i y01 = _mm512_permutex2var_epi64(r0, hi_pairs, r1); /* rows 8,9 | 12,13 */
            __m512i y23 = _mm512_permutex2var_epi64(r2, hi_pairs, r3);
            _mm512_storeu_si512(o, _mm512_shuffle_i64x2(x01, x23, 0x44));
            _mm512_storeu_si512(o + 64, _mm512_shuffle_i64x2(x01, x23, 0xEE));
            _mm512_storeu_si512(o + 128, _mm512_shuffle_i64x2(y01, y23, 0x44));
            _mm512_storeu_si512(o + 192, _mm512_shuffle_i64x2(y01, y23, 0xEE));
        }
    }
    return i;
}

#define LK_QR_CASE(K, S, X)                                                                    \
    __attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512vbmi"))) static ptrdiff_t         \
        lk_qr_##K##_##S##_##X(char *restrict dst, const char *restrict src, ptrdiff_t ls,       \
                              ptrdiff_t n, int lo, int hi, float scale, float zp, int pad) {   \
        if (lo == 0 && hi == (K))                                                              \
            return lk_quantize_rows16_k(dst, src, ls, n, K, 0, K, S, X, scale, zp, pad);       \
        return lk_quantize_rows16_k(dst, src, ls, n, K, lo, hi, S, X, scale, zp, pad);         \
    }
#define LK_QR_CASES(K) LK_QR_CASE(K, 0, 0) LK_QR_CASE(K, 0, 1) LK_QR_CASE(K, 1, 0) LK_QR_CASE(K, 1, 1)
LK_QR_CASES(4)
LK_QR_CASES(8)
LK_QR_CASES(16)
#undef LK_QR_CASES
#undef LK_QR_CASE

static ptrdiff_t lk_quantize_rows_avx512(char *restrict dst, const char *restrict src,
                                         ptrdiff_t ls, ptrdiff_t n, int k, int lo, int hi,
                                         int is_signed, float scale, float zp, int pad) {
    static const lk_qi_fn fns[3][2][2] = {
        {{lk_qr_4_0_0, lk_qr_4_0_1}, {lk_qr_4_1_0, lk_qr_4_1_1}},
        {{lk_qr_8_0_0, lk_qr_8_0_1}, {lk_qr_8_1_0, lk_qr_8_1_1}},
        {{lk_qr_16_0_0, lk_qr_16_0_1}, {lk_qr_16_1_0, lk_qr_16_1_1}},
    };
    int exact;
    if (!(k == 4 || k == 8 || k == 16) || lo < 0 || hi > k || lo >= hi) return 0;
    if (!lk_quant_scale_ok(scale, &exact)) return 0;
    return fns[k == 4 ? 0 : k == 8 ? 1 : 2][is_signed != 0][exact](dst, src, ls, n, lo, hi, scale,
                                                                    zp, pad);
}

#endif

/* Whether lk_quantize_rows_avx512 (16 rows a step) runs before the AVX2 loop
 * (8 rows): Intel with AVX-512 VBMI, rows of 64+ (on 56-pixel HCWN rows the
 * second kernel's tail cost 1.03-1.06x the time), and either an operation
 * within L2, where the arithmetic bounds it (NCHW4c / 8c / 16c of 1x32x56x56:
 * 0.79-0.89x the time), or 8+ lanes of an operation short of 24 MiB moved
 * (NCHW16c, HCWN8c, HCWN16c of 1x64x256x256: 0.89-0.93x; 4 lanes there
 * 1.0-1.05x, and HCWNC4 / HCWNC8 of 8x256x56x56, 32 MB, 1.05-1.09x). */
static inline int lk_quantize_rows_avx512_pays(ptrdiff_t n, int k) {
#ifdef LK_HAVE_VBMI_TILES
    return n >= 64 && !lk_split_avx512() && lk_vbmi() &&
           (lk_footprint_hint < ((ptrdiff_t)2 << 20) ||
            (k >= 8 && lk_footprint_hint < ((ptrdiff_t)24 << 20)));
#else
    (void)n; (void)k;
    return 0;
#endif
}

/* lk_quantize_interleave_avx2 where the CPU has AVX2, else 0 rows done. Rows of
 * the destination lie drow bytes apart (drow >= k): when they are not packed
 * (HCWN4c of a batch: N x 4 lanes per row), 64 rows at a time are built in a
 * small buffer and each row's k bytes copied to its place. */
static inline ptrdiff_t lk_quantize_interleave(char *restrict dst, ptrdiff_t drow,
                                               const char *restrict src, ptrdiff_t lane_stride,
                                               ptrdiff_t n, int k, int lo, int hi, int dt,
                                               float scale, float zp, int pad) {
#ifdef LK_HAVE_X86_CLONES
    if (lk_avx2() && (dt == LK_T_I8 || dt == LK_T_U8)) {
        char rows[64 * 16];
        ptrdiff_t i = 0, got;
        if (drow == k) {
            ptrdiff_t done = 0;
#ifdef LK_HAVE_VBMI_TILES
            /* RGB planes into pixels of four (NCHW4c / HCWNC4 of one image), Intel:
             * fp32 -> int8 HCWNC4 of 1x3x224x224 0.80x the time of the AVX2 loop
             * (compare_builds.py); 1x3x1024x1024, memory-bound, alike. */
            if ((k == 4 || k == 8) && lo == 0 && hi == 3 && !lk_split_avx512() && lk_vbmi())
                done = lk_quantize_interleave3_vbmi(dst, src, lane_stride, n, k, dt == LK_T_I8,
                                                    scale, zp, pad);
#endif
#ifdef LK_HAVE_VBMI_TILES
            if (lk_quantize_rows_avx512_pays(n - done, k))
                done += lk_quantize_rows_avx512(dst + done * k, src + done * 4, lane_stride,
                                                n - done, k, lo, hi, dt == LK_T_I8, scale, zp, pad);
#endif
            done += lk_quantize_interleave_avx2(dst + done * k, src + done * 4, lane_stride,
                                                n - done, k, lo, hi, dt == LK_T_I8, scale, zp,
                                                pad);
            /* The last rows past a step of 8 by one more step over the 8 rows
             * before the end, rewriting a few with the same bytes (HCWNC4 of
             * 28-pixel rows: the 4 left cost more than the 24 before them). */
            if (done < n && done >= 8 &&
                lk_quantize_interleave_avx2(dst + (n - 8) * k, src + (n - 8) * 4, lane_stride, 8,
                                            k, lo, hi, dt == LK_T_I8, scale, zp, pad) == 8)
                done = n;
            return done;
        }
        while (i < n) {
            ptrdiff_t m = n - i < 64 ? n - i : 64, first = 0;
            if (m < 8 && i >= 8) {
                first = 8 - m; /* the same overlapping last step as above */
                i -= first;
                m = 8;
            }
            got = lk_quantize_interleave_avx2(rows, src + i * 4, lane_stride, m, k, lo, hi,
                                              dt == LK_T_I8, scale, zp, pad);
            if (got < first) {
                i += first;
                break;
            }
            for (ptrdiff_t r = first; r < got; r++) {
                char *o = dst + (i + r) * drow;
                switch (k) {
                case 4: memcpy(o, rows + r * 4, 4); break;
                case 8: memcpy(o, rows + r * 8, 8); break;
                default: memcpy(o, rows + r * 16, 16); break;
                }
            }
            i += got;
            if (got < m) break;
        }
        return i;
    }
#endif
    (void)dst; (void)drow; (void)src; (void)lane_stride; (void)n; (void)k; (void)lo; (void)hi;
    (void)dt; (void)scale; (void)zp; (void)pad;
    return 0;
}

/* lk_quantize_interleave over nbox boxes dbox / sbox bytes apart (the boxes
 * of one level: HCWNC4 of 28-56-pixel rows, whose per-box calls through the
 * repack cost as much as the boxes). Returns the boxes done in full. */
static inline ptrdiff_t lk_quantize_interleave_boxes(char *restrict dst, ptrdiff_t dbox,
                                                     const char *restrict src, ptrdiff_t sbox,
                                                     ptrdiff_t nbox, ptrdiff_t drow,
                                                     ptrdiff_t lane_stride, ptrdiff_t n, int k,
                                                     int lo, int hi, int dt, float scale,
                                                     float zp, int pad) {
    for (ptrdiff_t b = 0; b < nbox; b++)
        if (lk_quantize_interleave(dst + b * dbox, drow, src + b * sbox, lane_stride, n, k, lo,
                                   hi, dt, scale, zp, pad) != n)
            return b;
    return nbox;
}

#ifdef LK_HAVE_X86_CLONES
/*
 * Conversions between float32 and float16 / bfloat16 of contiguous runs, 8
 * elements a step, bit for bit those of the scalar functions above. The
 * scalar loops do not vectorise (float16's branches): float32 -> float16 of
 * 1x64x256x256 took 5.1 ms, 3.6 cycles an element.
 *
 * float16 by F16C: VCVTPS2PH with round-to-nearest-even in the immediate
 * equals lk_f32_to_f16 on every input (checked over all mantissas of the
 * exponents where the rounding, subnormal, overflow and NaN cases fall, and 2^28
 * other patterns); VCVTPH2PS equals lk_f16_to_f32 except that it quiets
 * signalling NaNs, so a step holding any all-ones exponent goes through the
 * scalar function. Both need MXCSR's DAZ and FTZ clear (the caller checks).
 * bfloat16 in integers: + 0x7fff plus the kept lowest bit, NaN quieted.
 */
static int lk_f16c_ok = -1;

static inline int lk_f16c(void) {
    if (lk_f16c_ok < 0) {
        __builtin_cpu_init();
        lk_f16c_ok = lk_avx2() && __builtin_cpu_supports("f16c") ? 1 : 0;
    }
    return lk_f16c_ok;
}

__attribute__((target("avx2,f16c"))) static ptrdiff_t lk_f32_to_f16_f16c(uint16_t *restrict d,
                                                                         const float *restrict s,
                                                                         ptrdiff_t n) {
    ptrdiff_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(d + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(s + i),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    return i;
}

__attribute__((target("avx2,f16c"))) static ptrdiff_t lk_f16_to_f32_f16c(float *restrict d,
                                                                         const uint16_t *restrict s,
                                                                         ptrdiff_t n) {
    const __m128i exp_mask = _mm_set1_epi16(0x7c00);
    ptrdiff_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(s + i));
        if (_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(h, exp_mask), exp_mask)))
            for (int k = 0; k < 8; k++) d[i + k] = lk_f16_to_f32(s[i + k]);
        else
            _mm256_storeu_ps(d + i, _mm256_cvtph_ps(h));
    }
    return i;
}

__attribute__((target("avx2"))) static ptrdiff_t lk_f32_to_bf16_avx2(uint16_t *restrict d,
                                                                    const float *restrict s,
                                                                    ptrdiff_t n) {
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    const __m256i bias = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
    const __m256i quiet = _mm256_set1_epi32(0x40);
    ptrdiff_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i r[2];
        for (int h = 0; h < 2; h++) {
            __m256i u = _mm256_loadu_si256((const __m256i *)(s + i + 8 * h));
            __m256i hi = _mm256_srli_epi32(u, 16);
            __m256i rounded = _mm256_srli_epi32(
                _mm256_add_epi32(_mm256_add_epi32(u, bias), _mm256_and_si256(hi, one)), 16);
            __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
            r[h] = _mm256_blendv_epi8(rounded, _mm256_or_si256(hi, quiet), nan);
        }
        /* packus works within 128-bit halves: 0-3 8-11 4-7 12-15, then reorder */
        __m256i p = _mm256_packus_epi32(r[0], r[1]);
        _mm256_storeu_si256((__m256i *)(d + i), _mm256_permute4x64_epi64(p, 0xD8));
    }
    return i;
}

__attribute__((target("avx2"))) static ptrdiff_t lk_bf16_to_f32_avx2(float *restrict d,
                                                                    const uint16_t *restrict s,
                                                                    ptrdiff_t n) {
    ptrdiff_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(s + i)));
        _mm256_storeu_si256((__m256i *)(d + i), _mm256_slli_epi32(w, 16));
    }
    return i;
}

/* The vector float conversions above on a contiguous run; elements done. */
static inline ptrdiff_t lk_cast_floats_x86(void *restrict dst, const void *restrict src,
                                           ptrdiff_t n, int st, int dt) {
    if (!lk_avx2()) return 0;
    if (st == LK_T_F32 && dt == LK_T_BF16)
        return lk_f32_to_bf16_avx2((uint16_t *)dst, (const float *)src, n);
    if (st == LK_T_BF16 && dt == LK_T_F32)
        return lk_bf16_to_f32_avx2((float *)dst, (const uint16_t *)src, n);
    if ((st == LK_T_F32 && dt == LK_T_F16) || (st == LK_T_F16 && dt == LK_T_F32)) {
        if (!lk_f16c() || (_mm_getcsr() & 0x8040) != 0) return 0; /* FTZ or DAZ set */
        return st == LK_T_F32 ? lk_f32_to_f16_f16c((uint16_t *)dst, (const float *)src, n)
                              : lk_f16_to_f32_f16c((float *)dst, (const uint16_t *)src, n);
    }
    return 0;
}
#endif

static inline int lk_cast(void *restrict dst, const void *restrict src, ptrdiff_t n, ptrdiff_t s,
                          int st, int dt, float scale, float zp);

/* Bytes of each source element of type code t. */
static inline ptrdiff_t lk_type_size(int t) {
    return t == LK_T_F32 ? 4 : (t == LK_T_I8 || t == LK_T_U8) ? 1 : 2;
}

/* lk_cast of a strided source: gathered into a contiguous L1 buffer a piece
 * at a time, each piece then converted by the contiguous loops, which
 * vectorise (NHWC -> NCHW float32 -> uint8 of 1x3x224x224: the strided
 * quantize took 6 ns an element, a division each). */
static inline int lk_cast_gathered(void *restrict dst, const void *restrict src, ptrdiff_t n,
                                   ptrdiff_t s, int st, int dt, float scale, float zp) {
    enum { PIECE = 512 };
    uint32_t buf[PIECE];
    ptrdiff_t es = lk_type_size(st), ed = lk_type_size(dt);
    const char *p = (const char *)src;
    for (ptrdiff_t i0 = 0; i0 < n; i0 += PIECE) {
        ptrdiff_t m = n - i0 < PIECE ? n - i0 : PIECE;
        switch (es) {
        case 4: for (ptrdiff_t i = 0; i < m; i++) memcpy((char *)buf + 4 * i, p + (i0 + i) * s, 4); break;
        case 2: for (ptrdiff_t i = 0; i < m; i++) memcpy((char *)buf + 2 * i, p + (i0 + i) * s, 2); break;
        default: for (ptrdiff_t i = 0; i < m; i++) memcpy((char *)buf + i, p + (i0 + i) * s, 1); break;
        }
        if (lk_cast((char *)dst + i0 * ed, buf, m, es, st, dt, scale, zp) != 0) return -1;
    }
    return 0;
}

/* Whether a conversion goes through float32 in L1 pieces: between float16 /
 * bfloat16 and the integers, or each other. The direct loops widen or round
 * each element by the scalar functions inside the quantize loop (float16 ->
 * uint8 of 1x64x256x256 took 98 ms); through float32 both halves run the
 * vector loops, with the same arithmetic (widening is exact; the quantize and
 * dequantize work in float32 either way). */
static inline int lk_cast_via_f32(int st, int dt) {
    int half_s = st == LK_T_F16 || st == LK_T_BF16, half_d = dt == LK_T_F16 || dt == LK_T_BF16;
    return st != dt && st != LK_T_F32 && dt != LK_T_F32 && (half_s || half_d);
}

static inline int lk_cast_through_f32(void *restrict dst, const void *restrict src, ptrdiff_t n,
                                      int st, int dt, float scale, float zp) {
    enum { PIECE = 512 };
    float buf[PIECE];
    ptrdiff_t es = lk_type_size(st), ed = lk_type_size(dt);
    for (ptrdiff_t i0 = 0; i0 < n; i0 += PIECE) {
        ptrdiff_t m = n - i0 < PIECE ? n - i0 : PIECE;
        if (lk_cast(buf, (const char *)src + i0 * es, m, es, st, LK_T_F32, scale, zp) != 0 ||
            lk_cast((char *)dst + i0 * ed, buf, m, 4, LK_T_F32, dt, scale, zp) != 0)
            return -1;
    }
    return 0;
}

static inline int lk_cast(void *restrict dst, const void *restrict src, ptrdiff_t n, ptrdiff_t s,
                          int st, int dt, float scale, float zp) {
    if (s != lk_type_size(st) && n >= 16 && st != dt)
        return lk_cast_gathered(dst, src, n, s, st, dt, scale, zp);
    if (n >= 16 && lk_cast_via_f32(st, dt))
        return lk_cast_through_f32(dst, src, n, st, dt, scale, zp);
#ifdef LK_HAVE_X86_CLONES
    if (s == lk_type_size(st)) {
        ptrdiff_t done = lk_cast_floats_x86(dst, src, n, st, dt);
        dst = (char *)dst + done * lk_type_size(dt);
        src = (const char *)src + done * s;
        n -= done;
    }
#ifdef LK_HAVE_VBMI_TILES
    if (st == LK_T_F32 && (dt == LK_T_I8 || dt == LK_T_U8) && s == 4 && n >= 64 && !lk_split_avx512() &&
        lk_vbmi()) {
        ptrdiff_t done = lk_quantize_f32_avx512(dst, (const float *)src, n, dt == LK_T_I8, scale, zp);
        dst = (char *)dst + done;
        src = (const char *)src + 4 * done;
        n -= done;
    }
#endif
    if (lk_avx2() && st == LK_T_F32 && (dt == LK_T_I16 || dt == LK_T_U16) && s == 4 && n >= 16) {
        ptrdiff_t done = lk_quantize16_f32_avx2(dst, (const float *)src, n, dt == LK_T_I16, scale, zp);
        dst = (char *)dst + 2 * done;
        src = (const char *)src + 4 * done;
        n -= done;
    }
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
