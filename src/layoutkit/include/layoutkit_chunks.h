/*
 * Padded chunk rows: NHWC -> HTP R4Crouton4x1 / R4Crouton2, written chunk by
 * chunk, in order.
 *
 * A chunk is Eh rows of Ew pixels; each slot group of K pixels holds their 32
 * channels interleaved channel by channel (8h2w32c4w of bytes, K = 4;
 * 8h2w32c2w of half-words, K = 2):
 *
 *   chunk[h][g][c][i] = src[h][g*K + i][c]
 *
 * Slots past the image (nh rows, nw pixels of data) hold the pad pattern. Every
 * chunk row is written once, front to back, in 64-byte stores, its padding in
 * the same pass (two rounds of vpermt2b interleave four pixels' bytes, one
 * two pixels' half-words). Small padded outputs (7x7 planes and other H, W
 * that are not multiples of 8) had been filled with padding first and then
 * given their data box by box. Where the next chunk holds the next 32
 * channels, two chunks are written at once (`pair`) from 64 bytes of each
 * pixel (bytes) or 128 (half-words), so that every source line is read once
 * and whole: one chunk at a time took 1.13x the time of R4Crouton4x1 of
 * 1x7x7x2048 (2.2x for R4CroutonLayout's 32-byte slots), 1.1x for R4Crouton2.
 *
 * lk_chunk_rows_unpack goes the other way (RepackPlan.use_chunks_back walks
 * the pack plan backwards): each chunk (pair) read in order, its slot groups
 * de-interleaved by vpermt2b into 64-byte pieces of pixels (32 bytes for a
 * single byte chunk), padding slots never read.
 *
 * R4CroutonLayout itself (one pixel a slot) is left to the fill-then-copy
 * path: written in order it took 1.2-1.5x the time of that path's fill in
 * L1 by `rep stosb` and pixel-major copy (uint8 of 7x7 to 57x61 planes).
 *
 * The kernels need AVX-512 VBMI; elsewhere lk_chunk_rows returns 0 and the
 * caller takes the general walk.
 */
#ifndef LAYOUTKIT_CHUNKS_H
#define LAYOUTKIT_CHUNKS_H

#include "layoutkit_interleave.h"

#ifdef LK_HAVE_VBMI_TILES

/* Bytes of (A, B): round 1 of the 4-way interleave, A0 B0 A1 B1 ... of the
 * low (index 0) or high (1) 32 bytes of each. */
#define LK_CH_ZIP8(p, h) ((p) % 2 ? 64 + 32 * (h) + (p) / 2 : 32 * (h) + (p) / 2)
/* 16-bit units of (A, B) the same way: round 2, and R4Crouton2's interleave. */
#define LK_CH_ZIP16(p, h)                                                                   \
    (((p) / 2) % 2 ? 64 + 32 * (h) + ((p) / 4) * 2 + (p) % 2 : 32 * (h) + ((p) / 4) * 2 + (p) % 2)
#define LK_CH_Z8LO(p) LK_CH_ZIP8(p, 0)
#define LK_CH_Z8HI(p) LK_CH_ZIP8(p, 1)
#define LK_CH_Z16LO(p) LK_CH_ZIP16(p, 0)
#define LK_CH_Z16HI(p) LK_CH_ZIP16(p, 1)
static const uint8_t lk_chunk_zip[4][64] __attribute__((aligned(64))) = {
    {LK_IDX64(LK_CH_Z8LO)}, {LK_IDX64(LK_CH_Z8HI)}, {LK_IDX64(LK_CH_Z16LO)}, {LK_IDX64(LK_CH_Z16HI)}};
/* The way back. Byte q of pixel 0 (j = 0) or 1 (j = 2) of a slot group of
 * half-words, its registers the group's two halves: channel q / 2, byte q % 2
 * (and round 1 of the 4-way split: pixels' pairs A B or C D of channel q / 2). */
#define LK_CH_UNZIP16(q, j) (((q) / 32) * 64 + 4 * (((q) / 2) % 16) + (q) % 2 + (j))
/* Round 2 of the 4-way split: pixel j's byte of channel q from the pairs of
 * channels 0-31 (first register) and 32-63 (second). */
#define LK_CH_UNZIP8(q, j) ((q) < 32 ? 2 * (q) + (j) : 64 + 2 * ((q) - 32) + (j))
#define LK_CH_U16A(q) LK_CH_UNZIP16(q, 0)
#define LK_CH_U16B(q) LK_CH_UNZIP16(q, 2)
#define LK_CH_U8A(q) LK_CH_UNZIP8(q, 0)
#define LK_CH_U8B(q) LK_CH_UNZIP8(q, 1)
static const uint8_t lk_chunk_unzip[4][64] __attribute__((aligned(64))) = {
    {LK_IDX64(LK_CH_U16A)}, {LK_IDX64(LK_CH_U16B)}, {LK_IDX64(LK_CH_U8A)}, {LK_IDX64(LK_CH_U8B)}};

/* Pixel w of a row, or the pad vector where the image has no such pixel; the
 * low 32 bytes only when the pixel's run is all there is (no pair). */
LK_VBMI __attribute__((always_inline)) static inline __m512i lk_chunk_pixel(
    const char *row, ptrdiff_t sw, ptrdiff_t w, ptrdiff_t nw, int whole, __m512i pad) {
    if (w >= nw) return pad;
    if (whole) return _mm512_loadu_si512((const void *)(row + w * sw));
    return _mm512_mask_loadu_epi8(pad, (__mmask64)0xffffffffu, row + w * sw);
}

/* One row of a chunk (and of the next, `pair` bytes on, when pair != 0). */
LK_VBMI static inline void lk_chunk_row(char *d, ptrdiff_t pair, const char *row, ptrdiff_t sw,
                                        ptrdiff_t Ew, ptrdiff_t nw, int K, int es, __m512i pad) {
    ptrdiff_t w;
    if (K == 4) {
        /* Bytes of four pixels, channel by channel: 128 bytes a slot group. */
        const __m512i lo8 = _mm512_load_si512((const void *)lk_chunk_zip[0]);
        const __m512i hi8 = _mm512_load_si512((const void *)lk_chunk_zip[1]);
        const __m512i lo16 = _mm512_load_si512((const void *)lk_chunk_zip[2]);
        const __m512i hi16 = _mm512_load_si512((const void *)lk_chunk_zip[3]);
        int whole = pair != 0;
        for (w = 0; w < Ew; w += 4) {
            __m512i p0 = lk_chunk_pixel(row, sw, w, nw, whole, pad);
            __m512i p1 = lk_chunk_pixel(row, sw, w + 1, nw, whole, pad);
            __m512i p2 = lk_chunk_pixel(row, sw, w + 2, nw, whole, pad);
            __m512i p3 = lk_chunk_pixel(row, sw, w + 3, nw, whole, pad);
            __m512i ab = _mm512_permutex2var_epi8(p0, lo8, p1);
            __m512i cd = _mm512_permutex2var_epi8(p2, lo8, p3);
            char *o = d + w * 32;
            _mm512_storeu_si512((void *)o, _mm512_permutex2var_epi8(ab, lo16, cd));
            _mm512_storeu_si512((void *)(o + 64), _mm512_permutex2var_epi8(ab, hi16, cd));
            if (pair) {
                ab = _mm512_permutex2var_epi8(p0, hi8, p1);
                cd = _mm512_permutex2var_epi8(p2, hi8, p3);
                _mm512_storeu_si512((void *)(o + pair), _mm512_permutex2var_epi8(ab, lo16, cd));
                _mm512_storeu_si512((void *)(o + pair + 64), _mm512_permutex2var_epi8(ab, hi16, cd));
            }
        }
    } else {
        /* K == 2, half-words: two pixels' 64 bytes into 128 (and the next 64 bytes
     * of each into the paired chunk). */
        const __m512i lo16 = _mm512_load_si512((const void *)lk_chunk_zip[2]);
        const __m512i hi16 = _mm512_load_si512((const void *)lk_chunk_zip[3]);
        for (w = 0; w < Ew; w += 2) {
            __m512i a = lk_chunk_pixel(row, sw, w, nw, 1, pad);
            __m512i b = lk_chunk_pixel(row, sw, w + 1, nw, 1, pad);
            _mm512_storeu_si512((void *)(d + w * 64), _mm512_permutex2var_epi8(a, lo16, b));
            _mm512_storeu_si512((void *)(d + w * 64 + 64), _mm512_permutex2var_epi8(a, hi16, b));
            if (pair) {
                a = w < nw ? _mm512_loadu_si512((const void *)(row + w * sw + 64)) : pad;
                b = w + 1 < nw ? _mm512_loadu_si512((const void *)(row + (w + 1) * sw + 64)) : pad;
                _mm512_storeu_si512((void *)(d + pair + w * 64), _mm512_permutex2var_epi8(a, lo16, b));
                _mm512_storeu_si512((void *)(d + pair + w * 64 + 64), _mm512_permutex2var_epi8(a, hi16, b));
            }
        }
    }
}

/* The chunk (pair) written straight to dst. */
LK_VBMI static void lk_chunk_rows_direct(char *dst, ptrdiff_t pair, const char *src, ptrdiff_t sh,
                                         ptrdiff_t sw, ptrdiff_t Eh, ptrdiff_t Ew, ptrdiff_t nh,
                                         ptrdiff_t nw, int K, int es, const uint8_t *pad64) {
    const __m512i pad = _mm512_loadu_si512((const void *)pad64);
    const ptrdiff_t row_bytes = Ew * 32 * es;
    for (ptrdiff_t h = 0; h < Eh; h++) {
        char *d = dst + h * row_bytes;
        if (h < nh) {
            lk_chunk_row(d, pair, src + h * sh, sw, Ew, nw, K, es, pad);
            continue;
        }
        for (ptrdiff_t b = 0; b < row_bytes; b += 64) {
            _mm512_storeu_si512((void *)(d + b), pad);
            if (pair) _mm512_storeu_si512((void *)(d + pair + b), pad);
        }
    }
}

/* Pixel pieces of one chunk row (and of the next chunk's, when pair != 0) back
 * into the pixels: the inverse of lk_chunk_row, nw pixels of data. */
LK_VBMI static inline void lk_chunk_row_unpack(char *row, ptrdiff_t sw, const char *d,
                                               ptrdiff_t pair, ptrdiff_t Ew, ptrdiff_t nw,
                                               int K) {
    const __m512i u16a = _mm512_load_si512((const void *)lk_chunk_unzip[0]);
    const __m512i u16b = _mm512_load_si512((const void *)lk_chunk_unzip[1]);
    const __mmask64 low = (__mmask64)0xffffffffu;
    for (ptrdiff_t w = 0; w < nw && w < Ew; w += K) {
        const char *g = d + w * 32 * (K == 4 ? 1 : 2);
        __m512i g0 = _mm512_loadu_si512((const void *)g);
        __m512i g1 = _mm512_loadu_si512((const void *)(g + 64));
        if (K == 2) {
            /* Half-words: pixels A and B, 64 bytes each (and 64 more paired). */
            __m512i a = _mm512_permutex2var_epi8(g0, u16a, g1);
            __m512i b = _mm512_permutex2var_epi8(g0, u16b, g1);
            _mm512_storeu_si512((void *)(row + w * sw), a);
            if (w + 1 < nw) _mm512_storeu_si512((void *)(row + (w + 1) * sw), b);
            if (pair) {
                g0 = _mm512_loadu_si512((const void *)(g + pair));
                g1 = _mm512_loadu_si512((const void *)(g + pair + 64));
                a = _mm512_permutex2var_epi8(g0, u16a, g1);
                b = _mm512_permutex2var_epi8(g0, u16b, g1);
                _mm512_storeu_si512((void *)(row + w * sw + 64), a);
                if (w + 1 < nw) _mm512_storeu_si512((void *)(row + (w + 1) * sw + 64), b);
            }
            continue;
        }
        /* Bytes of four pixels: pairs A B and C D of channels 0-31 ... */
        __m512i ab = _mm512_permutex2var_epi8(g0, u16a, g1);
        __m512i cd = _mm512_permutex2var_epi8(g0, u16b, g1);
        __m512i ab2 = ab, cd2 = cd;
        if (pair) {
            /* ... and 32-63 from the paired chunk. */
            g0 = _mm512_loadu_si512((const void *)(g + pair));
            g1 = _mm512_loadu_si512((const void *)(g + pair + 64));
            ab2 = _mm512_permutex2var_epi8(g0, u16a, g1);
            cd2 = _mm512_permutex2var_epi8(g0, u16b, g1);
        }
        const __m512i u8a = _mm512_load_si512((const void *)lk_chunk_unzip[2]);
        const __m512i u8b = _mm512_load_si512((const void *)lk_chunk_unzip[3]);
        __m512i p[4] = {_mm512_permutex2var_epi8(ab, u8a, ab2), _mm512_permutex2var_epi8(ab, u8b, ab2),
                        _mm512_permutex2var_epi8(cd, u8a, cd2), _mm512_permutex2var_epi8(cd, u8b, cd2)};
        for (int i = 0; i < 4 && w + i < nw; i++) {
            if (pair)
                _mm512_storeu_si512((void *)(row + (w + i) * sw), p[i]);
            else
                _mm512_mask_storeu_epi8(row + (w + i) * sw, low, p[i]);
        }
    }
}

static inline void lk_rep_movsb(void *d, const void *s, size_t n) {
    __asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
}

/* Chunk pairs whose pixels lie 1 KiB or more apart are built in an L1 stage
 * and copied out by `rep movsb`: the source lines then share a few L1 sets,
 * and the direct stores' misses beside the loads' took 1.17-1.3x the time
 * (R4Crouton4x1 of 1x7x7x2048, R4Crouton2 of 1x7x7x2048 and 4x7x7x512;
 * 512-byte pixels 0.98-1.1x, 64-256 bytes 0.86-0.88x, so those write
 * directly; a single chunk, 2 KiB, lost 1.04-1.06x staged). */
LK_VBMI static void lk_chunk_rows_vbmi(char *dst, ptrdiff_t pair, const char *src, ptrdiff_t sh,
                                       ptrdiff_t sw, ptrdiff_t Eh, ptrdiff_t Ew, ptrdiff_t nh,
                                       ptrdiff_t nw, int K, int es, const uint8_t *pad64) {
    const ptrdiff_t bytes = Eh * Ew * 32 * es;
    if (pair == bytes && bytes <= 2048 && sw >= 1024) {
        char stage[4096] __attribute__((aligned(64)));
        lk_chunk_rows_direct(stage, pair, src, sh, sw, Eh, Ew, nh, nw, K, es, pad64);
        lk_rep_movsb(dst, stage, (size_t)(2 * bytes));
        return;
    }
    lk_chunk_rows_direct(dst, pair, src, sh, sw, Eh, Ew, nh, nw, K, es, pad64);
}
#endif /* LK_HAVE_VBMI_TILES */

#ifdef LK_HAVE_VBMI_TILES
LK_VBMI static void lk_chunk_rows_unpack_vbmi(char *pix, ptrdiff_t pair, const char *chunk,
                                              ptrdiff_t sh, ptrdiff_t sw, ptrdiff_t Ew,
                                              ptrdiff_t nh, ptrdiff_t nw, int K, int es) {
    const ptrdiff_t row_bytes = Ew * 32 * es;
    for (ptrdiff_t h = 0; h < nh; h++)
        lk_chunk_row_unpack(pix + h * sh, sw, chunk + h * row_bytes, pair, Ew, nw, K);
}
#endif

/* Whether lk_chunk_rows takes chunks of Ew pixels a row, slot groups of K
 * pixels of 32 channels of `es` bytes (pair: two chunks at once, bytes only). */
static inline int lk_chunk_rows_fit(ptrdiff_t Ew, int K, int es, int pair) {
#ifdef LK_HAVE_VBMI_TILES
    if (!lk_vbmi() || Ew <= 0 || Ew % K) return 0;
    return (K == 4 && es == 1) || (K == 2 && es == 2);
#else
    (void)Ew; (void)K; (void)es; (void)pair;
    return 0;
#endif
}

/* Write one chunk of Eh x Ew slots at dst (and the next chunk, pair bytes on,
 * from the source's next 32 channels, when pair != 0) from the pixels at src:
 * rows sh bytes apart, pixels sw apart, nh rows and nw pixels of them data.
 * pad64 is 64 bytes of the pad pattern. Returns 0 (nothing written) where
 * lk_chunk_rows_fit refuses the geometry. */
static inline int lk_chunk_rows(char *dst, ptrdiff_t pair, const char *src, ptrdiff_t sh,
                                ptrdiff_t sw, ptrdiff_t Eh, ptrdiff_t Ew, ptrdiff_t nh,
                                ptrdiff_t nw, int K, int es, const uint8_t *pad64) {
#ifdef LK_HAVE_VBMI_TILES
    if (!lk_chunk_rows_fit(Ew, K, es, pair != 0)) return 0;
    lk_chunk_rows_vbmi(dst, pair, src, sh, sw, Eh, Ew, nh, nw, K, es, pad64);
    return 1;
#else
    (void)dst; (void)pair; (void)src; (void)sh; (void)sw; (void)Eh; (void)Ew; (void)nh;
    (void)nw; (void)K; (void)es; (void)pad64;
    return 0;
#endif
}

/* The way back: the nh x nw pixels of data of the chunk at `chunk` (and of
 * the next, pair bytes on, into the pixels' next 32 channels) into the pixels
 * at pix, rows sh bytes apart, pixels sw apart; padding slots are not read.
 * Returns 0 (nothing written) where lk_chunk_rows_fit refuses the geometry. */
static inline int lk_chunk_rows_unpack(char *pix, ptrdiff_t pair, const char *chunk,
                                       ptrdiff_t sh, ptrdiff_t sw, ptrdiff_t Ew, ptrdiff_t nh,
                                       ptrdiff_t nw, int K, int es) {
#ifdef LK_HAVE_VBMI_TILES
    if (!lk_chunk_rows_fit(Ew, K, es, pair != 0)) return 0;
    lk_chunk_rows_unpack_vbmi(pix, pair, chunk, sh, sw, Ew, nh, nw, K, es);
    return 1;
#else
    (void)pix; (void)pair; (void)chunk; (void)sh; (void)sw; (void)Ew; (void)nh; (void)nw;
    (void)K; (void)es;
    return 0;
#endif
}

#endif /* LAYOUTKIT_CHUNKS_H */
