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
#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

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
#include <cpuid.h>
LK_DEFINE_INTERLEAVE(lk_interleave_sse41, __attribute__((target("sse4.1"))))
LK_DEFINE_INTERLEAVE(lk_interleave_avx2, __attribute__((target("avx2"))))
#endif


/*
 * The inverse, a channel de-interleave (NHWC -> NCHW with few channels):
 *
 *   out[j*orow + i] = in[i*istride + j]      for i < m, j < k <= istride
 *
 * With a compile-time k the compiler turns the k strided loads into shuffles of
 * whole vectors (load-lanes) and each output row is written as one stream.
 */
#define LK_DI_LOOP(T, K)                                                   \
    do {                                                                   \
        const T *restrict in_ = (const T *)in;                             \
        T *o_[K];                                                          \
        for (int j_ = 0; j_ < (K); j_++) o_[j_] = (T *)out + j_ * orow;    \
        for (ptrdiff_t i_ = 0; i_ < m; i_++)                               \
            for (int j_ = 0; j_ < (K); j_++) o_[j_][i_] = in_[i_ * (K) + j_]; \
    } while (0)

/* IS: elements between pixels in the source (3 channels of 4-lane blocks: 4). */
#define LK_DI_LOOP3S(T, IS)                                                \
    do {                                                                   \
        const T *restrict in_ = (const T *)in;                             \
        T *restrict a_ = (T *)out;                                         \
        T *restrict b_ = (T *)out + orow;                                  \
        T *restrict c_ = (T *)out + 2 * orow;                              \
        for (ptrdiff_t i_ = 0; i_ < m; i_++) {                             \
            a_[i_] = in_[(IS) * i_];                                       \
            b_[i_] = in_[(IS) * i_ + 1];                                   \
            c_[i_] = in_[(IS) * i_ + 2];                                   \
        }                                                                  \
    } while (0)
#define LK_DI_LOOP3(T) LK_DI_LOOP3S(T, 3)

#define LK_DI_LOOP2(T)                                                     \
    do {                                                                   \
        const T *restrict in_ = (const T *)in;                             \
        T *restrict a_ = (T *)out;                                         \
        T *restrict b_ = (T *)out + orow;                                  \
        for (ptrdiff_t i_ = 0; i_ < m; i_++) {                             \
            a_[i_] = in_[2 * i_];                                          \
            b_[i_] = in_[2 * i_ + 1];                                      \
        }                                                                  \
    } while (0)

#define LK_DI_LOOP4(T)                                                     \
    do {                                                                   \
        const T *restrict in_ = (const T *)in;                             \
        T *restrict a_ = (T *)out;                                         \
        T *restrict b_ = (T *)out + orow;                                  \
        T *restrict c_ = (T *)out + 2 * orow;                              \
        T *restrict d_ = (T *)out + 3 * orow;                              \
        for (ptrdiff_t i_ = 0; i_ < m; i_++) {                             \
            a_[i_] = in_[4 * i_];                                          \
            b_[i_] = in_[4 * i_ + 1];                                      \
            c_[i_] = in_[4 * i_ + 2];                                      \
            d_[i_] = in_[4 * i_ + 3];                                      \
        }                                                                  \
    } while (0)

/* Eight named restrict pointers: through an array of pointers the compiler
 * cannot rule out aliasing and leaves the loop scalar (measured 12x slower). */
#define LK_DI_LOOP8(T)                                                     \
    do {                                                                   \
        const T *restrict in_ = (const T *)in;                             \
        T *restrict o0_ = (T *)out, *restrict o1_ = o0_ + orow;            \
        T *restrict o2_ = o1_ + orow, *restrict o3_ = o2_ + orow;          \
        T *restrict o4_ = o3_ + orow, *restrict o5_ = o4_ + orow;          \
        T *restrict o6_ = o5_ + orow, *restrict o7_ = o6_ + orow;          \
        for (ptrdiff_t i_ = 0; i_ < m; i_++) {                             \
            const T *p_ = in_ + 8 * i_;                                    \
            o0_[i_] = p_[0]; o1_[i_] = p_[1]; o2_[i_] = p_[2]; o3_[i_] = p_[3]; \
            o4_[i_] = p_[4]; o5_[i_] = p_[5]; o6_[i_] = p_[6]; o7_[i_] = p_[7]; \
        }                                                                  \
    } while (0)

#define LK_DI_SWITCH_K(T)                                                  \
    if (istride != k) {                                                    \
        const T *in_ = (const T *)in;                                      \
        if (k == 3 && istride == 4) { LK_DI_LOOP3S(T, 4); return; }        \
        for (int j_ = 0; j_ < k; j_++) {                                   \
            T *o_ = (T *)out + j_ * orow;                                  \
            for (ptrdiff_t i_ = 0; i_ < m; i_++) o_[i_] = in_[i_ * istride + j_]; \
        }                                                                  \
        return;                                                            \
    }                                                                      \
    switch (k) {                                                           \
    case 2: LK_DI_LOOP2(T); return;                                        \
    case 3: LK_DI_LOOP3(T); return;                                        \
    case 4: LK_DI_LOOP4(T); return;                                        \
    case 8: LK_DI_LOOP8(T); return;                                        \
    default: {                                                             \
        const T *in_ = (const T *)in;                                      \
        for (int j_ = 0; j_ < k; j_++) {                                   \
            T *o_ = (T *)out + j_ * orow;                                  \
            for (ptrdiff_t i_ = 0; i_ < m; i_++) o_[i_] = in_[i_ * k + j_]; \
        }                                                                  \
        return;                                                            \
    }                                                                      \
    }

#define LK_DEFINE_DEINTERLEAVE(NAME, ATTR)                                 \
    ATTR static void NAME(void *restrict out, ptrdiff_t orow,              \
                          const void *restrict in, ptrdiff_t m, int k,     \
                          ptrdiff_t istride, int es) {                     \
        switch (es) {                                                      \
        case 1: LK_DI_SWITCH_K(uint8_t)                                    \
        case 2: LK_DI_SWITCH_K(uint16_t)                                   \
        case 4: LK_DI_SWITCH_K(uint32_t)                                   \
        case 8: LK_DI_SWITCH_K(uint64_t)                                   \
        default:                                                           \
            for (int j_ = 0; j_ < k; j_++)                                 \
                for (ptrdiff_t i_ = 0; i_ < m; i_++)                       \
                    memcpy((char *)out + (j_ * orow + i_) * es,            \
                           (const char *)in + (i_ * istride + j_) * es, (size_t)es); \
        }                                                                  \
    }

LK_DEFINE_DEINTERLEAVE(lk_deinterleave_portable, )
#ifdef LK_HAVE_X86_CLONES
LK_DEFINE_DEINTERLEAVE(lk_deinterleave_sse41, __attribute__((target("sse4.1"))))
LK_DEFINE_DEINTERLEAVE(lk_deinterleave_avx2, __attribute__((target("avx2"))))
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

/* Bytes read plus written by the operation now running (its plan sets this
 * before walking; 0 when unknown), so that a kernel handed one slice of a
 * batch can tell a large operation from a small one when it chooses
 * streaming stores. A hint only: streamed or not, the bytes are the same. */
static ptrdiff_t lk_footprint_hint = 0;

static inline void lk_set_footprint_hint(ptrdiff_t bytes) { lk_footprint_hint = bytes; }

/* Whether the running operation is small enough (under 1 MiB moved) that its
 * source sits in L2 after the first call: software prefetches only cost
 * instructions there. */
static inline int lk_small_operation(void) {
    return lk_footprint_hint > 0 && lk_footprint_hint < ((ptrdiff_t)1 << 20);
}

/* Whether the running operation moves at most 2 MiB (L2 holds it). */
static inline int lk_l2_operation(void) {
    return lk_footprint_hint > 0 && lk_footprint_hint <= ((ptrdiff_t)2 << 20);
}

/* Whether the running operation is known to move at most `bytes`. */
static inline int lk_moves_at_most(ptrdiff_t bytes) {
    return lk_footprint_hint > 0 && lk_footprint_hint <= bytes;
}

/* Whether the running operation is large enough (8 MiB+ moved) that its
 * output is better streamed past the caches, even in slices of 1 MiB or less. */
static inline int lk_large_operation(void) { return lk_footprint_hint >= ((ptrdiff_t)8 << 20); }
/* Whether a transpose writing out_bytes streams its output: 4 MiB+ of it, or
 * 512 KiB+ as a slice of an operation that moves 8 MiB+ (a batch). */
static inline int lk_stream_output(ptrdiff_t out_bytes) {
    return out_bytes >= ((ptrdiff_t)4 << 20) ||
           (out_bytes >= ((ptrdiff_t)512 << 10) && lk_large_operation());
}

/* The CPU's maker and, for AMD's, whether 512-bit instructions run as two
 * 256-bit halves (Zen 4 and older: family 19h and below) or full width (Zen 5,
 * family 1Ah, and later). Two sets of choices follow from them:
 *
 *   lk_is_amd()        the memory-side choices (loop orders, when to stream,
 *                      which tile walks) measured on AMD's caches, Zen 4 and
 *                      Zen 5 alike;
 *   lk_split_avx512()  the AVX-512 (VBMI) kernels left out where each 512-bit
 *                      permute costs two: on Zen 4 they measured slower than
 *                      the AVX2 ones, on Zen 5 as on Intel they are faster
 *                      (the suite's small shapes, 1x3x224x224 and 1x2048x7x7:
 *                      1.5-3x the speed).
 *
 * LAYOUTKIT_CPU_VENDOR=amd (Zen 4), =zen5 or =intel forces a set (tests). */
static int lk_cpu_amd = -1, lk_cpu_split = -1;

static inline void lk_cpu_kind_init(void) {
    int amd = 0, split = 0;
    const char *force = getenv("LAYOUTKIT_CPU_VENDOR");
#ifdef LK_HAVE_X86_CLONES
    __builtin_cpu_init();
    amd = __builtin_cpu_is("amd") ? 1 : 0;
    if (amd) {
        unsigned a = 0, b = 0, c = 0, d = 0;
        __get_cpuid(1, &a, &b, &c, &d);
        unsigned family = (a >> 8) & 0xF;
        if (family == 0xF) family += (a >> 20) & 0xFF;
        split = family < 0x1A;
    }
#endif
    if (force && *force) {
        amd = strcmp(force, "amd") == 0 || strcmp(force, "zen5") == 0;
        split = strcmp(force, "amd") == 0;
    }
    lk_cpu_split = split;
    lk_cpu_amd = amd;
}

static inline int lk_is_amd(void) {
    if (lk_cpu_amd < 0) lk_cpu_kind_init();
    return lk_cpu_amd;
}

static inline int lk_split_avx512(void) {
    if (lk_cpu_amd < 0) lk_cpu_kind_init();
    return lk_cpu_split;
}

/* Whether rows padded from k of n lanes (3 channels into NCHW4c-32c, kCHW32,
 * kHWC8, HCWNC4/8 of one image) are streamed. On Intel and Zen 4: within a
 * large operation. On Zen 5 only when the operation's bytes (input and
 * output) outgrow 20 MiB, 5/8 of a CCD's 32 MiB L3 (sysconf reports the
 * host's 384 MiB on the suite's VM): there a non-temporal store drains at the
 * DRAM's speed (45 GB/s on the suite's VM) where cached stores of up to
 * 16 MiB ran at 120 GB/s, misses included (bench/c/write_bandwidth.c).
 * compare_builds.py on Zen 5, 1x3x1024x1024, 3-5 rounds: uint8 NCHW4c /
 * NCHW8c / NCHW16c 0.65-0.71x / 0.61x / 0.91x the time, HCWNC4 / HCWNC8 int8
 * 0.73x / 0.62x; float16 NCHW4c / HCWNC4 / NCHW8c (14-22 MB) 0.89-1.03x.
 * The suite's float32 ones (28 MB and more) measured faster streamed. */
static inline int lk_stream_padded(int k, ptrdiff_t n) {
    if (!lk_is_amd() || lk_split_avx512() || n <= 0) return lk_large_operation();
    return lk_footprint_hint / 2 / n * (n + k) > ((ptrdiff_t)20 << 20);
}

/* Whether long lanes (4096+ rows) are transposed a column of tiles at a time,
 * and 2- and 4-byte rows staged and streamed (1), or in strips of rows across
 * each group of lanes (0); see lk_transpose_direct_avx2. Columns everywhere:
 * measured on Zen 3 and Zen 4, and on a Sapphire Rapids Xeon, where strips
 * had looked as fast with numpy's fresh arrays (16 bytes past a 64-byte
 * boundary) but took 1.2-1.5x the time with the input at other offsets, as a
 * long process's heap places it (NCHW -> kHWC8 float16 1x64x256x256: strips
 * 775-1207 us by offset, columns 781-847 us). LAYOUTKIT_LONG_LANES=
 * columns|strips forces one (the tests run both). */
static int lk_long_lane_columns = -1;

static inline int lk_long_lanes_by_columns(void) {
    if (lk_long_lane_columns < 0) {
        const char *force = getenv("LAYOUTKIT_LONG_LANES");
        lk_long_lane_columns = force && strcmp(force, "strips") == 0 ? 0 : 1;
    }
    return lk_long_lane_columns;
}

static inline int lk_avx2(void) {
    if (lk_avx2_ok < 0) {
        int ok = 0;
#ifdef LK_HAVE_X86_CLONES
        const char *force = getenv("LAYOUTKIT_SIMD");
        if (lk_simd() != 0 && !(force && strcmp(force, "sse4.1") == 0)) {
            __builtin_cpu_init();
            ok = __builtin_cpu_supports("avx2") ? 1 : 0;
        }
#endif
        lk_avx2_ok = ok;
    }
    return lk_avx2_ok;
}

/* Whether the AVX-512 VBMI byte tiles run: the CPU has them (and the OS saves
 * their registers, which __builtin_cpu_supports checks) and LAYOUTKIT_SIMD
 * does not ask for less (avx2, sse4.1, portable). */
static int lk_vbmi_ok = -1;

static inline int lk_vbmi(void) {
    if (lk_vbmi_ok < 0) {
        int ok = 0;
#if defined(LK_HAVE_X86_CLONES) && (defined(__clang__) || __GNUC__ >= 8)
        const char *force = getenv("LAYOUTKIT_SIMD");
        if (lk_avx2() && !(force && strcmp(force, "avx2") == 0))
            ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi");
#endif
        lk_vbmi_ok = ok;
    }
    return lk_vbmi_ok;
}

static int lk_interleave_wide(void *restrict out, const void *const *lanes, ptrdiff_t m, int k,
                              ptrdiff_t ostride, int es);

/* Hand-written shuffles for the commonest narrow cases (3 lanes both ways, 4
 * and 8 byte lanes in, 8 lanes out): the rows they did, a multiple of their
 * step; 0 where they do not apply (other shapes, no AVX2 or VBMI,
 * LAYOUTKIT_SIMD set lower). */
static ptrdiff_t lk_interleave_shuffled(void *restrict out, const void *const *lanes,
                                        ptrdiff_t m, int k, ptrdiff_t ostride, int es);
static ptrdiff_t lk_deinterleave_shuffled(void *restrict out, ptrdiff_t orow,
                                          const void *restrict in, ptrdiff_t m, int k,
                                          ptrdiff_t istride, int es);
static int lk_interleave_zip(void *restrict out, const void *const *lanes, ptrdiff_t m, int k,
                             int es);
/* Lanes of at most this many bytes go to lk_interleave_zipn. */
#define LK_ZIPN_MAX_BYTES 256
/* The longest row piece (W es bytes) lk_lane_rows takes: blocks of 4 and 8
 * channels of 56x56 float32 planes (224 bytes) measured as fast as the
 * staging path, 112x112 (448) no faster; blocks of 16 of 112 bytes took
 * 0.95-1.15x its time, so 64 bytes there. */
#define LK_LANE_ROWS_MAX 256
/* The same for lk_lane_rows_unpack: blocks of 4 and 8 channels of 112x112
 * float32 planes (448 bytes) took 0.8x the time of the de-interleave path,
 * 256x256 (1 KiB) 1.15-1.2x; blocks of 16, 0.3-0.5x for any length. */
#define LK_LANE_ROWS_UNPACK_MAX 512
#define LK_LANE_ROWS_UNPACK_MAX16 4096
static int lk_interleave_zipn(void *restrict out, const void *const *lanes, ptrdiff_t m, int k,
                              int es, int lane_box);

/* rest[j] = lanes[j] + off bytes, one pointer at a time: callers build lane
 * tables with 8-byte stores just before, and the 16-byte loads a vectorised
 * loop would use cannot take their data from two stores (a store-forwarding
 * stall per call: 20% of NCHW -> HCWNC4 int8 of 1x2048x7x7, a call per block
 * of 4 channels). */
static inline void lk_offset_lanes(const void **rest, const void *const *lanes, int k,
                                   ptrdiff_t off) {
    for (int j = 0; j < k; j++) {
        const char *p = (const char *)lanes[j];
#if defined(__GNUC__) || defined(__clang__)
        __asm__("" : "+r"(p));
#endif
        rest[j] = p + off;
    }
}

static inline void lk_interleave_long(void *restrict out, const void *const *lanes, ptrdiff_t m,
                                      int k, ptrdiff_t ostride, int es) {
    const void *rest[16]; /* k <= 8 for the shuffle kernels, <= 16 for the head below */
    /* Checked here, inline: tiny boxes call this per box. */
    ptrdiff_t done = (k == 3 && m >= 16) || (k == 4 && es == 1 && m >= 32) ||
                             (k == 4 && es == 2 && m >= 64) || (k == 8 && es == 1 && m >= 16)
                         ? lk_interleave_shuffled(out, lanes, m, k, ostride, es)
                         : 0;
    if (done) {
        /* The rows past the kernel's last step by one more step that ends at
         * m, rewriting rows already done with the same values (HCWNC4 of 7x7
         * planes: lanes of 49 bytes, 32 + 17). */
        ptrdiff_t step = k == 3 ? 32 / es : k == 4 ? 32 : 16, back = m - step;
        if (done < m) {
            lk_offset_lanes(rest, lanes, k, back * es);
            if (lk_interleave_shuffled((char *)out + back * ostride * es, rest, step, k, ostride,
                                       es) == step)
                return;
        }
        lk_offset_lanes(rest, lanes, k, done * es);
        lanes = rest;
        out = (char *)out + done * ostride * es;
        m -= done;
        if (m == 0) return;
    }
    int fixed = ostride == k && (k == 2 || k == 3 || k == 4 || k == 8 || k == 16);
    if (!fixed && (es == 1 || es == 2 || es == 4 || es == 8) &&
        lk_interleave_wide(out, lanes, m, k, ostride, es))
        return;
#ifdef LK_HAVE_X86_CLONES
    int level = lk_simd();
    ptrdiff_t row = (ptrdiff_t)k * es, to_line = (ptrdiff_t)(-(uintptr_t)out & 63);
    if (level != 0 && fixed && k != 3 && to_line != 0 && to_line % row == 0 && m * row >= 256) {
        /* The compiler's loops store a step's rows out of order (row 1, 0, 2,
         * 3 of 16 bytes each): from a row 48 bytes into a line, the stores
         * alternate between two lines, and on the Xeon (Emerald Rapids) the
         * whole loop took twice the time (NCHW -> NCHW4c float32 / HCWNC4
         * int8 of 1x3x224x224: 52-59 / 14 us against 23-27 / 7.3 us at any
         * other offset). The rows before the first line boundary go first. */
        ptrdiff_t head = to_line / row;
        if (level == 1)
            lk_interleave_sse41(out, lanes, head, k, ostride, es);
        else
            lk_interleave_avx2(out, lanes, head, k, ostride, es);
        lk_offset_lanes(rest, lanes, k, head * es);
        lanes = rest;
        out = (char *)out + to_line;
        m -= head;
    }
    if (level == 1 && k == 8 && ostride == 8 && m >= 32 && lk_interleave_zip(out, lanes, m, k, es))
        return;
    if (level == 1) { lk_interleave_sse41(out, lanes, m, k, ostride, es); return; }
    if (level == 2) { lk_interleave_avx2(out, lanes, m, k, ostride, es); return; }
#endif
    lk_interleave_portable(out, lanes, m, k, ostride, es);
}

static inline int lk_lanetiles_boxes(char *o, ptrdiff_t dstep, const void *const *lanes,
                                     ptrdiff_t off, ptrdiff_t sstep, ptrdiff_t nbox, ptrdiff_t m,
                                     int k, int es);

/* K lanes of m elements of es bytes into rows ostride elements apart. */
static inline void lk_interleave(void *restrict out, const void *const *lanes, ptrdiff_t m,
                                 int k, ptrdiff_t ostride, int es) {
    /* Short lanes into dense pixels (7x7 planes into NCHW8c and the like). */
    if (ostride == k && lk_interleave_zipn(out, lanes, m, k, es, 0)) return;
    /* Four float32 lanes (NCHW4c of 7x7 planes): the lane tiles, one byte
     * permute of the four lanes' 16 bytes a step, 0.84x the time of the SSE
     * interleave. */
    if (ostride == k && k == 4 && es == 4 &&
        lk_lanetiles_boxes((char *)out, 0, lanes, 0, 0, 1, m, k, es))
        return;
    lk_interleave_long(out, lanes, m, k, ostride, es);
}

/* lk_interleave of one box of copy_lanes: k lanes into pixels of k. */
static inline void lk_interleave_lane_box(void *restrict out, const void *const *lanes,
                                          ptrdiff_t m, int k, int es) {
    if (lk_interleave_zipn(out, lanes, m, k, es, 1)) return;
    lk_interleave_long(out, lanes, m, k, k, es);
}

/* Fill the parts within [lo, hi) of the byte runs (start, length pairs,
 * ascending, from dst) with the es-byte pattern pad (es 1, 2, 4 or 8; every
 * run starts and ends on an element). A run is a few stores of the pattern
 * repeated over 64 bytes, the last overlapping, as in lk_copy_rows: the
 * padding of small croutons is hundreds of runs of 32-288 bytes, where a
 * memset call each would cost more than the whole fill they replace. */
static inline void lk_fill_runs(char *restrict dst, const int64_t *runs, ptrdiff_t nruns,
                                ptrdiff_t lo, ptrdiff_t hi, const uint8_t *pad, int es) {
    unsigned char pat[64];
    ptrdiff_t a = 0, b = nruns;
    for (int i = 0; i < 64; i++) pat[i] = pad[i % es];
    while (a < b) { /* the first run that ends after lo */
        ptrdiff_t m = a + (b - a) / 2;
        if (runs[2 * m] + runs[2 * m + 1] <= lo)
            a = m + 1;
        else
            b = m;
    }
    for (ptrdiff_t r = a; r < nruns && runs[2 * r] < hi; r++) {
        ptrdiff_t s = runs[2 * r] > lo ? runs[2 * r] : lo;
        ptrdiff_t e = runs[2 * r] + runs[2 * r + 1] < hi ? runs[2 * r] + runs[2 * r + 1] : hi;
        char *d = dst + s;
        ptrdiff_t n = e - s;
/* W bytes of pattern at each end of the run (W <= n < 2W). */
#define LK_FILL_ENDS(W) (memcpy(d, pat, W), memcpy(d + n - (W), pat, W))
        if (n >= 64) {
            ptrdiff_t i = 0;
            for (; i + 64 <= n; i += 64) memcpy(d + i, pat, 64);
            if (i < n) memcpy(d + n - 64, pat, 64);
        } else if (n >= 32) {
            LK_FILL_ENDS(32);
        } else if (n >= 16) {
            LK_FILL_ENDS(16);
        } else if (n >= 8) {
            LK_FILL_ENDS(8);
        } else if (n >= 4) {
            LK_FILL_ENDS(4);
        } else {
            memcpy(d, pat, (size_t)n);
        }
#undef LK_FILL_ENDS
    }
}

/* nq x n0 runs of `run` bytes (16, 32, 64 or 128), run (q, r) from src + q sq +
 * r s0 to dst + q dq + r d0: whole 32-channel runs of croutons <-> NHWC. One
 * loop per size, so each run is a few moves of a constant size. */
#define LK_RUNS_2D(RUN)                                                          \
    for (ptrdiff_t q = 0; q < nq; q++)                                           \
        for (ptrdiff_t r = 0; r < n0; r++) memcpy(dst + q * dq + r * d0, src + q * sq + r * s0, RUN)
#ifdef LK_HAVE_X86_CLONES
/* Runs of 64 and 128 bytes by 512-bit moves, where the build's SSE moves
 * took four or eight loads a run: for operations past L2, whose loads wait
 * on memory, a quarter of the loads keeps more runs in flight (Zen 5,
 * compare_builds.py: crouton <-> NHWC float16 / float32 of 1x64x256x256 and
 * 8x256x56x56 0.71-0.88x the time). */
__attribute__((target("avx2,avx512f"))) static void lk_copy_runs_2d_zmm(
    char *restrict dst, ptrdiff_t dq, ptrdiff_t d0, const char *restrict src, ptrdiff_t sq,
    ptrdiff_t s0, ptrdiff_t nq, ptrdiff_t n0, ptrdiff_t run) {
    if (run == 64)
        LK_RUNS_2D(64);
    else
        LK_RUNS_2D(128);
}
/* Whether the run loops take their 512-bit clones (see above). */
static inline int lk_runs_by_zmm(ptrdiff_t run) {
    return run >= 64 && !lk_moves_at_most((ptrdiff_t)2 << 20) && lk_vbmi();
}
#endif
static inline void lk_copy_runs_2d(char *restrict dst, ptrdiff_t dq, ptrdiff_t d0,
                                   const char *restrict src, ptrdiff_t sq, ptrdiff_t s0,
                                   ptrdiff_t nq, ptrdiff_t n0, ptrdiff_t run) {
#ifdef LK_HAVE_X86_CLONES
    if (lk_runs_by_zmm(run)) {
        lk_copy_runs_2d_zmm(dst, dq, d0, src, sq, s0, nq, n0, run);
        return;
    }
#endif
    switch (run) {
    case 16: LK_RUNS_2D(16); break;
    case 32: LK_RUNS_2D(32); break;
    case 64: LK_RUNS_2D(64); break;
    default: LK_RUNS_2D(128); break;
    }
}

/* n runs of `run` bytes, run q from src + q sq to dst + q dq. The size is
 * looked at once, not per run: as a switch per run (copy_run) the 28-byte
 * runs of HCWNC4 int8 1x2048x7x7's staged rows were two thirds of its time,
 * and the 32-byte rows of crouton -> NHWC uint8 of 7x7 planes a third. A run
 * of 8-256 bytes is one move of a power of two, or two that overlap (the
 * second rewrites bytes the first wrote, with the same values). */
#define LK_COPY_ROWS(W)                                                          \
    for (ptrdiff_t q = 0; q < n; q++) {                                          \
        memcpy(dst + q * dq, src + q * sq, W);                                   \
        if (run > (W)) memcpy(dst + q * dq + run - (W), src + q * sq + run - (W), W); \
    }
static inline void lk_copy_rows(char *restrict dst, ptrdiff_t dq, const char *restrict src,
                                ptrdiff_t sq, ptrdiff_t n, ptrdiff_t run) {
    if (run > 256 || run < 8)
        for (ptrdiff_t q = 0; q < n; q++) memcpy(dst + q * dq, src + q * sq, (size_t)run);
    else if (run >= 128)
        LK_COPY_ROWS(128)
    else if (run >= 64)
        LK_COPY_ROWS(64)
    else if (run >= 32)
        LK_COPY_ROWS(32)
    else if (run >= 16)
        LK_COPY_ROWS(16)
    else
        LK_COPY_ROWS(8)
}
#undef LK_COPY_ROWS

/* lk_copy_runs_2d with a third, innermost level of nc runs that continue each
 * other in the source (src + c * RUN) and go dc apart in the destination: a
 * pixel of 64+ channels read front to back into its crouton chunks. */
#define LK_RUNS_3D(RUN)                                                          \
    for (ptrdiff_t q = 0; q < nq; q++)                                           \
        for (ptrdiff_t r = 0; r < n0; r++) {                                     \
            char *d_ = dst + q * dq + r * d0;                                    \
            const char *s_ = src + q * sq + r * s0;                              \
            for (ptrdiff_t c = 0; c < nc; c++) memcpy(d_ + c * dc, s_ + c * (RUN), RUN); \
        }
#ifdef LK_HAVE_X86_CLONES
/* lk_copy_runs_2d's 512-bit moves for the three-level loop (NHWC -> Crouton
 * of 128-256 channels, each pixel's runs front to back): compare_builds.py
 * on Zen 5, 8x256x56x56 float16 / float32 0.69x / 0.84x the time. 32-byte
 * runs by one 256-bit move (uint8) were 0.96-1.18x, 2-D and 3-D. */
__attribute__((target("avx2,avx512f"))) static void lk_copy_runs_3d_zmm(
    char *restrict dst, ptrdiff_t dq, ptrdiff_t d0, ptrdiff_t dc, const char *restrict src,
    ptrdiff_t sq, ptrdiff_t s0, ptrdiff_t nq, ptrdiff_t n0, ptrdiff_t nc, ptrdiff_t run) {
    if (run == 64) {
        LK_RUNS_3D(64);
    } else {
        LK_RUNS_3D(128);
    }
}
#endif
static inline void lk_copy_runs_3d(char *restrict dst, ptrdiff_t dq, ptrdiff_t d0, ptrdiff_t dc,
                                   const char *restrict src, ptrdiff_t sq, ptrdiff_t s0,
                                   ptrdiff_t nq, ptrdiff_t n0, ptrdiff_t nc, ptrdiff_t run) {
#ifdef LK_HAVE_X86_CLONES
    if (lk_runs_by_zmm(run)) {
        lk_copy_runs_3d_zmm(dst, dq, d0, dc, src, sq, s0, nq, n0, nc, run);
        return;
    }
#endif
    switch (run) {
    case 16: LK_RUNS_3D(16); break;
    case 32: LK_RUNS_3D(32); break;
    case 64: LK_RUNS_3D(64); break;
    default: LK_RUNS_3D(128); break;
    }
}

/* Ask for the first `bytes` (up to 4 lines) of a lane that the next box will read. */
static inline void lk_prefetch_t0(const char *p) {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(p);
#else
    (void)p;
#endif
}

static inline void lk_prefetch_lane(const char *p, ptrdiff_t bytes) {
#if defined(__GNUC__) || defined(__clang__)
    if (bytes > 256) bytes = 256;
    for (ptrdiff_t b = 0; b < bytes; b += 64) __builtin_prefetch(p + b);
    __builtin_prefetch(p + bytes - 1);
#else
    (void)p; (void)bytes;
#endif
}

/* Every line of the next box's destination, for writing: the boxes of an
 * interleave of a batch (HCWNC4 / HCWNC8) are each a run of lines far from the
 * last, which the hardware's prefetchers only find a few lines in, so the
 * cached stores wait on reading each line first. */
static inline void lk_prefetch_output(char *p, ptrdiff_t bytes) {
#if defined(__GNUC__) || defined(__clang__)
    for (ptrdiff_t b = 0; b < bytes; b += 64) __builtin_prefetch(p + b, 1, 3);
    __builtin_prefetch(p + bytes - 1, 1, 3);
#else
    (void)p; (void)bytes;
#endif
}

/* The element-by-element de-interleave (see LK_DEFINE_DEINTERLEAVE), the
 * build's best clone. */
static inline void lk_deinterleave_plain(void *restrict out, ptrdiff_t orow,
                                         const void *restrict in, ptrdiff_t m, int k,
                                         ptrdiff_t istride, int es) {
#ifdef LK_HAVE_X86_CLONES
    /* Unlike interleaves, de-interleaves gain from AVX2 (measured 15-35%). */
    if (lk_simd() != 0 && lk_avx2()) { lk_deinterleave_avx2(out, orow, in, m, k, istride, es); return; }
    if (lk_simd() != 0) { lk_deinterleave_sse41(out, orow, in, m, k, istride, es); return; }
#endif
    lk_deinterleave_portable(out, orow, in, m, k, istride, es);
}

/* out/orow in elements; see LK_DEFINE_DEINTERLEAVE. */
#if defined(LK_HAVE_X86_CLONES) && (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 8))
#define LK_HAVE_DI16_VBMI 1
#include <immintrin.h>
/* Dense pixels of k (5-16) bytes into k rows orow bytes apart, with AVX-512
 * VBMI: 16 pixels (up to 256 bytes, masked loads that stop at the last pixel)
 * a step, four rows of 16 bytes out of each pair of vpermt2b over the first
 * and last 128 bytes; a last step of 16 pixels overlaps the one before. The
 * compiler's loop moved these byte by byte (NHWC -> NCHW uint8 of 12
 * channels: 4x the time of float16). The permutes come from constant
 * tables: built per call, they took most of the time of unpacking NCHW16c
 * uint8 of 1x2048x7x7 (128 boxes of 49 pixels: 62 us, 0.05x a copy). Returns
 * m, or 0 for m < 16. */
/* lk_deinterleave16_vbmi's permutes for k = 5..16 (index k - 5): byte b of
 * group q's register is pixel byte (b % 16) k + min(4 q + b / 16, k - 1) of
 * the step, mod 128; hi marks those from its last 128 bytes (groups past
 * (k + 3) / 4 unused). */
static const uint8_t lk_di16_tab[12][4][64] __attribute__((aligned(64))) = {
    {/* k = 5 */
        {0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 1, 6, 11, 16, 21, 26, 31,
         36, 41, 46, 51, 56, 61, 66, 71, 76, 2, 7, 12, 17, 22, 27, 32, 37, 42, 47, 52, 57, 62,
         67, 72, 77, 3, 8, 13, 18, 23, 28, 33, 38, 43, 48, 53, 58, 63, 68, 73, 78},
        {4, 9, 14, 19, 24, 29, 34, 39, 44, 49, 54, 59, 64, 69, 74, 79, 4, 9, 14, 19, 24, 29, 34,
         39, 44, 49, 54, 59, 64, 69, 74, 79, 4, 9, 14, 19, 24, 29, 34, 39, 44, 49, 54, 59, 64,
         69, 74, 79, 4, 9, 14, 19, 24, 29, 34, 39, 44, 49, 54, 59, 64, 69, 74, 79},
        {0},
        {0},
    },
    {/* k = 6 */
        {0, 6, 12, 18, 24, 30, 36, 42, 48, 54, 60, 66, 72, 78, 84, 90, 1, 7, 13, 19, 25, 31, 37,
         43, 49, 55, 61, 67, 73, 79, 85, 91, 2, 8, 14, 20, 26, 32, 38, 44, 50, 56, 62, 68, 74,
         80, 86, 92, 3, 9, 15, 21, 27, 33, 39, 45, 51, 57, 63, 69, 75, 81, 87, 93},
        {4, 10, 16, 22, 28, 34, 40, 46, 52, 58, 64, 70, 76, 82, 88, 94, 5, 11, 17, 23, 29, 35,
         41, 47, 53, 59, 65, 71, 77, 83, 89, 95, 5, 11, 17, 23, 29, 35, 41, 47, 53, 59, 65, 71,
         77, 83, 89, 95, 5, 11, 17, 23, 29, 35, 41, 47, 53, 59, 65, 71, 77, 83, 89, 95},
        {0},
        {0},
    },
    {/* k = 7 */
        {0, 7, 14, 21, 28, 35, 42, 49, 56, 63, 70, 77, 84, 91, 98, 105, 1, 8, 15, 22, 29, 36,
         43, 50, 57, 64, 71, 78, 85, 92, 99, 106, 2, 9, 16, 23, 30, 37, 44, 51, 58, 65, 72, 79,
         86, 93, 100, 107, 3, 10, 17, 24, 31, 38, 45, 52, 59, 66, 73, 80, 87, 94, 101, 108},
        {4, 11, 18, 25, 32, 39, 46, 53, 60, 67, 74, 81, 88, 95, 102, 109, 5, 12, 19, 26, 33, 40,
         47, 54, 61, 68, 75, 82, 89, 96, 103, 110, 6, 13, 20, 27, 34, 41, 48, 55, 62, 69, 76, 83,
         90, 97, 104, 111, 6, 13, 20, 27, 34, 41, 48, 55, 62, 69, 76, 83, 90, 97, 104, 111},
        {0},
        {0},
    },
    {/* k = 8 */
        {0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 1, 9, 17, 25, 33, 41,
         49, 57, 65, 73, 81, 89, 97, 105, 113, 121, 2, 10, 18, 26, 34, 42, 50, 58, 66, 74, 82,
         90, 98, 106, 114, 122, 3, 11, 19, 27, 35, 43, 51, 59, 67, 75, 83, 91, 99, 107, 115,
         123},
        {4, 12, 20, 28, 36, 44, 52, 60, 68, 76, 84, 92, 100, 108, 116, 124, 5, 13, 21, 29, 37,
         45, 53, 61, 69, 77, 85, 93, 101, 109, 117, 125, 6, 14, 22, 30, 38, 46, 54, 62, 70, 78,
         86, 94, 102, 110, 118, 126, 7, 15, 23, 31, 39, 47, 55, 63, 71, 79, 87, 95, 103, 111,
         119, 127},
        {0},
        {0},
    },
    {/* k = 9 */
        {0, 9, 18, 27, 36, 45, 54, 63, 72, 81, 90, 99, 108, 117, 126, 7, 1, 10, 19, 28, 37, 46,
         55, 64, 73, 82, 91, 100, 109, 118, 127, 8, 2, 11, 20, 29, 38, 47, 56, 65, 74, 83, 92,
         101, 110, 119, 0, 9, 3, 12, 21, 30, 39, 48, 57, 66, 75, 84, 93, 102, 111, 120, 1, 10},
        {4, 13, 22, 31, 40, 49, 58, 67, 76, 85, 94, 103, 112, 121, 2, 11, 5, 14, 23, 32, 41, 50,
         59, 68, 77, 86, 95, 104, 113, 122, 3, 12, 6, 15, 24, 33, 42, 51, 60, 69, 78, 87, 96,
         105, 114, 123, 4, 13, 7, 16, 25, 34, 43, 52, 61, 70, 79, 88, 97, 106, 115, 124, 5, 14},
        {8, 17, 26, 35, 44, 53, 62, 71, 80, 89, 98, 107, 116, 125, 6, 15, 8, 17, 26, 35, 44, 53,
         62, 71, 80, 89, 98, 107, 116, 125, 6, 15, 8, 17, 26, 35, 44, 53, 62, 71, 80, 89, 98,
         107, 116, 125, 6, 15, 8, 17, 26, 35, 44, 53, 62, 71, 80, 89, 98, 107, 116, 125, 6, 15},
        {0},
    },
    {/* k = 10 */
        {0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 2, 12, 22, 1, 11, 21, 31, 41, 51,
         61, 71, 81, 91, 101, 111, 121, 3, 13, 23, 2, 12, 22, 32, 42, 52, 62, 72, 82, 92, 102,
         112, 122, 4, 14, 24, 3, 13, 23, 33, 43, 53, 63, 73, 83, 93, 103, 113, 123, 5, 15, 25},
        {4, 14, 24, 34, 44, 54, 64, 74, 84, 94, 104, 114, 124, 6, 16, 26, 5, 15, 25, 35, 45, 55,
         65, 75, 85, 95, 105, 115, 125, 7, 17, 27, 6, 16, 26, 36, 46, 56, 66, 76, 86, 96, 106,
         116, 126, 8, 18, 28, 7, 17, 27, 37, 47, 57, 67, 77, 87, 97, 107, 117, 127, 9, 19, 29},
        {8, 18, 28, 38, 48, 58, 68, 78, 88, 98, 108, 118, 0, 10, 20, 30, 9, 19, 29, 39, 49, 59,
         69, 79, 89, 99, 109, 119, 1, 11, 21, 31, 9, 19, 29, 39, 49, 59, 69, 79, 89, 99, 109,
         119, 1, 11, 21, 31, 9, 19, 29, 39, 49, 59, 69, 79, 89, 99, 109, 119, 1, 11, 21, 31},
        {0},
    },
    {/* k = 11 */
        {0, 11, 22, 33, 44, 55, 66, 77, 88, 99, 110, 121, 4, 15, 26, 37, 1, 12, 23, 34, 45, 56,
         67, 78, 89, 100, 111, 122, 5, 16, 27, 38, 2, 13, 24, 35, 46, 57, 68, 79, 90, 101, 112,
         123, 6, 17, 28, 39, 3, 14, 25, 36, 47, 58, 69, 80, 91, 102, 113, 124, 7, 18, 29, 40},
        {4, 15, 26, 37, 48, 59, 70, 81, 92, 103, 114, 125, 8, 19, 30, 41, 5, 16, 27, 38, 49, 60,
         71, 82, 93, 104, 115, 126, 9, 20, 31, 42, 6, 17, 28, 39, 50, 61, 72, 83, 94, 105, 116,
         127, 10, 21, 32, 43, 7, 18, 29, 40, 51, 62, 73, 84, 95, 106, 117, 0, 11, 22, 33, 44},
        {8, 19, 30, 41, 52, 63, 74, 85, 96, 107, 118, 1, 12, 23, 34, 45, 9, 20, 31, 42, 53, 64,
         75, 86, 97, 108, 119, 2, 13, 24, 35, 46, 10, 21, 32, 43, 54, 65, 76, 87, 98, 109, 120,
         3, 14, 25, 36, 47, 10, 21, 32, 43, 54, 65, 76, 87, 98, 109, 120, 3, 14, 25, 36, 47},
        {0},
    },
    {/* k = 12 */
        {0, 12, 24, 36, 48, 60, 72, 84, 96, 108, 120, 4, 16, 28, 40, 52, 1, 13, 25, 37, 49, 61,
         73, 85, 97, 109, 121, 5, 17, 29, 41, 53, 2, 14, 26, 38, 50, 62, 74, 86, 98, 110, 122, 6,
         18, 30, 42, 54, 3, 15, 27, 39, 51, 63, 75, 87, 99, 111, 123, 7, 19, 31, 43, 55},
        {4, 16, 28, 40, 52, 64, 76, 88, 100, 112, 124, 8, 20, 32, 44, 56, 5, 17, 29, 41, 53, 65,
         77, 89, 101, 113, 125, 9, 21, 33, 45, 57, 6, 18, 30, 42, 54, 66, 78, 90, 102, 114, 126,
         10, 22, 34, 46, 58, 7, 19, 31, 43, 55, 67, 79, 91, 103, 115, 127, 11, 23, 35, 47, 59},
        {8, 20, 32, 44, 56, 68, 80, 92, 104, 116, 0, 12, 24, 36, 48, 60, 9, 21, 33, 45, 57, 69,
         81, 93, 105, 117, 1, 13, 25, 37, 49, 61, 10, 22, 34, 46, 58, 70, 82, 94, 106, 118, 2,
         14, 26, 38, 50, 62, 11, 23, 35, 47, 59, 71, 83, 95, 107, 119, 3, 15, 27, 39, 51, 63},
        {0},
    },
    {/* k = 13 */
        {0, 13, 26, 39, 52, 65, 78, 91, 104, 117, 2, 15, 28, 41, 54, 67, 1, 14, 27, 40, 53, 66,
         79, 92, 105, 118, 3, 16, 29, 42, 55, 68, 2, 15, 28, 41, 54, 67, 80, 93, 106, 119, 4, 17,
         30, 43, 56, 69, 3, 16, 29, 42, 55, 68, 81, 94, 107, 120, 5, 18, 31, 44, 57, 70},
        {4, 17, 30, 43, 56, 69, 82, 95, 108, 121, 6, 19, 32, 45, 58, 71, 5, 18, 31, 44, 57, 70,
         83, 96, 109, 122, 7, 20, 33, 46, 59, 72, 6, 19, 32, 45, 58, 71, 84, 97, 110, 123, 8, 21,
         34, 47, 60, 73, 7, 20, 33, 46, 59, 72, 85, 98, 111, 124, 9, 22, 35, 48, 61, 74},
        {8, 21, 34, 47, 60, 73, 86, 99, 112, 125, 10, 23, 36, 49, 62, 75, 9, 22, 35, 48, 61, 74,
         87, 100, 113, 126, 11, 24, 37, 50, 63, 76, 10, 23, 36, 49, 62, 75, 88, 101, 114, 127,
         12, 25, 38, 51, 64, 77, 11, 24, 37, 50, 63, 76, 89, 102, 115, 0, 13, 26, 39, 52, 65,
         78},
        {12, 25, 38, 51, 64, 77, 90, 103, 116, 1, 14, 27, 40, 53, 66, 79, 12, 25, 38, 51, 64,
         77, 90, 103, 116, 1, 14, 27, 40, 53, 66, 79, 12, 25, 38, 51, 64, 77, 90, 103, 116, 1,
         14, 27, 40, 53, 66, 79, 12, 25, 38, 51, 64, 77, 90, 103, 116, 1, 14, 27, 40, 53, 66,
         79},
    },
    {/* k = 14 */
        {0, 14, 28, 42, 56, 70, 84, 98, 112, 126, 12, 26, 40, 54, 68, 82, 1, 15, 29, 43, 57, 71,
         85, 99, 113, 127, 13, 27, 41, 55, 69, 83, 2, 16, 30, 44, 58, 72, 86, 100, 114, 0, 14,
         28, 42, 56, 70, 84, 3, 17, 31, 45, 59, 73, 87, 101, 115, 1, 15, 29, 43, 57, 71, 85},
        {4, 18, 32, 46, 60, 74, 88, 102, 116, 2, 16, 30, 44, 58, 72, 86, 5, 19, 33, 47, 61, 75,
         89, 103, 117, 3, 17, 31, 45, 59, 73, 87, 6, 20, 34, 48, 62, 76, 90, 104, 118, 4, 18, 32,
         46, 60, 74, 88, 7, 21, 35, 49, 63, 77, 91, 105, 119, 5, 19, 33, 47, 61, 75, 89},
        {8, 22, 36, 50, 64, 78, 92, 106, 120, 6, 20, 34, 48, 62, 76, 90, 9, 23, 37, 51, 65, 79,
         93, 107, 121, 7, 21, 35, 49, 63, 77, 91, 10, 24, 38, 52, 66, 80, 94, 108, 122, 8, 22,
         36, 50, 64, 78, 92, 11, 25, 39, 53, 67, 81, 95, 109, 123, 9, 23, 37, 51, 65, 79, 93},
        {12, 26, 40, 54, 68, 82, 96, 110, 124, 10, 24, 38, 52, 66, 80, 94, 13, 27, 41, 55, 69,
         83, 97, 111, 125, 11, 25, 39, 53, 67, 81, 95, 13, 27, 41, 55, 69, 83, 97, 111, 125, 11,
         25, 39, 53, 67, 81, 95, 13, 27, 41, 55, 69, 83, 97, 111, 125, 11, 25, 39, 53, 67, 81,
         95},
    },
    {/* k = 15 */
        {0, 15, 30, 45, 60, 75, 90, 105, 120, 7, 22, 37, 52, 67, 82, 97, 1, 16, 31, 46, 61, 76,
         91, 106, 121, 8, 23, 38, 53, 68, 83, 98, 2, 17, 32, 47, 62, 77, 92, 107, 122, 9, 24, 39,
         54, 69, 84, 99, 3, 18, 33, 48, 63, 78, 93, 108, 123, 10, 25, 40, 55, 70, 85, 100},
        {4, 19, 34, 49, 64, 79, 94, 109, 124, 11, 26, 41, 56, 71, 86, 101, 5, 20, 35, 50, 65,
         80, 95, 110, 125, 12, 27, 42, 57, 72, 87, 102, 6, 21, 36, 51, 66, 81, 96, 111, 126, 13,
         28, 43, 58, 73, 88, 103, 7, 22, 37, 52, 67, 82, 97, 112, 127, 14, 29, 44, 59, 74, 89,
         104},
        {8, 23, 38, 53, 68, 83, 98, 113, 0, 15, 30, 45, 60, 75, 90, 105, 9, 24, 39, 54, 69, 84,
         99, 114, 1, 16, 31, 46, 61, 76, 91, 106, 10, 25, 40, 55, 70, 85, 100, 115, 2, 17, 32,
         47, 62, 77, 92, 107, 11, 26, 41, 56, 71, 86, 101, 116, 3, 18, 33, 48, 63, 78, 93, 108},
        {12, 27, 42, 57, 72, 87, 102, 117, 4, 19, 34, 49, 64, 79, 94, 109, 13, 28, 43, 58, 73,
         88, 103, 118, 5, 20, 35, 50, 65, 80, 95, 110, 14, 29, 44, 59, 74, 89, 104, 119, 6, 21,
         36, 51, 66, 81, 96, 111, 14, 29, 44, 59, 74, 89, 104, 119, 6, 21, 36, 51, 66, 81, 96,
         111},
    },
    {/* k = 16 */
        {0, 16, 32, 48, 64, 80, 96, 112, 0, 16, 32, 48, 64, 80, 96, 112, 1, 17, 33, 49, 65, 81,
         97, 113, 1, 17, 33, 49, 65, 81, 97, 113, 2, 18, 34, 50, 66, 82, 98, 114, 2, 18, 34, 50,
         66, 82, 98, 114, 3, 19, 35, 51, 67, 83, 99, 115, 3, 19, 35, 51, 67, 83, 99, 115},
        {4, 20, 36, 52, 68, 84, 100, 116, 4, 20, 36, 52, 68, 84, 100, 116, 5, 21, 37, 53, 69,
         85, 101, 117, 5, 21, 37, 53, 69, 85, 101, 117, 6, 22, 38, 54, 70, 86, 102, 118, 6, 22,
         38, 54, 70, 86, 102, 118, 7, 23, 39, 55, 71, 87, 103, 119, 7, 23, 39, 55, 71, 87, 103,
         119},
        {8, 24, 40, 56, 72, 88, 104, 120, 8, 24, 40, 56, 72, 88, 104, 120, 9, 25, 41, 57, 73,
         89, 105, 121, 9, 25, 41, 57, 73, 89, 105, 121, 10, 26, 42, 58, 74, 90, 106, 122, 10, 26,
         42, 58, 74, 90, 106, 122, 11, 27, 43, 59, 75, 91, 107, 123, 11, 27, 43, 59, 75, 91, 107,
         123},
        {12, 28, 44, 60, 76, 92, 108, 124, 12, 28, 44, 60, 76, 92, 108, 124, 13, 29, 45, 61, 77,
         93, 109, 125, 13, 29, 45, 61, 77, 93, 109, 125, 14, 30, 46, 62, 78, 94, 110, 126, 14,
         30, 46, 62, 78, 94, 110, 126, 15, 31, 47, 63, 79, 95, 111, 127, 15, 31, 47, 63, 79, 95,
         111, 127},
    },
};
static const uint64_t lk_di16_hi[12][4] = {
    {0x0000000000000000ULL, 0x0000000000000000ULL, 0x0000000000000000ULL, 0x0000000000000000ULL},
    {0x0000000000000000ULL, 0x0000000000000000ULL, 0x0000000000000000ULL, 0x0000000000000000ULL},
    {0x0000000000000000ULL, 0x0000000000000000ULL, 0x0000000000000000ULL, 0x0000000000000000ULL},
    {0x0000000000000000ULL, 0x0000000000000000ULL, 0x0000000000000000ULL, 0x0000000000000000ULL},
    {0xc000c00080008000ULL, 0xc000c000c000c000ULL, 0xc000c000c000c000ULL, 0x0000000000000000ULL},
    {0xe000e000e000e000ULL, 0xe000e000e000e000ULL, 0xf000f000f000f000ULL, 0x0000000000000000ULL},
    {0xf000f000f000f000ULL, 0xf800f000f000f000ULL, 0xf800f800f800f800ULL, 0x0000000000000000ULL},
    {0xf800f800f800f800ULL, 0xf800f800f800f800ULL, 0xfc00fc00fc00fc00ULL, 0x0000000000000000ULL},
    {0xfc00fc00fc00fc00ULL, 0xfc00fc00fc00fc00ULL, 0xfe00fc00fc00fc00ULL, 0xfe00fe00fe00fe00ULL},
    {0xfe00fe00fc00fc00ULL, 0xfe00fe00fe00fe00ULL, 0xfe00fe00fe00fe00ULL, 0xfe00fe00fe00fe00ULL},
    {0xfe00fe00fe00fe00ULL, 0xfe00fe00fe00fe00ULL, 0xff00ff00ff00ff00ULL, 0xff00ff00ff00ff00ULL},
    {0xff00ff00ff00ff00ULL, 0xff00ff00ff00ff00ULL, 0xff00ff00ff00ff00ULL, 0xff00ff00ff00ff00ULL},
};

__attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512vbmi,bmi2"))) static ptrdiff_t
lk_deinterleave16_vbmi(char *restrict out, ptrdiff_t orow, const char *restrict in, ptrdiff_t m,
                       int k) {
    if (m < 16 || k < 5 || k > 16) return 0;
    const int groups = (k + 3) / 4;
    __mmask64 lm[4];
    __m512i idx[4];
    const uint64_t *hi = lk_di16_hi[k - 5];
    for (int u = 0; u < 4; u++) {
        int left = 16 * k - 64 * u;
        lm[u] = left <= 0 ? 0 : left >= 64 ? ~(__mmask64)0 : _bzhi_u64(~0ULL, (unsigned)left);
    }
    for (int q = 0; q < groups; q++) idx[q] = _mm512_load_si512((const void *)lk_di16_tab[k - 5][q]);
    for (ptrdiff_t i0 = 0; i0 < m; i0 += 16) {
        const ptrdiff_t i = i0 + 16 <= m ? i0 : m - 16;
        const char *s = in + i * k;
        const __m512i r0 = _mm512_maskz_loadu_epi8(lm[0], s);
        const __m512i r1 = _mm512_maskz_loadu_epi8(lm[1], s + 64);
        const __m512i r2 = _mm512_maskz_loadu_epi8(lm[2], s + 128);
        const __m512i r3 = _mm512_maskz_loadu_epi8(lm[3], s + 192);
        for (int q = 0; q < groups; q++) {
            const __m512i v = _mm512_mask_blend_epi8(hi[q], _mm512_permutex2var_epi8(r0, idx[q], r1),
                                                     _mm512_permutex2var_epi8(r2, idx[q], r3));
            char *o = out + 4 * q * orow + i;
            _mm_storeu_si128((__m128i *)o, _mm512_castsi512_si128(v));
            if (4 * q + 1 < k) _mm_storeu_si128((__m128i *)(o + orow), _mm512_extracti32x4_epi32(v, 1));
            if (4 * q + 2 < k) _mm_storeu_si128((__m128i *)(o + 2 * orow), _mm512_extracti32x4_epi32(v, 2));
            if (4 * q + 3 < k) _mm_storeu_si128((__m128i *)(o + 3 * orow), _mm512_extracti32x4_epi32(v, 3));
        }
    }
    return m;
}
#endif

static inline void lk_deinterleave(void *restrict out, ptrdiff_t orow, const void *restrict in,
                                   ptrdiff_t m, int k, ptrdiff_t istride, int es) {
    /* Checked here, inline: tiny boxes call this per box. */
    if (m >= 16 && es <= 4 && (istride == 3 || istride == 4 || istride == 8)) {
        /* The shuffle kernels store 32 (AVX2) or 64 (VBMI) bytes of each
         * lane's row at a time: rows before the first line boundary (or
         * 32-byte boundary, for rows a multiple of 32 bytes apart) go element
         * by element when every row shares the output's alignment, so that no
         * store straddles two lines (numpy's data sits 16 bytes into a line;
         * NHWC -> NCHW 1x3x224x224 took 1.6x the time there against 64 bytes
         * in, the VBMI kernel 2.7x 32 bytes in). */
        const ptrdiff_t unit = (orow * es) % 64 == 0 ? 64 : 32;
        ptrdiff_t mis = (ptrdiff_t)((uintptr_t)out % unit), head = 0;
        if (mis != 0 && mis % es == 0 && (orow * es) % 32 == 0 && m >= 2 * unit)
            head = (unit - mis) / es;
        if (head) {
            lk_deinterleave_plain(out, orow, in, head, k, istride, es);
            out = (char *)out + head * es;
            in = (const char *)in + head * istride * es;
            m -= head;
        }
        ptrdiff_t done = lk_deinterleave_shuffled(out, orow, in, m, k, istride, es);
        out = (char *)out + done * es;
        in = (const char *)in + done * istride * es;
        m -= done;
        if (m == 0) return;
    }
#ifdef LK_HAVE_DI16_VBMI
    if (es == 1 && istride == k && k >= 5 && k <= 16 && m >= 16 && !lk_split_avx512() && lk_vbmi() &&
        lk_deinterleave16_vbmi((char *)out, orow, (const char *)in, m, k))
        return;
#endif
    lk_deinterleave_plain(out, orow, in, m, k, istride, es);
}

static inline const char *lk_simd_name(void) {
    switch (lk_simd()) {
    case 1: return lk_vbmi() ? "sse4.1+avx2+avx512vbmi" : lk_avx2() ? "sse4.1+avx2" : "sse4.1";
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

/* log2(N) rounds of unpacks over the registers r[N] (scratch t[N]): round by
 * round, vector j pairs with j + N/2, low half to 2j, high half to 2j + 1. */
#define LK_UNPACK_ROUNDS(N, UNPLO, UNPHI)                                        \
    for (int round = 1; round < (N); round *= 2) {                               \
        for (int j = 0; j < (N) / 2; j++) {                                      \
            t[2 * j] = UNPLO(r[j], r[j + (N) / 2]);                              \
            t[2 * j + 1] = UNPHI(r[j], r[j + (N) / 2]);                          \
        }                                                                        \
        for (int k = 0; k < (N); k++) r[k] = t[k];                               \
    }

/* The unpack rounds of one N x N tile; ROW(k) is the address of lane k's row. */
#define LK_TILE_BODY(N, UNPLO, UNPHI, ROW)                                       \
    {                                                                            \
        __m128i r[N], t[N];                                                      \
        for (int k = 0; k < (N); k++) r[k] = _mm_loadu_si128((const __m128i *)(ROW(k))); \
        LK_UNPACK_ROUNDS(N, UNPLO, UNPHI)                                        \
        for (int k = 0; k < (N); k++)                                            \
            _mm_storeu_si128((__m128i *)(d + k * ds), r[k]);                     \
    }

#define LK_ROW_STRIDED(k) (s + (k) * ss)
#define LK_ROW_LANES(k) ((const char *)lanes[k] + off)

/* Lanes a fixed stride apart, and lanes at their own addresses (lanes[k] + off). */
#define LK_TRANSPOSE_TILE(NAME, N, UNPLO, UNPHI)                                 \
    static inline void NAME(char *d, ptrdiff_t ds, const char *s, ptrdiff_t ss)  \
        LK_TILE_BODY(N, UNPLO, UNPHI, LK_ROW_STRIDED)
#define LK_TRANSPOSE_TILE_P(NAME, N, UNPLO, UNPHI)                               \
    static inline void NAME(char *d, ptrdiff_t ds, const void *const *lanes,     \
                            ptrdiff_t off) LK_TILE_BODY(N, UNPLO, UNPHI, LK_ROW_LANES)

LK_TRANSPOSE_TILE(lk_tile_8, 16, _mm_unpacklo_epi8, _mm_unpackhi_epi8)
LK_TRANSPOSE_TILE(lk_tile_16, 8, _mm_unpacklo_epi16, _mm_unpackhi_epi16)
LK_TRANSPOSE_TILE(lk_tile_32, 4, _mm_unpacklo_epi32, _mm_unpackhi_epi32)
LK_TRANSPOSE_TILE(lk_tile_64, 2, _mm_unpacklo_epi64, _mm_unpackhi_epi64)
LK_TRANSPOSE_TILE_P(lk_ptile_8, 16, _mm_unpacklo_epi8, _mm_unpackhi_epi8)
LK_TRANSPOSE_TILE_P(lk_ptile_16, 8, _mm_unpacklo_epi16, _mm_unpackhi_epi16)
LK_TRANSPOSE_TILE_P(lk_ptile_32, 4, _mm_unpacklo_epi32, _mm_unpackhi_epi32)
LK_TRANSPOSE_TILE_P(lk_ptile_64, 2, _mm_unpacklo_epi64, _mm_unpackhi_epi64)
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

#if defined(LK_HAVE_SSE2) && defined(LK_HAVE_X86_CLONES)
/* AVX2 tiles: two register tiles at once, one in each 128-bit half. A 32-byte
 * load takes 2n rows of a lane; unpacks work within halves, so the low half
 * ends as destination row k and the high half as row n + k. */
#define LK_TRANSPOSE_TILE2(NAME, N, UNPLO, UNPHI)                                \
    __attribute__((target("avx2"))) static inline void NAME(                     \
        char *d, ptrdiff_t ds, const char *s, ptrdiff_t ss) {                    \
        __m256i r[N], t[N];                                                      \
        for (int k = 0; k < (N); k++)                                            \
            r[k] = _mm256_loadu_si256((const __m256i *)(s + k * ss));            \
        LK_UNPACK_ROUNDS(N, UNPLO, UNPHI)                                        \
        for (int k = 0; k < (N); k++) {                                          \
            _mm_storeu_si128((__m128i *)(d + k * ds), _mm256_castsi256_si128(r[k])); \
            _mm_storeu_si128((__m128i *)(d + ((N) + k) * ds),                    \
                             _mm256_extracti128_si256(r[k], 1));                 \
        }                                                                        \
    }

#include <immintrin.h>
LK_TRANSPOSE_TILE2(lk_tile2_8, 16, _mm256_unpacklo_epi8, _mm256_unpackhi_epi8)
LK_TRANSPOSE_TILE2(lk_tile2_16, 8, _mm256_unpacklo_epi16, _mm256_unpackhi_epi16)
LK_TRANSPOSE_TILE2(lk_tile2_32, 4, _mm256_unpacklo_epi32, _mm256_unpackhi_epi32)
LK_TRANSPOSE_TILE2(lk_tile2_64, 2, _mm256_unpacklo_epi64, _mm256_unpackhi_epi64)
#define LK_HAVE_AVX2_TILES 1

/* The double tile for an element size (1, 2, 4, else 8 bytes). */
__attribute__((target("avx2"))) static inline void lk_tile2(char *d, ptrdiff_t ds, const char *s,
                                                           ptrdiff_t ss, int es) {
    switch (es) {
    case 1: lk_tile2_8(d, ds, s, ss); break;
    case 2: lk_tile2_16(d, ds, s, ss); break;
    case 4: lk_tile2_32(d, ds, s, ss); break;
    default: lk_tile2_64(d, ds, s, ss); break;
    }
}

/* Wide tiles: 32 / es lanes by 16 / es rows. Register k holds 16 bytes of lane
 * k in its low half and of lane k + N in its high half, so after the unpacks
 * (within halves) it is destination row k of all 2N lanes, stored whole. Half
 * the stores of the double tiles and no 128-bit extracts: in L1, float16 16 x 8
 * moves 2-2.5x and float32 8 x 4 3.6-4x the bytes per second of the double
 * tiles. Where the traffic to memory dominates, the gain is what survives of
 * that (see the callers), and in places it is a loss: the staged medium-size
 * transpose measured slower with them and keeps the double tiles. */
/* A compiler barrier: stores before it are emitted before stores after it. */
static inline void lk_store_order(void) {
#if defined(__GNUC__) || defined(__clang__)
    __asm__ volatile("" ::: "memory");
#endif
}
#define LK_TILEW_STORE(p, v) _mm256_storeu_si256((__m256i *)(p), v)
/* Streamed in 16-byte halves: rows 16 bytes into a line stay aligned. */
/* Each row's pair of stores in program order: write-combining fills a line at a
 * time, and a compiler free to interleave the rows' stores leaves many lines
 * open at once, flushed in pieces (kCHW32 int8 of 8x256x56x56 with the output
 * 32 bytes into a line: 8x the time, where the order was the compiler's). */
#define LK_TILEW_STREAM(p, v)                                                    \
    (_mm_stream_si128((__m128i *)(p), _mm256_castsi256_si128(v)),                \
     _mm_stream_si128((__m128i *)(p) + 1, _mm256_extracti128_si256(v, 1)),       \
     lk_store_order())
#define LK_TILEW_BODY_AS(N, UNPLO, UNPHI, ROW, STORE)                            \
    {                                                                            \
        __m256i r[N], t[N];                                                      \
        for (int k = 0; k < (N); k++)                                            \
            r[k] = _mm256_inserti128_si256(                                      \
                _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(ROW(k)))), \
                _mm_loadu_si128((const __m128i *)(ROW((N) + k))), 1);            \
        LK_UNPACK_ROUNDS(N, UNPLO, UNPHI)                                        \
        for (int k = 0; k < (N); k++) STORE(d + k * ds, r[k]);                   \
    }
#define LK_TILEW_BODY(N, UNPLO, UNPHI, ROW) LK_TILEW_BODY_AS(N, UNPLO, UNPHI, ROW, LK_TILEW_STORE)
#define LK_TRANSPOSE_TILEW(NAME, N, UNPLO, UNPHI)                                \
    __attribute__((target("avx2"))) static inline void NAME(                     \
        char *d, ptrdiff_t ds, const char *s, ptrdiff_t ss)                      \
        LK_TILEW_BODY(N, UNPLO, UNPHI, LK_ROW_STRIDED)
/* Lanes at their own addresses (lanes[k] + off), as lk_ptile_*. */
#define LK_TRANSPOSE_TILEW_P(NAME, N, UNPLO, UNPHI)                              \
    __attribute__((target("avx2"))) static inline void NAME(                     \
        char *d, ptrdiff_t ds, const void *const *lanes, ptrdiff_t off)          \
        LK_TILEW_BODY(N, UNPLO, UNPHI, LK_ROW_LANES)

LK_TRANSPOSE_TILEW(lk_tilew_8, 16, _mm256_unpacklo_epi8, _mm256_unpackhi_epi8)
/* lk_tilew_8 with streaming stores; destination rows 16-byte aligned. */
__attribute__((target("avx2"))) static inline void lk_tilew_8_stream(char *d, ptrdiff_t ds,
                                                                    const char *s, ptrdiff_t ss)
    LK_TILEW_BODY_AS(16, _mm256_unpacklo_epi8, _mm256_unpackhi_epi8, LK_ROW_STRIDED,
                     LK_TILEW_STREAM)
LK_TRANSPOSE_TILEW(lk_tilew_16, 8, _mm256_unpacklo_epi16, _mm256_unpackhi_epi16)
LK_TRANSPOSE_TILEW(lk_tilew_32, 4, _mm256_unpacklo_epi32, _mm256_unpackhi_epi32)
LK_TRANSPOSE_TILEW(lk_tilew_64, 2, _mm256_unpacklo_epi64, _mm256_unpackhi_epi64)
LK_TRANSPOSE_TILEW_P(lk_ptilew_8, 16, _mm256_unpacklo_epi8, _mm256_unpackhi_epi8)
LK_TRANSPOSE_TILEW_P(lk_ptilew_16, 8, _mm256_unpacklo_epi16, _mm256_unpackhi_epi16)
LK_TRANSPOSE_TILEW_P(lk_ptilew_32, 4, _mm256_unpacklo_epi32, _mm256_unpackhi_epi32)
LK_TRANSPOSE_TILEW_P(lk_ptilew_64, 2, _mm256_unpacklo_epi64, _mm256_unpackhi_epi64)

/* lk_interleave_wide with wide tiles (2n lanes by n rows); k >= 2n, m >= n.
 * One 32-byte store per destination row of the tile where the 16-byte tiles
 * made two: NCHW -> HCWNC8 of 8x256x56x56 in the suite, int8 0.76x the time,
 * float16 (HCWNC4) 0.81x, float32 0.89x. */
__attribute__((target("avx2"))) static void lk_interleave_wide_avx2(char *o, const void *const *lanes,
                                                                   ptrdiff_t m, int k,
                                                                   ptrdiff_t orow, int es, int n) {
    for (ptrdiff_t i0 = 0; i0 < m; i0 += n) {
        ptrdiff_t i = i0 + n <= m ? i0 : m - n;
        for (int j0 = 0; j0 < k; j0 += 2 * n) {
            int j = j0 + 2 * n <= k ? j0 : k - 2 * n;
            char *d = o + i * orow + (ptrdiff_t)j * es;
            switch (es) {
            case 1: lk_ptilew_8(d, orow, lanes + j, i); break;
            case 2: lk_ptilew_16(d, orow, lanes + j, i * 2); break;
            case 4: lk_ptilew_32(d, orow, lanes + j, i * 4); break;
            default: lk_ptilew_64(d, orow, lanes + j, i * 8); break;
            }
        }
    }
}

__attribute__((target("avx2"))) static inline void lk_tilew(char *d, ptrdiff_t ds, const char *s,
                                                           ptrdiff_t ss, int es) {
    switch (es) {
    case 1: lk_tilew_8(d, ds, s, ss); break;
    case 2: lk_tilew_16(d, ds, s, ss); break;
    case 4: lk_tilew_32(d, ds, s, ss); break;
    default: lk_tilew_64(d, ds, s, ss); break;
    }
}

#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 8)
/*
 * AVX-512 VBMI byte tiles (Ice Lake, Zen 4 and later): vpermt2b picks any 64
 * of 128 bytes, so three rounds of it transpose 32 lanes by 16 rows where the
 * AVX2 tile takes four rounds of unpacks plus inserts, and 64-byte stores
 * write two destination rows at once. Register q is built from 16 bytes of
 * each of lanes 4q..4q+3; round 1 pairs registers into 8 lanes by 8 rows,
 * round 2 into 16 lanes by 4 rows, round 3 into 32 lanes by 2 rows, each
 * register [row][lane] in order. In the byte pipeline below, kCHW32 int8 of
 * 1x64x256x256 in a hot loop: 158-160 us against 169-174 with the AVX2 tiles
 * (0.58x against 0.54x a copy, Zen 4). In L1 alone the tiles are no faster;
 * the gain is fewer instructions in flight behind the lane copies' misses.
 */
#define LK_HAVE_VBMI_TILES 1
#define LK_VBMI __attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512vbmi")))
/* 16 bytes at lo, then 16 at hi (_mm256_loadu2_m128i, which older compilers lack). */
#define LK_LOAD_PAIR(lo, hi)                                                     \
    _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(lo))), \
                            _mm_loadu_si128((const __m128i *)(hi)), 1)
#define LK_IDX8(F, b) F(b), F(b + 1), F(b + 2), F(b + 3), F(b + 4), F(b + 5), F(b + 6), F(b + 7)
/* The same with a register number j: F(j, p) for p = 0..63. */
#define LK_IDX8J(F, j, b)                                                        \
    F(j, b), F(j, b + 1), F(j, b + 2), F(j, b + 3), F(j, b + 4), F(j, b + 5), F(j, b + 6), \
        F(j, b + 7)
#define LK_IDX64J(F, j)                                                          \
    LK_IDX8J(F, j, 0), LK_IDX8J(F, j, 8), LK_IDX8J(F, j, 16), LK_IDX8J(F, j, 24), \
        LK_IDX8J(F, j, 32), LK_IDX8J(F, j, 40), LK_IDX8J(F, j, 48), LK_IDX8J(F, j, 56)
#define LK_IDX64(F)                                                              \
    LK_IDX8(F, 0), LK_IDX8(F, 8), LK_IDX8(F, 16), LK_IDX8(F, 24), LK_IDX8(F, 32), \
        LK_IDX8(F, 40), LK_IDX8(F, 48), LK_IDX8(F, 56)
/* Byte p of a round's output: row p / width, lane p % width; lanes below half
 * the width come from the first register (index < 64), the rest from the second. */
#define LK_VB_R1(p) (16 * ((p) % 8) + (p) / 8)
#define LK_VB_R2(p) ((p) % 16 < 8 ? (p) / 16 * 8 + (p) % 16 : 56 + (p) / 16 * 8 + (p) % 16)
#define LK_VB_R3(p) ((p) % 32 < 16 ? (p) / 32 * 16 + (p) % 32 : 48 + (p) / 32 * 16 + (p) % 32)
static const uint8_t lk_vbmi_rounds[3][64] __attribute__((aligned(64))) = {
    {LK_IDX64(LK_VB_R1)}, {LK_IDX64(LK_VB_R2)}, {LK_IDX64(LK_VB_R3)}};

/* 32 lanes (16-byte pieces at ROW(k)) by 16 rows into 16 rows of 32 bytes, ds apart. */
#define LK_VBMI_TILE32_BODY(ROW)                                                                    \
    {                                                                                               \
        /* r1h, r2h, r3h: each round's second output, the later rows of its pair. */                \
        const __m512i r1 = _mm512_load_si512(lk_vbmi_rounds[0]);                                    \
        const __m512i r2 = _mm512_load_si512(lk_vbmi_rounds[1]);                                    \
        const __m512i r3 = _mm512_load_si512(lk_vbmi_rounds[2]);                                    \
        const __m512i r1h = _mm512_add_epi8(r1, _mm512_set1_epi8(8));                               \
        const __m512i r2h = _mm512_add_epi8(r2, _mm512_set1_epi8(32));                              \
        const __m512i r3h = _mm512_add_epi8(r3, _mm512_set1_epi8(32));                              \
        __m512i z[8], y[8], w[8];                                                                   \
        for (int q = 0; q < 8; q++) {                                                               \
            __m256i lo = LK_LOAD_PAIR(ROW(4 * q), ROW(4 * q + 1));                                  \
            __m256i hi = LK_LOAD_PAIR(ROW(4 * q + 2), ROW(4 * q + 3));                              \
            z[q] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);                           \
        }                                                                                           \
        /* y[2a + h]: lanes 8a..8a+7, rows 8h..8h+7. */                                             \
        for (int a = 0; a < 4; a++) {                                                               \
            y[2 * a] = _mm512_permutex2var_epi8(z[2 * a], r1, z[2 * a + 1]);                        \
            y[2 * a + 1] = _mm512_permutex2var_epi8(z[2 * a], r1h, z[2 * a + 1]);                   \
        }                                                                                           \
        /* w[4h + 2b + e]: lanes 16b..16b+15, rows 8h+4e..8h+4e+3. */                               \
        for (int b = 0; b < 2; b++)                                                                 \
            for (int h = 0; h < 2; h++) {                                                           \
                __m512i lo8 = y[4 * b + h], hi8 = y[4 * b + 2 + h];                                 \
                w[4 * h + 2 * b] = _mm512_permutex2var_epi8(lo8, r2, hi8);                          \
                w[4 * h + 2 * b + 1] = _mm512_permutex2var_epi8(lo8, r2h, hi8);                     \
            }                                                                                       \
        for (int h = 0; h < 2; h++)                                                                 \
            for (int e = 0; e < 2; e++) {                                                           \
                __m512i lo16 = w[4 * h + e], hi16 = w[4 * h + 2 + e];                               \
                __m512i rows01 = _mm512_permutex2var_epi8(lo16, r3, hi16);                          \
                __m512i rows23 = _mm512_permutex2var_epi8(lo16, r3h, hi16);                         \
                char *o = d + (8 * h + 4 * e) * ds;                                                 \
                if (ds == 32) {                                                                     \
                    _mm512_storeu_si512(o, rows01);                                                 \
                    _mm512_storeu_si512(o + 64, rows23);                                            \
                } else {                                                                            \
                    _mm256_storeu_si256((__m256i *)o, _mm512_castsi512_si256(rows01));              \
                    _mm256_storeu_si256((__m256i *)(o + ds), _mm512_extracti64x4_epi64(rows01, 1)); \
                    _mm256_storeu_si256((__m256i *)(o + 2 * ds), _mm512_castsi512_si256(rows23));   \
                    _mm256_storeu_si256((__m256i *)(o + 3 * ds),                                    \
                                        _mm512_extracti64x4_epi64(rows23, 1));                      \
                }                                                                                   \
            }                                                                                       \
    }
LK_VBMI static inline void lk_tile_vbmi_8(char *d, ptrdiff_t ds, const char *s, ptrdiff_t ss)
    LK_VBMI_TILE32_BODY(LK_ROW_STRIDED)
/* Lanes at their own addresses (lanes[k] + off), as lk_ptilew_8. */
LK_VBMI static inline void lk_ptile_vbmi_8(char *d, ptrdiff_t ds, const void *const *lanes,
                                           ptrdiff_t off) LK_VBMI_TILE32_BODY(LK_ROW_LANES)

/* Four lanes into pixels of four (NCHW4c / HCWNC4 of channel planes), 64
 * bytes of each lane a step: output register j is two two-register permutes
 * with one index (vpermt2w for 2-byte elements, vpermt2b for bytes), of lanes
 * 0 and 1 for slots 0 and 1 and of lanes 2 and 3 for slots 2 and 3, blended;
 * the stores line-aligned from the first pixel on a line, the last step
 * ending at m. The compiler's SSE4.1 loop did these: compare_builds.py on Zen
 * 5, HCWNC4 float16 of 1x64x256x256 0.63x the time, NCHW4c float16 of
 * 8x256x56x56 0.86x, uint8 0.96x (1x64x256x256, 0.9x copy already, the same).
 * Returns m, or 0 (fewer than two steps). Register 0's index: element e is
 * pixel e / 4 of the first or (e odd) the second lane; register j's adds
 * 16 j bytes of pixels. */
static const uint16_t lk_il4_base16[32] __attribute__((aligned(64))) = {
    0, 32, 0, 32, 1, 33, 1, 33, 2, 34, 2, 34, 3, 35, 3, 35,
    4, 36, 4, 36, 5, 37, 5, 37, 6, 38, 6, 38, 7, 39, 7, 39};
static const uint8_t lk_il4_base8[64] __attribute__((aligned(64))) = {
    0, 64, 0, 64, 1, 65, 1, 65, 2, 66, 2, 66, 3, 67, 3, 67,
    4, 68, 4, 68, 5, 69, 5, 69, 6, 70, 6, 70, 7, 71, 7, 71,
    8, 72, 8, 72, 9, 73, 9, 73, 10, 74, 10, 74, 11, 75, 11, 75,
    12, 76, 12, 76, 13, 77, 13, 77, 14, 78, 14, 78, 15, 79, 15, 79};

LK_VBMI __attribute__((always_inline)) static inline ptrdiff_t lk_interleave4_vbmi_k(
    char *restrict out, const void *const *lanes, ptrdiff_t m, const int es) {
    const ptrdiff_t step = 64 / es;
    if (m < 2 * step) return 0;
    __m512i idx[4];
    for (int j = 0; j < 4; j++)
        idx[j] = es == 2 ? _mm512_add_epi16(_mm512_load_si512((const void *)lk_il4_base16),
                                            _mm512_set1_epi16((short)(8 * j)))
                         : _mm512_add_epi8(_mm512_load_si512((const void *)lk_il4_base8),
                                           _mm512_set1_epi8((char)(16 * j)));
    const char *a = (const char *)lanes[0], *b = (const char *)lanes[1];
    const char *c = (const char *)lanes[2], *d = (const char *)lanes[3];
#define LK_IL4_PIXELS(j, va, vb, vc, vd)                                                     \
    (es == 2 ? _mm512_mask_blend_epi16(0xCCCCCCCCu, _mm512_permutex2var_epi16(va, idx[j], vb), \
                                       _mm512_permutex2var_epi16(vc, idx[j], vd))          \
             : _mm512_mask_blend_epi8(0xCCCCCCCCCCCCCCCCULL,                              \
                                      _mm512_permutex2var_epi8(va, idx[j], vb),            \
                                      _mm512_permutex2var_epi8(vc, idx[j], vd)))
#define LK_IL4_STEP(i)                                                           \
    {                                                                            \
        const __m512i va = _mm512_loadu_si512(a + (i) * es);                     \
        const __m512i vb = _mm512_loadu_si512(b + (i) * es);                     \
        const __m512i vc = _mm512_loadu_si512(c + (i) * es);                     \
        const __m512i vd = _mm512_loadu_si512(d + (i) * es);                     \
        for (int j = 0; j < 4; j++)                                              \
            _mm512_storeu_si512(out + (i) * 4 * es + 64 * j, LK_IL4_PIXELS(j, va, vb, vc, vd)); \
    }
    ptrdiff_t i = 0;
    const ptrdiff_t to_line = (ptrdiff_t)(-(uintptr_t)out & 63);
    if (to_line % (4 * es) == 0 && to_line) {
        LK_IL4_STEP(0)
        i = to_line / (4 * es);
    }
    for (; i + step <= m; i += step) LK_IL4_STEP(i)
    if (i < m) LK_IL4_STEP(m - step)
#undef LK_IL4_STEP
#undef LK_IL4_PIXELS
    return m;
}

/* One copy per element size, es a constant in each (bytes: lanes far apart;
 * lk_interleave4_u8_avx2 takes those within 4 KiB). */
LK_VBMI static ptrdiff_t lk_interleave4_vbmi(char *restrict out, const void *const *lanes,
                                             ptrdiff_t m, int es) {
    return es == 2 ? lk_interleave4_vbmi_k(out, lanes, m, 2) : lk_interleave4_vbmi_k(out, lanes, m, 1);
}

/* 8 byte lanes into rows of 8 (NCHW8c / HCWNC8 of uint8 / int8): round 1 of
 * the tile above makes 16 rows of 8 lanes out of two registers of 4 lanes.
 * Against the compiler's SSE4.1 loop, hot loop of pack: NCHW8c uint8 of
 * 1x64x256x256 125 against 132 us, of 8x256x56x56 206 against 228 us (Zen 4).
 * Returns the rows done, a multiple of 16. */
LK_VBMI static ptrdiff_t lk_interleave8_u8_vbmi(char *o, const void *const *lanes, ptrdiff_t m) {
    const __m512i r1 = _mm512_load_si512(lk_vbmi_rounds[0]);
    const __m512i r1h = _mm512_add_epi8(r1, _mm512_set1_epi8(8));
    ptrdiff_t i = 0;
    for (; i + 16 <= m; i += 16) {
        __m512i z[2];
        for (int q = 0; q < 2; q++) {
            const char *const *l = (const char *const *)lanes + 4 * q;
            __m256i lo = LK_LOAD_PAIR(l[0] + i, l[1] + i);
            __m256i hi = LK_LOAD_PAIR(l[2] + i, l[3] + i);
            z[q] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
        }
        _mm512_storeu_si512(o + i * 8, _mm512_permutex2var_epi8(z[0], r1, z[1]));
        _mm512_storeu_si512(o + i * 8 + 64, _mm512_permutex2var_epi8(z[0], r1h, z[1]));
    }
    return i;
}

/*
 * Eight lanes of 2-byte elements into pixels of 8 (NCHW8c / HCWNC8 of
 * float16) with AVX-512 VBMI, 32 pixels a step, as three rounds of zips:
 * lanes (0, 1), (2, 3), ... are zipped element by element into pairs, the
 * pairs pair by pair into quads, the quads into pixels, each zip one
 * vpermt2b, and the 8 registers of output go out in address order. The
 * compiler's loop stores its rows out of order; on the Xeon (Emerald
 * Rapids) this took 0.8x its time in cache (1x64x56x56: 16.5-17.9 against
 * 20.9-21.5 us) and 0.9-0.95x on 1x64x256x256 and 8x256x56x56. The same
 * network for other lane counts and element sizes measured slower than the
 * compiler's loops (2 or 4 lanes: 1.1-1.3x the time) or no better, and is not
 * used. The rows past the last whole step by one more step that ends at m.
 * Returns m, or 0 (fewer than 32 rows).
 */
/* vpermt2b indexes zipping two registers' first halves (add 32 for their
 * second) in units of 2, 4 and 8 bytes: unit i from the first register, unit
 * i + 1 from the second (index + 64). */
static const uint8_t lk_zip8_index[3][64] __attribute__((aligned(64))) = {
    /* units of 2 bytes */
    {0, 1, 64, 65, 2, 3, 66, 67, 4, 5, 68, 69, 6, 7, 70, 71,
     8, 9, 72, 73, 10, 11, 74, 75, 12, 13, 76, 77, 14, 15, 78, 79,
     16, 17, 80, 81, 18, 19, 82, 83, 20, 21, 84, 85, 22, 23, 86, 87,
     24, 25, 88, 89, 26, 27, 90, 91, 28, 29, 92, 93, 30, 31, 94, 95},
    /* units of 4 bytes */
    {0, 1, 2, 3, 64, 65, 66, 67, 4, 5, 6, 7, 68, 69, 70, 71,
     8, 9, 10, 11, 72, 73, 74, 75, 12, 13, 14, 15, 76, 77, 78, 79,
     16, 17, 18, 19, 80, 81, 82, 83, 20, 21, 22, 23, 84, 85, 86, 87,
     24, 25, 26, 27, 88, 89, 90, 91, 28, 29, 30, 31, 92, 93, 94, 95},
    /* units of 8 bytes */
    {0, 1, 2, 3, 4, 5, 6, 7, 64, 65, 66, 67, 68, 69, 70, 71,
     8, 9, 10, 11, 12, 13, 14, 15, 72, 73, 74, 75, 76, 77, 78, 79,
     16, 17, 18, 19, 20, 21, 22, 23, 80, 81, 82, 83, 84, 85, 86, 87,
     24, 25, 26, 27, 28, 29, 30, 31, 88, 89, 90, 91, 92, 93, 94, 95},
};
LK_VBMI static ptrdiff_t lk_interleave8_f16_vbmi(char *o, const void *const *lanes,
                                                 ptrdiff_t m) {
    if (m < 32) return 0;
    __m512i zlo[3], zhi[3];
    for (int r = 0; r < 3; r++) {
        zlo[r] = _mm512_load_si512((const void *)lk_zip8_index[r]);
        zhi[r] = _mm512_add_epi8(zlo[r], _mm512_set1_epi8(32));
    }
    const char *l[8];
    for (int j = 0; j < 8; j++) l[j] = (const char *)lanes[j];
    for (ptrdiff_t i = 0;; i += 32) {
        if (i + 32 > m) i = m - 32;
        __m512i v[8], t[8];
        for (int j = 0; j < 8; j++) v[j] = _mm512_loadu_si512(l[j] + 2 * i);
        /* Round r: groups of 2^r lanes, 2^r registers each (in pixel order),
         * zipped with the next group. */
        _Pragma("GCC unroll 3") for (int r = 0; r < 3; r++) {
            const int g = 1 << r;
            _Pragma("GCC unroll 8") for (int G = 0; G < 8; G += 2 * g)
                _Pragma("GCC unroll 4") for (int q = 0; q < g; q++) {
                    t[G + 2 * q] = _mm512_permutex2var_epi8(v[G + q], zlo[r], v[G + g + q]);
                    t[G + 2 * q + 1] = _mm512_permutex2var_epi8(v[G + q], zhi[r], v[G + g + q]);
                }
            _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) v[j] = t[j];
        }
        for (int j = 0; j < 8; j++) _mm512_storeu_si512(o + 16 * i + 64 * j, v[j]);
        if (i + 32 == m) break;
    }
    return m;
}

/*
 * Short lanes (7x7 planes: 49 elements) into dense pixels of K lanes of ES
 * bytes: K = 4, 8, 16 or 32 bytes, 4, 8 or 16 of float16, 4 or 8 of float32. A step
 * loads 64 bytes of every lane and the last, shorter one is read with masked
 * loads and written with a masked last store, where the compiler's loops ran
 * 16-byte steps and a scalar tail per lane.
 *
 * The zips run inside each 16-byte chunk (vpunpckl/h: one uop; the Xeon's
 * vpermt2b is three), then 4 x 4 chunk transposes put the chunks in output
 * order. Against the kernels before, best of 60 hot-loop batches on the Xeon
 * (Emerald Rapids), 1x2048x7x7: NCHW16c uint8 0.55x the time, NCHW8c uint8
 * 0.67x, float16 0.73x, float32 0.72x; NCHW4c float16 0.73x; HCWNC8 int8
 * 0.74x, float16 0.72x, float32 0.77x; HCWNC4 int8 0.69x, float16 0.65x.
 * 32 byte lanes (NCHW32c / kCHW32 int8), below: NCHW32c uint8 of 1x2048x7x7
 * 0.64x the time, kCHW32 0.76x. 16 lanes of float16 from lk_transpose
 * (NCHW16c float16: 0.67-0.86x). Not used where it measured no faster: lanes
 * of more than 256 bytes (16 byte lanes: 128), 2 lanes, 16 of float32 and 32
 * of float16 (not written: their tiles are 4-byte and 2-byte transposes).
 */
#define LK_UNPACK512(LOHI, u, a, b)                                                       \
    ((u) == 1 ? _mm512_unpack##LOHI##_epi8(a, b)                                          \
     : (u) == 2 ? _mm512_unpack##LOHI##_epi16(a, b)                                       \
     : (u) == 4 ? _mm512_unpack##LOHI##_epi32(a, b)                                       \
                : _mm512_unpack##LOHI##_epi64(a, b))
/* o<c> = chunk c of a, b, c and d, for c = 0..3. */
#define LK_T4X4(o0, o1, o2, o3, a, b, c, d)                                               \
    {                                                                                     \
        const __m512i lo2 = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);                   \
        const __m512i hi2 = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);                 \
        __m512i ab01 = _mm512_permutex2var_epi64(a, lo2, b);                              \
        __m512i ab23 = _mm512_permutex2var_epi64(a, hi2, b);                              \
        __m512i cd01 = _mm512_permutex2var_epi64(c, lo2, d);                              \
        __m512i cd23 = _mm512_permutex2var_epi64(c, hi2, d);                              \
        o0 = _mm512_shuffle_i64x2(ab01, cd01, 0x44);                                      \
        o1 = _mm512_shuffle_i64x2(ab01, cd01, 0xEE);                                      \
        o2 = _mm512_shuffle_i64x2(ab23, cd23, 0x44);                                      \
        o3 = _mm512_shuffle_i64x2(ab23, cd23, 0xEE);                                      \
    }
/* One step of K = 4, 8 or 16 lanes of ES-byte elements, K * ES <= 32, from
 * element i of each (the first bytes under lmask if masked), into t[0..K) in
 * output order. The zips inside chunks run in groups of KP = min(K, 16 / ES)
 * lanes (R = log2 KP rounds); chunk c of group g's register t is then output
 * chunk (c KP + t) G + g of the step (G = K / KP groups). */
#define LK_ZIPN_STEP(K, ES, t, l, i, masked, lmask)                                       \
    {                                                                                     \
        enum { KP = (K) < 16 / (ES) ? (K) : 16 / (ES), G = (K) / KP,                      \
               R = KP == 2 ? 1 : KP == 4 ? 2 : KP == 8 ? 3 : 4 };                         \
        __m512i v[K];                                                                     \
        if (masked) {                                                                     \
            _Pragma("GCC unroll 16") for (int j = 0; j < K; j++)                          \
                v[j] = _mm512_maskz_loadu_epi8(lmask, (l)[j] + (ES) * (i));               \
        } else {                                                                          \
            _Pragma("GCC unroll 16") for (int j = 0; j < K; j++)                          \
                v[j] = _mm512_loadu_si512((l)[j] + (ES) * (i));                           \
        }                                                                                 \
        /* Round r zips units of 2^r elements: groups of 2^r lanes into 2^(r+1). */       \
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {                             \
            const int g = 1 << r;                                                         \
            _Pragma("GCC unroll 16") for (int b = 0; b < K; b += 2 * g)                   \
                _Pragma("GCC unroll 8") for (int q = 0; q < g; q++) {                     \
                    t[b + 2 * q] = LK_UNPACK512(lo, (ES) * g, v[b + q], v[b + g + q]);    \
                    t[b + 2 * q + 1] = LK_UNPACK512(hi, (ES) * g, v[b + q], v[b + g + q]); \
                }                                                                         \
            _Pragma("GCC unroll 16") for (int j = 0; j < K; j++) v[j] = t[j];             \
        }                                                                                 \
        if (G == 1) {                                                                     \
            _Pragma("GCC unroll 4") for (int g = 0; g < K / 4; g++)                       \
                LK_T4X4(t[g], t[K / 4 + g], t[K / 2 + g], t[3 * K / 4 + g], v[4 * g],     \
                        v[4 * g + 1], v[4 * g + 2], v[4 * g + 3]);                        \
        } else {                                                                          \
            _Pragma("GCC unroll 4") for (int s = 0; s < KP / 2; s++)                      \
                LK_T4X4(t[s], t[(KP / 2 + s) % (K)], t[(KP + s) % (K)],                   \
                        t[(3 * KP / 2 + s) % (K)], v[2 * s], v[(KP + 2 * s) % (K)],       \
                        v[2 * s + 1], v[(KP + 2 * s + 1) % (K)]);                         \
        }                                                                                 \
    }
/* The NOUT registers of a step's output (bytes of them) at d: whole stores,
 * a masked last one. */
#define LK_ZIPN_STORE(d, t, NOUT, bytes)                                                  \
    _Pragma("GCC unroll 32") for (int j = 0; j < NOUT; j++) {                             \
        if ((bytes) >= 64 * (j + 1))                                                      \
            _mm512_storeu_si512((d) + 64 * j, t[j]);                                      \
        else if ((bytes) > 64 * j)                                                        \
            _mm512_mask_storeu_epi8((d) + 64 * j,                                         \
                                    _bzhi_u64(~0ULL, (unsigned)((bytes) - 64 * j)), t[j]); \
    }
/* One box: m elements of each lane l[j] into pixels at o, in steps of 64
 * bytes of every lane, the last, shorter one under masks. */
#define LK_ZIPN_BOX(K, ES, o, l, t, whole, lmask)                                         \
    {                                                                                     \
        ptrdiff_t i = 0;                                                                  \
        for (; i < whole; i += 64 / (ES)) {                                               \
            LK_ZIPN_STEP(K, ES, t, l, i, 0, 0)                                            \
            _Pragma("GCC unroll 16") for (int j = 0; j < K; j++)                          \
                _mm512_storeu_si512((o) + (K) * (ES) * i + 64 * j, t[j]);                 \
        }                                                                                 \
        if (i < m) {                                                                      \
            LK_ZIPN_STEP(K, ES, t, l, i, 1, lmask)                                        \
            LK_ZIPN_STORE((o) + (K) * (ES) * i, t, K, (ptrdiff_t)(K) * (ES) * (m - i))    \
        }                                                                                 \
    }
/* NAME(o, lanes, off, m): one box, from lanes[j] + off. */
#define LK_DEFINE_ZIPN(NAME, K, ES)                                                       \
    LK_VBMI __attribute__((target("bmi2"))) static void NAME(                             \
        char *o, const void *const *lanes, ptrdiff_t off, ptrdiff_t m) {                  \
        const char *l[K];                                                                 \
        lk_offset_lanes((const void **)l, lanes, K, off);                                 \
        __m512i t[K];                                                                     \
        const ptrdiff_t whole = m - m % (64 / (ES));                                      \
        const __mmask64 lmask = _bzhi_u64(~0ULL, (unsigned)((m - whole) * (ES)));         \
        LK_ZIPN_BOX(K, ES, o, l, t, whole, lmask)                                         \
    }
/* NAME(o, dstep, lanes, off, sstep, nbox, m): nbox boxes, box b from
 * lanes[j] + off + b sstep into o + b dstep (the lane pointers then live on
 * the stack: for wider elements, which take several steps a box, a call per
 * box measured faster). */
#define LK_DEFINE_ZIPN_BOXES(NAME, K, ES)                                                 \
    LK_VBMI __attribute__((target("bmi2"))) static void NAME(                             \
        char *o, ptrdiff_t dstep, const void *const *lanes, ptrdiff_t off, ptrdiff_t sstep, \
        ptrdiff_t nbox, ptrdiff_t m) {                                                    \
        const char *l[K];                                                                 \
        lk_offset_lanes((const void **)l, lanes, K, off);                                 \
        __m512i t[K];                                                                     \
        const ptrdiff_t whole = m - m % (64 / (ES));                                      \
        const __mmask64 lmask = _bzhi_u64(~0ULL, (unsigned)((m - whole) * (ES)));         \
        for (ptrdiff_t b = 0; b < nbox; b++) {                                            \
            LK_ZIPN_BOX(K, ES, o, l, t, whole, lmask)                                     \
            o += dstep;                                                                   \
            for (int j = 0; j < K; j++) l[j] += sstep;                                    \
        }                                                                                 \
    }
LK_DEFINE_ZIPN_BOXES(lk_interleave_zip8_u8_boxes, 8, 1)
LK_DEFINE_ZIPN_BOXES(lk_interleave_zip16_u8_boxes, 16, 1)
LK_DEFINE_ZIPN(lk_interleave_zip8_u8, 8, 1)
LK_DEFINE_ZIPN(lk_interleave_zip16_u8, 16, 1)
LK_DEFINE_ZIPN(lk_interleave_zip4x1, 4, 1)
LK_DEFINE_ZIPN(lk_interleave_zip4x2, 4, 2)
LK_DEFINE_ZIPN(lk_interleave_zip8x2, 8, 2)
LK_DEFINE_ZIPN(lk_interleave_zip16x2, 16, 2)
LK_DEFINE_ZIPN(lk_interleave_zip4x4, 4, 4)
LK_DEFINE_ZIPN(lk_interleave_zip8x4, 8, 4)

/* 32 byte lanes into pixels of 32: per step of 64 bytes, the 16-lane zip for
 * each half of the lanes (4 pixels of 16 bytes a register), then a zip of
 * their 16-byte units puts two whole pixels in a register. The first half's
 * registers wait in `half` (L1): 32 registers live at once spilled worse. */
LK_VBMI __attribute__((target("bmi2"))) static void lk_interleave_zip32_u8(
    char *o, const void *const *lanes, ptrdiff_t off, ptrdiff_t m) {
    const char *la[16], *lb[16];
    lk_offset_lanes((const void **)la, lanes, 16, off);
    lk_offset_lanes((const void **)lb, lanes + 16, 16, off);
    const __m512i lo2 = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
    const __m512i hi2 = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
    const ptrdiff_t whole = m - m % 64;
    const __mmask64 lmask = _bzhi_u64(~0ULL, (unsigned)(m - whole));
    for (ptrdiff_t i = 0; i < m; i += 64) {
        const int masked = i == whole;
        __m512i t[16], half[16], out[32];
        LK_ZIPN_STEP(16, 1, t, la, i, masked, lmask)
        for (int j = 0; j < 16; j++) _mm512_store_si512(&half[j], t[j]);
        LK_ZIPN_STEP(16, 1, t, lb, i, masked, lmask)
        _Pragma("GCC unroll 16") for (int j = 0; j < 16; j++) {
            __m512i a = _mm512_load_si512(&half[j]);
            out[2 * j] = _mm512_permutex2var_epi64(a, lo2, t[j]);
            out[2 * j + 1] = _mm512_permutex2var_epi64(a, hi2, t[j]);
        }
        char *d = o + 32 * i;
        if (masked) {
            LK_ZIPN_STORE(d, out, 32, 32 * (m - i))
        } else {
            _Pragma("GCC unroll 32") for (int j = 0; j < 32; j++)
                _mm512_storeu_si512(d + 64 * j, out[j]);
        }
    }
}

/* K lanes of ES-byte elements (K = 4, 8, 16 or 32, K ES <= 128), evenly
 * spaced (s + j sl), of m >= 16 / ES elements each, into m pixels of K
 * elements at o, R = 16 / ES rows a step. Register g gathers the step's 16
 * bytes of lanes 4g..4g+3 (a load and three masked broadcasts, whose merges
 * may issue on either vector port); a vpermt2b of each pair of those makes
 * rows of 8 lanes (8 ES bytes), two registers of R / 2 rows; then log2(K / 8)
 * levels of vpermt2q join the groups of 8 lanes unit by unit into whole
 * pixels (32 float32 lanes: two 16-lane halves, stored side by side; 4
 * lanes: one vpermb). Per 64 output bytes that is one permute for 8 lanes,
 * two for 16, three for 32, where the zip kernels' unpack rounds take four
 * to eight. The last step overlaps the one before when R does not divide m. */
/* Level 1: byte p of the rows-of-8-lanes register u (rows u R/2 on) from
 * the pair of 4-lane registers (lanes 4-7 from 64 on). */
static const uint8_t lk_lt_level1[3][2][64] __attribute__((aligned(64))) = {
    {{0, 16, 32, 48, 64, 80, 96, 112, 1, 17, 33, 49, 65, 81, 97, 113, 2, 18, 34, 50, 66, 82,
      98, 114, 3, 19, 35, 51, 67, 83, 99, 115, 4, 20, 36, 52, 68, 84, 100, 116, 5, 21, 37, 53,
      69, 85, 101, 117, 6, 22, 38, 54, 70, 86, 102, 118, 7, 23, 39, 55, 71, 87, 103, 119},
     {8, 24, 40, 56, 72, 88, 104, 120, 9, 25, 41, 57, 73, 89, 105, 121, 10, 26, 42, 58, 74,
      90, 106, 122, 11, 27, 43, 59, 75, 91, 107, 123, 12, 28, 44, 60, 76, 92, 108, 124, 13,
      29, 45, 61, 77, 93, 109, 125, 14, 30, 46, 62, 78, 94, 110, 126, 15, 31, 47, 63, 79, 95,
      111, 127}},
    {{0, 1, 16, 17, 32, 33, 48, 49, 64, 65, 80, 81, 96, 97, 112, 113, 2, 3, 18, 19, 34, 35,
      50, 51, 66, 67, 82, 83, 98, 99, 114, 115, 4, 5, 20, 21, 36, 37, 52, 53, 68, 69, 84, 85,
      100, 101, 116, 117, 6, 7, 22, 23, 38, 39, 54, 55, 70, 71, 86, 87, 102, 103, 118, 119},
     {8, 9, 24, 25, 40, 41, 56, 57, 72, 73, 88, 89, 104, 105, 120, 121, 10, 11, 26, 27, 42,
      43, 58, 59, 74, 75, 90, 91, 106, 107, 122, 123, 12, 13, 28, 29, 44, 45, 60, 61, 76, 77,
      92, 93, 108, 109, 124, 125, 14, 15, 30, 31, 46, 47, 62, 63, 78, 79, 94, 95, 110, 111,
      126, 127}},
    {{0, 1, 2, 3, 16, 17, 18, 19, 32, 33, 34, 35, 48, 49, 50, 51, 64, 65, 66, 67, 80, 81, 82,
      83, 96, 97, 98, 99, 112, 113, 114, 115, 4, 5, 6, 7, 20, 21, 22, 23, 36, 37, 38, 39, 52,
      53, 54, 55, 68, 69, 70, 71, 84, 85, 86, 87, 100, 101, 102, 103, 116, 117, 118, 119},
     {8, 9, 10, 11, 24, 25, 26, 27, 40, 41, 42, 43, 56, 57, 58, 59, 72, 73, 74, 75, 88, 89,
      90, 91, 104, 105, 106, 107, 120, 121, 122, 123, 12, 13, 14, 15, 28, 29, 30, 31, 44, 45,
      46, 47, 60, 61, 62, 63, 76, 77, 78, 79, 92, 93, 94, 95, 108, 109, 110, 111, 124, 125,
      126, 127}},
};

/* Four float32 lanes: byte q of the output (pixel q / 16, lane q / 4 % 4)
 * from the 4-lane register, lane-major 16 bytes a lane. Four lanes of bytes
 * or float16 took 1.15x the time of the zip kernels (NCHW4c of 1x2048x7x7)
 * and have no table. */
#define LK_LT4(q) ((q) / 4 % 4 * 16 + (q) / 16 * 4 + (q) % 4)
static const uint8_t lk_lt4_index[64] __attribute__((aligned(64))) = {LK_IDX64(LK_LT4)};
#undef LK_LT4

LK_VBMI __attribute__((always_inline)) static inline __m512i lk_lt_load4(const char *p,
                                                                         ptrdiff_t sl) {
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)p));
    v = _mm512_mask_broadcast_i32x4(v, 0x00F0, _mm_loadu_si128((const __m128i *)(p + sl)));
    v = _mm512_mask_broadcast_i32x4(v, 0x0F00, _mm_loadu_si128((const __m128i *)(p + 2 * sl)));
    return _mm512_mask_broadcast_i32x4(v, 0xF000, _mm_loadu_si128((const __m128i *)(p + 3 * sl)));
}

/* Qword indexes joining two streams of rows of U bytes (U = 8, 16, 32) into
 * rows of 2U: the first and second half of a register's rows. */
LK_VBMI __attribute__((always_inline)) static inline __m512i lk_lt_join(int U, int hi) {
    const int u = U / 8, base = hi ? 4 : 0;
    long long q[8];
    for (int p = 0; p < 8; p++) {
        const int unit = p / (2 * u), side = (p / u) % 2, word = p % u;
        q[p] = base + unit * u + word + 8 * side;
    }
    return _mm512_setr_epi64(q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7]);
}

LK_VBMI __attribute__((always_inline)) static inline void lk_lanetiles(
    const int ES, const int K, char *o, const char *s, ptrdiff_t sl, ptrdiff_t m) {
    const int R = 16 / ES, e = ES == 1 ? 0 : ES == 2 ? 1 : 2;
    const __m512i l1a = _mm512_load_si512((const void *)lk_lt_level1[e][0]);
    const __m512i l1b = _mm512_load_si512((const void *)lk_lt_level1[e][1]);
    const __m512i j8a = lk_lt_join(8 * ES, 0), j8b = lk_lt_join(8 * ES, 1);
    const __m512i j16a = lk_lt_join(16 * ES, 0), j16b = lk_lt_join(16 * ES, 1);
    if (K == 4) {
        /* One register of 4 lanes is one output register: a vpermb (float32
         * only, the one table). */
        const __m512i i4 = _mm512_load_si512((const void *)lk_lt4_index);
        for (ptrdiff_t t = 0;; t += R) {
            if (t + R > m) t = m - R;
            _mm512_storeu_si512(o + 4 * ES * t,
                                _mm512_permutexvar_epi8(i4, lk_lt_load4(s + t * ES, sl)));
            if (t + R == m) break;
        }
        return;
    }
    for (ptrdiff_t t = 0;; t += R) {
        if (t + R > m) t = m - R;
        /* b[h][u]: group h's rows u R/2 on; then c (two groups joined), d. */
        __m512i a[8], b[4][2], c[2][4], d[8];
        for (int g = 0; g < K / 4; g++) a[g] = lk_lt_load4(s + 4 * g * sl + t * ES, sl);
        for (int h = 0; h < K / 8; h++) {
            b[h][0] = _mm512_permutex2var_epi8(a[2 * h], l1a, a[2 * h + 1]);
            b[h][1] = _mm512_permutex2var_epi8(a[2 * h], l1b, a[2 * h + 1]);
        }
        char *out = o + (ptrdiff_t)K * ES * t;
        if (K == 8) {
            _mm512_storeu_si512(out, b[0][0]);
            _mm512_storeu_si512(out + 64, b[0][1]);
        } else {
            for (int h = 0; h < K / 16; h++)
                for (int u = 0; u < 2; u++) {
                    c[h][2 * u] = _mm512_permutex2var_epi64(b[2 * h][u], j8a, b[2 * h + 1][u]);
                    c[h][2 * u + 1] = _mm512_permutex2var_epi64(b[2 * h][u], j8b, b[2 * h + 1][u]);
                }
            if (K == 16) {
                for (int r = 0; r < 4; r++) _mm512_storeu_si512(out + 64 * r, c[0][r]);
            } else if (ES == 4) {
                /* 32 float32 lanes: each pixel's two lines, lanes 0-15 and 16-31. */
                for (int r = 0; r < 4; r++) {
                    _mm512_storeu_si512(out + 128 * r, c[0][r]);
                    _mm512_storeu_si512(out + 128 * r + 64, c[1][r]);
                }
            } else {
                for (int r = 0; r < 4; r++) {
                    d[2 * r] = _mm512_permutex2var_epi64(c[0][r], j16a, c[1][r]);
                    d[2 * r + 1] = _mm512_permutex2var_epi64(c[0][r], j16b, c[1][r]);
                }
                for (int r = 0; r < 8; r++) _mm512_storeu_si512(out + 64 * r, d[r]);
            }
        }
        if (t + R == m) break;
    }
}

/* nbox boxes: box b from lanes s + b sstep + j sl into o + b dstep. */
#define LK_DEFINE_LANETILES(NAME, ES, K)                                                    \
    LK_VBMI static void NAME(char *o, ptrdiff_t dstep, const char *s, ptrdiff_t sl,          \
                             ptrdiff_t sstep, ptrdiff_t nbox, ptrdiff_t m) {                 \
        for (ptrdiff_t b = 0; b < nbox; b++)                                                \
            lk_lanetiles(ES, K, o + b * dstep, s + b * sstep, sl, m);                       \
    }
LK_DEFINE_LANETILES(lk_lanetiles4x4, 4, 4)
LK_DEFINE_LANETILES(lk_lanetiles16x1, 1, 16)
LK_DEFINE_LANETILES(lk_lanetiles32x1, 1, 32)
LK_DEFINE_LANETILES(lk_lanetiles8x2, 2, 8)
LK_DEFINE_LANETILES(lk_lanetiles16x2, 2, 16)
LK_DEFINE_LANETILES(lk_lanetiles32x2, 2, 32)
LK_DEFINE_LANETILES(lk_lanetiles8x4, 4, 8)
LK_DEFINE_LANETILES(lk_lanetiles16x4, 4, 16)
LK_DEFINE_LANETILES(lk_lanetiles32x4, 4, 32)

/* The lane stride when k lanes are evenly spaced, else 0 (also for lanes
 * that all start at one address). */
static inline ptrdiff_t lk_even_lane_stride(const void *const *lanes, int k) {
    const ptrdiff_t sl = (const char *)lanes[1] - (const char *)lanes[0];
    for (int j = 2; j < k; j++)
        if ((const char *)lanes[j] - (const char *)lanes[0] != j * sl) return 0;
    return sl;
}

/* Whether the lane tiles take k lanes of m es-byte elements, sl apart, on
 * Intel with AVX-512 VBMI (on AMD, Zen 5's small operations only: below).
 * Bytes: 16 lanes, or 32 not a multiple of 4 KiB apart whose box is at most 1
 * MiB (32 lanes of 64-256 KiB planes into NCHW32c, 1x64x256x256 and
 * 1x128x128x128, took 1.05-1.17x the time of the transposes, their 16-byte
 * reads all in the same few L1 sets); 8 lanes of bytes took 1.11x the time of
 * the zip kernel for 7x7 planes and gained nothing on larger ones. float16
 * (8-32 lanes) and float32 (8 or 16) likewise, and within operations under 8
 * MiB, where they measured no faster (8x256x56x56: 1.0-1.4x the time), except
 * 32 lanes of float16 (one pixel a line), which took 0.84-0.96x the time of
 * the staged-and-streamed tiles there (NCHW32c float16 of 8x256x56x56,
 * 8x64x100x100, 4x128x80x80, 16x256x28x28, with the suite's interleaved copy;
 * streaming their stores gained nothing more; 8 and 16 lanes 0.96-1.04x). 4
 * lanes of float32 (NCHW4c of 7x7 planes, through lk_interleave) 0.84x the
 * time of the SSE interleave. 32 float32 lanes (NCHW32c, kCHW32: two lines a
 * pixel, the 16-lane tiles of each half stored side by side) up to 128 KiB a
 * box: 0.75-0.81x the time of the AVX2 tiles for 7x7 to 13x17 planes, 0.92x
 * for 28x28; 40x40 and 56x56 1.0x.
 */
static inline int lk_lanetiles_fit(ptrdiff_t m, int k, ptrdiff_t sl, int es) {
    if ((es != 1 && es != 2 && es != 4) || m < 16 / es || !lk_vbmi()) return 0;
    /* On AMD only on Zen 5, for operations within L2, and 16 byte lanes only
     * of 256+ rows: NCHW8c-32c / kCHW32 float16 and float32 of 1x2048x7x7
     * 0.48-0.84x the time (compare_builds.py), 32 byte lanes 0.68x, 16 byte
     * lanes of 1x3x224x224 0.73x but of 1x2048x7x7 1.25x; 8x256x56x56
     * float16 took 1.2-1.4x, byte lanes of it 1.3-2x. */
    if (lk_is_amd() && (lk_split_avx512() || !lk_moves_at_most((ptrdiff_t)2 << 20) ||
                        (es == 1 && k == 16 && m < 256)))
        return 0;
    switch (k * 16 + es) {
    case 4 * 16 + 4:
        return sl % 4096 != 0 && m * k * es <= ((ptrdiff_t)1 << 20) && !lk_large_operation();
    case 32 * 16 + 4:
        return sl % 4096 != 0 && m * k * es <= ((ptrdiff_t)128 << 10) && !lk_large_operation();
    case 16 * 16 + 1: return 1;
    case 32 * 16 + 1: return sl % 4096 != 0 && m * k <= ((ptrdiff_t)1 << 20);
    case 8 * 16 + 2: case 16 * 16 + 2: case 32 * 16 + 2: case 8 * 16 + 4:
    case 16 * 16 + 4:
        return sl % 4096 != 0 && m * k * es <= ((ptrdiff_t)1 << 20) &&
               (!lk_large_operation() || (k == 32 && es == 2));
    default: return 0;
    }
}

/* nbox boxes of k lanes s + j sl (box b from s + b sstep into o + b dstep)
 * where lk_lanetiles_fit. */
static void lk_lanetiles_boxes_at(char *o, ptrdiff_t dstep, const char *s, ptrdiff_t sl,
                                  ptrdiff_t sstep, ptrdiff_t nbox, ptrdiff_t m, int k, int es) {
    switch (k * 16 + es) {
    case 4 * 16 + 4: lk_lanetiles4x4(o, dstep, s, sl, sstep, nbox, m); break;
    case 16 * 16 + 1: lk_lanetiles16x1(o, dstep, s, sl, sstep, nbox, m); break;
    case 32 * 16 + 1: lk_lanetiles32x1(o, dstep, s, sl, sstep, nbox, m); break;
    case 8 * 16 + 2: lk_lanetiles8x2(o, dstep, s, sl, sstep, nbox, m); break;
    case 16 * 16 + 2: lk_lanetiles16x2(o, dstep, s, sl, sstep, nbox, m); break;
    case 32 * 16 + 2: lk_lanetiles32x2(o, dstep, s, sl, sstep, nbox, m); break;
    case 8 * 16 + 4: lk_lanetiles8x4(o, dstep, s, sl, sstep, nbox, m); break;
    case 16 * 16 + 4: lk_lanetiles16x4(o, dstep, s, sl, sstep, nbox, m); break;
    default: lk_lanetiles32x4(o, dstep, s, sl, sstep, nbox, m); break;
    }
}

/* The lane tiles for nbox boxes of k evenly spaced lanes where they fit: 1
 * if done, 0 (nothing written) if not. */
static inline int lk_lanetiles_boxes(char *o, ptrdiff_t dstep, const void *const *lanes,
                                     ptrdiff_t off, ptrdiff_t sstep, ptrdiff_t nbox, ptrdiff_t m,
                                     int k, int es) {
    if (k != 4 && k != 8 && k != 16 && k != 32) return 0;
    const ptrdiff_t sl = lk_even_lane_stride(lanes, k);
    if (sl == 0 || !lk_lanetiles_fit(m, k, sl, es)) return 0;
    lk_lanetiles_boxes_at(o, dstep, (const char *)lanes[0] + off, sl, sstep, nbox, m, k, es);
    return 1;
}

/* HCWNCx of one image: rows of K-lane blocks cut out of channel planes,
 *   out[r dr + u K L + p K es + k es + b] = in[r sr + u su + k sl + p es + b]
 * for r < R rows, u < U blocks, p < W pixels, k < K lanes (K = 4, 8, 16),
 * b < es, L = W es bytes a row piece. Eight channels (two blocks of 4, or
 * one of 8) a step: 16 bytes of each channel's row, four channels to a
 * register (one load and three masked broadcasts), then vpermt2b into pixel
 * order. Pieces of up to 16 bytes are one load per channel, and the eight
 * channels' output is 8L bytes side by side. Longer pieces go 16 bytes at a
 * time, the last step overlapping the one before, each step K x 16 bytes of
 * a block. Blocks of 16 take 16 channels a step. The output is written a row
 * of a block of channels at a time (about 16 KiB of source, at least 2 KiB
 * of each row). The staging path this replaces (a block's interleave into
 * L1, then 7-28 byte row copies) took 1.2-2.4x the time for 7x7 to 112x112
 * planes. Loads that could pass the source's last byte (lim) go through the
 * scalar loop. Tried: two rows a load where sr + L <= 16 (7x7 bytes), 1.3x
 * the time, its stores alternating between two rows; gathering the eight
 * pieces with vpgatherqq took 0.9x the time for 7x7 bytes, not kept:
 * gathers are several times slower under the Downfall microcode fix of
 * older Intel CPUs. */
static void lk_lane_rows_scalar(char *dst, ptrdiff_t dr, const char *src, ptrdiff_t sr,
                                ptrdiff_t su, ptrdiff_t sl, const ptrdiff_t *g4, ptrdiff_t r0,
                                ptrdiff_t r1, ptrdiff_t c0, ptrdiff_t c1, ptrdiff_t W, int K,
                                int es) {
    for (ptrdiff_t r = r0; r < r1; r++)
        for (ptrdiff_t c = c0; c < c1; c++) {
            const int k = (int)(c % K);
            const char *s = src + r * sr + (c / K) * su + g4[k / 4] + (k % 4) * sl;
            char *o = dst + r * dr + (c / K) * K * W * es + (c % K) * es;
            for (ptrdiff_t p = 0; p < W; p++) memcpy(o + p * K * es, s + p * es, (size_t)es);
        }
}

/* Byte i (< n) of eight channels' output rows of W pixels: its index in two
 * registers of four channels' 16-byte pieces. Nested counters, no divisions
 * (divisions here were a fifth of a 1x2048x7x7 call). */
static void lk_lane_rows_table(uint8_t *t, int n, ptrdiff_t W, int K, int es) {
    int i = 0;
    for (int unit = 0; i < n; unit++)
        for (int p = 0; p < W && i < n; p++)
            for (int k = 0; k < K && i < n; k++)
                for (int b = 0; b < es && i < n; b++)
                    t[i++] = (uint8_t)(16 * (unit * K + k) + p * es + b);
}

/* A mask of the first n (0-64) bytes of a register. */
static inline uint64_t lk_low_bytes(int n) { return n >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << n) - 1; }

LK_VBMI __attribute__((always_inline)) static inline void lk_lane_rows_k(
    const int K, char *dst, ptrdiff_t dr, const char *src, ptrdiff_t sr, ptrdiff_t su,
    ptrdiff_t sl, const ptrdiff_t *g4, ptrdiff_t R, ptrdiff_t U, ptrdiff_t W, int es,
    ptrdiff_t cblock) {
    const ptrdiff_t L = W * es, C = U * K;
    /* The block's lanes 4-7 start g4[1] after lanes 0-3 (4 sl, or an image
     * later in a batch); its last lane lanemax after its first. */
    const ptrdiff_t lanemax = g4[(K - 1) / 4] + 3 * sl;
    const char *lim = src + (R - 1) * sr + (U - 1) * su + lanemax + L;
    uint8_t tab[128] __attribute__((aligned(64)));
    if (L <= 16) {
        /* Eight channels a step, the second four s4 after the first. */
        const ptrdiff_t s4 = K == 8 ? g4[1] : su, gstep = K == 8 ? su : 2 * su;
        const int n = (int)(8 * L);
        lk_lane_rows_table(tab, 128, W, K, es);
        const __m512i t0 = _mm512_load_si512(tab), t1 = _mm512_load_si512(tab + 64);
        const __mmask64 m0 = lk_low_bytes(n), m1 = n > 64 ? lk_low_bytes(n - 64) : 0;
        const __mmask64 mh = lk_low_bytes((int)(4 * L)); /* a last lone block of 4 */
        for (ptrdiff_t cb = 0; cb < C; cb += cblock) {
            const ptrdiff_t ce = cb + cblock < C ? cb + cblock : C, ng = (ce - cb) / 8;
            for (ptrdiff_t r = 0; r < R; r++) {
                char *o = dst + r * dr + cb * L;
                const char *s = src + (cb / K) * su + r * sr;
                /* The groups whose 16-byte loads stay below lim; the rest go scalar. */
                const ptrdiff_t room = (lim - s) - 16 - s4 - 3 * sl;
                ptrdiff_t g = 0, safe = room < 0 ? 0 : room / gstep + 1;
                if (safe > ng) safe = ng;
                if (n > 64) {
                    for (; g < safe; g++, s += gstep, o += n) {
                        const __m512i a = lk_lt_load4(s, sl), b = lk_lt_load4(s + s4, sl);
                        _mm512_storeu_si512(o, _mm512_permutex2var_epi8(a, t0, b));
                        _mm512_mask_storeu_epi8(o + 64, m1, _mm512_permutex2var_epi8(a, t1, b));
                    }
                } else {
                    for (; g < safe; g++, s += gstep, o += n) {
                        const __m512i a = lk_lt_load4(s, sl), b = lk_lt_load4(s + s4, sl);
                        _mm512_mask_storeu_epi8(o, m0, _mm512_permutex2var_epi8(a, t0, b));
                    }
                }
                const ptrdiff_t c = cb + 8 * g;
                if (c < ce && (g < ng || s + 3 * sl + 16 > lim)) {
                    lk_lane_rows_scalar(dst, dr, src, sr, su, sl, g4, r, r + 1, c, ce, W, K, es);
                } else if (c < ce) { /* K = 4 and an odd number of blocks: the last one */
                    _mm512_mask_storeu_epi8(o, mh, _mm512_permutexvar_epi8(t0, lk_lt_load4(s, sl)));
                }
            }
        }
        return;
    }
    /* Longer pieces: a block's K x 16 bytes a step (the table of 16-byte pieces). */
    lk_lane_rows_table(tab, K * 16, 16 / es, K, es);
    const __m512i t0 = _mm512_load_si512(tab), t1 = _mm512_load_si512(tab + 64);
    for (ptrdiff_t cb = 0; cb < C; cb += cblock) {
        const ptrdiff_t ce = cb + cblock < C ? cb + cblock : C;
        for (ptrdiff_t r = 0; r < R; r++) {
            const char *s = src + (cb / K) * su + r * sr;
            char *o = dst + r * dr + cb * L;
            for (ptrdiff_t c = cb; c < ce; c += K, s += su, o += K * L)
                for (ptrdiff_t q = 0;; q += 16) {
                    if (q + 16 > L) q = L - 16;
                    if (K == 4) {
                        const __m512i a = lk_lt_load4(s + q, sl);
                        _mm512_storeu_si512(o + 4 * q, _mm512_permutexvar_epi8(t0, a));
                    } else {
                        const __m512i a = lk_lt_load4(s + q, sl);
                        const __m512i b = lk_lt_load4(s + g4[1] + q, sl);
                        _mm512_storeu_si512(o + 8 * q, _mm512_permutex2var_epi8(a, t0, b));
                        _mm512_storeu_si512(o + 8 * q + 64, _mm512_permutex2var_epi8(a, t1, b));
                    }
                    if (q + 16 == L) break;
                }
        }
    }
}

/* Blocks of 16 channels: four registers of four channels' pieces, and each
 * 64 output bytes a blend of two vpermt2b, channels 0-7 from the first pair
 * and 8-15 from the second (t: the index in its pair; mask: the second). */
static void lk_lane_rows_table16(uint8_t *t, uint64_t *mask, int n, ptrdiff_t W, int es) {
    int i = 0;
    for (int j = 0; j < 4; j++) mask[j] = 0;
    for (int p = 0; p < W && i < n; p++)
        for (int k = 0; k < 16 && i < n; k++)
            for (int b = 0; b < es && i < n; b++, i++) {
                t[i] = (uint8_t)(16 * (k % 8) + p * es + b);
                mask[i / 64] |= (uint64_t)(k >= 8) << (i % 64);
            }
}

LK_VBMI __attribute__((always_inline)) static inline void lk_lane_rows_16_step(
    char *o, const char *s, ptrdiff_t sl, const ptrdiff_t *g4, const __m512i *t,
    const uint64_t *mask, int nout, __mmask64 mlast) {
    const __m512i a = lk_lt_load4(s, sl), b = lk_lt_load4(s + g4[1], sl);
    const __m512i c = lk_lt_load4(s + g4[2], sl), d = lk_lt_load4(s + g4[3], sl);
    for (int j = 0; j < nout; j++) {
        const __m512i v = _mm512_mask_blend_epi8(mask[j], _mm512_permutex2var_epi8(a, t[j], b),
                                                 _mm512_permutex2var_epi8(c, t[j], d));
        if (j + 1 < nout)
            _mm512_storeu_si512(o + 64 * j, v);
        else
            _mm512_mask_storeu_epi8(o + 64 * j, mlast, v);
    }
}

LK_VBMI static void lk_lane_rows_16(char *dst, ptrdiff_t dr, const char *src, ptrdiff_t sr,
                                    ptrdiff_t su, ptrdiff_t sl, const ptrdiff_t *g4, ptrdiff_t R,
                                    ptrdiff_t U, ptrdiff_t W, int es, ptrdiff_t cblock) {
    const ptrdiff_t L = W * es;
    const ptrdiff_t P = L <= 16 ? L : 16;  /* the piece a step */
    uint8_t tab[256] __attribute__((aligned(64)));
    uint64_t mask[4];
    const int n = (int)(16 * P), nout = (n + 63) / 64;
    lk_lane_rows_table16(tab, mask, n, P / es, es);
    __m512i t[4];
    for (int j = 0; j < 4; j++) t[j] = _mm512_load_si512(tab + 64 * j);
    const __mmask64 mlast = lk_low_bytes(n - 64 * (nout - 1));
    const ptrdiff_t lanemax = g4[3] + 3 * sl;
    const char *lim = src + (R - 1) * sr + (U - 1) * su + lanemax + L;
    const ptrdiff_t ublock = cblock / 16 > 0 ? cblock / 16 : 1;
    for (ptrdiff_t ub = 0; ub < U; ub += ublock) {
        const ptrdiff_t ue = ub + ublock < U ? ub + ublock : U;
        for (ptrdiff_t r = 0; r < R; r++) {
            const char *s = src + ub * su + r * sr;
            char *o = dst + r * dr + ub * 16 * L;
            for (ptrdiff_t u = ub; u < ue; u++, s += su, o += 16 * L) {
                if (L <= 16) {
                    if (s + lanemax + 16 > lim) { /* the loads would pass the source's end */
                        lk_lane_rows_scalar(dst, dr, src, sr, su, sl, g4, r, r + 1, 16 * u,
                                            16 * ue, W, 16, es);
                        break;
                    }
                    lk_lane_rows_16_step(o, s, sl, g4, t, mask, nout, mlast);
                    continue;
                }
                for (ptrdiff_t q = 0;; q += 16) {
                    if (q + 16 > L) q = L - 16;
                    lk_lane_rows_16_step(o + 16 * q, s + q, sl, g4, t, mask, 4, ~(__mmask64)0);
                    if (q + 16 == L) break;
                }
            }
        }
    }
}

/* g4: the offsets of a block's lanes 0, 4, 8 and 12 (each four sl apart). */
LK_VBMI static void lk_lane_rows_vbmi(char *dst, ptrdiff_t dr, const char *src, ptrdiff_t sr,
                                      ptrdiff_t su, ptrdiff_t sl, const ptrdiff_t *g4,
                                      ptrdiff_t R, ptrdiff_t U, ptrdiff_t W, int K, int es,
                                      ptrdiff_t cblock) {
    if (K == 4)
        lk_lane_rows_k(4, dst, dr, src, sr, su, sl, g4, R, U, W, es, cblock);
    else if (K == 8)
        lk_lane_rows_k(8, dst, dr, src, sr, su, sl, g4, R, U, W, es, cblock);
    else
        lk_lane_rows_16(dst, dr, src, sr, su, sl, g4, R, U, W, es, cblock);
}

/* The reverse of lk_lane_rows, HCWNCx of one image into channel planes:
 *   out[u du + k dl + r dr + p es + b] = in[r sr + u K L + p K es + k es + b].
 * A step reads eight channels' pieces of a row (sixteen for K = 16), a
 * row's 8L contiguous bytes or, for pieces over 16 bytes, 16 bytes of each
 * channel; permutes them into 16-byte slots, four channels to a register;
 * and stores each slot into its plane (an extract and a 16-byte store,
 * masked to the piece). A first version (each slot stored by a masked
 * 64-byte store reaching back 16 s bytes, no extracts, in a loop the
 * compiler did not unroll) took 3-4x the time. The old path (an element walk, or a de-interleave per block of 7-28
 * byte rows) ran at 0.05-0.4x a copy for 7x7 to 56x56 planes. */
static void lk_lane_rows_unpack_table(uint8_t *t, uint64_t *hi, int G, int K, int P, int unit,
                                      int es) {
    /* Slot byte 16 s + x of output register j (channel 4 j + s, piece byte
     * x < P): its index in the step's input, the units' pieces unit bytes
     * apart; hi marks indexes of the second 128 bytes. */
    for (int j = 0; j < G / 4; j++) hi[j] = 0;
    for (int i = 0; i < 16 * G; i++) {
        const int ch = i / 16, x = i % 16;
        const int idx = x < P ? (ch / K) * unit + ((x / es) * K + ch % K) * es + x % es : 0;
        t[i] = (uint8_t)(idx & 127);
        hi[i / 64] |= (uint64_t)(idx >= 128) << (i % 64);
    }
}

/* Slots 0-3 of v (16 bytes each, their first bytes per m) to p, p + dl,
 * p + 2 dl, p + 3 dl. */
LK_VBMI __attribute__((always_inline)) static inline void lk_store_slots(char *p, ptrdiff_t dl,
                                                                         __m512i v, __mmask16 m) {
    if (m == 0xFFFF) {
        _mm_storeu_si128((__m128i *)p, _mm512_castsi512_si128(v));
        _mm_storeu_si128((__m128i *)(p + dl), _mm512_extracti32x4_epi32(v, 1));
        _mm_storeu_si128((__m128i *)(p + 2 * dl), _mm512_extracti32x4_epi32(v, 2));
        _mm_storeu_si128((__m128i *)(p + 3 * dl), _mm512_extracti32x4_epi32(v, 3));
    } else {
        _mm_mask_storeu_epi8(p, m, _mm512_castsi512_si128(v));
        _mm_mask_storeu_epi8(p + dl, m, _mm512_extracti32x4_epi32(v, 1));
        _mm_mask_storeu_epi8(p + 2 * dl, m, _mm512_extracti32x4_epi32(v, 2));
        _mm_mask_storeu_epi8(p + 3 * dl, m, _mm512_extracti32x4_epi32(v, 3));
    }
}

/* One step: the input registers in[] into slots, stored a piece of P bytes
 * per channel (o: the first channel's plane row; channels 4-7 of two blocks
 * of 4 at o4). */
LK_VBMI __attribute__((always_inline)) static inline void lk_unpack_step(
    const int G, const __m512i *in, const __m512i *t, const uint64_t *hi, char *o, char *o4,
    ptrdiff_t dl, __mmask16 m, int nreg) {
    if (G == 8) {
        lk_store_slots(o, dl, _mm512_permutex2var_epi8(in[0], t[0], in[1]), m);
        if (nreg > 1) lk_store_slots(o4, dl, _mm512_permutex2var_epi8(in[0], t[1], in[1]), m);
    } else {
        for (int j = 0; j < 4; j++)
            lk_store_slots(o + 4 * j * dl, dl,
                           _mm512_mask_blend_epi8(hi[j], _mm512_permutex2var_epi8(in[0], t[j], in[1]),
                                                  _mm512_permutex2var_epi8(in[2], t[j], in[3])),
                           m);
    }
}

LK_VBMI __attribute__((always_inline)) static inline void lk_lane_rows_unpack_k(
    const int K, char *dst, ptrdiff_t du, ptrdiff_t dl, ptrdiff_t dr, const char *src,
    ptrdiff_t sr, ptrdiff_t U, ptrdiff_t R, ptrdiff_t W, int es, ptrdiff_t cblock,
    ptrdiff_t nimg, ptrdiff_t sn, ptrdiff_t dn) {
    const int G = K == 16 ? 16 : 8;
    const ptrdiff_t L = W * es, C = U * K;
    const int P = L <= 16 ? (int)L : 16, unit = L <= 16 ? (int)(K * L) : 16 * K;
    uint8_t tab[256] __attribute__((aligned(64)));
    uint64_t hi[4];
    lk_lane_rows_unpack_table(tab, hi, G, K, P, unit, es);
    __m512i t[4];
    for (int j = 0; j < G / 4; j++) t[j] = _mm512_load_si512(tab + 64 * j);
    const __mmask16 mp = (__mmask16)lk_low_bytes(P);
    /* Pieces of up to 16 bytes: a step's G L input bytes, loaded with masks
     * (none past them); a last lone block of 4 reads 4 L. */
    __mmask64 ml[4], mh[4];
    for (int i = 0; i < 4; i++) {
        const ptrdiff_t n = G * L - 64 * i, nh = 4 * L - 64 * i;
        ml[i] = n <= 0 ? 0 : lk_low_bytes(n > 64 ? 64 : (int)n);
        mh[i] = nh <= 0 ? 0 : lk_low_bytes(nh > 64 ? 64 : (int)nh);
    }
    const ptrdiff_t o4 = K == 4 ? du : 4 * dl;  /* channel 4 of a step from channel 0 */
    __m512i in[4];
    /* nimg images, sn apart in the source and dn in the output. */
    for (ptrdiff_t img = 0; img < nimg; img++, src += sn, dst += dn)
    for (ptrdiff_t cb = 0; cb < C; cb += cblock) {
        const ptrdiff_t ce = cb + cblock < C ? cb + cblock : C;
        for (ptrdiff_t r = 0; r < R; r++) {
            const char *s = src + r * sr + cb * L;
            char *o = dst + (cb / K) * du + r * dr;
            for (ptrdiff_t c = cb; c < ce; c += G, s += G * L, o += (G / K) * du) {
                const int nreg = K == 4 && ce - c < 8 ? 1 : G / 4;
                if (L <= 16) {
                    const __mmask64 *mm = nreg == 1 ? mh : ml;
                    for (int i = 0; i < G / 4; i++)
                        in[i] = _mm512_maskz_loadu_epi8(mm[i], s + 64 * i);
                    lk_unpack_step(G, in, t, hi, o, o + o4, dl, mp, nreg);
                    continue;
                }
                for (ptrdiff_t q = 0;; q += 16) {
                    if (q + 16 > L) q = L - 16;
                    if (K == 4) {
                        in[0] = _mm512_loadu_si512(s + 4 * q);
                        in[1] = nreg > 1 ? _mm512_loadu_si512(s + 4 * L + 4 * q) : in[0];
                    } else {
                        for (int i = 0; i < K / 4; i++) in[i] = _mm512_loadu_si512(s + K * q + 64 * i);
                    }
                    lk_unpack_step(G, in, t, hi, o + q, o + o4 + q, dl, 0xFFFF, nreg);
                    if (q + 16 == L) break;
                }
            }
        }
    }
}

LK_VBMI static void lk_lane_rows_unpack_vbmi(char *dst, ptrdiff_t du, ptrdiff_t dl, ptrdiff_t dr,
                                             const char *src, ptrdiff_t sr, ptrdiff_t U,
                                             ptrdiff_t R, ptrdiff_t W, int K, int es,
                                             ptrdiff_t cblock, ptrdiff_t nimg, ptrdiff_t sn,
                                             ptrdiff_t dn) {
    if (K == 4)
        lk_lane_rows_unpack_k(4, dst, du, dl, dr, src, sr, U, R, W, es, cblock, nimg, sn, dn);
    else if (K == 8)
        lk_lane_rows_unpack_k(8, dst, du, dl, dr, src, sr, U, R, W, es, cblock, nimg, sn, dn);
    else
        lk_lane_rows_unpack_k(16, dst, du, dl, dr, src, sr, U, R, W, es, cblock, nimg, sn, dn);
}
#endif
#endif /* LK_HAVE_SSE2 && LK_HAVE_X86_CLONES: the entry points below build everywhere */

#ifdef LK_HAVE_VBMI_TILES
/* Whether the lane-row kernels take blocks of K lanes of es-byte elements,
 * R x U x W of them, with row pieces of at most max bytes: Intel with AVX-512
 * VBMI (and Zen 5; not Zen 4: see lk_split_avx512). */
static inline int lk_lane_rows_fit(ptrdiff_t K, int es, ptrdiff_t R, ptrdiff_t U, ptrdiff_t W,
                                   ptrdiff_t max) {
    return (K == 4 || K == 8 || K == 16) && (es == 1 || es == 2 || es == 4) && R >= 1 &&
           U >= 1 && W >= 1 && W * es <= max && !lk_split_avx512() && lk_vbmi();
}

/* Lanes a block of the lane-row kernels: about 16 KiB of the planes side
 * (plane bytes each lane touches), so that they stay in L1 while each row is
 * written, but at least 2 KiB of each row (pieces of L bytes); a multiple of
 * round. */
static inline ptrdiff_t lk_lane_rows_block(ptrdiff_t plane_bytes, ptrdiff_t L, ptrdiff_t round) {
    ptrdiff_t n = (ptrdiff_t)16384 / plane_bytes;
    if (n < 2048 / L) n = 2048 / L;
    return (n + round - 1) / round * round;
}
#endif

/* NCHW -> HCWNCx of N images (lk_lane_rows_vbmi) where it applies: x N = 4,
 * 8 or 16 lanes a pixel, positive strides, row pieces of at most
 * LK_LANE_ROWS_MAX bytes (64 for 16 lanes). Each block's row holds, per
 * pixel, the x lanes of every image (image n's sn on), which the kernels take
 * as one block of N x lanes (lanes 4 j to 4 j + 3 from image 4 j / x). The
 * box walk ran at 0.31-0.57x a copy for 2-8 images of 14x14 and 28x28 planes.
 * 1 if done, 0 (nothing written) if not. */
static inline int lk_lane_rows_batch(char *dst, ptrdiff_t dr, const char *src, ptrdiff_t sr,
                                     ptrdiff_t su, ptrdiff_t sl, ptrdiff_t sn, ptrdiff_t N,
                                     ptrdiff_t R, ptrdiff_t U, ptrdiff_t W, int K, int es) {
#ifdef LK_HAVE_VBMI_TILES
    const ptrdiff_t KN = N * K;
    /* Lanes come four to a register at one stride: blocks of 4+ lanes. */
    const ptrdiff_t max = KN == 16 ? 64 : LK_LANE_ROWS_MAX;
    if (N < 1 || K % 4 != 0 || !lk_lane_rows_fit(KN, es, R, U, W, max) || sr <= 0 || su <= 0 ||
        sl <= 0 || (N > 1 && sn <= 0))
        return 0;
    ptrdiff_t g4[4];
    for (int j = 0; j < 4; j++) g4[j] = ((4 * j) / K) * sn + ((4 * j) % K) * sl;
    lk_lane_rows_vbmi(dst, dr, src, sr, su, sl, g4, R, U, W, (int)KN, es,
                      lk_lane_rows_block(R * sr, W * es, KN == 16 ? 16 : 8));
    return 1;
#else
    (void)dst; (void)dr; (void)src; (void)sr; (void)su; (void)sl; (void)sn; (void)N; (void)R;
    (void)U; (void)W; (void)K; (void)es;
    return 0;
#endif
}

/* NCHW -> HCWNCx of one image (lk_lane_rows_batch of one). */
static inline int lk_lane_rows(char *dst, ptrdiff_t dr, const char *src, ptrdiff_t sr,
                               ptrdiff_t su, ptrdiff_t sl, ptrdiff_t R, ptrdiff_t U, ptrdiff_t W,
                               int K, int es) {
    return lk_lane_rows_batch(dst, dr, src, sr, su, sl, 0, 1, R, U, W, K, es);
}

/* lk_lane_rows_unpack_vbmi where it applies (as lk_lane_rows): 1 if done, 0
 * (nothing written) if not. */
static inline int lk_lane_rows_unpack(char *dst, ptrdiff_t du, ptrdiff_t dl, ptrdiff_t dr,
                                      const char *src, ptrdiff_t sr, ptrdiff_t U, ptrdiff_t R,
                                      ptrdiff_t W, int K, int es) {
#ifdef LK_HAVE_VBMI_TILES
    const ptrdiff_t max = K == 16 ? LK_LANE_ROWS_UNPACK_MAX16 : LK_LANE_ROWS_UNPACK_MAX;
    if (!lk_lane_rows_fit(K, es, R, U, W, max) || du <= 0 || dl <= 0 || dr <= 0) return 0;
    lk_lane_rows_unpack_vbmi(dst, du, dl, dr, src, sr, U, R, W, K, es,
                             lk_lane_rows_block(R * dr, W * es, 16), 1, 0, 0);
    return 1;
#else
    (void)dst; (void)du; (void)dl; (void)dr; (void)src; (void)sr; (void)U; (void)R; (void)W;
    (void)K; (void)es;
    return 0;
#endif
}

/* HCWNCx of a batch of N images back into planes (VART takes one image; the
 * library also packs batches): each row of the packed tensor holds, per
 * pixel, a chunk of K channels of every image (pixels ps bytes apart). Row by
 * row, the chunks are first split into a row per image (a de-interleave of
 * K es-byte elements into a scratch row), then each image's row goes through
 * lk_lane_rows_unpack's kernel. The element-wise walk this replaces ran at
 * 0.04-0.11x a copy. 1 if done, 0 (nothing written) if not. */
static inline int lk_lane_rows_unpack_batch(char *dst, ptrdiff_t dn, ptrdiff_t du, ptrdiff_t dl,
                                            ptrdiff_t dr, const char *src, ptrdiff_t sr,
                                            ptrdiff_t ps, ptrdiff_t N, ptrdiff_t U, ptrdiff_t R,
                                            ptrdiff_t W, int K, int es) {
#ifdef LK_HAVE_VBMI_TILES
    const ptrdiff_t chunk = (ptrdiff_t)K * es, max = K == 16 ? LK_LANE_ROWS_UNPACK_MAX16
                                                              : LK_LANE_ROWS_UNPACK_MAX;
    if (!lk_lane_rows_fit(K, es, R, U, W, max) || N < 2 || dn <= 0 || du <= 0 || dl <= 0 ||
        dr <= 0 || ps % chunk != 0 || ps < N * chunk)
        return 0;
    const ptrdiff_t m = U * W, rowbytes = m * chunk;
    /* Rows a pass: about 1 MiB of scratch, so that each plane gets rb rows
     * in a row. */
    ptrdiff_t rb = ((ptrdiff_t)1 << 20) / (N * rowbytes);
    rb = rb < 1 ? 1 : rb > R ? R : rb;
    const ptrdiff_t img = rb * rowbytes;   /* an image's rows in the scratch */
    char *tmp = (char *)malloc((size_t)(N * img));
    if (!tmp) return 0;
    const ptrdiff_t cblock = lk_lane_rows_block(rb * W * es, W * es, 16);
    for (ptrdiff_t r0 = 0; r0 < R; r0 += rb) {
        const ptrdiff_t nr = R - r0 < rb ? R - r0 : rb;
        for (ptrdiff_t r = 0; r < nr; r++) {
            const char *row = src + (r0 + r) * sr;
            char *t0 = tmp + r * rowbytes;
            if (chunk <= 8) {
                lk_deinterleave(t0, img / chunk, row, m, (int)N, ps / chunk, (int)chunk);
                continue;
            }
            /* The row in order, each pixel's chunks to the images' rows. */
            for (ptrdiff_t i = 0; i < m; i++) {
                const char *s = row + i * ps;
                char *t = t0 + i * chunk;
                switch (chunk) {
                case 16: for (ptrdiff_t n = 0; n < N; n++) memcpy(t + n * img, s + 16 * n, 16); break;
                case 32: for (ptrdiff_t n = 0; n < N; n++) memcpy(t + n * img, s + 32 * n, 32); break;
                default: for (ptrdiff_t n = 0; n < N; n++) memcpy(t + n * img, s + 64 * n, 64); break;
                }
            }
        }
        lk_lane_rows_unpack_vbmi(dst + r0 * dr, du, dl, dr, tmp, rowbytes, U, nr, W, K, es,
                                 cblock, N, img, dn);
    }
    free(tmp);
    return 1;
#else
    (void)dst; (void)dn; (void)du; (void)dl; (void)dr; (void)src; (void)sr; (void)ps; (void)N;
    (void)U; (void)R; (void)W; (void)K; (void)es;
    return 0;
#endif
}

/* Whether lk_interleave_zipn takes k lanes of m es-byte elements: Intel CPUs
 * with AVX-512 VBMI, and Zen 5 (not Zen 4: lk_split_avx512), where it
 * measured faster. 4 lanes of 1 or 4 bytes only for copy_lanes' boxes (lane_box; HCWNC4 of 1x2048x7x7,
 * int8 0.69x the time, float32 0.87x): NCHW4c float32 of 1x2048x7x7, each
 * block 784 bytes on from the last, took 1.2x; NCHW4c uint8 runs the grid
 * kernels. */
static inline int lk_zipn_applies(ptrdiff_t m, int k, int es, int lane_box) {
#ifdef LK_HAVE_VBMI_TILES
    if (m * es > LK_ZIPN_MAX_BYTES || lk_split_avx512() || !lk_vbmi()) return 0;
    switch (k * 16 + es) {
    case 8 * 16 + 1: case 4 * 16 + 2: case 8 * 16 + 2: case 8 * 16 + 4: return 1;
    case 16 * 16 + 1: return m <= 128;
    case 4 * 16 + 1: case 4 * 16 + 4: return lane_box;
    case 32 * 16 + 1: return 1;
    /* Boxes of copy_lanes only: the lane tiles where the lanes are evenly
     * spaced (lk_interleave_zipn_at), else the generic interleave. */
    case 16 * 16 + 2: case 32 * 16 + 2: case 16 * 16 + 4: case 32 * 16 + 4: return lane_box;
    default: return 0;
    }
#else
    (void)m; (void)k; (void)es;
    return 0;
#endif
}

/* The zip kernel for k lanes of es bytes, of lanes[j] + off, where
 * lk_zipn_applies: a caller that walks boxes of the same lanes builds their
 * table once. */
static inline void lk_interleave_zipn_at(void *restrict out, const void *const *lanes,
                                         ptrdiff_t off, ptrdiff_t m, int k, int es) {
#ifdef LK_HAVE_VBMI_TILES
    char *o = (char *)out;
    if (lk_lanetiles_boxes(o, 0, lanes, off, 0, 1, m, k, es)) return;
    switch (k * 16 + es) {
    case 8 * 16 + 1: lk_interleave_zip8_u8(o, lanes, off, m); break;
    case 16 * 16 + 1: lk_interleave_zip16_u8(o, lanes, off, m); break;
    case 4 * 16 + 1: lk_interleave_zip4x1(o, lanes, off, m); break;
    case 32 * 16 + 1: lk_interleave_zip32_u8(o, lanes, off, m); break;
    case 4 * 16 + 2: lk_interleave_zip4x2(o, lanes, off, m); break;
    case 8 * 16 + 2: lk_interleave_zip8x2(o, lanes, off, m); break;
    case 4 * 16 + 4: lk_interleave_zip4x4(o, lanes, off, m); break;
    case 8 * 16 + 4: lk_interleave_zip8x4(o, lanes, off, m); break;
    default: {
        /* Not a zip kernel's shape (callers check lk_zipn_applies first). */
        const void *rest[32];
        lk_offset_lanes(rest, lanes, k, off);
        lk_interleave_long(out, rest, m, k, k, es);
    }
    }
#else
    const void *rest[32];
    lk_offset_lanes(rest, lanes, k, off);
    lk_interleave_long(out, rest, m, k, k, es);
#endif
}

/* nbox boxes of 8 or 16 byte lanes where lk_zipn_applies: box b from
 * lanes[j] + off + b sstep into out + b dstep. 0 (nothing done) for others. */
static inline int lk_interleave_zipn_boxes(void *restrict out, ptrdiff_t dstep,
                                           const void *const *lanes, ptrdiff_t off,
                                           ptrdiff_t sstep, ptrdiff_t nbox, ptrdiff_t m, int k,
                                           int es) {
#ifdef LK_HAVE_VBMI_TILES
    if (lk_lanetiles_boxes((char *)out, dstep, lanes, off, sstep, nbox, m, k, es)) return 1;
    if (es == 1 && k == 8) {
        lk_interleave_zip8_u8_boxes((char *)out, dstep, lanes, off, sstep, nbox, m);
        return 1;
    }
    if (es == 1 && k == 16) {
        lk_interleave_zip16_u8_boxes((char *)out, dstep, lanes, off, sstep, nbox, m);
        return 1;
    }
#endif
    (void)out; (void)dstep; (void)lanes; (void)off; (void)sstep; (void)nbox; (void)m; (void)k;
    (void)es;
    return 0;
}

/* 1 if done by a zip kernel, 0 if not. */
static int lk_interleave_zipn(void *restrict out, const void *const *lanes, ptrdiff_t m, int k,
                              int es, int lane_box) {
    if (!lk_zipn_applies(m, k, es, lane_box)) return 0;
    lk_interleave_zipn_at(out, lanes, 0, m, k, es);
    return 1;
}

/* lk_interleave8_f16_vbmi on Intel CPUs with AVX-512 VBMI (unmeasured on
 * AMD): 1 if done, 0 if not. */
static int lk_interleave_zip(void *restrict out, const void *const *lanes, ptrdiff_t m, int k,
                             int es) {
#ifdef LK_HAVE_VBMI_TILES
    if (k == 8 && es == 2 && !lk_split_avx512() && lk_vbmi())
        return lk_interleave8_f16_vbmi((char *)out, lanes, m) == m;
#endif
    (void)out; (void)lanes; (void)m; (void)k; (void)es;
    return 0;
}
#if defined(LK_HAVE_SSE2) && defined(LK_HAVE_X86_CLONES)
#ifdef LK_HAVE_VBMI_TILES

/* Pixels of 3 elements (1, 2 or 4 bytes) -> 3 planes with AVX-512 VBMI
 * (NHWC -> NCHW of 3 channels): 192 bytes of pixels a step, three 64-byte
 * loads A, B, C; each plane's 64 bytes are one vpermt2b of A and B and a
 * vpermb of C merged over its last bytes (bytes 128 on of the step), where
 * the AVX2 kernel shuffles nine times per 96 bytes. The rows past the last
 * whole step by one more step that ends at m. Returns m, or 0 (m under a
 * step). */
/* Byte p of lane c's 64 bytes: byte (3 (p / es) + c) es + p % es of the
 * step, mod 128 (those from 128 on come from C, by the same index mod 64). */
static const uint8_t lk_di3_vbmi_index[3][3][64] __attribute__((aligned(64))) = {
    {
        /* 1-byte elements, lane 0 */
        {0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36, 39, 42, 45,
         48, 51, 54, 57, 60, 63, 66, 69, 72, 75, 78, 81, 84, 87, 90, 93,
         96, 99, 102, 105, 108, 111, 114, 117, 120, 123, 126, 1, 4, 7, 10, 13,
         16, 19, 22, 25, 28, 31, 34, 37, 40, 43, 46, 49, 52, 55, 58, 61},
        /* 1-byte elements, lane 1 */
        {1, 4, 7, 10, 13, 16, 19, 22, 25, 28, 31, 34, 37, 40, 43, 46,
         49, 52, 55, 58, 61, 64, 67, 70, 73, 76, 79, 82, 85, 88, 91, 94,
         97, 100, 103, 106, 109, 112, 115, 118, 121, 124, 127, 2, 5, 8, 11, 14,
         17, 20, 23, 26, 29, 32, 35, 38, 41, 44, 47, 50, 53, 56, 59, 62},
        /* 1-byte elements, lane 2 */
        {2, 5, 8, 11, 14, 17, 20, 23, 26, 29, 32, 35, 38, 41, 44, 47,
         50, 53, 56, 59, 62, 65, 68, 71, 74, 77, 80, 83, 86, 89, 92, 95,
         98, 101, 104, 107, 110, 113, 116, 119, 122, 125, 0, 3, 6, 9, 12, 15,
         18, 21, 24, 27, 30, 33, 36, 39, 42, 45, 48, 51, 54, 57, 60, 63},
    },
    {
        /* 2-byte elements, lane 0 */
        {0, 1, 6, 7, 12, 13, 18, 19, 24, 25, 30, 31, 36, 37, 42, 43,
         48, 49, 54, 55, 60, 61, 66, 67, 72, 73, 78, 79, 84, 85, 90, 91,
         96, 97, 102, 103, 108, 109, 114, 115, 120, 121, 126, 127, 4, 5, 10, 11,
         16, 17, 22, 23, 28, 29, 34, 35, 40, 41, 46, 47, 52, 53, 58, 59},
        /* 2-byte elements, lane 1 */
        {2, 3, 8, 9, 14, 15, 20, 21, 26, 27, 32, 33, 38, 39, 44, 45,
         50, 51, 56, 57, 62, 63, 68, 69, 74, 75, 80, 81, 86, 87, 92, 93,
         98, 99, 104, 105, 110, 111, 116, 117, 122, 123, 0, 1, 6, 7, 12, 13,
         18, 19, 24, 25, 30, 31, 36, 37, 42, 43, 48, 49, 54, 55, 60, 61},
        /* 2-byte elements, lane 2 */
        {4, 5, 10, 11, 16, 17, 22, 23, 28, 29, 34, 35, 40, 41, 46, 47,
         52, 53, 58, 59, 64, 65, 70, 71, 76, 77, 82, 83, 88, 89, 94, 95,
         100, 101, 106, 107, 112, 113, 118, 119, 124, 125, 2, 3, 8, 9, 14, 15,
         20, 21, 26, 27, 32, 33, 38, 39, 44, 45, 50, 51, 56, 57, 62, 63},
    },
    {
        /* 4-byte elements, lane 0 */
        {0, 1, 2, 3, 12, 13, 14, 15, 24, 25, 26, 27, 36, 37, 38, 39,
         48, 49, 50, 51, 60, 61, 62, 63, 72, 73, 74, 75, 84, 85, 86, 87,
         96, 97, 98, 99, 108, 109, 110, 111, 120, 121, 122, 123, 4, 5, 6, 7,
         16, 17, 18, 19, 28, 29, 30, 31, 40, 41, 42, 43, 52, 53, 54, 55},
        /* 4-byte elements, lane 1 */
        {4, 5, 6, 7, 16, 17, 18, 19, 28, 29, 30, 31, 40, 41, 42, 43,
         52, 53, 54, 55, 64, 65, 66, 67, 76, 77, 78, 79, 88, 89, 90, 91,
         100, 101, 102, 103, 112, 113, 114, 115, 124, 125, 126, 127, 8, 9, 10, 11,
         20, 21, 22, 23, 32, 33, 34, 35, 44, 45, 46, 47, 56, 57, 58, 59},
        /* 4-byte elements, lane 2 */
        {8, 9, 10, 11, 20, 21, 22, 23, 32, 33, 34, 35, 44, 45, 46, 47,
         56, 57, 58, 59, 68, 69, 70, 71, 80, 81, 82, 83, 92, 93, 94, 95,
         104, 105, 106, 107, 116, 117, 118, 119, 0, 1, 2, 3, 12, 13, 14, 15,
         24, 25, 26, 27, 36, 37, 38, 39, 48, 49, 50, 51, 60, 61, 62, 63},
    },
};
/* The first byte of each lane's 64 that comes from C. */
static const uint8_t lk_di3_vbmi_from_c[3][3] = {{43, 43, 42}, {44, 42, 42}, {44, 44, 40}};

/* 0, 1, ..., 63: a base for byte-shift indexes. */
static const uint8_t lk_byte_iota64[64] __attribute__((aligned(64))) = {
    0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
    22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43,
    44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63};

LK_VBMI static ptrdiff_t lk_deinterleave3_vbmi(char *restrict out, ptrdiff_t orow,
                                               const char *restrict in, ptrdiff_t m, int es) {
    const int e = es == 1 ? 0 : es == 2 ? 1 : 2;
    const ptrdiff_t step = 64 / es, ob = orow * es;
    if (m < step) return 0;
    __m512i idx[3];
    __mmask64 from_c[3];
    for (int c = 0; c < 3; c++) {
        idx[c] = _mm512_load_si512((const void *)lk_di3_vbmi_index[e][c]);
        from_c[c] = ~(__mmask64)0 << lk_di3_vbmi_from_c[e][c];
    }
    int shifted = 0;
    for (int c = 0; c < 3; c++) shifted |= (int)((uintptr_t)(out + c * ob) % 64);
    if (shifted) {
        /* Planes whose starts are not a line apart (H x W not a multiple of
         * 64: 299x299, 500x333): every 64-byte store would straddle two lines
         * (3x the time of aligned planes). Each plane's steps go out as whole
         * lines instead, each joining the previous step's last r bytes and
         * this step's first 64 - r (one more vpermt2b); the first step, the
         * last full one and the overlapping last step store unaligned. */
        __m512i shift[3], prev[3];
        ptrdiff_t i = 0;
        for (int c = 0; c < 3; c++) {
            int r = (int)((uintptr_t)(out + c * ob) % 64);
            shift[c] = _mm512_add_epi8(_mm512_load_si512((const void *)lk_byte_iota64),
                                       _mm512_set1_epi8((char)(64 - r)));
        }
        for (; i + step <= m; i += step) {
            const char *p = in + 3 * es * i;
            const __m512i a = _mm512_loadu_si512(p), b = _mm512_loadu_si512(p + 64);
            const __m512i c3 = _mm512_loadu_si512(p + 128);
            for (int c = 0; c < 3; c++) {
                __m512i v = _mm512_mask_permutexvar_epi8(_mm512_permutex2var_epi8(a, idx[c], b),
                                                         from_c[c], idx[c], c3);
                char *o = out + c * ob + i * es;
                if (i == 0)
                    _mm512_storeu_si512(o, v);
                else
                    _mm512_store_si512((void *)(o - (uintptr_t)o % 64),
                                       _mm512_permutex2var_epi8(prev[c], shift[c], v));
                prev[c] = v;
            }
        }
        for (int c = 0; c < 3; c++) _mm512_storeu_si512(out + c * ob + (i - step) * es, prev[c]);
        if (i == m) return m;
        i = m - step;
        const char *p = in + 3 * es * i;
        const __m512i a = _mm512_loadu_si512(p), b = _mm512_loadu_si512(p + 64);
        const __m512i c3 = _mm512_loadu_si512(p + 128);
        for (int c = 0; c < 3; c++)
            _mm512_storeu_si512(out + c * ob + i * es,
                                _mm512_mask_permutexvar_epi8(_mm512_permutex2var_epi8(a, idx[c], b),
                                                             from_c[c], idx[c], c3));
        return m;
    }
    for (ptrdiff_t i = 0;; i += step) {
        if (i + step > m) i = m - step;
        const char *p = in + 3 * es * i;
        const __m512i a = _mm512_loadu_si512(p), b = _mm512_loadu_si512(p + 64);
        const __m512i c3 = _mm512_loadu_si512(p + 128);
        for (int c = 0; c < 3; c++)
            _mm512_storeu_si512(out + c * ob + i * es,
                                _mm512_mask_permutexvar_epi8(_mm512_permutex2var_epi8(a, idx[c], b),
                                                             from_c[c], idx[c], c3));
        if (i + step == m) break;
    }
    return m;
}

/* 3 lanes of 1- or 2-byte elements -> pixels of 3 with AVX-512 VBMI (NCHW ->
 * NHWC of 3 channels; compare_builds.py on the Xeon, 1x3x224x224: uint8 0.72x
 * the time of the AVX2 kernel, float16 0.83x; 1x3x1024x1024 0.92-0.98x;
 * float32 0.93-1.05x, which takes lk_interleave3_f32_avx512 below):
 * 64 bytes of each lane a step, A, B and C; each of
 * the step's three 64-byte output registers is one vpermt2b of A and B and a
 * vpermb of C merged over every third element. The stores are line-aligned:
 * one step written unaligned covers the rows before the first row that
 * starts on a line, the steps run from there, and the last one ends at m.
 * Returns m, or 0 (m under two steps). */
/* Output byte p of register j: lane c's byte i es + b, for pixel byte q = 64 j
 * + p = (3 i + c) es + b; lane 1's with 64 added, lane 2's in the mask below. */
static const uint8_t lk_il3_vbmi_index[2][3][64] __attribute__((aligned(64))) = {
    {
        /* 1-byte elements, output register 0 */
        {0, 64, 0, 1, 65, 1, 2, 66, 2, 3, 67, 3, 4, 68, 4, 5,
         69, 5, 6, 70, 6, 7, 71, 7, 8, 72, 8, 9, 73, 9, 10, 74,
         10, 11, 75, 11, 12, 76, 12, 13, 77, 13, 14, 78, 14, 15, 79, 15,
         16, 80, 16, 17, 81, 17, 18, 82, 18, 19, 83, 19, 20, 84, 20, 21},
        /* 1-byte elements, output register 1 */
        {85, 21, 22, 86, 22, 23, 87, 23, 24, 88, 24, 25, 89, 25, 26, 90,
         26, 27, 91, 27, 28, 92, 28, 29, 93, 29, 30, 94, 30, 31, 95, 31,
         32, 96, 32, 33, 97, 33, 34, 98, 34, 35, 99, 35, 36, 100, 36, 37,
         101, 37, 38, 102, 38, 39, 103, 39, 40, 104, 40, 41, 105, 41, 42, 106},
        /* 1-byte elements, output register 2 */
        {42, 43, 107, 43, 44, 108, 44, 45, 109, 45, 46, 110, 46, 47, 111, 47,
         48, 112, 48, 49, 113, 49, 50, 114, 50, 51, 115, 51, 52, 116, 52, 53,
         117, 53, 54, 118, 54, 55, 119, 55, 56, 120, 56, 57, 121, 57, 58, 122,
         58, 59, 123, 59, 60, 124, 60, 61, 125, 61, 62, 126, 62, 63, 127, 63},
    },
    {
        /* 2-byte elements, output register 0 */
        {0, 1, 64, 65, 0, 1, 2, 3, 66, 67, 2, 3, 4, 5, 68, 69,
         4, 5, 6, 7, 70, 71, 6, 7, 8, 9, 72, 73, 8, 9, 10, 11,
         74, 75, 10, 11, 12, 13, 76, 77, 12, 13, 14, 15, 78, 79, 14, 15,
         16, 17, 80, 81, 16, 17, 18, 19, 82, 83, 18, 19, 20, 21, 84, 85},
        /* 2-byte elements, output register 1 */
        {20, 21, 22, 23, 86, 87, 22, 23, 24, 25, 88, 89, 24, 25, 26, 27,
         90, 91, 26, 27, 28, 29, 92, 93, 28, 29, 30, 31, 94, 95, 30, 31,
         32, 33, 96, 97, 32, 33, 34, 35, 98, 99, 34, 35, 36, 37, 100, 101,
         36, 37, 38, 39, 102, 103, 38, 39, 40, 41, 104, 105, 40, 41, 42, 43},
        /* 2-byte elements, output register 2 */
        {106, 107, 42, 43, 44, 45, 108, 109, 44, 45, 46, 47, 110, 111, 46, 47,
         48, 49, 112, 113, 48, 49, 50, 51, 114, 115, 50, 51, 52, 53, 116, 117,
         52, 53, 54, 55, 118, 119, 54, 55, 56, 57, 120, 121, 56, 57, 58, 59,
         122, 123, 58, 59, 60, 61, 124, 125, 60, 61, 62, 63, 126, 127, 62, 63},
    },
};
/* The bytes of each output register from lane 2. */
static const uint64_t lk_il3_vbmi_lane2[2][3] = {
    {0x4924924924924924ULL, 0x2492492492492492ULL, 0x9249249249249249ULL},
    {0x0c30c30c30c30c30ULL, 0x30c30c30c30c30c3ULL, 0xc30c30c30c30c30cULL},
};

/* The first pixel of 3 es-byte elements from out whose row starts on a
 * line (rows of 3 es bytes reach every multiple of es), or 0 where none
 * does: the 3-lane interleaves store line-aligned from there on. */
static inline ptrdiff_t lk_first_pixel3_on_line(const char *out, int es) {
    const ptrdiff_t to_line = (ptrdiff_t)(-(uintptr_t)out & 63), row = 3 * (ptrdiff_t)es;
    ptrdiff_t i = 0;
    if (to_line % es == 0)
        while ((to_line - i * row) % 64 != 0) i++;
    return i;
}

LK_VBMI static ptrdiff_t lk_interleave3_vbmi(char *restrict out, const void *const *lanes,
                                             ptrdiff_t m, int es) {
    const int e = es == 1 ? 0 : 1;
    const ptrdiff_t step = 64 / es, row = 3 * es;
    if ((es != 1 && es != 2) || m < 2 * step) return 0;
    __m512i idx[3];
    __mmask64 lane2[3];
    for (int j = 0; j < 3; j++) {
        idx[j] = _mm512_load_si512((const void *)lk_il3_vbmi_index[e][j]);
        lane2[j] = lk_il3_vbmi_lane2[e][j];
    }
    const char *a = (const char *)lanes[0], *b = (const char *)lanes[1], *c = (const char *)lanes[2];
#define LK_IL3V_STEP(i)                                                          \
    {                                                                            \
        const __m512i va = _mm512_loadu_si512(a + (i) * es);                     \
        const __m512i vb = _mm512_loadu_si512(b + (i) * es);                     \
        const __m512i vc = _mm512_loadu_si512(c + (i) * es);                     \
        for (int j = 0; j < 3; j++)                                              \
            _mm512_storeu_si512(out + (i) * row + 64 * j,                        \
                                _mm512_mask_permutexvar_epi8(                    \
                                    _mm512_permutex2var_epi8(va, idx[j], vb), lane2[j], idx[j], vc)); \
    }
    ptrdiff_t i = lk_first_pixel3_on_line(out, es);
    if (i > 0) LK_IL3V_STEP(0)
    for (; i + step <= m; i += step) LK_IL3V_STEP(i)
    if (i < m) LK_IL3V_STEP(m - step)
#undef LK_IL3V_STEP
    return m;
}

/* 3 lanes of float32 -> pixels of 3 with AVX-512, one permute per lane:
 * element i of lane c goes to pixel element 3 i + c, which is position
 * (3 i + c) mod 16 of output register (3 i + c) / 16, and as 3 and 16 are
 * coprime those positions are distinct, so a single vpermd of each lane puts
 * every element in place for all three registers at once and each output
 * register is two masked blends of the three (which issue on either vector
 * port, where vpermt2b and vpermb both take the shuffle port). NCHW -> NHWC
 * float32 against the AVX2 kernel, alternating in one process: 1x3x112x112
 * and 1x3x256x256 0.87-0.9x the time, 1x3x224x224 0.78-0.86x in five
 * processes of six (1.0x in the sixth), 1x3x1024x1024 0.93-0.98x. Bytes and
 * float16 measured no faster this way than with lk_interleave3_vbmi
 * (0.98-1.04x), nor the reverse (blends, then one vpermb a plane) in
 * lk_deinterleave3_vbmi. Returns m, or 0 (m under two steps). */
__attribute__((target("avx2,avx512f"))) static ptrdiff_t lk_interleave3_f32_avx512(
    char *restrict out, const void *const *lanes, ptrdiff_t m) {
    if (m < 32) return 0;
    /* Lane c's element for position q: i = 11 (q - c) mod 16 (11 = 1/3 mod 16). */
    const __m512i ia = _mm512_setr_epi32(0, 11, 6, 1, 12, 7, 2, 13, 8, 3, 14, 9, 4, 15, 10, 5);
    const __m512i ib = _mm512_setr_epi32(5, 0, 11, 6, 1, 12, 7, 2, 13, 8, 3, 14, 9, 4, 15, 10);
    const __m512i ic = _mm512_setr_epi32(10, 5, 0, 11, 6, 1, 12, 7, 2, 13, 8, 3, 14, 9, 4, 15);
    /* Positions q of register j holding lane (16 j + q) mod 3 = 1, and = 2. */
    const __mmask16 b0 = 0x2492, b1 = 0x9249, b2 = 0x4924;
    const __mmask16 c0 = 0x4924, c1 = 0x2492, c2 = 0x9249;
    const float *a = (const float *)lanes[0], *b = (const float *)lanes[1];
    const float *c = (const float *)lanes[2];
#define LK_IL3F_STEP(i)                                                                       \
    {                                                                                         \
        const __m512i ta = _mm512_permutexvar_epi32(ia, _mm512_loadu_si512(a + (i)));        \
        const __m512i tb = _mm512_permutexvar_epi32(ib, _mm512_loadu_si512(b + (i)));        \
        const __m512i tc = _mm512_permutexvar_epi32(ic, _mm512_loadu_si512(c + (i)));        \
        char *o_ = out + (i) * 12;                                                            \
        _mm512_storeu_si512(o_, _mm512_mask_blend_epi32(c0, _mm512_mask_blend_epi32(b0, ta, tb), tc)); \
        _mm512_storeu_si512(o_ + 64,                                                          \
                            _mm512_mask_blend_epi32(c1, _mm512_mask_blend_epi32(b1, ta, tb), tc)); \
        _mm512_storeu_si512(o_ + 128,                                                         \
                            _mm512_mask_blend_epi32(c2, _mm512_mask_blend_epi32(b2, ta, tb), tc)); \
    }
    ptrdiff_t i = lk_first_pixel3_on_line(out, 4);
    if (i > 0) LK_IL3F_STEP(0)
    for (; i + 16 <= m; i += 16) LK_IL3F_STEP(i)
    if (i < m) LK_IL3F_STEP(m - 16)
#undef LK_IL3F_STEP
    return m;
}

/* lk_interleave_wide_avx2 of bytes with the tile above; k >= 32, m >= 16. */
LK_VBMI static void lk_interleave_wide_vbmi(char *o, const void *const *lanes, ptrdiff_t m, int k,
                                            ptrdiff_t orow) {
    for (ptrdiff_t i0 = 0; i0 < m; i0 += 16) {
        ptrdiff_t i = i0 + 16 <= m ? i0 : m - 16;
        for (int j0 = 0; j0 < k; j0 += 32) {
            int j = j0 + 32 <= k ? j0 : k - 32;
            lk_ptile_vbmi_8(o + i * orow + j, orow, lanes + j, i);
        }
    }
}

/* 16 lanes of 4-byte elements (lanes[j] + off) by 16 rows into 16 rows of
 * 64 bytes, ds apart: one 64-byte load per lane; two unpack rounds leave 4
 * lanes by 4 rows in each 128-bit block, and two rounds of block shuffles put
 * each row's four blocks (lanes 0-3, 4-7, 8-11, 12-15) side by side. */
LK_VBMI static inline void lk_ptile_z32(char *d, ptrdiff_t ds, const void *const *lanes,
                                        ptrdiff_t off) {
    __m512i r[16], t[16];
    for (int j = 0; j < 16; j++) r[j] = _mm512_loadu_si512((const char *)lanes[j] + off);
    for (int j = 0; j < 8; j++) {
        t[2 * j] = _mm512_unpacklo_epi32(r[2 * j], r[2 * j + 1]);
        t[2 * j + 1] = _mm512_unpackhi_epi32(r[2 * j], r[2 * j + 1]);
    }
    /* r[4g + q]: lanes 4g..4g+3 at row 4b + q in block b. */
    for (int g = 0; g < 4; g++) {
        r[4 * g] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
        r[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
        r[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
        r[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
    }
    for (int q = 0; q < 4; q++) {
        /* a: blocks 0 and 2 of groups 0, 1; b: blocks 1 and 3; c, e: groups 2, 3. */
        __m512i a = _mm512_shuffle_i32x4(r[q], r[4 + q], 0x88);
        __m512i b = _mm512_shuffle_i32x4(r[q], r[4 + q], 0xdd);
        __m512i c = _mm512_shuffle_i32x4(r[8 + q], r[12 + q], 0x88);
        __m512i e = _mm512_shuffle_i32x4(r[8 + q], r[12 + q], 0xdd);
        _mm512_storeu_si512(d + q * ds, _mm512_shuffle_i32x4(a, c, 0x88));
        _mm512_storeu_si512(d + (4 + q) * ds, _mm512_shuffle_i32x4(b, e, 0x88));
        _mm512_storeu_si512(d + (8 + q) * ds, _mm512_shuffle_i32x4(a, c, 0xdd));
        _mm512_storeu_si512(d + (12 + q) * ds, _mm512_shuffle_i32x4(b, e, 0xdd));
    }
}

/* lk_interleave_wide of 4-byte lanes with the tile above; k >= 16, m >= 16.
 * The AVX2 tiles write each 64-byte line of the destination as two 32-byte
 * pieces at different times, half of them across a line where the output
 * sits 16 or 48 bytes into one (numpy's arrays); this tile writes 64 bytes
 * at once. NCHW -> HCWNC4 / HCWNC8 float32 of 8x256x56x56 (N x 4 or N x 8
 * lanes, stores streamed): 0.93-0.98x the time, suite-like A/B; 2-byte lanes
 * by the same scheme (32 lanes by 16 rows) took 1.15-1.2x and keep the AVX2
 * tiles. */
LK_VBMI static void lk_interleave_wide_z32(char *o, const void *const *lanes, ptrdiff_t m, int k,
                                           ptrdiff_t orow) {
    for (ptrdiff_t i0 = 0; i0 < m; i0 += 16) {
        ptrdiff_t i = i0 + 16 <= m ? i0 : m - 16;
        for (int j0 = 0; j0 < k; j0 += 16) {
            int j = j0 + 16 <= k ? j0 : k - 16;
            lk_ptile_z32(o + i * orow + (ptrdiff_t)j * 4, orow, lanes + j, i * 4);
        }
    }
}

/* 32 lanes of 2-byte elements (lanes[j] + off) by 8 rows into 8 rows of 64
 * bytes, ds apart: register k holds 16 bytes of lanes k, k + 8, k + 16 and
 * k + 24 in its four 128-bit blocks, and the three unpack rounds of the AVX2
 * wide tile, which stay within blocks, make it destination row k of all 32
 * lanes, one whole 64-byte store. Per output byte 0.09 shuffles where the
 * AVX2 tile takes 0.16, and a line written at once. */
LK_VBMI static inline void lk_ptile_z16(char *d, ptrdiff_t ds, const void *const *lanes,
                                        ptrdiff_t off) {
    __m512i r[8], t[8];
#define LK_Z16_ROW(j) _mm_loadu_si128((const __m128i *)((const char *)lanes[j] + off))
    for (int k = 0; k < 8; k++) {
        __m512i v = _mm512_castsi128_si512(LK_Z16_ROW(k));
        v = _mm512_inserti32x4(v, LK_Z16_ROW(8 + k), 1);
        v = _mm512_inserti32x4(v, LK_Z16_ROW(16 + k), 2);
        r[k] = _mm512_inserti32x4(v, LK_Z16_ROW(24 + k), 3);
    }
#undef LK_Z16_ROW
    LK_UNPACK_ROUNDS(8, _mm512_unpacklo_epi16, _mm512_unpackhi_epi16)
    for (int k = 0; k < 8; k++) _mm512_storeu_si512(d + k * ds, r[k]);
}

/* lk_interleave_wide of 2-byte lanes with the tile above; k >= 32, m >= 8.
 * Zen 5, NCHW -> HCWNC4 float16 of 8x256x56x56 (32 lanes of 112 bytes a
 * box; bench-like C loop, cache hot / evicted first): 0.66x / 0.61x the time
 * of the AVX2 wide tiles, HCWNC8 (64 lanes) 0.88x / 0.82x, and 0.65x for
 * boxes in L2. Measured on Zen 5 only, so AMD's choice (lk_is_amd). */
LK_VBMI static void lk_interleave_wide_z16(char *o, const void *const *lanes, ptrdiff_t m, int k,
                                           ptrdiff_t orow) {
    for (ptrdiff_t i0 = 0; i0 < m; i0 += 8) {
        ptrdiff_t i = i0 + 8 <= m ? i0 : m - 8;
        for (int j0 = 0; j0 < k; j0 += 32) {
            int j = j0 + 32 <= k ? j0 : k - 32;
            lk_ptile_z16(o + i * orow + (ptrdiff_t)j * 2, orow, lanes + j, i * 2);
        }
    }
}

/* A transpose of 4-byte elements by the tile above: each group of 16 lanes
 * down all rows, the last tile of rows (and of lanes) moved back to end
 * exactly at rows (lanes), rewriting a few slots with the same values.
 * rows, lanes >= 16. For lanes a multiple of 4 KiB apart (NHWC -> NCHW of
 * 7x7 maps: 49 pixels of 2048 channels) each tile reads a whole line of
 * 16 lanes at once, where the AVX2 tiles came back to the same lines, which
 * share one L1 set, for each 32-byte piece (see lk_transpose_aliased_z32). */
LK_VBMI static void lk_transpose_z32(char *dst, ptrdiff_t drow, const char *src, ptrdiff_t slane,
                                     ptrdiff_t rows, ptrdiff_t lanes) {
    for (ptrdiff_t j0 = 0; j0 < lanes; j0 += 16) {
        ptrdiff_t j = j0 + 16 <= lanes ? j0 : lanes - 16;
        const void *tab[16];
        for (int l = 0; l < 16; l++) tab[l] = src + (j + l) * slane;
        for (ptrdiff_t i0 = 0; i0 < rows; i0 += 16) {
            ptrdiff_t i = i0 + 16 <= rows ? i0 : rows - 16;
            lk_ptile_z32(dst + i * drow + j * 4, drow, tab, i * 4);
        }
    }
}

/* 16 lanes ss apart by 16 rows into 16 rows of 16 bytes, ds apart: the first
 * two rounds of the tile above. */
LK_VBMI static inline void lk_tile_vbmi16_8(char *d, ptrdiff_t ds, const char *s, ptrdiff_t ss) {
    const __m512i r1 = _mm512_load_si512(lk_vbmi_rounds[0]);
    const __m512i r2 = _mm512_load_si512(lk_vbmi_rounds[1]);
    const __m512i r1h = _mm512_add_epi8(r1, _mm512_set1_epi8(8));
    const __m512i r2h = _mm512_add_epi8(r2, _mm512_set1_epi8(32));
    __m512i z[4], y[4];
    for (int q = 0; q < 4; q++) {
        const char *p = s + 4 * q * ss;
        __m256i lo = LK_LOAD_PAIR(p, p + ss);
        __m256i hi = LK_LOAD_PAIR(p + 2 * ss, p + 3 * ss);
        z[q] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    }
    /* y[2a + h]: lanes 8a..8a+7, rows 8h..8h+7. */
    for (int a = 0; a < 2; a++) {
        y[2 * a] = _mm512_permutex2var_epi8(z[2 * a], r1, z[2 * a + 1]);
        y[2 * a + 1] = _mm512_permutex2var_epi8(z[2 * a], r1h, z[2 * a + 1]);
    }
    for (int h = 0; h < 2; h++) {
        __m512i rows0123 = _mm512_permutex2var_epi8(y[h], r2, y[2 + h]);
        __m512i rows4567 = _mm512_permutex2var_epi8(y[h], r2h, y[2 + h]);
        char *o = d + 8 * h * ds;
        if (ds == 16) {
            _mm512_storeu_si512(o, rows0123);
            _mm512_storeu_si512(o + 64, rows4567);
            continue;
        }
        _mm_storeu_si128((__m128i *)o, _mm512_castsi512_si128(rows0123));
        _mm_storeu_si128((__m128i *)(o + ds), _mm512_extracti32x4_epi32(rows0123, 1));
        _mm_storeu_si128((__m128i *)(o + 2 * ds), _mm512_extracti32x4_epi32(rows0123, 2));
        _mm_storeu_si128((__m128i *)(o + 3 * ds), _mm512_extracti32x4_epi32(rows0123, 3));
        _mm_storeu_si128((__m128i *)(o + 4 * ds), _mm512_castsi512_si128(rows4567));
        _mm_storeu_si128((__m128i *)(o + 5 * ds), _mm512_extracti32x4_epi32(rows4567, 1));
        _mm_storeu_si128((__m128i *)(o + 6 * ds), _mm512_extracti32x4_epi32(rows4567, 2));
        _mm_storeu_si128((__m128i *)(o + 7 * ds), _mm512_extracti32x4_epi32(rows4567, 3));
    }
}
#endif
#endif

#ifdef LK_HAVE_SSE2
/*
 * The blocked transpose over full tiles. Cache blocking: a block of rows whose
 * destination rows fit in ~64 KiB (L2), filled one group of lanes (a cache line
 * of each row) at a time, one register tile of lanes down the whole block. Each
 * lane is then read as one sequential stream, which the prefetchers follow even
 * when lanes sit a power of two apart (the planes of an NCHW tensor share cache
 * sets). One 64-byte line of each of the n lanes is staged in a small buffer
 * before its tiles are transposed, so every source line is read once, whole,
 * even when the n lanes collide in one cache set. STEP is the rows one tile
 * call covers (n for SSE2 tiles, 2n for AVX2 double tiles).
 */
#define LK_DEFINE_TRANSPOSE_FULL(NAME, ATTR, T8, T16, T32, T64, STEPMUL)         \
    ATTR static void NAME(char *restrict dst, ptrdiff_t drow, const char *restrict src, \
                          ptrdiff_t slane, ptrdiff_t full_rows, ptrdiff_t full_lanes, \
                          int es, int n) {                                       \
        ptrdiff_t step = (STEPMUL) * n;                                          \
        ptrdiff_t block = drow > 0 ? (65536 / drow) / step * step : step;        \
        ptrdiff_t group = 64 / es;                                               \
        ptrdiff_t line_rows = 64 / es;                                           \
        char stage[16 * 64];                                                     \
        /* Destination rows far apart (a plane each, NHWC -> NCHW of many      \
         * channels) share L1 sets, so lines written 16 bytes at a time are    \
         * evicted before they are complete: build one line of each row of the \
         * block here, then copy the lines out whole. */                       \
        char ostage[128 * 64];                                                   \
        int stage_out = drow >= 1024;                                            \
        if (block < 4 * step) block = 4 * step;                                  \
        if (stage_out) block = 128;                                              \
        if (group < n) group = n;                                                \
        for (ptrdiff_t i = 0; i < full_rows; i += block) {                       \
            ptrdiff_t iend = i + block < full_rows ? i + block : full_rows;      \
            for (ptrdiff_t jg = 0; jg < full_lanes; jg += group) {               \
                ptrdiff_t jend = jg + group < full_lanes ? jg + group : full_lanes; \
                ptrdiff_t dd = stage_out ? 64 : drow;                            \
                for (ptrdiff_t j = jg; j < jend; j += n) {                       \
                    char *dbase = stage_out ? ostage - i * 64 + (j - jg) * es    \
                                            : dst + j * es;                      \
                    ptrdiff_t ii = i;                                            \
                    for (; ii + line_rows <= iend; ii += line_rows) {            \
                        for (int k = 0; k < n; k++)                              \
                            memcpy(stage + k * 64, src + (j + k) * slane + ii * es, 64); \
                        for (ptrdiff_t r = 0; r < line_rows; r += step) {        \
                            char *d = dbase + (ii + r) * dd;                     \
                            const char *s = stage + r * es;                      \
                            switch (es) {                                        \
                            case 1: T8(d, dd, s, 64); break;                     \
                            case 2: T16(d, dd, s, 64); break;                    \
                            case 4: T32(d, dd, s, 64); break;                    \
                            default: T64(d, dd, s, 64); break;                   \
                            }                                                    \
                        }                                                        \
                    }                                                            \
                    for (; ii < iend; ii += n) {                                 \
                        char *d = dbase + ii * dd;                               \
                        const char *s = src + j * slane + ii * es;               \
                        switch (es) {                                            \
                        case 1: lk_tile_8(d, dd, s, slane); break;               \
                        case 2: lk_tile_16(d, dd, s, slane); break;              \
                        case 4: lk_tile_32(d, dd, s, slane); break;              \
                        default: lk_tile_64(d, dd, s, slane); break;             \
                        }                                                        \
                    }                                                            \
                }                                                                \
                if (stage_out && (jend - jg) * es == 64) {                       \
                    for (ptrdiff_t r = i; r < iend; r++)                         \
                        memcpy(dst + r * drow + jg * es, ostage + (r - i) * 64, 64); \
                } else if (stage_out) {                                          \
                    for (ptrdiff_t r = i; r < iend; r++)                         \
                        memcpy(dst + r * drow + jg * es, ostage + (r - i) * 64,  \
                               (size_t)((jend - jg) * es));                      \
                }                                                                \
            }                                                                    \
        }                                                                        \
    }

LK_DEFINE_TRANSPOSE_FULL(lk_transpose_full_sse2, , lk_tile_8, lk_tile_16, lk_tile_32,
                         lk_tile_64, 1)
#ifdef LK_HAVE_AVX2_TILES
LK_DEFINE_TRANSPOSE_FULL(lk_transpose_full_avx2, __attribute__((target("avx2"))), lk_tile2_8,
                         lk_tile2_16, lk_tile2_32, lk_tile2_64, 2)
#endif
#endif

/*
 * Interleave of many lanes at arbitrary addresses (e.g. N x 4c lanes of HCWN4c
 * with N > 1, or 32 channel lanes of which most are padding buffers): register
 * tiles over full groups of lanes and rows, scalar copies for the edges.
 * Returns 0 when this platform has no register tiles (the caller then uses the
 * plain loops).
 */
static int lk_interleave_wide(void *restrict out, const void *const *lanes, ptrdiff_t m, int k,
                              ptrdiff_t ostride, int es) {
#ifdef LK_HAVE_SSE2
    int n = lk_simd() == 0 ? 0 : lk_tile_lanes(es);
    if (!n || k < n || m < n) return 0;
    char *o = (char *)out;
    ptrdiff_t orow = ostride * es;
#ifdef LK_HAVE_VBMI_TILES
    if (es == 1 && k >= 32 && m >= 16 && lk_vbmi()) {
        lk_interleave_wide_vbmi(o, lanes, m, k, orow);
        return 1;
    }
    if (es == 4 && k >= 16 && m >= 16 && !lk_split_avx512() && lk_vbmi()) {
        lk_interleave_wide_z32(o, lanes, m, k, orow);
        return 1;
    }
    if (es == 2 && k >= 32 && m >= 8 && lk_is_amd() && !lk_split_avx512() && lk_vbmi()) {
        lk_interleave_wide_z16(o, lanes, m, k, orow);
        return 1;
    }
#endif
#ifdef LK_HAVE_AVX2_TILES
    if (k >= 2 * n && lk_avx2()) {
        lk_interleave_wide_avx2(o, lanes, m, k, orow, es, n);
        return 1;
    }
#endif
    /* Ragged edges: the last tile of rows (and of lanes) is moved back to end
     * exactly at m (k), overlapping the previous one; slots written twice get the
     * same value, and nothing outside the box is touched. */
    for (ptrdiff_t i0 = 0; i0 < m; i0 += n) {
        ptrdiff_t i = i0 + n <= m ? i0 : m - n;
        for (int j0 = 0; j0 < k; j0 += n) {
            int j = j0 + n <= k ? j0 : k - n;
            char *d = o + i * orow + (ptrdiff_t)j * es;
            switch (es) {
            case 1: lk_ptile_8(d, orow, lanes + j, i); break;
            case 2: lk_ptile_16(d, orow, lanes + j, i * 2); break;
            case 4: lk_ptile_32(d, orow, lanes + j, i * 4); break;
            default: lk_ptile_64(d, orow, lanes + j, i * 8); break;
            }
        }
    }
    return 1;
#else
    (void)out; (void)lanes; (void)m; (void)k; (void)ostride; (void)es;
    return 0;
#endif
}

#ifdef LK_HAVE_AVX2_TILES
/* `bytes` (a multiple of 64) of a lane into a 64-byte aligned staging block. */
__attribute__((target("avx2"))) static inline void lk_stage_lane(char *restrict t,
                                                                const char *restrict s,
                                                                ptrdiff_t bytes) {
    for (ptrdiff_t b = 0; b < bytes; b += 64) {
        __m256i a0 = _mm256_loadu_si256((const __m256i *)(s + b));
        __m256i a1 = _mm256_loadu_si256((const __m256i *)(s + b + 32));
        _mm256_store_si256((__m256i *)(t + b), a0);
        _mm256_store_si256((__m256i *)(t + b + 32), a1);
    }
}

/* Asks for runs of `bytes` at s in `lanes` lanes slane apart into L2. Lanes
 * read a few lines at a time, many lanes at once, are more streams than the
 * hardware prefetchers follow: from memory (the bench suite, where the copy
 * yardstick evicts the input between calls) NCHW -> kHWC8 float16
 * 1x64x256x256 took 1080 us without this and 500 us with it, fetching two
 * blocks ahead (Zen 4; four ahead the same, into L1 1.6x slower). */
static inline void lk_prefetch_runs(const char *s, ptrdiff_t slane, int lanes, ptrdiff_t bytes) {
    for (int k = 0; k < lanes; k++)
        for (ptrdiff_t o = 0; o < bytes; o += 64) _mm_prefetch(s + k * slane + o, _MM_HINT_T1);
}

/*
 * Byte transposes of long lanes in groups of 16 or 32 (NCHW -> NCHW16c /
 * NCHW32c / kCHW32 / NHWC of 16+ channels). The lanes of a plane-major tensor
 * sit a large power of two apart, so the same offset of every lane falls in
 * one cache set: read in lockstep by a byte tile (16+ lanes, more than L1's 8
 * ways), they evict each other from L1 always and from L2 when the pages are
 * huge (measured 2-10x slower). So each lane is first copied 256 bytes at a
 * time, a sequential read, into a staging unit (256 rows of the group), and
 * the tiles transpose the unit into the destination rows. Software-pipelined:
 * while the tiles transpose one unit, the next is copied in, a lane or two per
 * tile, so that the copy's misses overlap the tiles' shuffles, and the lanes'
 * runs two units on are prefetched into L2 (more streams than the hardware
 * prefetchers follow). Returns the rows done, a multiple of 256.
 *
 * Against staging a line of each lane at a time (lk_transpose_full_avx2):
 * NCHW16c uint8 of 8x256x56x56 (16 lanes x 3136 rows) 0.8x the time with the
 * AVX2 tiles, 0.65x with the VBMI tiles; the same at 784-1568 rows (C
 * harness, Zen 4).
 */
#define LK_PIPE_BYTES 256

/* Contiguous 32-byte rows streamed out when the operation moves 12 MiB+
 * (kCHW32 / NCHW32c int8 of 8x256x56x56, 12.8 MB: 0.63x the time from
 * memory, 1.05x in a warm loop). Not for 1x64x256x256 (8 MiB: 0.86x from
 * memory, but 1.17x warm, where input and output stay in L3). */
static inline int lk_piped_streams(const char *dst, ptrdiff_t drow) {
    return (uintptr_t)dst % 16 == 0 && drow == 32 && lk_footprint_hint >= ((ptrdiff_t)12 << 20);
}

/* The tiles of the pipeline, a constant in each copy of its loop (one loop
 * holding two kinds of tile spilled registers: 1.2x the time). */
enum { LK_PIPE_AVX2, LK_PIPE_STREAM, LK_PIPE_VBMI };

/* Groups of `group` (16 or 32) lanes; full_lanes a multiple of it. */
__attribute__((target("avx2"), always_inline)) static inline ptrdiff_t lk_piped_bytes(
    char *restrict dst, ptrdiff_t drow, const char *restrict src, ptrdiff_t slane,
    ptrdiff_t full_rows, ptrdiff_t full_lanes, int group, int tile) {
    char stage[2][32 * LK_PIPE_BYTES] __attribute__((aligned(64)));
    ptrdiff_t rows = full_rows - full_rows % LK_PIPE_BYTES;
    ptrdiff_t groups = full_lanes / group, units = rows / LK_PIPE_BYTES * groups;
    int per_step = group / 16; /* lanes copied per step of 16 rows */
    if (units == 0) return 0;
    /* Chunks 1 and 2 of the first group, which the loop's own prefetches
     * (two chunks on) do not reach: 64 calls of 32 x 3136 bytes for kCHW32
     * int8 8x256x56x56, 0.9-0.95x the time (compare_builds.py, Zen 4). */
    for (ptrdiff_t c = 1; c <= 2 && (c + 1) * LK_PIPE_BYTES <= rows; c++)
        lk_prefetch_runs(src + c * LK_PIPE_BYTES, slane, group, LK_PIPE_BYTES);
    for (int k = 0; k < group; k++)
        lk_stage_lane(stage[0] + k * LK_PIPE_BYTES, src + k * slane, LK_PIPE_BYTES);
    /* Unit u: rows (u / groups) * 256, lanes (u % groups) * group; rows outer,
     * so that with more than one group a unit's destination rows are finished
     * while they are still in cache. */
    for (ptrdiff_t u = 0; u < units; u++) {
        const char *cur = stage[u & 1];
        char *next = stage[(u + 1) & 1];
        ptrdiff_t i = u / groups * LK_PIPE_BYTES, jg = u % groups * group;
        ptrdiff_t ni = (u + 1) / groups * LK_PIPE_BYTES, njg = (u + 1) % groups * group;
        int more = u + 1 < units, ahead = ni + 3 * LK_PIPE_BYTES <= rows;
        char *d = dst + i * drow + jg;
        for (int step = 0; step < 16; step++) {
            char *o = d + (ptrdiff_t)step * 16 * drow;
            const char *t = cur + step * 16;
            for (int k = step * per_step; more && k < (step + 1) * per_step; k++) {
                const char *s = src + (njg + k) * slane + ni;
                if (ahead)
                    for (ptrdiff_t b = 0; b < LK_PIPE_BYTES; b += 64)
                        _mm_prefetch(s + 2 * LK_PIPE_BYTES + b, _MM_HINT_T1);
                lk_stage_lane(next + k * LK_PIPE_BYTES, s, LK_PIPE_BYTES);
            }
            if (tile == LK_PIPE_STREAM)
                lk_tilew_8_stream(o, drow, t, LK_PIPE_BYTES);
#ifdef LK_HAVE_VBMI_TILES
            else if (tile == LK_PIPE_VBMI && group == 32)
                lk_tile_vbmi_8(o, drow, t, LK_PIPE_BYTES);
            else if (tile == LK_PIPE_VBMI)
                lk_tile_vbmi16_8(o, drow, t, LK_PIPE_BYTES);
#endif
            else if (group == 32)
                lk_tilew_8(o, drow, t, LK_PIPE_BYTES);
            else if (step % 2 == 0)
                lk_tile2_8(o, drow, t, LK_PIPE_BYTES); /* 32 rows */
        }
    }
    if (tile == LK_PIPE_STREAM) _mm_sfence();
    return rows;
}

/* Groups of 32 lanes when full_lanes allows, else 16; 32-byte rows of a large
 * operation streamed; otherwise `tile`. */
__attribute__((target("avx2"), always_inline)) static inline ptrdiff_t lk_piped_choose(
    char *restrict dst, ptrdiff_t drow, const char *restrict src, ptrdiff_t slane,
    ptrdiff_t full_rows, ptrdiff_t full_lanes, int tile) {
    if (full_lanes % 32 != 0)
        return lk_piped_bytes(dst, drow, src, slane, full_rows, full_lanes, 16, tile);
    if (lk_piped_streams(dst, drow))
        return lk_piped_bytes(dst, drow, src, slane, full_rows, full_lanes, 32, LK_PIPE_STREAM);
    return lk_piped_bytes(dst, drow, src, slane, full_rows, full_lanes, 32, tile);
}

__attribute__((target("avx2"))) static ptrdiff_t lk_transpose_piped_avx2(
    char *restrict dst, ptrdiff_t drow, const char *restrict src, ptrdiff_t slane,
    ptrdiff_t full_rows, ptrdiff_t full_lanes) {
    return lk_piped_choose(dst, drow, src, slane, full_rows, full_lanes, LK_PIPE_AVX2);
}

#ifdef LK_HAVE_VBMI_TILES
LK_VBMI static ptrdiff_t lk_transpose_piped_vbmi(char *restrict dst, ptrdiff_t drow,
                                                 const char *restrict src, ptrdiff_t slane,
                                                 ptrdiff_t full_rows, ptrdiff_t full_lanes) {
    return lk_piped_choose(dst, drow, src, slane, full_rows, full_lanes, LK_PIPE_VBMI);
}
#endif

/* Byte lanes (full_lanes a multiple of 16) through the pipeline; rows done. */
static inline ptrdiff_t lk_transpose_piped(char *restrict dst, ptrdiff_t drow,
                                           const char *restrict src, ptrdiff_t slane,
                                           ptrdiff_t full_rows, ptrdiff_t full_lanes) {
#ifdef LK_HAVE_VBMI_TILES
    if (lk_vbmi()) return lk_transpose_piped_vbmi(dst, drow, src, slane, full_rows, full_lanes);
#endif
    return lk_transpose_piped_avx2(dst, drow, src, slane, full_rows, full_lanes);
}

/*
 * Byte lanes whose starts spread over L1's sets (NCHW -> NHWC of 8x256x56x56:
 * planes 3136 bytes, 49 lines, apart), which the pipeline's staging does not
 * need: wide tiles straight from the lanes, in strips of 16 rows across all
 * the lanes, so each strip finishes its destination rows, with each group's
 * lines 256 bytes on asked into L2 every 64 rows. Against the pipeline (C
 * harness on the Xeon, 256 x 3136 x 8 images): 0.82x the time with the input
 * in L3, 0.8x from memory; 64 lanes 0.85x both ways. 32-byte destination rows
 * of a large operation keep the pipeline's streamed tiles (1.15x a copy from
 * memory against 0.76x). full_lanes a multiple of 32; returns the rows done.
 */
#define LK_DEFINE_BYTES_DIRECT(NAME, ATTR, TILE, LANES)                           \
    ATTR static ptrdiff_t NAME(char *restrict dst, ptrdiff_t drow, const char *restrict src, \
                               ptrdiff_t slane, ptrdiff_t full_rows, ptrdiff_t full_lanes) { \
        ptrdiff_t rows = full_rows - full_rows % 16;                             \
        for (ptrdiff_t i = 0; i < rows; i += 16)                                 \
            for (ptrdiff_t j = 0; j < full_lanes; j += (LANES)) {                \
                const char *s = src + j * slane + i;                             \
                if (i % 64 == 0 && i + 320 <= rows)                              \
                    for (int k = 0; k < (LANES); k++)                            \
                        _mm_prefetch(s + k * slane + 256, _MM_HINT_T1);          \
                TILE(dst + i * drow + j, drow, s, slane);                        \
            }                                                                    \
        return rows;                                                             \
    }
LK_DEFINE_BYTES_DIRECT(lk_transpose_bytes_direct_avx2, __attribute__((target("avx2"))), lk_tilew_8,
                       32)
#ifdef LK_HAVE_VBMI_TILES
LK_DEFINE_BYTES_DIRECT(lk_transpose_bytes_direct_vbmi, LK_VBMI, lk_tile_vbmi_8, 32)
/* The direct tiles for 16 lanes (NCHW16c of bytes): the first two rounds of
 * the 32-lane tile, 16 rows of 16 bytes a step, where the pipeline's staging
 * only added a pass (NCHW -> NCHW16c uint8 8x256x56x56 on Zen 4,
 * compare_builds.py, 5 rounds: 0.71x the time; hot loop 192-198 us against
 * 247-278). full_lanes a multiple of 16. */
LK_DEFINE_BYTES_DIRECT(lk_transpose_bytes16_direct_vbmi, LK_VBMI, lk_tile_vbmi16_8, 16)
#endif

/* Whether n lanes slane apart from src fall at most two to a set of a 64-set
 * L1 (lanes a large power of two apart all fall in one). */
static inline int lk_lanes_spread_n(const char *src, ptrdiff_t slane, int n) {
    unsigned char count[64] = {0};
    for (int j = 0; j < n; j++)
        if (++count[((uintptr_t)(src + j * slane) >> 6) & 63] > 2) return 0;
    return 1;
}

static inline int lk_lanes_spread(const char *src, ptrdiff_t slane) {
    return lk_lanes_spread_n(src, slane, 32);
}

/* Byte lanes (full_lanes a multiple of 16) by the direct tiles above where the
 * lanes spread over the sets, else through the pipeline; the rows done. */
static inline ptrdiff_t lk_transpose_bytes(char *restrict dst, ptrdiff_t drow,
                                           const char *restrict src, ptrdiff_t slane,
                                           ptrdiff_t full_rows, ptrdiff_t full_lanes) {
    if (full_lanes % 32 == 0 && !lk_piped_streams(dst, drow) && lk_lanes_spread(src, slane)) {
#ifdef LK_HAVE_VBMI_TILES
        if (lk_vbmi())
            return lk_transpose_bytes_direct_vbmi(dst, drow, src, slane, full_rows, full_lanes);
#endif
        return lk_transpose_bytes_direct_avx2(dst, drow, src, slane, full_rows, full_lanes);
    }
#ifdef LK_HAVE_VBMI_TILES
    if (full_lanes % 32 == 16 && lk_vbmi() && !lk_piped_streams(dst, drow) &&
        lk_lanes_spread_n(src, slane, 16))
        return lk_transpose_bytes16_direct_vbmi(dst, drow, src, slane, full_rows, full_lanes);
#endif
    return lk_transpose_piped(dst, drow, src, slane, full_rows, full_lanes);
}

/* Lanes the staged-and-streamed transposes take, in groups of 8; each group's
 * staged rows are a line apart from the next group's. */
#define LK_STAGED_MAX_LANES 256
#define LK_STAGED_MAX_GROUPS (LK_STAGED_MAX_LANES / 8)

/* A double tile of 2-byte elements (8 lanes by 16 rows) whose registers are
 * stored whole: register k, destination rows k and k + 8 of the 8 lanes, as 32
 * bytes at d + 32k. Against the double tile's 128-bit extracts and half stores:
 * the staged kernel below took 0.85x the time on 64 x 65536 float16, where its
 * tiles had been 226 us of 390 with the data in L1 (C harness, Zen 4). */
__attribute__((target("avx2"), always_inline)) static inline void lk_tile2_pairs16(
    char *d, const char *s, ptrdiff_t ss) {
    __m256i r[8], t[8];
    for (int k = 0; k < 8; k++) r[k] = _mm256_loadu_si256((const __m256i *)(s + k * ss));
    LK_UNPACK_ROUNDS(8, _mm256_unpacklo_epi16, _mm256_unpackhi_epi16)
    for (int k = 0; k < 8; k++) _mm256_store_si256((__m256i *)(d + k * 32), r[k]);
}

/* Block b (of `blocks`, `block` rows each) of every group of 8 lanes into the
 * stage at stage + g * gs, 8 * es bytes a row: 2-byte elements by the pair
 * tiles above (rows r0 + k and r0 + k + 8 as 32 bytes at (r0 + 2k) * 16),
 * 4-byte ones by wide tiles (row r at r * 32); each lane's run two blocks on
 * is prefetched. */
__attribute__((target("avx2"))) static inline void lk_stage_groups(
    char *stage, ptrdiff_t gs, const char *src, ptrdiff_t slane, ptrdiff_t b, ptrdiff_t blocks,
    ptrdiff_t block, ptrdiff_t ng, int es) {
    for (ptrdiff_t g = 0; g < ng; g++) {
        const char *s = src + g * 8 * slane + b * block * es;
        char *t = stage + g * gs;
        if (b + 2 < blocks) lk_prefetch_runs(s + 2 * block * es, slane, 8, block * es);
        if (es == 2)
            for (ptrdiff_t r = 0; r < block; r += 16) lk_tile2_pairs16(t + r * 16, s + r * 2, slane);
        else
            for (ptrdiff_t r = 0; r < block; r += 4) lk_tilew_32(t + r * 32, 32, s + r * 4, slane);
    }
}

/* Streams the low (high = 0) or high halves of a and b as 32 bytes at d. */
__attribute__((target("avx2"))) static inline void lk_stream_half(char *d, __m256i a, __m256i b,
                                                                 int high) {
    _mm256_stream_si256((__m256i *)d, high ? _mm256_permute2x128_si256(a, b, 0x31)
                                           : _mm256_permute2x128_si256(a, b, 0x20));
}

/* Streams the low halves of a and b as 32 bytes at d, their high halves at d2. */
__attribute__((target("avx2"))) static inline void lk_stream_halves(char *d, char *d2, __m256i a,
                                                                   __m256i b) {
    _mm256_stream_si256((__m256i *)d, _mm256_permute2x128_si256(a, b, 0x20));
    _mm256_stream_si256((__m256i *)d2, _mm256_permute2x128_si256(a, b, 0x31));
}

/*
 * Long lanes of 2-byte elements into contiguous destination rows of 16-256
 * lanes (see lk_staged_worth), on AMD (NCHW -> NHWC / kHWC8 float16): blocks
 * of rows (12 KiB of output) are transposed into an L1 staging buffer a group
 * of 8 lanes at a time by the pair tiles, each lane read in a run of the
 * block's rows, then streamed out 32 bytes at a time: rows r0 + k and r0 + k +
 * 8 together, a chunk of each from the halves of two groups' pairs. Against
 * the columns below, whose destination lines fill in four 16-byte pieces in L2
 * and are write-allocated first: 64 x 65536 float16 0.5x the time (C harness
 * on numpy arrays, Zen 4), 32 x 65536 0.7x; 16 lanes (2 MiB), once
 * prefetched, 0.84x (NCHW16c float16 of 1x64x256x256, compare_builds.py). A
 * 16 KiB stage measured 1.1x the time for 256 lanes (8x256x56x56, L1 holds the
 * stage and a line of every lane) and 8 KiB 1.1x for 192. numpy's outputs sit
 * 16 bytes into a line, so the 32-byte chunks then straddle pieces of
 * neighbouring groups or rows: the first piece is stored through the cache,
 * each row's first chunk takes the row before's last piece, and the last row's
 * last piece is stored at the end. Rows of 64+ bytes go out in address order
 * (rows r0 .. r0 + 7, then r0 + 8 .. r0 + 15): with rows 32 or 48 bytes into
 * a line, the two halves of a line two rows share then go out back to back,
 * where alternating rows a and a + 8 took 1.25-1.35x the time (Xeon, Emerald
 * Rapids: NCHW32c / kHWC8 / NHWC float16 of 1x64x256x256 940-960 us against
 * 700-740 us at the other offsets, now 700-740 us at every offset).
 * Returns the rows done (whole blocks); fences its streaming stores.
 * With an L1 of 48 KiB+ (Sapphire Rapids), rows of 144+ lanes take a 24 KiB
 * stage, 48+ rows a block where 12 KiB held 16-32 (C harness, NCHW -> NHWC
 * float16 of 8 x 3136 x 256 lanes: 0.85x the time with the input in L3, 0.9x
 * from memory; 192 lanes 0.9x and 0.75x; 64 and 128 lanes the same).
 */
#define LK_STAGED16_BYTES 12288
#define LK_STAGED16_WIDE_BYTES 24576
static int lk_l1d_bytes = -1;

/* The L1 data cache's size as the C library reports it, or 0. */
static inline int lk_l1d_size(void) {
    if (lk_l1d_bytes < 0) {
        long n = 0;
#ifdef _SC_LEVEL1_DCACHE_SIZE
        n = sysconf(_SC_LEVEL1_DCACHE_SIZE);
#endif
        lk_l1d_bytes = n > 0 && n < (1L << 30) ? (int)n : 0;
    }
    return lk_l1d_bytes;
}

__attribute__((target("avx2"))) static ptrdiff_t lk_transpose_staged_stream16_avx2(
    char *restrict dst, ptrdiff_t drow, const char *restrict src, ptrdiff_t slane,
    ptrdiff_t rows, ptrdiff_t lanes) {
    char stage_mem[LK_STAGED16_WIDE_BYTES + LK_STAGED_MAX_GROUPS * 64]
        __attribute__((aligned(64)));
    ptrdiff_t stage_bytes =
        drow > 256 && lk_l1d_size() >= 49152 ? LK_STAGED16_WIDE_BYTES : LK_STAGED16_BYTES;
    /* A 12 KiB stage where it sat before the 24 KiB one was added: the stage's
     * place relative to the lanes' sets matters (kHWC8 float16 1x64x256x256
     * took 1.1x the time in compare_builds.py with it 12 KiB lower). */
    char *stage = stage_mem + (LK_STAGED16_WIDE_BYTES - stage_bytes);
    /* Group g's rows r0 + k and r0 + k + 8 (r0 a multiple of 16): 32 bytes at
     * stage + g * gs + (r0 + 2k) * 16 (groups a line apart in the sets). */
    ptrdiff_t ng = lanes / 8, block = stage_bytes / drow / 16 * 16, gs = block * 16 + 64;
    ptrdiff_t blocks = rows / block;
    int shifted = ((uintptr_t)dst & 31) != 0;
    /* Shifted: the pair holding the last group of the previous tile's row 15. */
    __m256i prev = _mm256_setzero_si256();
    char *d = dst;
    for (ptrdiff_t b = 0; b < blocks; b++) {
        lk_stage_groups(stage, gs, src, slane, b, blocks, block, ng, 2);
        for (ptrdiff_t r0 = 0; r0 < block; r0 += 16, d += 16 * drow) {
            const char *t = stage + r0 * 16;
#define LK_PAIR(k, g) _mm256_load_si256((const __m256i *)(t + (g) * gs + (k) * 32))
            if (!shifted) {
                /* Rows r0 .. r0 + 7 from the low halves of each group's pair,
                 * then rows r0 + 8 .. r0 + 15 from the high halves: each run
                 * of rows in address order, so that a line two rows share
                 * (rows 32 bytes into a line) gets its halves back to back. */
                for (int h = 0; h < 2; h++)
                    for (int k = 0; k < 8; k++) {
                        char *da = d + (k + 8 * h) * drow;
                        for (ptrdiff_t g = 0; g < ng; g += 2)
                            lk_stream_half(da + g * 16, LK_PAIR(k, g), LK_PAIR(k, g + 1), h);
                    }
                continue;
            }
            /* Rows 16 bytes into a chunk: chunks pair groups 2j+1 and 2j+2;
             * each row's first chunk takes the row before's last group, so
             * the lines a row completes are written together. */
#define LK_HALF(v, h) ((h) ? _mm256_extracti128_si256(v, 1) : _mm256_castsi256_si128(v))
            if (ng == 2) {
                /* Rows of 32 bytes: rows a and a + 8 together (in address
                 * order as below, 1.2x the time on 8x256x56x56). */
                for (int k = 0; k < 8; k++) {
                    char *da = d + k * drow, *db = da + 8 * drow;
                    __m256i first = LK_PAIR(k, 0);
                    if (k) {
                        lk_stream_halves(da - 16, db - 16, LK_PAIR(k - 1, 1), first);
                        continue;
                    }
                    __m256i row7 = LK_PAIR(7, 1); /* row r0 + 7 low, r0 + 15 high */
                    if (b == 0 && r0 == 0)
                        _mm_storeu_si128((__m128i *)da, _mm256_castsi256_si128(first));
                    else
                        _mm256_stream_si256((__m256i *)(da - 16),
                                            _mm256_permute2x128_si256(prev, first, 0x21));
                    _mm256_stream_si256((__m256i *)(db - 16),
                                        _mm256_permute2x128_si256(row7, first, 0x30));
                    prev = row7;
                }
                continue;
            }
            for (int h = 0; h < 2; h++)
                for (int k = 0; k < 8; k++) {
                    char *da = d + (k + 8 * h) * drow;
                    __m256i first = LK_PAIR(k, 0);
                    /* The last 16 bytes of the row before: row r0 + k - 1, row
                     * r0 + 7 (k = 0 of rows r0 + 8 ..) or the previous tile's
                     * row 15. */
                    __m128i before = k   ? LK_HALF(LK_PAIR(k - 1, ng - 1), h)
                                     : h ? LK_HALF(LK_PAIR(7, ng - 1), 0)
                                         : LK_HALF(prev, 1);
                    if (!h && !k && b == 0 && r0 == 0)
                        _mm_storeu_si128((__m128i *)da, LK_HALF(first, 0));
                    else
                        _mm256_stream_si256((__m256i *)(da - 16),
                                            _mm256_set_m128i(LK_HALF(first, h), before));
                    for (ptrdiff_t g = 1; g + 1 < ng; g += 2)
                        lk_stream_half(da + g * 16, LK_PAIR(k, g), LK_PAIR(k, g + 1), h);
                }
            prev = LK_PAIR(7, ng - 1);
#undef LK_HALF
#undef LK_PAIR
        }
    }
    if (shifted && blocks) _mm_storeu_si128((__m128i *)(d - 16), _mm256_extracti128_si256(prev, 1));
    _mm_sfence();
    return blocks * block;
}

/* The staged-and-streamed transpose above for 4-byte elements (NCHW -> NHWC /
 * NCHW8c-32c / kCHW32 float32 of 8-64 channels): a group of 8 lanes gives each
 * staged row a 32-byte piece, by wide tiles; pieces go out in destination
 * order, and when the output is 16 bytes into a chunk, each chunk is the high
 * half of one piece and the low half of the next. Against the columns of wide
 * tiles (compare_builds.py, Zen 4, 1x64x256x256): NCHW -> NHWC 0.48x the
 * time, NCHW32c 0.70x, kCHW32 0.79x; in an L3-warm loop 0.5x. (Without the
 * prefetch, an earlier version measured no faster than the columns.) 8 and 16
 * lanes (2 MiB a block of channels: NCHW8c, NCHW16c) measured the same from
 * memory and 0.75-0.9x the time when the input is partly in L3. A 12 KiB
 * stage, as for 2-byte elements, leaves 256 lanes (1 KiB rows) no whole block
 * of 16 rows. */
#define LK_STAGED32_BYTES 16384
__attribute__((target("avx2"))) static ptrdiff_t lk_transpose_staged_stream32_avx2(
    char *restrict dst, ptrdiff_t drow, const char *restrict src, ptrdiff_t slane,
    ptrdiff_t rows, ptrdiff_t lanes) {
    char stage[LK_STAGED32_BYTES + LK_STAGED_MAX_GROUPS * 64] __attribute__((aligned(64)));
    ptrdiff_t ng = lanes / 8, block = LK_STAGED32_BYTES / drow / 16 * 16, gs = block * 32 + 64;
    ptrdiff_t blocks = rows / block;
    int shifted = ((uintptr_t)dst & 31) != 0;
    __m256i prev = _mm256_setzero_si256();
    char *d = dst;
    for (ptrdiff_t b = 0; b < blocks; b++) {
        lk_stage_groups(stage, gs, src, slane, b, blocks, block, ng, 4);
        for (ptrdiff_t r = 0; r < block; r++, d += drow)
            for (ptrdiff_t g = 0; g < ng; g++) {
                __m256i piece = _mm256_load_si256((const __m256i *)(stage + g * gs + r * 32));
                if (!shifted)
                    _mm256_stream_si256((__m256i *)(d + g * 32), piece);
                else if (b == 0 && r == 0 && g == 0)
                    _mm_storeu_si128((__m128i *)d, _mm256_castsi256_si128(piece));
                else
                    _mm256_stream_si256((__m256i *)(d + g * 32 - 16),
                                        _mm256_permute2x128_si256(prev, piece, 0x21));
                prev = piece;
            }
    }
    if (shifted && blocks) _mm_storeu_si128((__m128i *)(d - 16), _mm256_extracti128_si256(prev, 1));
    _mm_sfence();
    return blocks * block;
}

/* Rows [i, iend) of lanes [j0, j1) by register tiles, a column of tiles at a
 * time: wide tiles for 4- and 8-byte elements, then double tiles for the
 * lanes left (all lanes of 2-byte elements). Rows a multiple of 2n. */
__attribute__((target("avx2"))) static inline void lk_tile_block(
    char *restrict dst, ptrdiff_t drow, const char *restrict src, ptrdiff_t slane, ptrdiff_t i,
    ptrdiff_t iend, ptrdiff_t j0, ptrdiff_t j1, int es, int n, int prefetch) {
    ptrdiff_t wide = 32 / es, wide_rows = 16 / es, step = 2 * (ptrdiff_t)n;
    ptrdiff_t jw = j0 + (es >= 4 ? (j1 - j0) / wide * wide : 0);
    for (ptrdiff_t j = j0; j < jw; j += wide) {
        const char *next = prefetch && j + wide < jw ? src + (j + wide) * slane : NULL;
        for (ptrdiff_t ii = i; ii < iend; ii += wide_rows) {
            if (next && (ii - i) * es % 64 == 0) lk_prefetch_runs(next + ii * es, slane, wide, 64);
            lk_tilew(dst + ii * drow + j * es, drow, src + j * slane + ii * es, slane, es);
        }
    }
    for (ptrdiff_t j = jw; j < j1; j += n) {
        const char *next = prefetch && j + n < j1 ? src + (j + n) * slane : NULL;
        for (ptrdiff_t ii = i; ii < iend; ii += step) {
            if (next && (ii - i) * es % 64 == 0) lk_prefetch_runs(next + ii * es, slane, n, 64);
            lk_tile2(dst + ii * drow + j * es, drow, src + j * slane + ii * es, slane, es);
        }
    }
}

/* Whether the staged-and-streamed transposes take rows of these lanes: whole
 * groups of 8 (16 for 2-byte elements, whose rows go out two groups a
 * chunk), up to LK_STAGED_MAX_LANES, rows contiguous. */
static inline int lk_staged_fits(ptrdiff_t drow, ptrdiff_t lanes, int es) {
    return (es == 2 || es == 4) && drow == lanes * es && lanes % (es == 2 ? 16 : 8) == 0 &&
           lanes <= LK_STAGED_MAX_LANES;
}

/* Whether output_bytes of those rows are worth staging and streaming (with
 * the column policy above): 2 MiB+, or 64 KiB+ within a large operation (NCHW32c /
 * kCHW32 of 8x256x56x56, 200-400 KB a block of 32 channels: float16
 * 0.65-0.7x the time, float32 0.6x; NCHW16c float16, 100 KB a block, 0.82x;
 * compare_builds.py on Zen 4). On Intel also 64 KiB+ of an operation that
 * outgrows L2 (2 MiB+ moved): the tiles read 16-64 lanes from L3 at once and
 * wrote through the cache at 15-20 GB/s (NCHW -> NHWC float32 1x32x112x112
 * 0.53x the time, float16 1x64x112x112 0.42x, NCHW16c float16 of it 0.6x;
 * at 1.6 MiB moved no gain; alternating in one process). */
static inline int lk_staged_worth(ptrdiff_t output_bytes) {
    return lk_long_lanes_by_columns() &&
           (output_bytes >= ((ptrdiff_t)2 << 20) ||
            (output_bytes >= ((ptrdiff_t)64 << 10) &&
             (lk_large_operation() ||
              (lk_footprint_hint >= ((ptrdiff_t)2 << 20) && !lk_is_amd()))));
}

static inline void lk_stream_copy(char *restrict dst, const char *restrict src, size_t n);

#ifdef LK_HAVE_VBMI_TILES
/* lk_transpose_staged_stream16_avx2 on Zen 5: blocks of 16 rows (8 KiB of
 * output or less) built in L1 by the 32-lane x 8-row 512-bit tiles
 * (lk_ptile_z16), each destination row 64 bytes a store, then streamed out as
 * one run (lk_stream_copy). Rows of 32-256 lanes, contiguous (drow = lanes
 * x 2), the lanes not a multiple of 4 KiB apart (planes of 256x256 are: all 32
 * lanes of a tile in one L1 set, each line gone before its second use, 1.7-3x
 * the time). compare_builds.py, 8x256x56x56: NCHW32c / kCHW32 float16 (32
 * lanes) 0.84-0.85x the time, NHWC / kHWC8 (256 lanes) 0.97-1.08x, though a C
 * loop of 256 lanes x 3136 rows with the source evicted took 0.55x. Returns
 * the rows done (whole blocks); fences its streaming stores. */
LK_VBMI static ptrdiff_t lk_transpose_staged_z16(char *restrict dst, ptrdiff_t drow,
                                                 const char *restrict src, ptrdiff_t slane,
                                                 ptrdiff_t rows, ptrdiff_t lanes) {
    char stage[8192] __attribute__((aligned(64)));
    const void *tab[LK_STAGED_MAX_LANES];
    const ptrdiff_t block = 16;
    if (lanes < 32 || lanes > LK_STAGED_MAX_LANES || drow != lanes * 2 ||
        block * drow > (ptrdiff_t)sizeof stage)
        return 0;
    for (ptrdiff_t l = 0; l < lanes; l++) tab[l] = src + l * slane;
    ptrdiff_t i0 = 0;
    for (; i0 + block <= rows; i0 += block) {
        for (ptrdiff_t r = 0; r < block; r += 8)
            for (ptrdiff_t j0 = 0; j0 < lanes; j0 += 32) {
                ptrdiff_t j = j0 + 32 <= lanes ? j0 : lanes - 32;
                lk_ptile_z16(stage + r * drow + j * 2, drow, tab + j, (i0 + r) * 2);
            }
        lk_stream_copy(dst + i0 * drow, stage, (size_t)(block * drow));
    }
    _mm_sfence();
    return i0;
}
#endif

/* Double tiles loaded straight from the lanes (2-, 4- and 8-byte elements; and
 * the rows after the last chunk of bytes), in destination order within groups
 * of up to 64 lanes: a strip of rows across the whole group, then the next
 * strip, so every destination row of a strip is finished at once and the
 * group's source lines are read front to back together. A strip takes 32
 * bytes of each lane (2-byte elements, double tiles) or a whole 64-byte line
 * (4- and 8-byte elements, wide tiles). With more than one group, the rows go
 * in blocks whose destination stays within ~256 KiB. Measured L3-hot on the
 * Xeon (2 MiB L2) against the earlier order (blocks of rows filled one tile
 * column at a time) and, below 4096 rows, the staged lk_transpose_full_avx2:
 * 64 x 65536 float16 0.70x the time, float32 0.85x; 256 x 3136 (NCHW -> NHWC
 * of 8x256x56x56) float16 0.70x, 8-byte 0.75x; 512 x 196 float16 0.6x.
 * full_rows is a multiple of 2n. */
__attribute__((target("avx2"))) static void lk_transpose_direct_avx2(
    char *restrict dst, ptrdiff_t drow, const char *restrict src, ptrdiff_t slane,
    ptrdiff_t full_rows, ptrdiff_t full_lanes, int es, int n) {
    ptrdiff_t step = 2 * (ptrdiff_t)n;
    ptrdiff_t group = full_lanes < 64 ? full_lanes : 64;
    ptrdiff_t strip = es >= 4 ? 64 / es : step;
    group = group / n * n;
    if (group < n) return;
    if ((uintptr_t)dst % 16 == 0 && lk_staged_fits(drow, full_lanes, es) &&
        lk_staged_worth(full_rows * drow)) {
        ptrdiff_t done =
#ifdef LK_HAVE_VBMI_TILES
            es == 2 && full_lanes >= 32 && slane % 4096 != 0 && lk_is_amd() &&
                    !lk_split_avx512() && lk_vbmi()
                ? lk_transpose_staged_z16(dst, drow, src, slane, full_rows, full_lanes) :
#endif
            es == 2
                ? lk_transpose_staged_stream16_avx2(dst, drow, src, slane, full_rows, full_lanes)
                : lk_transpose_staged_stream32_avx2(dst, drow, src, slane, full_rows, full_lanes);
        dst += done * drow;
        src += done * es;
        full_rows -= done;
    }
    if (es >= 4 && (uintptr_t)dst % 32 == 16 && drow % 32 == 0 && full_lanes >= 16 / es + n) {
        /* The wide tiles store 32 bytes a row: with the destination 16 bytes
         * off a 32-byte boundary (numpy maps large arrays 16 bytes into a page)
         * every other one straddles two lines. The first 16 bytes of lanes go
         * by double tiles (16-byte stores), the rest then starts on a 32-byte
         * boundary (NCHW32c / kCHW32 float32 of 1x2048x7x7: 27-37 us against
         * 18-23 us at other offsets). */
        ptrdiff_t head = 16 / es;
        lk_tile_block(dst, drow, src, slane, 0, full_rows, 0, head, es, n, 0);
        dst += 16;
        src += head * slane;
        full_lanes -= head;
        if (group > full_lanes) group = full_lanes / n * n;
    }
    if (full_rows >= 4096 && lk_long_lanes_by_columns()) {
        /* Zen: a strip reads a line or half a line of every lane in the group,
         * 64 lines in flight where L1 and L2 have 8 ways (numpy's large arrays
         * sit in huge pages, so lanes a power of two apart share sets, and 16
         * bytes into a line, so half the loads split). Columns of double tiles
         * read 8 lanes at a time in long runs; the destination block, ~256 KiB,
         * stays in L2 while its columns fill. 4- and 8-byte elements take
         * wide tiles. NCHW -> kHWC8 float16 1x64x256x256 on Zen 4: 1420 us
         * against 7045 us in strips. */
        ptrdiff_t rows_per_block = 262144 / (group * es) / step * step;
        if (rows_per_block < step) rows_per_block = step;
        for (ptrdiff_t i = 0; i < full_rows; i += rows_per_block) {
            ptrdiff_t iend = i + rows_per_block < full_rows ? i + rows_per_block : full_rows;
            for (ptrdiff_t jg = 0; jg < full_lanes; jg += group)
                lk_tile_block(dst, drow, src, slane, i, iend, jg,
                              jg + group < full_lanes ? jg + group : full_lanes, es, n, 1);
        }
        return;
    }
    /* Destination rows a multiple of 4 KiB apart share one L1 set: a strip of
     * 2n rows, each line written in pieces, is evicted before it is complete.
     * Strips of n rows by 16-byte tiles keep within the set's ways (1x2048x7x7
     * float32 NCHW -> NHWC 0.4x the time). */
    int aliased = drow % 4096 == 0;
    ptrdiff_t block = full_lanes > group ? 262144 / drow / strip * strip : full_rows;
    if (block < strip) block = strip;
    for (ptrdiff_t i0 = 0; i0 < full_rows; i0 += block) {
        ptrdiff_t i1 = i0 + block < full_rows ? i0 + block : full_rows;
        for (ptrdiff_t jg = 0; jg < full_lanes; jg += group) {
            ptrdiff_t jend = jg + group < full_lanes ? jg + group : full_lanes;
            if (aliased) {
                for (ptrdiff_t i = i0; i < i1; i += n)
                    for (ptrdiff_t j = jg; j < jend; j += n) {
                        char *d = dst + i * drow + j * es;
                        const char *s = src + j * slane + i * es;
                        switch (es) {
                        case 2: lk_tile_16(d, drow, s, slane); break;
                        case 4: lk_tile_32(d, drow, s, slane); break;
                        default: lk_tile_64(d, drow, s, slane); break;
                        }
                    }
                continue;
            }
            for (ptrdiff_t i = i0; i < i1; i += strip)
                lk_tile_block(dst, drow, src, slane, i, i + strip <= i1 ? i + strip : i1, jg,
                              jend, es, n, 0);
        }
    }
}
#endif

#ifdef LK_HAVE_AVX2_TILES
/*
 * Few rows far apart, many short lanes (NHWC -> NCHW of 32-256 channels: a row
 * per channel plane, a lane per pixel). Written tile by tile, the destination
 * takes 16 bytes of each of up to 64 planes in turn, and the planes' lines
 * (a large power of two apart) evict each other before they are complete. So
 * 256 bytes of every row of a block of up to 64 rows are built in a 16 KiB
 * staging block from contiguous source lanes, then each row's 256 bytes go out
 * as one run (NHWC -> NCHW uint8 1x64x256x256: ~640 -> ~440 us in a C harness).
 * Needs at least one tile of rows (16 / es); returns the lanes done.
 */
#define LK_ROWRUN_BYTES 256

#ifdef LK_HAVE_VBMI_TILES
/* One block of lk_transpose_rowruns_avx2 by 512-bit tiles that write whole
 * 64-byte rows: 2-byte elements 32 lanes by 8 rows (lk_ptile_z16), 4-byte 16
 * by 16 (lk_ptile_z32, a whole line of each lane a tile); nr >= 16 rows of
 * the run's lanes (src at the block's first lane and row) into the stage.
 * Zen 5, NHWC -> NCHW of 256 channels x 3136 pixels
 * (bench/c/transpose_regimes.c 2|4 3136 256): float16 78 -> 60 us hot, the
 * same from memory; float32 131 -> 96 us hot, 397 -> 346 us from memory;
 * compare_builds.py 8x256x56x56 float16 0.89x, float32 0.86x the time. */
LK_VBMI __attribute__((always_inline)) static inline void lk_rowrun_block_z_k(
    char *stage, const char *src, ptrdiff_t slane, ptrdiff_t nr, const int es) {
    const void *tab[32];
    const ptrdiff_t lanes = 64 / es, tile_rows = es == 2 ? 8 : 16;
    for (ptrdiff_t q = 0; q < LK_ROWRUN_BYTES / es; q += lanes) {
        for (ptrdiff_t l = 0; l < lanes; l++) tab[l] = src + (q + l) * slane;
        for (ptrdiff_t r0 = 0; r0 < nr; r0 += tile_rows) {
            ptrdiff_t r = r0 + tile_rows <= nr ? r0 : nr - tile_rows;
            char *d = stage + r * LK_ROWRUN_BYTES + q * es;
            if (es == 2)
                lk_ptile_z16(d, LK_ROWRUN_BYTES, tab, r * 2);
            else
                lk_ptile_z32(d, LK_ROWRUN_BYTES, tab, r * 4);
        }
    }
}

LK_VBMI static void lk_rowrun_block_z(char *stage, const char *src, ptrdiff_t slane,
                                      ptrdiff_t nr, int es) {
    if (es == 2)
        lk_rowrun_block_z_k(stage, src, slane, nr, 2);
    else
        lk_rowrun_block_z_k(stage, src, slane, nr, 4);
}
#endif

__attribute__((target("avx2"))) static ptrdiff_t lk_transpose_rowruns_avx2(
    char *restrict dst, ptrdiff_t drow, const char *restrict src, ptrdiff_t slane,
    ptrdiff_t rows, ptrdiff_t lanes, int es) {
    char stage[64 * LK_ROWRUN_BYTES] __attribute__((aligned(64)));
    ptrdiff_t wide = 32 / es, wide_rows = 16 / es;
    ptrdiff_t run = LK_ROWRUN_BYTES / es, done = lanes - lanes % run;
    /* Runs into 4 MiB+ of destination rows go out with streaming stores:
     * each run is whole lines, and write-allocating them fetches a line of up
     * to 64 rows in turn, which sit in one L2 set when the rows are 64-256 KiB
     * apart (NHWC -> NCHW of 64 channels of 256x256 on Zen 4,
     * compare_builds.py: uint8 0.67x the time, float16 0.52x, float32 0.9x).
     * Also from 512 KiB a call when the whole operation moves 8 MiB+ (a
     * batch: NHWC -> NCHW 8x256x56x56, an image 1.6 MB of float16: 0.63x the
     * time, float32 0.65x; 800 KB of uint8: 0.55x, and 0.9x in a warm loop).
     * Not for smaller operations, whose output is better left in cache for
     * its reader (2x256x56x56 float16 measured 1.05x). */
    int stream = lk_stream_output(rows * drow) && drow % 64 == 0 && (uintptr_t)dst % 64 == 0;
    /* Rows that do not fill the last block or tile take a block or tile that
     * ends at the last row, overlapping rows already done (NCHW -> NHWC of
     * 1x2048x7x7 and 1x2048x14x14, 49 and 196 rows, which the other kernels
     * took 1.5-2.2x as long over). */
    for (ptrdiff_t j0 = 0; j0 < done; j0 += run)
        for (ptrdiff_t b0 = 0; b0 < rows; b0 += 64) {
            ptrdiff_t i0 = b0 + 64 <= rows || rows < 64 ? b0 : rows - 64;
            ptrdiff_t nr = rows - i0 < 64 ? rows - i0 : 64;
#define LK_ROWRUN_TILE_ROW(r) ((r) + wide_rows <= nr ? (r) : nr - wide_rows)
#ifdef LK_HAVE_VBMI_TILES
            /* (Blocks of more than 64 rows are all 64 rows: the last one
             * overlaps the one before.) */
            if ((es == 2 || es == 4) && rows > 64 && lk_is_amd() && !lk_split_avx512() &&
                lk_vbmi()) {
                lk_rowrun_block_z(stage, src + j0 * slane + i0 * es, slane, nr, es);
            } else
#endif
            if (rows > 64 && lk_is_amd()) {
                /* Pixels of more than one block of rows (NHWC -> NCHW of 256
                 * channels) on AMD: rows outer, so that the block's misses are
                 * in flight together (the order below measured 10-15% slower
                 * on Zen 3). On Xeon the order below takes 0.70-0.76x the
                 * time (8x256x56x56, all three dtypes, hot loop): the block's
                 * 256 source lines, 256 bytes apart, fall in a quarter of
                 * L1's sets, so rows outer read each line from L2 four times.
                 * Wide tiles: uint8 8x256x56x56 0.76x the time of double
                 * tiles, float16 and float32 0.92-0.96x. */
                for (ptrdiff_t r0 = 0; r0 < nr; r0 += wide_rows) {
                    ptrdiff_t r = LK_ROWRUN_TILE_ROW(r0);
                    for (ptrdiff_t q = 0; q < run; q += wide)
                        lk_tilew(stage + r * LK_ROWRUN_BYTES + q * es, LK_ROWRUN_BYTES,
                                 src + (j0 + q) * slane + (i0 + r) * es, slane, es);
                }
            } else {
                /* Wide tiles a group of lanes at a time, which uses each
                 * source line whole while it is in L1, with the next group's
                 * lines prefetched (NHWC -> NCHW of 64 channels, float16 and
                 * float32: 1.15-1.4x). */
                for (ptrdiff_t q = 0; q < run; q += wide) {
                    if (q + wide < run)
                        for (ptrdiff_t k = 0; k < wide; k++)
                            for (ptrdiff_t b = 0; b < nr * es; b += 64)
                                _mm_prefetch(src + (j0 + q + wide + k) * slane + i0 * es + b,
                                             _MM_HINT_T0);
                    for (ptrdiff_t r0 = 0; r0 < nr; r0 += wide_rows) {
                        ptrdiff_t r = LK_ROWRUN_TILE_ROW(r0);
                        lk_tilew(stage + r * LK_ROWRUN_BYTES + q * es, LK_ROWRUN_BYTES,
                                 src + (j0 + q) * slane + (i0 + r) * es, slane, es);
                    }
                }
            }
#undef LK_ROWRUN_TILE_ROW
            for (ptrdiff_t r = 0; r < nr; r++) {
                char *d = dst + (i0 + r) * drow + j0 * es;
                const char *t = stage + r * LK_ROWRUN_BYTES;
                if (stream)
                    for (int b = 0; b < LK_ROWRUN_BYTES; b += 32)
                        _mm256_stream_si256((__m256i *)(d + b),
                                            _mm256_load_si256((const __m256i *)(t + b)));
                else
                    for (int b = 0; b < LK_ROWRUN_BYTES; b += 32)
                        _mm256_storeu_si256((__m256i *)(d + b),
                                            _mm256_load_si256((const __m256i *)(t + b)));
            }
        }
    if (stream) _mm_sfence();
    return done;
}
#endif


#ifdef LK_HAVE_AVX2_TILES
/*
 * Three lanes <-> pixels of three channels (RGB planes <-> RGB pixels) for 1-,
 * 2- and 4-byte elements, by byte shuffles: 16 bytes of each lane make 48 bytes
 * of pixels. Each 16-byte granule of the pixels is the OR of one shuffle of each
 * lane (interleave), and each lane's 16 bytes the OR of one shuffle of each
 * granule (de-interleave); LK_Z (0x80) zeroes a byte. The compiler's versions of
 * these loops ran at 0.4-0.5x memcpy. Tables: granule g, lane j, byte t of the
 * pixels is element e = (16g + t) / es, which is row e / 3 of lane e % 3.
 */
#define LK_Z 0x80
/* [es 1, 2, 4][pixel granule g][lane j]: lane byte for each pixel byte. */
static const uint8_t lk_il3_mask[3][3][3][16] = {
    { /* 1-byte elements */
        {
            {0,LK_Z,LK_Z,1,LK_Z,LK_Z,2,LK_Z,LK_Z,3,LK_Z,LK_Z,4,LK_Z,LK_Z,5},
            {LK_Z,0,LK_Z,LK_Z,1,LK_Z,LK_Z,2,LK_Z,LK_Z,3,LK_Z,LK_Z,4,LK_Z,LK_Z},
            {LK_Z,LK_Z,0,LK_Z,LK_Z,1,LK_Z,LK_Z,2,LK_Z,LK_Z,3,LK_Z,LK_Z,4,LK_Z},
        },
        {
            {LK_Z,LK_Z,6,LK_Z,LK_Z,7,LK_Z,LK_Z,8,LK_Z,LK_Z,9,LK_Z,LK_Z,10,LK_Z},
            {5,LK_Z,LK_Z,6,LK_Z,LK_Z,7,LK_Z,LK_Z,8,LK_Z,LK_Z,9,LK_Z,LK_Z,10},
            {LK_Z,5,LK_Z,LK_Z,6,LK_Z,LK_Z,7,LK_Z,LK_Z,8,LK_Z,LK_Z,9,LK_Z,LK_Z},
        },
        {
            {LK_Z,11,LK_Z,LK_Z,12,LK_Z,LK_Z,13,LK_Z,LK_Z,14,LK_Z,LK_Z,15,LK_Z,LK_Z},
            {LK_Z,LK_Z,11,LK_Z,LK_Z,12,LK_Z,LK_Z,13,LK_Z,LK_Z,14,LK_Z,LK_Z,15,LK_Z},
            {10,LK_Z,LK_Z,11,LK_Z,LK_Z,12,LK_Z,LK_Z,13,LK_Z,LK_Z,14,LK_Z,LK_Z,15},
        },
    },
    { /* 2-byte elements */
        {
            {0,1,LK_Z,LK_Z,LK_Z,LK_Z,2,3,LK_Z,LK_Z,LK_Z,LK_Z,4,5,LK_Z,LK_Z},
            {LK_Z,LK_Z,0,1,LK_Z,LK_Z,LK_Z,LK_Z,2,3,LK_Z,LK_Z,LK_Z,LK_Z,4,5},
            {LK_Z,LK_Z,LK_Z,LK_Z,0,1,LK_Z,LK_Z,LK_Z,LK_Z,2,3,LK_Z,LK_Z,LK_Z,LK_Z},
        },
        {
            {LK_Z,LK_Z,6,7,LK_Z,LK_Z,LK_Z,LK_Z,8,9,LK_Z,LK_Z,LK_Z,LK_Z,10,11},
            {LK_Z,LK_Z,LK_Z,LK_Z,6,7,LK_Z,LK_Z,LK_Z,LK_Z,8,9,LK_Z,LK_Z,LK_Z,LK_Z},
            {4,5,LK_Z,LK_Z,LK_Z,LK_Z,6,7,LK_Z,LK_Z,LK_Z,LK_Z,8,9,LK_Z,LK_Z},
        },
        {
            {LK_Z,LK_Z,LK_Z,LK_Z,12,13,LK_Z,LK_Z,LK_Z,LK_Z,14,15,LK_Z,LK_Z,LK_Z,LK_Z},
            {10,11,LK_Z,LK_Z,LK_Z,LK_Z,12,13,LK_Z,LK_Z,LK_Z,LK_Z,14,15,LK_Z,LK_Z},
            {LK_Z,LK_Z,10,11,LK_Z,LK_Z,LK_Z,LK_Z,12,13,LK_Z,LK_Z,LK_Z,LK_Z,14,15},
        },
    },
    { /* 4-byte elements */
        {
            {0,1,2,3,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,4,5,6,7},
            {LK_Z,LK_Z,LK_Z,LK_Z,0,1,2,3,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z},
            {LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,0,1,2,3,LK_Z,LK_Z,LK_Z,LK_Z},
        },
        {
            {LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,8,9,10,11,LK_Z,LK_Z,LK_Z,LK_Z},
            {4,5,6,7,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,8,9,10,11},
            {LK_Z,LK_Z,LK_Z,LK_Z,4,5,6,7,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z},
        },
        {
            {LK_Z,LK_Z,LK_Z,LK_Z,12,13,14,15,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z},
            {LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,12,13,14,15,LK_Z,LK_Z,LK_Z,LK_Z},
            {8,9,10,11,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,12,13,14,15},
        },
    },
};
/* [es 1, 2, 4][pixel granule g][lane j]: pixel byte for each lane byte. */
static const uint8_t lk_di3_mask[3][3][3][16] = {
    { /* 1-byte elements */
        {
            {0,3,6,9,12,15,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z},
            {1,4,7,10,13,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z},
            {2,5,8,11,14,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z},
        },
        {
            {LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,2,5,8,11,14,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z},
            {LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,0,3,6,9,12,15,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z},
            {LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,1,4,7,10,13,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z},
        },
        {
            {LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,1,4,7,10,13},
            {LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,2,5,8,11,14},
            {LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,0,3,6,9,12,15},
        },
    },
    { /* 2-byte elements */
        {
            {0,1,6,7,12,13,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z},
            {2,3,8,9,14,15,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z},
            {4,5,10,11,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z},
        },
        {
            {LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,2,3,8,9,14,15,LK_Z,LK_Z,LK_Z,LK_Z},
            {LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,4,5,10,11,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z},
            {LK_Z,LK_Z,LK_Z,LK_Z,0,1,6,7,12,13,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z},
        },
        {
            {LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,4,5,10,11},
            {LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,0,1,6,7,12,13},
            {LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,2,3,8,9,14,15},
        },
    },
    { /* 4-byte elements */
        {
            {0,1,2,3,12,13,14,15,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z},
            {4,5,6,7,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z},
            {8,9,10,11,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z},
        },
        {
            {LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,8,9,10,11,LK_Z,LK_Z,LK_Z,LK_Z},
            {LK_Z,LK_Z,LK_Z,LK_Z,0,1,2,3,12,13,14,15,LK_Z,LK_Z,LK_Z,LK_Z},
            {LK_Z,LK_Z,LK_Z,LK_Z,4,5,6,7,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z},
        },
        {
            {LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,4,5,6,7},
            {LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,8,9,10,11},
            {LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,LK_Z,0,1,2,3,12,13,14,15},
        },
    },
};
#undef LK_Z

static inline int lk_es_index(int es) { return es == 1 ? 0 : es == 2 ? 1 : 2; }

/* A register from two 16-byte pieces (low half, high half). */
__attribute__((target("avx2"))) static inline __m256i lk_load_halves(const uint8_t *lo, const uint8_t *hi) {
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)lo)),
                                   _mm_loadu_si128((const __m128i *)hi), 1);
}

/* 4-byte elements, 8 rows a step: lane j's element of row i goes to position
 * 3i + j of the three output vectors, so one dword permute per lane puts each
 * element at its position within its vector and two blends per vector
 * gather them: 3 lane-crossing uops per 96 bytes where the byte shuffles
 * take 12 (C harness, Xeon, 3 lanes of 50176: 13.4 -> 11.3 us aligned,
 * 15.5 -> 13.9 us 16 bytes off). */
__attribute__((target("avx2"))) static ptrdiff_t lk_interleave3_f32_avx2(char *restrict out,
                                                                        const void *const *lanes,
                                                                        ptrdiff_t m) {
    ptrdiff_t done = m - m % 8;
    const float *a = (const float *)lanes[0], *b = (const float *)lanes[1];
    const float *c = (const float *)lanes[2];
    float *o = (float *)out;
    const __m256i spread_a = _mm256_setr_epi32(0, 3, 6, 1, 4, 7, 2, 5);
    const __m256i spread_b = _mm256_setr_epi32(5, 0, 3, 6, 1, 4, 7, 2);
    const __m256i spread_c = _mm256_setr_epi32(2, 5, 0, 3, 6, 1, 4, 7);
    for (ptrdiff_t i = 0; i < done; i += 8, o += 24) {
        __m256 ta = _mm256_permutevar8x32_ps(_mm256_loadu_ps(a + i), spread_a);
        __m256 tb = _mm256_permutevar8x32_ps(_mm256_loadu_ps(b + i), spread_b);
        __m256 tc = _mm256_permutevar8x32_ps(_mm256_loadu_ps(c + i), spread_c);
        _mm256_storeu_ps(o, _mm256_blend_ps(_mm256_blend_ps(ta, tb, 0x92), tc, 0x24));
        _mm256_storeu_ps(o + 8, _mm256_blend_ps(_mm256_blend_ps(ta, tb, 0x24), tc, 0x49));
        _mm256_storeu_ps(o + 16, _mm256_blend_ps(_mm256_blend_ps(ta, tb, 0x49), tc, 0x92));
    }
    return done;
}

/* Rows [0, done) of a 3-lane interleave (out: 3 elements per row); returns done. */
__attribute__((target("avx2"))) static ptrdiff_t lk_interleave3_avx2(char *restrict out,
                                                                    const void *const *lanes,
                                                                    ptrdiff_t m, int es) {
    if (es == 4) return lk_interleave3_f32_avx2(out, lanes, m);
    const uint8_t(*t)[3][16] = lk_il3_mask[lk_es_index(es)];
    ptrdiff_t step = 32 / es, done = m - m % step;
    /* Output vector q holds granules 2q and 2q + 1: from the lanes' low halves
     * (q = 0), one of each (q = 1), the high halves (q = 2). */
    __m256i k0[3], k1[3], k2[3];
    for (int j = 0; j < 3; j++) {
        k0[j] = lk_load_halves(t[0][j], t[1][j]);
        k1[j] = lk_load_halves(t[2][j], t[0][j]);
        k2[j] = lk_load_halves(t[1][j], t[2][j]);
    }
    const char *a = (const char *)lanes[0], *b = (const char *)lanes[1], *c = (const char *)lanes[2];
    for (ptrdiff_t i = 0; i < done * es; i += 32, out += 96) {
        __m256i al = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(a + i)));
        __m256i bl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(b + i)));
        __m256i cl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(c + i)));
        __m256i ah = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(a + i + 16)));
        __m256i bh = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(b + i + 16)));
        __m256i ch = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(c + i + 16)));
        __m256i aa = _mm256_loadu_si256((const __m256i *)(a + i));
        __m256i bb = _mm256_loadu_si256((const __m256i *)(b + i));
        __m256i cc = _mm256_loadu_si256((const __m256i *)(c + i));
        __m256i o0 = _mm256_or_si256(_mm256_or_si256(_mm256_shuffle_epi8(al, k0[0]),
                                                     _mm256_shuffle_epi8(bl, k0[1])),
                                     _mm256_shuffle_epi8(cl, k0[2]));
        __m256i o1 = _mm256_or_si256(_mm256_or_si256(_mm256_shuffle_epi8(aa, k1[0]),
                                                     _mm256_shuffle_epi8(bb, k1[1])),
                                     _mm256_shuffle_epi8(cc, k1[2]));
        __m256i o2 = _mm256_or_si256(_mm256_or_si256(_mm256_shuffle_epi8(ah, k2[0]),
                                                     _mm256_shuffle_epi8(bh, k2[1])),
                                     _mm256_shuffle_epi8(ch, k2[2]));
        _mm256_storeu_si256((__m256i *)out, o0);
        _mm256_storeu_si256((__m256i *)(out + 32), o1);
        _mm256_storeu_si256((__m256i *)(out + 64), o2);
    }
    return done;
}

/* Rows [0, done) of a 3-lane de-interleave (in: 3 elements per row); returns done. */
__attribute__((target("avx2"))) static ptrdiff_t lk_deinterleave3_avx2(char *restrict out,
                                                                      ptrdiff_t orow,
                                                                      const char *restrict in,
                                                                      ptrdiff_t m, int es) {
    const uint8_t(*t)[3][16] = lk_di3_mask[lk_es_index(es)];
    ptrdiff_t step = 32 / es, done = m - m % step;
    char *a = out, *b = out + orow * es, *c = out + 2 * orow * es;
    __m256i k[3][3];
    for (int g = 0; g < 3; g++)
        for (int j = 0; j < 3; j++) k[g][j] = lk_load_halves(t[g][j], t[g][j]);
    for (ptrdiff_t i = 0; i < done * es; i += 32, in += 96) {
        /* Granules g (low half) and g + 3 (high half): rows of the lanes' two halves. */
        __m256i g0 = lk_load_halves((const uint8_t *)in, (const uint8_t *)in + 48);
        __m256i g1 = lk_load_halves((const uint8_t *)in + 16, (const uint8_t *)in + 64);
        __m256i g2 = lk_load_halves((const uint8_t *)in + 32, (const uint8_t *)in + 80);
        for (int j = 0; j < 3; j++) {
            __m256i v = _mm256_or_si256(_mm256_or_si256(_mm256_shuffle_epi8(g0, k[0][j]),
                                                        _mm256_shuffle_epi8(g1, k[1][j])),
                                        _mm256_shuffle_epi8(g2, k[2][j]));
            _mm256_storeu_si256((__m256i *)((j == 0 ? a : j == 1 ? b : c) + i), v);
        }
    }
    return done;
}

#ifdef LK_HAVE_VBMI_TILES
/* Pixels of 8 elements of ES = 2 or 4 bytes (k <= 8 of them read) into k
 * planes with AVX-512 VBMI (NCHW8c -> NCHW, NHWC -> NCHW of 8 channels): 64 /
 * ES pixels a step, 8 registers in, an 8 x (64 / ES) transpose in three
 * levels of vpermt2b (each pairing registers of neighbouring pixels and
 * splitting their channels in halves), register q then holding channel
 * bitreverse(q) of the step's pixels: one 64-byte store per plane. The
 * compiler's loop moved float32 element by element (1x256x28x28: 131 -> 28
 * us, 0.25x -> 0.96x a copy; 1x64x256x256 0.5x -> 0.94x; 14x14 70 -> 24
 * us); float16 took 0.74-0.79x the time of the AVX2 kernel for 14x14 and
 * 28x28 planes, 1.3x for 7x7 (one step and an overlapping one), which keep
 * it. 16 channels measured slower this way than through the transposes
 * (1.2-1.7x from 56x56 planes on). The last step overlaps the one before;
 * returns m, or 0 under a step. */
static const uint8_t lk_dp_level_8x2[3][2][64] __attribute__((aligned(64))) = {
    {
        {0, 1, 16, 17, 32, 33, 48, 49, 64, 65, 80, 81, 96, 97, 112, 113, 2, 3, 18, 19, 34, 35,
         50, 51, 66, 67, 82, 83, 98, 99, 114, 115, 4, 5, 20, 21, 36, 37, 52, 53, 68, 69, 84, 85,
         100, 101, 116, 117, 6, 7, 22, 23, 38, 39, 54, 55, 70, 71, 86, 87, 102, 103, 118, 119},
        {8, 9, 24, 25, 40, 41, 56, 57, 72, 73, 88, 89, 104, 105, 120, 121, 10, 11, 26, 27, 42,
         43, 58, 59, 74, 75, 90, 91, 106, 107, 122, 123, 12, 13, 28, 29, 44, 45, 60, 61, 76, 77,
         92, 93, 108, 109, 124, 125, 14, 15, 30, 31, 46, 47, 62, 63, 78, 79, 94, 95, 110, 111,
         126, 127},
    },
    {
        {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 64, 65, 66, 67, 68, 69, 70, 71,
         72, 73, 74, 75, 76, 77, 78, 79, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29,
         30, 31, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95},
        {32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 96, 97, 98, 99, 100,
         101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 48, 49, 50, 51, 52, 53, 54, 55,
         56, 57, 58, 59, 60, 61, 62, 63, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122,
         123, 124, 125, 126, 127},
    },
    {
        {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
         24, 25, 26, 27, 28, 29, 30, 31, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77,
         78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95},
        {32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53,
         54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105,
         106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122,
         123, 124, 125, 126, 127},
    },
};
static const uint8_t lk_dp_level_8x4[3][2][64] __attribute__((aligned(64))) = {
    {
        {0, 1, 2, 3, 32, 33, 34, 35, 64, 65, 66, 67, 96, 97, 98, 99, 4, 5, 6, 7, 36, 37, 38, 39,
         68, 69, 70, 71, 100, 101, 102, 103, 8, 9, 10, 11, 40, 41, 42, 43, 72, 73, 74, 75, 104,
         105, 106, 107, 12, 13, 14, 15, 44, 45, 46, 47, 76, 77, 78, 79, 108, 109, 110, 111},
        {16, 17, 18, 19, 48, 49, 50, 51, 80, 81, 82, 83, 112, 113, 114, 115, 20, 21, 22, 23, 52,
         53, 54, 55, 84, 85, 86, 87, 116, 117, 118, 119, 24, 25, 26, 27, 56, 57, 58, 59, 88, 89,
         90, 91, 120, 121, 122, 123, 28, 29, 30, 31, 60, 61, 62, 63, 92, 93, 94, 95, 124, 125,
         126, 127},
    },
    {
        {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 64, 65, 66, 67, 68, 69, 70, 71,
         72, 73, 74, 75, 76, 77, 78, 79, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29,
         30, 31, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95},
        {32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 96, 97, 98, 99, 100,
         101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 48, 49, 50, 51, 52, 53, 54, 55,
         56, 57, 58, 59, 60, 61, 62, 63, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122,
         123, 124, 125, 126, 127},
    },
    {
        {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
         24, 25, 26, 27, 28, 29, 30, 31, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77,
         78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95},
        {32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53,
         54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105,
         106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122,
         123, 124, 125, 126, 127},
    },
};

LK_VBMI __attribute__((always_inline)) static inline ptrdiff_t lk_depixels8(
    const int ES, const uint8_t (*level)[2][64], char *restrict out, ptrdiff_t orow,
    const char *restrict in, ptrdiff_t m, int k) {
    enum { K = 8, L = 3 };
    const ptrdiff_t step = 64 / ES, ob = orow * ES;
    if (m < step) return 0;
    __m512i idx[L][2];
    for (int l = 0; l < L; l++)
        for (int h = 0; h < 2; h++) idx[l][h] = _mm512_load_si512((const void *)level[l][h]);
    for (ptrdiff_t i = 0;; i += step) {
        if (i + step > m) i = m - step;
        const char *p = in + i * K * ES;
        __m512i r[K], n[K];
        for (int q = 0; q < K; q++) r[q] = _mm512_loadu_si512(p + 64 * q);
        for (int l = 0; l < L; l++) {
            for (int a = 0; a < K / 2; a++)
                for (int h = 0; h < 2; h++)
                    n[h * K / 2 + a] = _mm512_permutex2var_epi8(r[2 * a], idx[l][h], r[2 * a + 1]);
            for (int q = 0; q < K; q++) r[q] = n[q];
        }
        for (int q = 0; q < K; q++) {
            const int c = (q & 1) << 2 | (q & 2) | (q & 4) >> 2;
            if (c < k) _mm512_storeu_si512(out + c * ob + i * ES, r[q]);
        }
        if (i + step == m) break;
    }
    return m;
}
LK_VBMI static ptrdiff_t lk_depixels8x2(char *restrict out, ptrdiff_t orow, const char *restrict in,
                                        ptrdiff_t m, int k) {
    return lk_depixels8(2, lk_dp_level_8x2, out, orow, in, m, k);
}
LK_VBMI static ptrdiff_t lk_depixels8x4(char *restrict out, ptrdiff_t orow, const char *restrict in,
                                        ptrdiff_t m, int k) {
    return lk_depixels8(4, lk_dp_level_8x4, out, orow, in, m, k);
}
#endif

/* Rows [0, done) of a de-interleave of the first k of 8 lanes (pixels of 8
 * elements) of bytes or 2-byte elements (HCWN8c -> NCHW, NHWC of 8 channels ->
 * planes): an 8 x 8 transpose of 2-byte units per 256 bytes (bytes first paired
 * per channel by a shuffle). */
__attribute__((target("avx2"))) static ptrdiff_t lk_deinterleave8_avx2(char *restrict out,
                                                                      ptrdiff_t orow,
                                                                      const char *restrict in,
                                                                      ptrdiff_t m, int k, int es) {
    ptrdiff_t step = 256 / 8 / es, done = m - m % step, ob = orow * es;
    const __m256i pair = _mm256_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15,
                                          0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
    for (ptrdiff_t i = 0; i < done * es; i += 32, in += 256) {
        __m256i v[8], t[8], s[8], lane[8];
        /* v[r]: 16 bytes at 16r (low half) and 128 + 16r (high half). */
        for (int r = 0; r < 8; r++) {
            v[r] = lk_load_halves((const uint8_t *)in + 16 * r, (const uint8_t *)in + 128 + 16 * r);
            if (es == 1) v[r] = _mm256_shuffle_epi8(v[r], pair);
        }
        for (int r = 0; r < 8; r += 2) {
            t[r] = _mm256_unpacklo_epi16(v[r], v[r + 1]);
            t[r + 1] = _mm256_unpackhi_epi16(v[r], v[r + 1]);
        }
        for (int r = 0; r < 8; r += 4) {
            s[r] = _mm256_unpacklo_epi32(t[r], t[r + 2]);
            s[r + 1] = _mm256_unpackhi_epi32(t[r], t[r + 2]);
            s[r + 2] = _mm256_unpacklo_epi32(t[r + 1], t[r + 3]);
            s[r + 3] = _mm256_unpackhi_epi32(t[r + 1], t[r + 3]);
        }
        for (int c = 0; c < 4; c++) {
            lane[2 * c] = _mm256_unpacklo_epi64(s[c], s[c + 4]);
            lane[2 * c + 1] = _mm256_unpackhi_epi64(s[c], s[c + 4]);
        }
        for (int j = 0; j < k; j++) _mm256_storeu_si256((__m256i *)(out + j * ob + i), lane[j]);
    }
    return done;
}

/* The same for the first k of 4 lanes (HCWN4c / NCHW4c of 3 channels -> planes)
 * of 1-, 2- and 4-byte elements: a 4 x 4 transpose of 4-byte units per 128
 * bytes. */
__attribute__((target("avx2"))) static inline ptrdiff_t lk_deinterleave4_avx2(
    char *restrict out, ptrdiff_t orow, const char *restrict in, ptrdiff_t m, int k, int es) {
    ptrdiff_t step = 128 / 4 / es, done = m - m % step, ob = orow * es;
    /* Groups each lane's elements of the 16 bytes into one 4-byte unit. */
    const __m256i quad = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
                                          0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __m256i pair = _mm256_setr_epi8(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15,
                                          0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15);
    for (ptrdiff_t i = 0; i < done * es; i += 32, in += 128) {
        __m256i v[4], lane[4];
        for (int r = 0; r < 4; r++) {
            v[r] = lk_load_halves((const uint8_t *)in + 16 * r, (const uint8_t *)in + 64 + 16 * r);
            if (es == 1) v[r] = _mm256_shuffle_epi8(v[r], quad);
            else if (es == 2) v[r] = _mm256_shuffle_epi8(v[r], pair);
        }
        __m256i t0 = _mm256_unpacklo_epi32(v[0], v[1]), t1 = _mm256_unpackhi_epi32(v[0], v[1]);
        __m256i t2 = _mm256_unpacklo_epi32(v[2], v[3]), t3 = _mm256_unpackhi_epi32(v[2], v[3]);
        lane[0] = _mm256_unpacklo_epi64(t0, t2);
        lane[1] = _mm256_unpackhi_epi64(t0, t2);
        lane[2] = _mm256_unpacklo_epi64(t1, t3);
        lane[3] = _mm256_unpackhi_epi64(t1, t3);
        for (int j = 0; j < k; j++) _mm256_storeu_si256((__m256i *)(out + j * ob + i), lane[j]);
    }
    return done;
}
#endif

#ifdef LK_HAVE_AVX2_TILES
#define LK_PADROW_BLOCK 256
/* The pad element at `pad` (es bytes) repeated over 32 bytes. */
__attribute__((target("avx2"))) static inline __m256i lk_pad_vector(const void *pad, int es) {
    switch (es) {
    case 1: return _mm256_set1_epi8(*(const char *)pad);
    case 2: { int16_t v; memcpy(&v, pad, 2); return _mm256_set1_epi16(v); }
    case 4: { int32_t v; memcpy(&v, pad, 4); return _mm256_set1_epi32(v); }
    default: { int64_t v; memcpy(&v, pad, 8); return _mm256_set1_epi64x(v); }
    }
}

/* A 32-byte chunk of a padded row, streamed or not; a row's data masked over
 * the pad vector (both kernels below have `stream`, `keep` and `padout`). */
#define LK_PADROW_PUT(p, v)                                                      \
    do {                                                                         \
        if (stream)                                                              \
            LK_TILEW_STREAM(p, v);                                               \
        else                                                                     \
            _mm256_storeu_si256((__m256i *)(p), v);                              \
    } while (0)
#define LK_PADROW_DATA(v) _mm256_or_si256(_mm256_and_si256(v, keep), padout)

/* lk_interleave_padded_avx2 for up to four byte lanes whose data starts on a
 * 4-byte boundary of the row (3 channels into NCHW8c-32c / kCHW32 of bytes):
 * straight from the lanes in registers. 32 rows a step: the lanes' bytes
 * unpack into pixels of four bytes, each pixel is broadcast to a whole row and
 * masked over the padding. No staging buffer, whose loads right after the
 * stores into it made the kernel's speed depend on where the stack and the
 * input sat relative to each other (Zen 4, 1x3x224x224 kCHW32 int8: 49 or
 * 77-149 us by the call's stack depth and the input's offset in its page).
 * Returns the rows done, a multiple of 32. */
__attribute__((target("avx2"))) static ptrdiff_t lk_padrow_bytes4_avx2(
    char *restrict out, const void *const *lanes, ptrdiff_t m, int k, ptrdiff_t row,
    __m256i keep, __m256i padout, __m256i padv, int stream) {
    const __m256i zero = _mm256_setzero_si256();
    ptrdiff_t i = 0;
#define LK_PB4_LANE(j)                                                           \
    (k > (j) ? _mm256_loadu_si256((const __m256i *)((const char *)lanes[j] + i)) : zero)
    for (; i + 32 <= m; i += 32) {
        __m256i va = LK_PB4_LANE(0), vb = LK_PB4_LANE(1), vc = LK_PB4_LANE(2), vd = LK_PB4_LANE(3);
        __m256i ab_lo = _mm256_unpacklo_epi8(va, vb), ab_hi = _mm256_unpackhi_epi8(va, vb);
        __m256i cd_lo = _mm256_unpacklo_epi8(vc, vd), cd_hi = _mm256_unpackhi_epi8(vc, vd);
        /* px[q]: pixels 4q..4q+3 in the low half, 16+4q..16+4q+3 in the high. */
        __m256i px[4] = {_mm256_unpacklo_epi16(ab_lo, cd_lo), _mm256_unpackhi_epi16(ab_lo, cd_lo),
                         _mm256_unpacklo_epi16(ab_hi, cd_hi), _mm256_unpackhi_epi16(ab_hi, cd_hi)};
        char *o = out + i * row;
        if (row == 16) {
            /* Two rows a store: pixels r and r + 1, each in a half. */
#define LK_PB4_PAIR(q, t, IMM0, IMM1)                                            \
    {                                                                            \
        __m256i x0 = _mm256_shuffle_epi32(px[q], IMM0), x1 = _mm256_shuffle_epi32(px[q], IMM1); \
        __m256i lo = _mm256_permute2x128_si256(x0, x1, 0x20);                   \
        __m256i hi = _mm256_permute2x128_si256(x0, x1, 0x31);                   \
        LK_PADROW_PUT(o + (4 * (q) + (t)) * 16, LK_PADROW_DATA(lo));             \
        LK_PADROW_PUT(o + (16 + 4 * (q) + (t)) * 16, LK_PADROW_DATA(hi));        \
    }
            for (int q = 0; q < 4; q++) {
                LK_PB4_PAIR(q, 0, 0x00, 0x55)
                LK_PB4_PAIR(q, 2, 0xAA, 0xFF)
            }
#undef LK_PB4_PAIR
            continue;
        }
#define LK_PB4_ROW(q, t, IMM, HALF)                                              \
    {                                                                            \
        __m256i x = _mm256_shuffle_epi32(px[q], IMM);                           \
        char *r_ = o + (16 * ((HALF) == 0x11) + 4 * (q) + (t)) * row;            \
        LK_PADROW_PUT(r_, LK_PADROW_DATA(_mm256_permute2x128_si256(x, x, HALF))); \
        for (ptrdiff_t c = 32; c < row; c += 32) LK_PADROW_PUT(r_ + c, padv);    \
    }
        for (int q = 0; q < 4; q++) {
            LK_PB4_ROW(q, 0, 0x00, 0x00)
            LK_PB4_ROW(q, 1, 0x55, 0x00)
            LK_PB4_ROW(q, 2, 0xAA, 0x00)
            LK_PB4_ROW(q, 3, 0xFF, 0x00)
        }
        for (int q = 0; q < 4; q++) {
            LK_PB4_ROW(q, 0, 0x00, 0x11)
            LK_PB4_ROW(q, 1, 0x55, 0x11)
            LK_PB4_ROW(q, 2, 0xAA, 0x11)
            LK_PB4_ROW(q, 3, 0xFF, 0x11)
        }
#undef LK_PB4_ROW
    }
#undef LK_PB4_LANE
    return i;
}

/* Up to four 2-byte lanes into rows of 16 bytes whose data starts the row
 * (3 float16 channels into NCHW8c / kHWC8), straight from the lanes: 16 rows
 * a step, the lanes unpacked into 8-byte pixels (missing lanes the pad
 * element), each pixel paired with 8 pad bytes. For streamed outputs on
 * Intel: the stage's two passes, lanes in and rows out, alternated reads and
 * writes block by block (Xeon, 1x3x1024x1024, compare_builds.py, two sets
 * of 5 rounds: NCHW8c float16 0.74x / 0.64x the time, kHWC8 0.83x / 0.79x);
 * in cache the stage is faster (kHWC8 float16 1x3x224x224 31-32 us against
 * 40-44 in registers). Returns the rows done. */
__attribute__((target("avx2"))) static ptrdiff_t lk_padrow_halves16_avx2(
    char *restrict out, const void *const *lanes, ptrdiff_t m, int k, __m256i padv, int stream) {
    ptrdiff_t i = 0;
    const int wide = stream && (uintptr_t)out % 32 == 0;
#define LK_PH_LANE(j)                                                            \
    (k > (j) ? _mm256_loadu_si256((const __m256i *)((const char *)lanes[j] + 2 * i)) : padv)
#define LK_PH_PUT(p, v)                                                          \
    do {                                                                         \
        if (wide)                                                                \
            _mm256_stream_si256((__m256i *)(p), v);                              \
        else                                                                     \
            LK_PADROW_PUT(p, v);                                                 \
    } while (0)
    for (; i + 16 <= m; i += 16) {
        __m256i a = LK_PH_LANE(0), b = LK_PH_LANE(1), c = LK_PH_LANE(2), d = LK_PH_LANE(3);
        __m256i ab_lo = _mm256_unpacklo_epi16(a, b), ab_hi = _mm256_unpackhi_epi16(a, b);
        __m256i cd_lo = _mm256_unpacklo_epi16(c, d), cd_hi = _mm256_unpackhi_epi16(c, d);
        /* px[q]: pixels 2q, 2q + 1 in the low half, 8 + 2q, 9 + 2q in the high. */
        __m256i px[4] = {_mm256_unpacklo_epi32(ab_lo, cd_lo), _mm256_unpackhi_epi32(ab_lo, cd_lo),
                         _mm256_unpacklo_epi32(ab_hi, cd_hi), _mm256_unpackhi_epi32(ab_hi, cd_hi)};
        char *o = out + i * 16;
        /* r0[q]: rows 2q (low half) and 8 + 2q (high); r1[q]: rows 2q + 1 and
         * 9 + 2q. Stored in row order, so that the streamed lines fill in turn. */
        __m256i r0[4], r1[4];
        for (int q = 0; q < 4; q++) {
            r0[q] = _mm256_unpacklo_epi64(px[q], padv);
            r1[q] = _mm256_unpackhi_epi64(px[q], padv);
        }
        for (int q = 0; q < 4; q++)
            LK_PH_PUT(o + 2 * q * 16, _mm256_permute2x128_si256(r0[q], r1[q], 0x20));
        for (int q = 0; q < 4; q++)
            LK_PH_PUT(o + (8 + 2 * q) * 16, _mm256_permute2x128_si256(r0[q], r1[q], 0x31));
    }
#undef LK_PH_PUT
#undef LK_PH_LANE
    return i;
}

#ifdef LK_HAVE_VBMI_TILES
/* The vpermb index of each 64-byte piece of a step of lk_padrow_vbmi whose
 * pieces start `phase` bytes into the step: byte p of piece q is output byte
 * phase + 64q + p; from the step's register (lane j's 16 bytes at 16j) where
 * it holds data, from the next step's (index + 64) past the step's rows.
 * Returns the mask of data bytes (the same for every piece). */
static uint64_t lk_padrow_vbmi_index(__m512i *idx, int pieces, ptrdiff_t row, ptrdiff_t per,
                                     ptrdiff_t at, int k, int es, ptrdiff_t phase) {
    uint64_t mask = 0;
    for (int q = 0; q < pieces; q++) {
        uint8_t b[64];
        for (int p = 0; p < 64; p++) {
            ptrdiff_t off = phase + q * 64 + p, r = off / row, c = off % row;
            b[p] = 0;
            if (c >= at && c < at + k * es) {
                b[p] = (uint8_t)((r >= per ? 64 : 0) + (c - at) / es * 16 + (r % per) * es +
                                 (c - at) % es);
                if (q == 0) mask |= (uint64_t)1 << p;
            }
        }
        memcpy(&idx[q], b, 64);
    }
    return mask;
}

/* lk_padrow_vbmi's index tables for one kind of call (k = 0: none yet). */
typedef struct {
    int k, es;
    ptrdiff_t row, at, phase;
    uint64_t keep, keepp;
    __m512i idx[16], idxp[16];
} lk_padrow_tables;
static __thread lk_padrow_tables lk_padrow_cache;

/* Up to four lanes of es-byte elements into padded rows of 4-64 bytes that
 * divide 64 (3 channels into NCHW4c-32c, kCHW32, kHWC8, HCWNC4/8 of one
 * image) with AVX-512 VBMI: a step puts 16 bytes of each lane in one register
 * (16 / es pixels) and builds each 64-byte piece of their rows with one vpermb
 * merged over the pad vector: one shuffle a 64-byte store, where the AVX2
 * kernels take three to five for 32 bytes. The stores are 64-byte aligned:
 * one step written unaligned covers the bytes before the first line
 * boundary; from there the pieces run a phase into the steps (a row of 32
 * bytes 16 bytes into a line), and the piece that crosses into the next
 * step's rows takes both steps' registers (vpermt2b); the rows after the last
 * whole aligned step are written by unaligned steps, the last one ending at m
 * (bytes written twice are the same bytes). Xeon (Emerald Rapids),
 * 1x3x224x224 in a hot loop: NCHW16c uint8 30 -> 20 us, NCHW32c uint8 69 ->
 * 43 us (a fill of its output: 36 us). Streamed when `stream`. Returns m, or
 * 0 where it does not apply (fewer rows than two steps, other row sizes, data
 * past the row). */
LK_VBMI __attribute__((always_inline)) static inline ptrdiff_t lk_padrow_vbmi_k(
    char *restrict out, const void *const *lanes, ptrdiff_t m, int k, int es, ptrdiff_t row,
    ptrdiff_t at, const void *pad, const int stream, const int pieces_c) {
    const ptrdiff_t per = 16 / es, step = per * row;
    const int pieces = pieces_c ? pieces_c : (int)(step / 64);
    /* The pad vector holds whole elements from its first byte: an output that
     * does not start on an element boundary (a numpy view at an odd byte
     * offset) would shift the pad bytes under the merge. */
    if (k < 1 || k > 4 || m < 2 * per || step < 64 || at < 0 || at + k * es > row ||
        row > 64 || 64 % row != 0 || (uintptr_t)out % (uintptr_t)es != 0)
        return 0;
    const ptrdiff_t to_line = (ptrdiff_t)(-(uintptr_t)out & 63);
    /* Aligned steps start at pixel i0, `phase` bytes into its row. */
    ptrdiff_t i0 = to_line / row, phase = to_line % row;
    /* The tables of the thread's last call: a threaded run calls once per
     * slice of 8192 rows, and building them costs ~100x a step. */
    lk_padrow_tables *tab = &lk_padrow_cache;
    if (tab->k != k || tab->es != es || tab->row != row || tab->at != at || tab->phase != phase) {
        tab->keep = lk_padrow_vbmi_index(tab->idx, pieces, row, per, at, k, es, 0);
        tab->keepp = phase ? lk_padrow_vbmi_index(tab->idxp, pieces, row, per, at, k, es, phase)
                           : tab->keep;
        tab->k = k, tab->es = es, tab->row = row, tab->at = at, tab->phase = phase;
    }
    /* Local copies: read through a pointer, each vpermb's index would be
     * reloaded after every store (the stores may alias it), and small calls
     * took 1.2-1.8x the time. */
    __m512i idx[16], idxp[16];
    memcpy(idx, tab->idx, (size_t)pieces * sizeof(__m512i));
    memcpy(idxp, phase ? tab->idxp : tab->idx, (size_t)pieces * sizeof(__m512i));
    const __mmask64 keep = tab->keep, keepp = tab->keepp;
    const __m256i pad32 = lk_pad_vector(pad, es);
    const __m512i padv = _mm512_inserti64x4(_mm512_castsi256_si512(pad32), pad32, 1);
    const char *l0 = (const char *)lanes[0], *l1 = (const char *)lanes[k > 1 ? 1 : 0];
    const char *l2 = (const char *)lanes[k > 2 ? 2 : 0], *l3 = (const char *)lanes[k > 3 ? 3 : 0];
#define LK_PRV_LOAD(i)                                                           \
    _mm512_inserti32x4(                                                          \
        _mm512_inserti32x4(                                                      \
            _mm512_inserti32x4(                                                  \
                _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(l0 + (i) * es))), \
                _mm_loadu_si128((const __m128i *)(l1 + (i) * es)), 1),           \
            _mm_loadu_si128((const __m128i *)(l2 + (i) * es)), 2),               \
        _mm_loadu_si128((const __m128i *)(l3 + (i) * es)), 3)
    /* The pieces of the step at pixel i from register s; the last from s and t
     * when the pieces run a phase into the step. */
#define LK_PRV_PIECES(i, s, t, IDX, KEEP, PHASE, STORE)                          \
    {                                                                            \
        char *o_ = out + (i) * row + (PHASE);                                    \
        for (int q = 0; q < pieces - ((PHASE) != 0); q++) {                      \
            STORE(o_ + q * 64, _mm512_mask_permutexvar_epi8(padv, KEEP, IDX[q], s)); \
        }                                                                        \
        if (PHASE)                                                               \
            STORE(o_ + (pieces - 1) * 64,                                        \
                  _mm512_mask_blend_epi8(KEEP, padv,                             \
                                         _mm512_permutex2var_epi8(s, IDX[pieces - 1], t))); \
    }
#define LK_PRV_STOREU(p, v) _mm512_storeu_si512((void *)(p), v)
#define LK_PRV_PUT(p, v)                                                         \
    do {                                                                         \
        if (stream)                                                              \
            _mm512_stream_si512((__m512i *)(p), v);                              \
        else                                                                     \
            _mm512_store_si512((void *)(p), v);                                  \
    } while (0)
    /* One step written unaligned covers the bytes before the first line. */
    if (to_line > 0) {
        __m512i s = LK_PRV_LOAD(0);
        LK_PRV_PIECES(0, s, s, idx, keep, 0, LK_PRV_STOREU)
    }
    ptrdiff_t i = i0;
    if (phase == 0) {
        for (; i + per <= m; i += per) {
            __m512i s = LK_PRV_LOAD(i);
            LK_PRV_PIECES(i, s, s, idx, keep, 0, LK_PRV_PUT)
        }
    } else {
        /* Each step's last piece reaches `phase` bytes into the next step. */
        __m512i s = LK_PRV_LOAD(i);
        for (; i + 2 * per <= m; i += per) {
            __m512i t = LK_PRV_LOAD(i + per);
            LK_PRV_PIECES(i, s, t, idxp, keepp, phase, LK_PRV_PUT)
            s = t;
        }
    }
    if (stream) _mm_sfence();
    /* The rest (the last `phase` bytes of row i are still unwritten). */
    for (; i + per <= m; i += per) {
        __m512i s = LK_PRV_LOAD(i);
        LK_PRV_PIECES(i, s, s, idx, keep, 0, LK_PRV_STOREU)
    }
    if (i < m) {
        __m512i s = LK_PRV_LOAD(m - per);
        LK_PRV_PIECES(m - per, s, s, idx, keep, 0, LK_PRV_STOREU)
    }
#undef LK_PRV_PUT
#undef LK_PRV_STOREU
#undef LK_PRV_PIECES
#undef LK_PRV_LOAD
    return m;
}

/* One copy per store kind and usual piece count, so that neither is tested
 * per store (as lk_smallbox_pack_vbmi). */
#define LK_PRV_CASE(S, P)                                                                  \
    LK_VBMI static ptrdiff_t lk_padrow_vbmi_##S##_##P(char *restrict out,                  \
                                                      const void *const *lanes, ptrdiff_t m, \
                                                      int k, int es, ptrdiff_t row,        \
                                                      ptrdiff_t at, const void *pad) {     \
        return lk_padrow_vbmi_k(out, lanes, m, k, es, row, at, pad, S, P);                 \
    }
LK_PRV_CASE(0, 0) LK_PRV_CASE(0, 1) LK_PRV_CASE(0, 2) LK_PRV_CASE(0, 4) LK_PRV_CASE(0, 8)
LK_PRV_CASE(1, 0) LK_PRV_CASE(1, 1) LK_PRV_CASE(1, 2) LK_PRV_CASE(1, 4) LK_PRV_CASE(1, 8)
#undef LK_PRV_CASE

/* k (1-4) lanes into rows of `row` bytes, data `at` bytes in, the rest the
 * pad value, 16 / es rows a step; m if done, 0 if the case is not taken. */
static ptrdiff_t lk_padrow_vbmi(char *restrict out, const void *const *lanes, ptrdiff_t m, int k,
                                int es, ptrdiff_t row, ptrdiff_t at, const void *pad, int stream) {
    typedef ptrdiff_t (*fn)(char *restrict, const void *const *, ptrdiff_t, int, int, ptrdiff_t,
                            ptrdiff_t, const void *);
    static const fn fns[2][5] = {
        {lk_padrow_vbmi_0_0, lk_padrow_vbmi_0_1, lk_padrow_vbmi_0_2, lk_padrow_vbmi_0_4,
         lk_padrow_vbmi_0_8},
        {lk_padrow_vbmi_1_0, lk_padrow_vbmi_1_1, lk_padrow_vbmi_1_2, lk_padrow_vbmi_1_4,
         lk_padrow_vbmi_1_8},
    };
    ptrdiff_t pieces = es > 0 && es <= 16 ? 16 / es * row / 64 : 0;
    int c = pieces == 1 ? 1 : pieces == 2 ? 2 : pieces == 4 ? 3 : pieces == 8 ? 4 : 0;
    return fns[stream != 0][c](out, lanes, m, k, es, row, at, pad);
}
#endif

/*
 * k data lanes into m contiguous rows of `row` bytes (16, or a multiple of 32
 * up to 256) whose other slots are the pad element, the data `at` bytes into
 * each row and within its first 32 (at + k * es <= 32): 3 channels into
 * NCHW8c-32c, kCHW32 or kHWC8, where the generic interleave transposed 13-29
 * lanes of a padding buffer for every 3 lanes of data. Blocks of rows are
 * interleaved compactly into an L1 stage (k * es bytes a row); a row's first
 * chunk of 32 bytes (two rows of 16) is then a load of the stage at the row's
 * data, masked over the pad vector, and its other chunks the pad vector.
 * Streamed (16 bytes at a time) when `stream`. Against the generic path
 * (compare_builds.py, Xeon), 1x3x1024x1024: NCHW32c float32 0.29x the time,
 * float16 0.36x, uint8 0.59x (the byte kernel it replaces had no streaming);
 * NCHW16c float16 0.44x; NCHW8c float32 0.52x; kHWC8 float16 0.9x;
 * 1x3x224x224 (in cache, unstreamed) 0.75-0.95x, rows of 16 bytes 1.0-1.1x.
 * Up to four byte lanes on a 4-byte boundary take lk_padrow_bytes4_avx2 for
 * every whole step of 32 rows, the stage only for the rest; rows of 16 bytes
 * only on AMD (Xeon: NCHW16c uint8 1x3x224x224 48 us in registers, 30-33 us
 * through the stage; 1x3x1024x1024 0.83x the time by the stage).
 * Returns m (0 without AVX2).
 */
__attribute__((target("avx2"))) static ptrdiff_t lk_interleave_padded_avx2(
    char *restrict out, const void *const *lanes, ptrdiff_t m, int k, int es, ptrdiff_t row,
    ptrdiff_t at, const void *pad, int stream) {
    /* Row r of a block at stage + LK_PADROW_SLACK + r * width; its load starts
     * `at` bytes before it and ends at most 32 bytes past it. */
#define LK_PADROW_SLACK 64
    char stage[LK_PADROW_SLACK + LK_PADROW_BLOCK * 32 + LK_PADROW_SLACK]
        __attribute__((aligned(64)));
    const ptrdiff_t width = (ptrdiff_t)k * es;
    const __m256i padv = lk_pad_vector(pad, es);
    /* A row's data: (load & keep) | (pad & ~keep), two operations where a
     * blendv is three on Intel. */
    uint8_t bytes[32];
    for (int p = 0; p < 32; p++) {
        ptrdiff_t at_p = row == 16 ? p % 16 : p;
        bytes[p] = at_p >= at && at_p < at + width ? 0xFF : 0;
    }
    __m256i keep;
    memcpy(&keep, bytes, 32);
    const __m256i padout = _mm256_andnot_si256(keep, padv);
    const void *l[8];
    ptrdiff_t first = 0;
    if (es == 1 && k <= 4 && at % 4 == 0 && (row != 16 || lk_split_avx512()))
        first = lk_padrow_bytes4_avx2(out, lanes, m, k, row, keep, padout, padv, stream);
    if (es == 2 && k <= 4 && at == 0 && row == 16 && stream && !lk_split_avx512())
        first = lk_padrow_halves16_avx2(out, lanes, m, k, padv, stream);
    memset(stage, 0, LK_PADROW_SLACK); /* bytes the loads take and the masks drop */
    for (ptrdiff_t b0 = first; b0 < m; b0 += LK_PADROW_BLOCK) {
        ptrdiff_t nb = m - b0 < LK_PADROW_BLOCK ? m - b0 : LK_PADROW_BLOCK;
        char *st = stage + LK_PADROW_SLACK;
        for (int j = 0; j < k; j++) l[j] = (const char *)lanes[j] + b0 * es;
        lk_interleave(st, l, nb, k, k, es);
        memset(st + nb * width, 0, 64);
        char *o = out + b0 * row;
        const char *data = st - at;
        if (row == 16) {
            /* Two rows a register. */
            ptrdiff_t r = 0;
            for (; r + 2 <= nb; r += 2, o += 32, data += 2 * width) {
                __m256i two = _mm256_inserti128_si256(
                    _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)data)),
                    _mm_loadu_si128((const __m128i *)(data + width)), 1);
                LK_PADROW_PUT(o, LK_PADROW_DATA(two));
            }
            if (r < nb)
                _mm_storeu_si128((__m128i *)o, _mm256_castsi256_si128(LK_PADROW_DATA(
                                                   _mm256_loadu_si256((const __m256i *)data))));
            continue;
        }
        for (ptrdiff_t r = 0; r < nb; r++, o += row, data += width) {
            LK_PADROW_PUT(o, LK_PADROW_DATA(_mm256_loadu_si256((const __m256i *)data)));
            for (ptrdiff_t c = 32; c < row; c += 32) LK_PADROW_PUT(o + c, padv);
        }
    }
    if (stream) _mm_sfence();
    return m;
#undef LK_PADROW_DATA
#undef LK_PADROW_PUT
#undef LK_PADROW_SLACK
}
#endif

#ifdef LK_HAVE_VBMI_TILES
/* Three lanes and a pad slot into pixels of four (3 channels into NCHW4c /
 * HCWNC4 of bytes, float16 or float32): 64 bytes of each lane a step, each 64-byte
 * output register one vpermt2b of lanes 0 and 1, a vpermb of lane 2 merged
 * over its slots and the pad vector over the fourth. Byte p of register j
 * (pixel q = 64 j / row + p / row, slot p % row / es) takes element q of its
 * lane: index q es + p % es, plus 64 for lane 1. */
#define LK_IL3P_1(j, p) (((p) % 4 == 1 ? 64 : 0) + 16 * (j) + (p) / 4)
#define LK_IL3P_2(j, p) (((p) % 8 / 2 == 1 ? 64 : 0) + 2 * (8 * (j) + (p) / 8) + (p) % 2)
#define LK_IL3P_4(j, p) (((p) % 16 / 4 == 1 ? 64 : 0) + 4 * (4 * (j) + (p) / 16) + (p) % 4)
static const uint8_t lk_il3p_vbmi_index[3][4][64] __attribute__((aligned(64))) = {
    {{LK_IDX64J(LK_IL3P_1, 0)}, {LK_IDX64J(LK_IL3P_1, 1)}, {LK_IDX64J(LK_IL3P_1, 2)},
     {LK_IDX64J(LK_IL3P_1, 3)}},
    {{LK_IDX64J(LK_IL3P_2, 0)}, {LK_IDX64J(LK_IL3P_2, 1)}, {LK_IDX64J(LK_IL3P_2, 2)},
     {LK_IDX64J(LK_IL3P_2, 3)}},
    {{LK_IDX64J(LK_IL3P_4, 0)}, {LK_IDX64J(LK_IL3P_4, 1)}, {LK_IDX64J(LK_IL3P_4, 2)},
     {LK_IDX64J(LK_IL3P_4, 3)}},
};
#undef LK_IL3P_1
#undef LK_IL3P_2
#undef LK_IL3P_4

/* m pixels (at least two steps: 128 bytes, 64 float16, 32 float32), stored
 * line-aligned:
 * one unaligned step covers the pixels before the first line boundary, the
 * last step ends at m (pixels written twice get the same bytes). Returns m, or
 * 0 where it does not apply. */
LK_VBMI static ptrdiff_t lk_interleave3p_vbmi(char *restrict out, const void *const *lanes,
                                              ptrdiff_t m, int es, const void *pad) {
    const int e = es == 1 ? 0 : es == 2 ? 1 : 2;
    const ptrdiff_t step = 64 / es, row = 4 * es;
    if ((es != 1 && es != 2 && es != 4) || m < 2 * step) return 0;
    /* Bytes from lane 2 and from the pad vector: slots 2 and 3 of every pixel.
     * Float32 here (it had the SSE interleave): NCHW4c / HCWNC4 of
     * 1x3x224x224 0.80x the time (compare_builds.py, Zen 5). */
    static const uint64_t from2[3] = {0x4444444444444444ULL, 0x3030303030303030ULL,
                                      0x0F000F000F000F00ULL};
    const __mmask64 lane2 = from2[e], padm = from2[e] << es;
    const __m256i pad32 = lk_pad_vector(pad, es);
    const __m512i padv = _mm512_inserti64x4(_mm512_castsi256_si512(pad32), pad32, 1);
    __m512i idx[4];
    for (int j = 0; j < 4; j++) idx[j] = _mm512_load_si512((const void *)lk_il3p_vbmi_index[e][j]);
    const char *a = (const char *)lanes[0], *b = (const char *)lanes[1], *c = (const char *)lanes[2];
#define LK_IL3P_STEP(i)                                                          \
    {                                                                            \
        const __m512i va = _mm512_loadu_si512(a + (i) * es);                     \
        const __m512i vb = _mm512_loadu_si512(b + (i) * es);                     \
        const __m512i vc = _mm512_loadu_si512(c + (i) * es);                     \
        for (int j = 0; j < 4; j++) {                                            \
            __m512i v = _mm512_permutex2var_epi8(va, idx[j], vb);                \
            v = _mm512_mask_permutexvar_epi8(v, lane2, idx[j], vc);              \
            _mm512_storeu_si512(out + (i) * row + 64 * j, _mm512_mask_mov_epi8(v, padm, padv)); \
        }                                                                        \
    }
    ptrdiff_t i = 0;
    const ptrdiff_t to_line = (ptrdiff_t)(-(uintptr_t)out & 63);
    if (to_line % row == 0 && to_line) {
        LK_IL3P_STEP(0)
        i = to_line / row;
    }
    for (; i + step <= m; i += step) LK_IL3P_STEP(i)
    if (i < m) LK_IL3P_STEP(m - step)
#undef LK_IL3P_STEP
    return m;
}
#endif

/* k data lanes into padded rows (see lk_interleave_padded_avx2): m, or 0 where
 * it does not apply (no AVX2, other row sizes, data past the first 32 bytes).
 * On AMD, rows of 16 or 32 bytes of 2- or 4-byte elements that stay in the
 * cache are left to the generic interleave, whose tiles write them straight
 * from the lanes (compare_builds.py on Zen 4, 1x3x224x224, 5 rounds: NCHW8c
 * float32 0.72x the time, HCWNC8 float16 0.69x, float32 0.75x, kHWC8 /
 * NCHW8c float16 0.85-0.88x); bytes keep this kernel (NCHW16c uint8: the
 * generic path took 1.46x). */
static ptrdiff_t lk_interleave_padded(char *restrict out, const void *const *lanes, ptrdiff_t m,
                                      int k, int es, ptrdiff_t row, ptrdiff_t at,
                                      const void *pad, int stream) {
#ifdef LK_HAVE_AVX2_TILES
    ptrdiff_t width = (ptrdiff_t)k * es;
    if (!stream && es > 1 && row <= 32 && lk_split_avx512()) return 0;
#ifdef LK_HAVE_VBMI_TILES
    if (!stream && k == 3 && at == 0 && row == 4 * es && !lk_split_avx512() && lk_vbmi() &&
        lk_interleave3p_vbmi(out, lanes, m, es, pad) == m)
        return m;
    /* Rows of more data than padding (3 channels into NCHW4c, HCWNC4 of one
     * image) only when streamed: in cache the 3-lane shuffles are faster
     * (compare_builds.py on Xeon, NCHW4c 1x3x224x224: 1.14x the time by VBMI
     * for uint8 and float16; 1x3x1024x1024 0.62-0.84x). */
    if (!lk_split_avx512() && lk_vbmi() && (2 * width <= row || stream) &&
        lk_padrow_vbmi(out, lanes, m, k, es, row, at, pad, stream) == m)
        return m;
#endif
    if (lk_simd() != 0 && lk_avx2() && k >= 1 && k <= 8 && at >= 0 && 2 * width <= row &&
        at + width <= (row < 32 ? row : 32) && (row == 16 || (row % 32 == 0 && row <= 256)) &&
        (es == 1 || es == 2 || es == 4 || es == 8) && m > 0)
        return lk_interleave_padded_avx2(out, lanes, m, k, es, row, at, pad,
                                         stream && (uintptr_t)out % 16 == 0);
#endif
    (void)out; (void)lanes; (void)m; (void)k; (void)es; (void)row; (void)at; (void)pad;
    (void)stream;
    return 0;
}

#ifdef LK_HAVE_AVX2_TILES
/* Whether the k lanes start within span bytes of the first. */
static inline int lk_lanes_within(const void *const *lanes, int k, ptrdiff_t span) {
    for (int j = 1; j < k; j++) {
        ptrdiff_t dist = (const char *)lanes[j] - (const char *)lanes[0];
        if (dist >= span || dist <= -span) return 0;
    }
    return 1;
}

/* Four byte lanes -> pixels of four bytes, 32 pixels per step (HTP Crouton4x1's
 * 32 channels x 4 columns, NCHW4c of bytes). The unpacks work within 128-bit
 * halves, leaving pixels 0-3 | 16-19, 4-7 | 20-23, 8-11 | 24-27 and
 * 12-15 | 28-31; the permutes put the halves in order. The compiler's loop ran
 * with 16-byte vectors (the SSE4.1 build is the default, see lk_detect_simd):
 * NHWC -> Crouton4x1 8x256x56x56 0.77x the time, 1x64x256x256 0.90x. Only for
 * lanes within a page of each other (pixels of one row): lanes whole pages
 * apart (channel planes, NCHW -> HCWNC4 int8 1x64x256x256) measured 1.4x the
 * time of the compiler's loop. */
/* 32 pixels of the four byte lanes a, b, c, d -> 128 bytes at o. */
__attribute__((target("avx2"))) static inline void lk_interleave4_u8_step(char *o, __m256i va,
                                                                         __m256i vb, __m256i vc,
                                                                         __m256i vd) {
    __m256i ab_lo = _mm256_unpacklo_epi8(va, vb), ab_hi = _mm256_unpackhi_epi8(va, vb);
    __m256i cd_lo = _mm256_unpacklo_epi8(vc, vd), cd_hi = _mm256_unpackhi_epi8(vc, vd);
    __m256i p0 = _mm256_unpacklo_epi16(ab_lo, cd_lo), p1 = _mm256_unpackhi_epi16(ab_lo, cd_lo);
    __m256i p2 = _mm256_unpacklo_epi16(ab_hi, cd_hi), p3 = _mm256_unpackhi_epi16(ab_hi, cd_hi);
    _mm256_storeu_si256((__m256i *)o, _mm256_permute2x128_si256(p0, p1, 0x20));
    _mm256_storeu_si256((__m256i *)(o + 32), _mm256_permute2x128_si256(p2, p3, 0x20));
    _mm256_storeu_si256((__m256i *)(o + 64), _mm256_permute2x128_si256(p0, p1, 0x31));
    _mm256_storeu_si256((__m256i *)(o + 96), _mm256_permute2x128_si256(p2, p3, 0x31));
}

__attribute__((target("avx2"))) static ptrdiff_t lk_interleave4_u8_avx2(
    char *restrict out, const void *const *lanes, ptrdiff_t m) {
    const char *a = (const char *)lanes[0], *b = (const char *)lanes[1];
    const char *c = (const char *)lanes[2], *d = (const char *)lanes[3];
    ptrdiff_t i = 0;
    for (; i + 32 <= m; i += 32) {
        __m256i va = _mm256_loadu_si256((const __m256i *)(a + i));
        __m256i vb = _mm256_loadu_si256((const __m256i *)(b + i));
        __m256i vc = _mm256_loadu_si256((const __m256i *)(c + i));
        __m256i vd = _mm256_loadu_si256((const __m256i *)(d + i));
        lk_interleave4_u8_step(out + 4 * i, va, vb, vc, vd);
    }
    return i;
}
#endif

static ptrdiff_t lk_interleave_shuffled(void *restrict out, const void *const *lanes,
                                        ptrdiff_t m, int k, ptrdiff_t ostride, int es) {
#ifdef LK_HAVE_AVX2_TILES
    if (k == 3 && ostride == 3 && (es == 1 || es == 2 || es == 4) && lk_simd() != 0 && lk_avx2()) {
#ifdef LK_HAVE_VBMI_TILES
        if (es <= 2 && m >= 128 / es && !lk_split_avx512() && lk_vbmi())
            return lk_interleave3_vbmi((char *)out, lanes, m, es);
        if (es == 4 && m >= 32 && !lk_split_avx512() && lk_vbmi())
            return lk_interleave3_f32_avx512((char *)out, lanes, m);
#endif
        return lk_interleave3_avx2((char *)out, lanes, m, es);
    }
    if (k == 4 && ostride == 4 && es == 1 && lk_simd() != 0 && lk_avx2() &&
        lk_lanes_within(lanes, 4, 4096))
        return lk_interleave4_u8_avx2((char *)out, lanes, m);
#endif
#ifdef LK_HAVE_VBMI_TILES
    if (k == 4 && ostride == 4 && (es == 2 || (es == 1 && !lk_lanes_within(lanes, 4, 4096))) &&
        !lk_split_avx512() && lk_vbmi())
        return lk_interleave4_vbmi((char *)out, lanes, m, es);
    if (k == 8 && ostride == 8 && es == 1 && lk_vbmi())
        return lk_interleave8_u8_vbmi((char *)out, lanes, m);
#endif
    (void)out; (void)lanes; (void)m; (void)k; (void)ostride; (void)es;
    return 0;
}

static ptrdiff_t lk_deinterleave_shuffled(void *restrict out, ptrdiff_t orow,
                                          const void *restrict in, ptrdiff_t m, int k,
                                          ptrdiff_t istride, int es) {
#ifdef LK_HAVE_AVX2_TILES
    /* The kernels read whole pixels, slots past the k lanes included; the last
     * pixel's may lie past the end of the source, so it is left to the caller's
     * loop. */
    if (k < istride) m -= 1;
    if (k >= 1 && m > 0 && lk_simd() != 0 && lk_avx2()) {
        if (istride == 3 && k == 3 && (es == 1 || es == 2 || es == 4)) {
#ifdef LK_HAVE_VBMI_TILES
            if (!lk_split_avx512() && lk_vbmi())
                return lk_deinterleave3_vbmi((char *)out, orow, (const char *)in, m, es);
#endif
            return lk_deinterleave3_avx2((char *)out, orow, (const char *)in, m, es);
        }
        if (istride == 4 && k <= 4 && (es == 1 || es == 2 || es == 4))
            return lk_deinterleave4_avx2((char *)out, orow, (const char *)in, m, k, es);
#ifdef LK_HAVE_VBMI_TILES
        if (istride == 8 && k <= 8 && es == 4 && !lk_split_avx512() && lk_vbmi())
            return lk_depixels8x4((char *)out, orow, (const char *)in, m, k);
        if (istride == 8 && k <= 8 && es == 2 && m >= 64 && !lk_split_avx512() && lk_vbmi())
            return lk_depixels8x2((char *)out, orow, (const char *)in, m, k);
#endif
        if (istride == 8 && k <= 8 && (es == 1 || es == 2))
            return lk_deinterleave8_avx2((char *)out, orow, (const char *)in, m, k, es);
    }
#endif
    (void)out; (void)orow; (void)in; (void)m; (void)k; (void)istride; (void)es;
    return 0;
}

#ifdef LK_HAVE_AVX2_TILES
/* Whether lk_transpose takes the row-run kernel: rows far apart (drow >= 2 KiB),
 * a tile of rows or more up to 256, and at least two runs of lanes. */
static inline int lk_rowruns_fit(ptrdiff_t drow, ptrdiff_t rows, ptrdiff_t lanes, int es) {
    /* Rows past whole tiles take an overlapping tile; for 4- and 8-byte
     * elements the other kernels do those shapes as fast or faster (Zen 4, 1024
     * x 49 float64: 1.3x the time here). */
    int tiles_fit = es <= 2 ? rows >= 16 / es : rows % (32 / es) == 0;
    return drow >= 2048 && tiles_fit && rows <= 256 && lanes >= 2 * (LK_ROWRUN_BYTES / es);
}
#endif

/* Whether lk_transpose of this shape, writing through the cache, beats staging
 * it in L1 piece by piece and streaming the pieces out (the caller's choice for
 * outputs larger than the cache). The long-lane kernel (4096+ rows, 64+ lanes)
 * reads 4 KiB runs of each lane where a stage piece takes 128 bytes, too short
 * for the prefetchers (NCHW -> NHWC float32 1x64x256x256: 1.7 against 5.3 ms);
 * the row-run kernel below already writes whole 256-byte runs of each row
 * (NHWC -> NCHW of 256 channels, 8x256x56x56, float16 and float32: 0.75x the
 * time; of 64 channels, 1x64x256x256, once the runs streamed: float32 0.9x,
 * and with streaming forced float16 0.85x, uint8 0.7x). */
static inline int lk_transpose_beats_staging(ptrdiff_t drow, ptrdiff_t rows, ptrdiff_t lanes,
                                             int es) {
#ifdef LK_HAVE_AVX2_TILES
    if (lk_simd() != 0 && lk_tile_lanes(es) && lk_avx2()) {
        if (rows >= 4096 && lanes >= 64) return 1;
        if (rows >= 64 && lk_rowruns_fit(drow, rows, lanes, es)) return 1;
        /* The staged-and-streamed kernels stream too, in destination order
         * (NCHW -> NHWC / kHWC8 float16 of 8x256x56x56: 0.7x the time of
         * staging pieces here). */
        if (lk_staged_fits(drow, lanes, es) && lk_staged_worth(rows * drow)) return 1;
    }
#endif
    (void)drow; (void)rows; (void)lanes; (void)es;
    return 0;
}

/* Rows to transpose on their own first, so that the 32-byte loads of every
 * lane (lanes a multiple of 32 bytes apart) start on a 32-byte boundary: in
 * the staged kernel of 2-byte elements and in the lane copies of the byte
 * pipelines. numpy's data sits 16 bytes into a line, where half those loads
 * would straddle two lines: NCHW -> NHWC float16 of 64 x 65536 and of 256 x
 * 3136 (a batch of 8) take 0.85-0.9x the time aligned, bytes of 32 x 65536
 * (kCHW32 int8 of 1x64x256x256) 0.88x (C harness, Zen 4). */
static inline ptrdiff_t lk_aligned_head_rows(const char *src, ptrdiff_t drow, ptrdiff_t slane,
                                             ptrdiff_t rows, ptrdiff_t lanes, int es) {
#ifdef LK_HAVE_AVX2_TILES
    ptrdiff_t misalign = (ptrdiff_t)((uintptr_t)src % 32);
    if (misalign == 0 || misalign % es != 0 || slane % 32 != 0 || lk_simd() == 0 || !lk_avx2())
        return 0;
    if ((es == 2 && lk_staged_fits(drow, lanes, es) && lk_staged_worth(rows * drow)) ||
        (es == 1 && lanes >= 32 && rows >= 8192))
        return (32 - misalign) / es;
#endif
    (void)src; (void)drow; (void)slane; (void)rows; (void)lanes; (void)es;
    return 0;
}

/* Rows [i0, i1) of lanes [j0, j1), element by element in 8-row blocks; the
 * copies have a constant size in each case, so they compile to moves (a
 * memcpy of size es is a call per element). */
#define LK_TRANSPOSE_SCALAR(T)                                                   \
    for (ptrdiff_t i = i0; i < i1; i += 8) {                                     \
        ptrdiff_t ie = i + 8 < i1 ? i + 8 : i1;                                  \
        for (ptrdiff_t j = j0; j < j1; j++)                                      \
            for (ptrdiff_t ii = i; ii < ie; ii++)                                \
                memcpy(dst + ii * drow + j * es, src + j * slane + ii * es, sizeof(T)); \
    }
static void lk_transpose_scalar(char *restrict dst, ptrdiff_t drow, const char *restrict src,
                                ptrdiff_t slane, ptrdiff_t i0, ptrdiff_t i1, ptrdiff_t j0,
                                ptrdiff_t j1, int es) {
    switch (es) {
    case 1: LK_TRANSPOSE_SCALAR(uint8_t); break;
    case 2: LK_TRANSPOSE_SCALAR(uint16_t); break;
    case 4: LK_TRANSPOSE_SCALAR(uint32_t); break;
    case 8: LK_TRANSPOSE_SCALAR(uint64_t); break;
    default:
        for (ptrdiff_t i = i0; i < i1; i++)
            for (ptrdiff_t j = j0; j < j1; j++)
                memcpy(dst + i * drow + j * es, src + j * slane + i * es, (size_t)es);
    }
}
#undef LK_TRANSPOSE_SCALAR

#ifdef LK_HAVE_SSE2
/* Rows [i0, i1) (i1 >= n) of `lanes` lanes (a multiple of n) by register
 * tiles read straight from the lanes; a last tile of n rows ends at i1,
 * overlapping rows done before it. (The staged loops cost more to set up than
 * an edge of a few tiles takes: 1x2048x7x7 float16 into NCHW32c, 64 edges of
 * 32 lanes, 2x the time through them.) */
static void lk_transpose_edge_rows(char *restrict dst, ptrdiff_t drow, const char *restrict src,
                                   ptrdiff_t slane, ptrdiff_t i0, ptrdiff_t i1, ptrdiff_t lanes,
                                   int es, int n) {
    while (i0 < i1) {
        ptrdiff_t i = i0 + n <= i1 ? i0 : i1 - n;
        for (ptrdiff_t j = 0; j < lanes; j += n) {
            char *d = dst + i * drow + j * es;
            const char *s = src + j * slane + i * es;
            switch (es) {
            case 1: lk_tile_8(d, drow, s, slane); break;
            case 2: lk_tile_16(d, drow, s, slane); break;
            case 4: lk_tile_32(d, drow, s, slane); break;
            default: lk_tile_64(d, drow, s, slane); break;
            }
        }
        i0 = i + n;
    }
}
#endif

#ifdef LK_HAVE_VBMI_TILES
/*
 * Chunk transposes (AVX-512BW) for transposes that fit in L2 (1x2048x7x7:
 * 2048 lanes of 49 rows, or 49 lanes of 2048 rows). A tile is L = 64 / es
 * lanes by R = 16 / es rows: register k gathers 16 bytes (R rows) of lanes k,
 * R + k, 2R + k and 3R + k into its four 16-byte chunks (masked broadcasts,
 * whose merge may go to either vector port where an insert takes the shuffle
 * port: 0.95-0.99x the time), log2(R) rounds of
 * unpacks transpose every chunk in place, and register t then holds row t of
 * all L lanes, one 64-byte store. Blocks of four groups of rows (64 bytes of
 * each lane) go together, so that each lane's line is read once. For 1- and
 * 2-byte elements those lines are first copied to an L1 stage, where the
 * 16-byte reads take constant offsets (64 lanes' offsets do not fit in
 * registers: 0.7x the time for bytes). With 4+ tiles of lanes, destination
 * rows a multiple of 64 bytes apart start their full tiles on a line (numpy's
 * data sits 16 bytes into one: float32 2048 x 49 1.9x the time unaligned).
 * Edges: a last tile of lanes overlaps the one before, a tile of fewer than L
 * lanes repeats its last lane and stores under a mask, and a last group of R
 * rows overlaps the rows before it.
 */
#define LK_CT_UNPACK(w, lo, a, b)                                                           \
    ((w) == 1   ? ((lo) ? _mm512_unpacklo_epi8(a, b) : _mm512_unpackhi_epi8(a, b))         \
     : (w) == 2 ? ((lo) ? _mm512_unpacklo_epi16(a, b) : _mm512_unpackhi_epi16(a, b))       \
     : (w) == 4 ? ((lo) ? _mm512_unpacklo_epi32(a, b) : _mm512_unpackhi_epi32(a, b))       \
                : ((lo) ? _mm512_unpacklo_epi64(a, b) : _mm512_unpackhi_epi64(a, b)))
/* After the rounds (each pairing registers 2p and 2p + 1 into p and p + R/2),
 * row t sits in register bit-reverse(t). */
#define LK_CT_BITREV(t, bits)                                                               \
    ((bits) == 4   ? (((t) & 1) << 3 | ((t) & 2) << 1 | ((t) & 4) >> 1 | ((t) & 8) >> 3)   \
     : (bits) == 3 ? (((t) & 1) << 2 | ((t) & 2) | ((t) & 4) >> 2)                         \
     : (bits) == 2 ? (((t) & 1) << 1 | ((t) & 2) >> 1)                                      \
                   : (t))
/* R rows from byte `off` of the L lanes at LANE(q) into rows d, d + drow, ...;
 * `mask` selects the bytes stored when the tile has fewer than L lanes. */
#define LK_CT_GROUP(ES, NAME, LANE_ARGS, LANE)                                              \
    LK_VBMI __attribute__((always_inline)) static inline void NAME(                         \
        char *d, ptrdiff_t drow, LANE_ARGS, ptrdiff_t off, __mmask64 mask, int nt) {        \
        enum { R = 16 / ES, BITS = ES == 1 ? 4 : ES == 2 ? 3 : 2 };                         \
        __m512i a[R], b[R];                                                                 \
        _Pragma("GCC unroll 16") for (int k = 0; k < R; k++) {                              \
            __m512i v = _mm512_castsi128_si512(                                             \
                _mm_loadu_si128((const __m128i *)(LANE(k) + off)));                         \
            v = _mm512_mask_broadcast_i32x4(                                                \
                v, 0x00F0, _mm_loadu_si128((const __m128i *)(LANE(R + k) + off)));          \
            v = _mm512_mask_broadcast_i32x4(                                                \
                v, 0x0F00, _mm_loadu_si128((const __m128i *)(LANE(2 * R + k) + off)));      \
            v = _mm512_mask_broadcast_i32x4(                                                \
                v, 0xF000, _mm_loadu_si128((const __m128i *)(LANE(3 * R + k) + off)));      \
            a[k] = v;                                                                       \
        }                                                                                   \
        _Pragma("GCC unroll 4") for (int w = ES; w < 16; w *= 2) {                          \
            _Pragma("GCC unroll 8") for (int p = 0; p < R / 2; p++) {                       \
                b[p] = LK_CT_UNPACK(w, 1, a[2 * p], a[2 * p + 1]);                          \
                b[p + R / 2] = LK_CT_UNPACK(w, 0, a[2 * p], a[2 * p + 1]);                  \
            }                                                                               \
            _Pragma("GCC unroll 16") for (int p = 0; p < R; p++) a[p] = b[p];               \
        }                                                                                   \
        _Pragma("GCC unroll 16") for (int t = 0; t < R; t++) {                              \
            if (mask == ~(__mmask64)0 && nt)                                                \
                _mm512_stream_si512((__m512i *)(d + t * drow), a[LK_CT_BITREV(t, BITS)]);   \
            else if (mask == ~(__mmask64)0)                                                 \
                _mm512_storeu_si512(d + t * drow, a[LK_CT_BITREV(t, BITS)]);                \
            else                                                                            \
                _mm512_mask_storeu_epi8(d + t * drow, mask, a[LK_CT_BITREV(t, BITS)]);      \
        }                                                                                   \
    }
#define LK_CT_STRIDED(q) (s + (q) * sl)
#define LK_CT_LISTED(q) (lp[q])
#define LK_CT_STRIDED_ARGS const char *s, ptrdiff_t sl
#define LK_CT_LISTED_ARGS const char *const *lp
/* A tile: n rows (R to 4R) from row i of lanes s + q * slane (lp == NULL) or
 * lp[q], into rows d, d + drow, ...; groups of R rows, the last one
 * overlapping the one before when R does not divide n. For 1- and 2-byte
 * elements, 4R rows (each lane's 64 bytes) go through an L1 stage first;
 * staging fewer rows under a mask measured slower (bytes of 49 rows, 1.15x the
 * time). */
#define LK_DEFINE_CHUNK_TRANSPOSE(ES)                                                       \
    LK_CT_GROUP(ES, lk_ct_strided##ES, LK_CT_STRIDED_ARGS, LK_CT_STRIDED)                   \
    LK_CT_GROUP(ES, lk_ct_listed##ES, LK_CT_LISTED_ARGS, LK_CT_LISTED)                      \
    LK_VBMI __attribute__((always_inline)) static inline void lk_ct_tile##ES(               \
        char *d, ptrdiff_t drow, const char *s, ptrdiff_t slane, const char *const *lp,     \
        ptrdiff_t i, ptrdiff_t n, __mmask64 mask, int nt) {                                 \
        enum { L = 64 / ES, R = 16 / ES };                                                  \
        const ptrdiff_t groups = (n + R - 1) / R;                                           \
        if (ES <= 2 && n == 4 * R) {                                                        \
            char stage[64 * L] __attribute__((aligned(64)));                                \
            for (int q = 0; q < L; q++)                                                     \
                _mm512_store_si512(stage + 64 * q,                                          \
                                   _mm512_loadu_si512((lp ? lp[q] : s + q * slane) + i * ES)); \
            for (int g = 0; g < 4; g++)                                                     \
                lk_ct_strided##ES(d + g * R * drow, drow, stage, 64, g * 16, mask, nt);       \
        } else {                                                                            \
            for (ptrdiff_t g = 0; g < groups; g++) {                                        \
                ptrdiff_t o = g * R < n - R ? g * R : n - R;                                \
                if (lp)                                                                     \
                    lk_ct_listed##ES(d + o * drow, drow, lp, (i + o) * ES, mask, nt);         \
                else                                                                        \
                    lk_ct_strided##ES(d + o * drow, drow, s + (i + o) * ES, slane, 0, mask, nt);\
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
    LK_VBMI static void lk_transpose_chunks##ES(char *dst, ptrdiff_t drow, const char *src, \
                                                ptrdiff_t slane, ptrdiff_t rows,            \
                                                ptrdiff_t lanes) {                          \
        enum { L = 64 / ES, R = 16 / ES };                                                  \
        /* Short dense rows (49 channels of a pixel into NCHW): each block of  \
         * 4R rows is built in an L1 buffer and copied out in one run, where   \
         * 64-byte stores straight to rows 196 bytes apart split lines and     \
         * took most of the time. */                                                        \
        char ostage[ES == 4 ? 4 * R * 256 : 64] __attribute__((aligned(64)));               \
        int by_stage = ES == 4 && drow == lanes * ES && drow <= 256;                        \
        /* A partial tile first: all lanes when fewer than L, else (from 4L    \
         * lanes on) the lanes before the destination's first line boundary;  \
         * for fewer it was one more tile (NCHW32c float16 of 7x7 planes: 1.5x \
         * the time). */                                                                     \
        ptrdiff_t part = lanes < L ? lanes : 0;                                             \
        if (!part && !by_stage && lanes >= 4 * L && drow % 64 == 0 && (uintptr_t)dst % ES == 0) \
            part = (ptrdiff_t)((64 - (uintptr_t)dst % 64) % 64) / ES;                       \
        const char *lp[L];                                                                  \
        for (int q = 0; q < L && part; q++) lp[q] = src + (q < part ? q : part - 1) * slane; \
        __mmask64 mask = part ? ((__mmask64)1 << (part * ES)) - 1 : ~(__mmask64)0;          \
        /* A few lanes past the whole tiles go element by element rather than  \
         * in a whole overlapping tile. */                                                  \
        ptrdiff_t tiled = lanes, few = 0, n;                                                \
        if (by_stage && lanes >= L && lanes % L != 0 && lanes % L <= L / 4) {               \
            few = lanes % L;                                                                \
            tiled = lanes - few;                                                            \
        }                                                                                   \
        for (ptrdiff_t i = 0; i < rows; i += n) {                                           \
            n = rows - i < 4 * R ? rows - i : 4 * R;                                        \
            if (n < R) {                                                                    \
                i = rows - R;                                                               \
                n = R;                                                                      \
            }                                                                               \
            char *out = n == 4 * R && by_stage ? ostage : dst + i * drow;                   \
            if (part) lk_ct_tile##ES(out, drow, NULL, 0, lp, i, n, mask, 0);                 \
            for (ptrdiff_t j = part; j < tiled && lanes >= L; j += L) {                     \
                ptrdiff_t jj = j + L <= tiled ? j : tiled - L;                              \
                lk_ct_tile##ES(out + jj * ES, drow, src + jj * slane, slane, NULL, i, n,    \
                               ~(__mmask64)0, 0);                                           \
            }                                                                               \
            if (few) lk_transpose_scalar(out, drow, src + i * ES, slane, 0, n, tiled, lanes, ES); \
            if (out == ostage) memcpy(dst + i * drow, ostage, (size_t)(n * drow));          \
        }                                                                                   \
    }
LK_DEFINE_CHUNK_TRANSPOSE(1)
LK_DEFINE_CHUNK_TRANSPOSE(2)
LK_DEFINE_CHUNK_TRANSPOSE(4)

/* Byte lane tiles, for transposes whose output streams: a tile of 64 lanes
 * goes through all rows, 64 at a time, before the next, so its lines come
 * from memory once and are used whole while in L1, and each destination row
 * gets one whole line per tile, one streaming store. The row runs above read
 * the lines of 256 lanes (64 KiB, more than L1) in four passes: NHWC -> NCHW
 * uint8 of 8x256x56x56 took 0.78x their time (best of 60 hot-loop batches,
 * alternating processes; bytes with stores through the cache 1.1-1.2x, and
 * float16's 32-lane tiles, streamed, 1.09-1.2x alternating in one process,
 * so float16 keeps the row runs). The lanes before the destination's
 * first line, and the last lanes past whole tiles, take a tile that repeats
 * its last lane and stores under a mask. */
LK_VBMI static void lk_transpose_lanetiles1(char *dst, ptrdiff_t drow, const char *src,
                                            ptrdiff_t slane, ptrdiff_t rows, ptrdiff_t lanes) {
    enum { L = 64 };
    ptrdiff_t head = (ptrdiff_t)((64 - (uintptr_t)dst % 64) % 64);
    for (ptrdiff_t j = 0; j < lanes;) {
        ptrdiff_t w = j == 0 && head ? head : lanes - j < L ? lanes - j : L;
        const char *lp[L];
        for (int q = 0; q < L && w < L; q++) lp[q] = src + (j + (q < w ? q : w - 1)) * slane;
        __mmask64 mask = w < L ? ((__mmask64)1 << w) - 1 : ~(__mmask64)0;
        for (ptrdiff_t i0 = 0; i0 < rows; i0 += L) {
            ptrdiff_t i = i0 + L <= rows ? i0 : rows - L;
            if (w < L)
                lk_ct_tile1(dst + i * drow + j, drow, NULL, 0, lp, i, L, mask, 0);
            else
                lk_ct_tile1(dst + i * drow + j, drow, src + j * slane, slane, NULL, i, L, mask, 1);
        }
        j += w;
    }
    _mm_sfence();
}

/* Whether lk_transpose takes the chunk transposes: Intel with AVX-512 (not
 * measured on AMD), 1-, 2- or 4-byte elements, at least half a tile of lanes
 * and 16 rows, and the whole operation within L2 (larger ones, and the
 * slices of a batch, go to the kernels that stream: NHWC -> NCHW uint8 of
 * 8x256x56x56, 800 KiB a slice, took 1.15x the time here). 16-32 float32
 * lanes only from 8192 elements: 16 or 32 planes of 7x7 into NCHW16c /
 * NCHW32c took 1.3-1.8x the time of the tiles, and 16 lanes of 256 rows
 * 1.06x; 32 lanes of 256+ rows took 0.6-0.85x (16 x 12544: 0.61x). */
static inline int lk_chunk_transpose_fits(ptrdiff_t rows, ptrdiff_t lanes, int es) {
    int f32_ok = lanes > 32 || (lanes >= 16 && rows * lanes >= 8192);
    return (es == 1 || es == 2 || (es == 4 && f32_ok)) && lanes >= 32 / es && rows >= 16 &&
           rows * lanes * es <= ((ptrdiff_t)1 << 20) &&
           (lk_footprint_hint == 0 || lk_footprint_hint <= ((ptrdiff_t)2 << 20)) &&
           lk_simd() != 0 && !lk_is_amd() &&
           lk_vbmi();
}
#endif

#ifdef LK_HAVE_VBMI_TILES
/* Whether lk_transpose takes lk_transpose_z32: 4-byte lanes a multiple of
 * 4 KiB apart into rows that are not, within L2, on Zen 5 (measured there
 * only). bench/c/transpose_regimes.c 4 49 2048 (NHWC -> NCHW float32 of
 * 1x2048x7x7): 16.8-21 us against 20-22 us hot, 33-39 us against 49-71 us
 * with the source evicted. */
static inline int lk_transpose_aliased_z32(ptrdiff_t rows, ptrdiff_t lanes, ptrdiff_t slane,
                                           ptrdiff_t drow, int es) {
    return es == 4 && rows >= 16 && lanes >= 16 && slane % 4096 == 0 && drow % 4096 != 0 &&
           rows * lanes * es <= ((ptrdiff_t)1 << 20) && lk_simd() != 0 && lk_is_amd() &&
           !lk_split_avx512() && lk_vbmi();
}
#endif

static void lk_transpose(char *restrict dst, ptrdiff_t drow, const char *restrict src,
                         ptrdiff_t slane, ptrdiff_t rows, ptrdiff_t lanes, int es) {
    ptrdiff_t i = 0;
    int n = lk_simd() == 0 ? 0 : lk_tile_lanes(es);
#ifdef LK_HAVE_VBMI_TILES
    if (lanes == 16 && es == 2 && drow == 32 && rows <= 64 && !lk_split_avx512() && lk_vbmi()) {
        /* 16 planes of 7x7 float16 into NCHW16c: the zip kernel, 0.67-0.86x
         * the time of the tiles (best of 60 hot-loop batches, 1x2048x7x7)
         * and 0.9x that of the lane tiles below, which take 10x10 planes on
         * (0.85-0.9x the time of this kernel). */
        const void *tab[16];
        for (int l = 0; l < 16; l++) tab[l] = src + l * slane;
        lk_interleave_zip16x2(dst, tab, 0, rows);
        return;
    }
#endif
#ifdef LK_HAVE_VBMI_TILES
    if (lk_transpose_aliased_z32(rows, lanes, slane, drow, es)) {
        lk_transpose_z32(dst, drow, src, slane, rows, lanes);
        return;
    }
    if (drow == lanes * es && (lanes == 8 || lanes == 16 || lanes == 32) &&
        lk_lanetiles_fit(rows, (int)lanes, slane, es)) {
        /* Dense pixels of 8-32 channels (NCHW8c-32c, kCHW32): bytes 0.42-0.7x
         * the time of the tiles below for 10x10 to 56x56 planes, 0.88-0.92x
         * for 128x128 to 256x256; float16 0.47-0.89x, float32 0.65-0.8x. */
        lk_lanetiles_boxes_at(dst, 0, src, slane, 0, 1, rows, (int)lanes, es);
        return;
    }
    /* 128-512 rows: two or more blocks of a tile's lines, which still fit L1. */
    if (es == 1 && rows >= 128 && rows <= 512 && lanes >= 256 && drow % 64 == 0 &&
        lk_stream_output(rows * drow) && lk_simd() != 0 && !lk_split_avx512() && lk_vbmi()) {
        lk_transpose_lanetiles1(dst, drow, src, slane, rows, lanes);
        return;
    }
    if (lk_chunk_transpose_fits(rows, lanes, es)) {
        switch (es) {
        case 1: lk_transpose_chunks1(dst, drow, src, slane, rows, lanes); break;
        case 2: lk_transpose_chunks2(dst, drow, src, slane, rows, lanes); break;
        default: lk_transpose_chunks4(dst, drow, src, slane, rows, lanes); break;
        }
        return;
    }
#endif
#ifdef LK_HAVE_AVX2_TILES
    if (n && lk_avx2() && lk_rowruns_fit(drow, rows, lanes, es)) {
        ptrdiff_t done, head = (ptrdiff_t)((64 - (uintptr_t)dst % 64) % 64);
        if (head % es == 0 && drow % 64 == 0 && head) {
            /* The first lanes by the tiles below, so that every row's runs are
             * whole lines (numpy's data sits 16 bytes into a page: ~30% slower
             * unaligned, and streamed runs must not leave partial lines). */
            head /= es;
            lk_transpose(dst, drow, src, slane, rows, head, es);
            dst += head * es;
            src += head * slane;
            lanes -= head;
        }
        done = lk_transpose_rowruns_avx2(dst, drow, src, slane, rows, lanes, es);
        dst += done * es;
        src += done * slane;
        lanes -= done;
        if (lanes == 0) return;
    }
#endif
#ifdef LK_HAVE_SSE2
    if (n) {
        ptrdiff_t head = lk_aligned_head_rows(src, drow, slane, rows, lanes, es), full_rows;
        if (head && rows > 2 * head) {
            lk_transpose(dst, drow, src, slane, head, lanes, es);
            dst += head * drow;
            src += head * es;
            rows -= head;
        }
        full_rows = rows - rows % n;
        ptrdiff_t full_lanes = lanes - lanes % n;
#ifdef LK_HAVE_AVX2_TILES
        /* Bytes: the pipeline from one unit of rows (256) on, the rows past
         * its last unit by the staged loops (against those loops alone, C
         * harness, Zen 4: 16 lanes of 400-3136 rows 0.7-0.8x the time, 32-256
         * lanes of 256-784 rows 0.85x). Wider elements from two tiles of rows
         * on, except 2-byte elements under 4096 rows whose lanes or
         * destination rows are a multiple of 4 KiB apart, where the staged
         * loops keep within L1's ways (Zen 4, float16 NCHW <-> NHWC of
         * 1x2048x7x7: 0.55-0.75x the time of the direct tiles; float32 is the
         * other way round). Lanes 4 KiB apart (NHWC -> NCHW) only on AMD: on
         * the Xeon (Sapphire Rapids) the direct tiles took 13.2 us for 49
         * lanes x 2048 rows against 23.4 us staged (C harness). */
        int short_aliased = es == 2 && rows < 4096 &&
                            (drow % 4096 == 0 || (slane % 4096 == 0 && lk_is_amd()));
        if (lk_avx2() && es == 1 && full_lanes >= n && rows >= LK_PIPE_BYTES) {
            ptrdiff_t done = lk_transpose_bytes(dst, drow, src, slane, full_rows, full_lanes);
            lk_transpose_full_avx2(dst + done * drow, drow, src + done, slane, full_rows - done,
                                   full_lanes, es, n);
        } else if (lk_avx2() && es != 1 && full_lanes >= n && !short_aliased && rows >= 2 * n) {
            full_rows = rows - rows % (2 * n);
            lk_transpose_direct_avx2(dst, drow, src, slane, full_rows, full_lanes, es, n);
        } else if (lk_avx2())
            lk_transpose_full_avx2(dst, drow, src, slane, full_rows, full_lanes, es, n);
        else
#endif
            lk_transpose_full_sse2(dst, drow, src, slane, full_rows, full_lanes, es, n);
        if (full_lanes >= n && rows >= n) {
            /* The edges by register tiles that overlap the part already done,
             * rewriting a few elements with the same values, instead of one
             * element at a time: NCHW -> NHWC of 1x2048x7x7 (49 rows) took
             * 15.9 us for bytes and 31.3 us for float16 with its last row
             * copied per element, 9.0 and 10.0 us for 48 rows (Zen 4). */
            if (full_rows < rows)
                lk_transpose_edge_rows(dst, drow, src, slane, full_rows, rows, full_lanes, es, n);
            if (full_lanes < lanes) {
                ptrdiff_t j0 = lanes - n;
                lk_transpose_edge_rows(dst + j0 * es, drow, src + j0 * slane, slane, 0, rows, n,
                                       es, n);
            }
            return;
        }
        /* Fewer lanes or rows than a tile: the rest element by element. */
        lk_transpose_scalar(dst, drow, src, slane, 0, full_rows, full_lanes, lanes, es);
        i = full_rows;
    }
#endif
    /* Remaining rows (all rows without register tiles). */
    lk_transpose_scalar(dst, drow, src, slane, i, rows, 0, lanes, es);
}

/*
 * Non-temporal copies for outputs larger than the last-level cache: the kernel
 * builds a few KiB of output in an L1 staging buffer and streams it out, so the
 * destination's lines are written without first being read (write-allocate).
 * On this class of machine that lifts large repacks from ~18 to ~30 GB/s, above
 * what memcpy itself reaches. Other platforms fall back to memcpy.
 */
static inline void lk_stream_copy(char *restrict dst, const char *restrict src, size_t n) {
#ifdef LK_HAVE_SSE2
    /* Only whole, aligned 64-byte lines are streamed; a partial line at either
     * end is stored through the cache, where the neighbouring piece completes
     * it. Streaming partial lines made the write-combining buffers flush them
     * piecemeal: with the destination 16 or 32 bytes into a line (numpy's
     * heap arrays often are), NHWC -> NCHW float32 1x64x256x256 took 5.5 ms
     * against 2.9 ms line-aligned. */
    size_t head = (64 - ((uintptr_t)dst & 63)) & 63;
    if (n >= head + 64) {
        memcpy(dst, src, head);
        dst += head;
        src += head;
        n -= head;
        for (; n >= 64; n -= 64, dst += 64, src += 64) {
            __m128i a = _mm_loadu_si128((const __m128i *)src);
            __m128i b = _mm_loadu_si128((const __m128i *)(src + 16));
            __m128i c = _mm_loadu_si128((const __m128i *)(src + 32));
            __m128i d = _mm_loadu_si128((const __m128i *)(src + 48));
            _mm_stream_si128((__m128i *)dst, a);
            _mm_stream_si128((__m128i *)(dst + 16), b);
            _mm_stream_si128((__m128i *)(dst + 32), c);
            _mm_stream_si128((__m128i *)(dst + 48), d);
        }
    }
#endif
    memcpy(dst, src, n);
}

/* 4, 8 or 16 lanes of 2- or 4-byte elements into dense pixels (NCHW4c-16c,
 * HCWNC4 / HCWNC8 of channel planes) written with streaming stores, for
 * outputs beyond the cache: a step loads 16 bytes of each lane, transposes
 * them in registers and stores whole pixels in address order, 16 bytes at a
 * time, so the write-combining buffers fill line by line. Stores through the
 * cache read every destination line from memory first: NCHW -> NCHW4c float32
 * of 8x256x56x56 (C harness, Xeon) took 2750 us so, 1600 us streamed, and
 * 2200 us built in L1 and streamed with lk_stream_copy. Returns the pixels
 * done (whole steps), 0 where it does not apply (out not 16-byte aligned,
 * other sizes, LAYOUTKIT_SIMD=portable). The caller fences. */
static ptrdiff_t lk_interleave_stream(char *restrict out, const void *const *lanes, ptrdiff_t m,
                                      int k, int es) {
#ifdef LK_HAVE_SSE2
    const ptrdiff_t per = 16 / (es > 0 ? es : 1);
    ptrdiff_t i = 0;
    if (lk_simd() == 0 || (uintptr_t)out % 16 != 0 || !(k == 4 || k == 8 || k == 16) ||
        !(es == 2 || es == 4))
        return 0;
    const char *l[16];
    for (int j = 0; j < k; j++) l[j] = (const char *)lanes[j];
#define LK_ILS_LOAD(j) _mm_loadu_si128((const __m128i *)(l[j] + i * es))
#define LK_ILS_PUT(q, v) _mm_stream_si128((__m128i *)(o + 16 * (q)), v)
    /* Lanes 4h..4h+3 of a step: two rounds of unpacks (elements, then pairs
     * of them) leave r[q] with element q of each lane side by side (es = 4:
     * pixel q's 16 bytes of the group; es = 2: pixels 2q and 2q + 1). */
#define LK_ILS_GROUP(r, h, LO1, HI1, LO2, HI2)                                   \
    {                                                                            \
        __m128i a = LK_ILS_LOAD(4 * (h)), b = LK_ILS_LOAD(4 * (h) + 1);          \
        __m128i c = LK_ILS_LOAD(4 * (h) + 2), d = LK_ILS_LOAD(4 * (h) + 3);      \
        __m128i t0 = LO1(a, b), t1 = HI1(a, b), t2 = LO1(c, d), t3 = HI1(c, d);  \
        (r)[0] = LO2(t0, t2);                                                    \
        (r)[1] = HI2(t0, t2);                                                    \
        (r)[2] = LO2(t1, t3);                                                    \
        (r)[3] = HI2(t1, t3);                                                    \
    }
    for (; i + per <= m; i += per) {
        char *o = out + i * k * es;
        __m128i g[4][4];
        if (es == 4) {
            for (int h = 0; h < k / 4; h++)
                LK_ILS_GROUP(g[h], h, _mm_unpacklo_epi32, _mm_unpackhi_epi32, _mm_unpacklo_epi64,
                             _mm_unpackhi_epi64)
            for (int q = 0; q < 4; q++)
                for (int h = 0; h < k / 4; h++) LK_ILS_PUT(q * (k / 4) + h, g[h][q]);
            continue;
        }
        for (int h = 0; h < k / 4; h++)
            LK_ILS_GROUP(g[h], h, _mm_unpacklo_epi16, _mm_unpackhi_epi16, _mm_unpacklo_epi32,
                         _mm_unpackhi_epi32)
        if (k == 4) {
            for (int r = 0; r < 4; r++) LK_ILS_PUT(r, g[0][r]);
        } else {
            /* Pixel 2r is the low halves of groups 0..k/4-1, pixel 2r + 1 the
             * high halves: k / 8 stores of 16 bytes each. */
            const int w = k / 8;
            for (int r = 0; r < 4; r++)
                for (int odd = 0; odd < 2; odd++)
                    for (int h = 0; h < w; h++) {
                        __m128i a = g[2 * h][r], b = g[2 * h + 1][r];
                        LK_ILS_PUT((2 * r + odd) * w + h, odd ? _mm_unpackhi_epi64(a, b)
                                                               : _mm_unpacklo_epi64(a, b));
                    }
        }
    }
#undef LK_ILS_GROUP
#undef LK_ILS_LOAD
#undef LK_ILS_PUT
    return i;
#else
    (void)out; (void)lanes; (void)m; (void)k; (void)es;
    return 0;
#endif
}

/* Order streamed stores before anything that follows (end of a kernel run). */
static inline void lk_stream_fence(void) {
#ifdef LK_HAVE_SSE2
    _mm_sfence();
#endif
}

/* Whether streaming stores exist here (1) or lk_stream_copy is plain memcpy (0). */
static inline int lk_stream_native(void) {
#ifdef LK_HAVE_SSE2
    return 1;
#else
    return 0;
#endif
}

/*
 * Grids of small interleave boxes: HTP Crouton4x1 (4 byte lanes of 32) and
 * Crouton2 (2 half-word lanes of 32) to and from NHWC. Every box is 128 bytes,
 * one fixed shuffle. Walking them box by box (a lane table, the dispatch, a
 * call or a staged copy per box) cost more than the shuffles: in the suite,
 * NHWC -> Crouton4x1 8x256x56x56 1.62 -> 0.64 ms, 1x64x256x256 0.97 -> 0.27
 * ms; NHWC -> Crouton2 float16 1x64x256x256 2.1 -> 1.1 ms; the way back
 * 0.5-0.9x the time. Here up to four levels of boxes run in one call.
 *
 * levels[0..3]: extent, source and destination byte steps; the last is the
 * fastest. Interleaves (LK_GRID_IL*) read k lanes `stride` bytes apart, m
 * elements each, and write m * k contiguous elements; de-interleaves
 * (LK_GRID_DI*) read m pixels of k contiguous elements and write k rows of m
 * elements, `stride` bytes apart. Interleaves may have padding lanes: only the
 * first `data` lanes are read, the others take the 32-byte pattern `pad`
 * (Crouton4x1 / Crouton2 of a W that is not a multiple of 4 / 2: the last
 * column group of 7x7 planes); de-interleaves then write only `data` rows.
 * Returns 0 (nothing done) without AVX2 or for an m the kernel does not take;
 * the caller then walks the boxes itself.
 */
typedef struct {
    ptrdiff_t n, s, d;
} lk_grid_level;

enum { LK_GRID_IL4_U8 = 1, LK_GRID_IL2_U16 = 2, LK_GRID_DI4_U8 = 3, LK_GRID_DI2_U16 = 4 };

#ifdef LK_HAVE_AVX2_TILES
/* Step i0 of a box of m elements, `step` at a time (m >= step): a last step
 * past m ends at m instead, rewriting elements already done with the same
 * values (NCHW -> NCHW4c of 1x2048x7x7 bytes, m = 49: 4.2 us a call against
 * 12.7 us walking the boxes). */
#define LK_BOX_STEP_AT(i0, step, m) ((i0) + (step) <= (m) ? (i0) : (m) - (step))

__attribute__((target("avx2"))) static inline void lk_box_il4_u8(char *restrict o,
                                                                const char *restrict s,
                                                                ptrdiff_t ls, ptrdiff_t m) {
    for (ptrdiff_t i0 = 0; i0 < m; i0 += 32) {
        ptrdiff_t i = LK_BOX_STEP_AT(i0, 32, m);
        __m256i va = _mm256_loadu_si256((const __m256i *)(s + i));
        __m256i vb = _mm256_loadu_si256((const __m256i *)(s + ls + i));
        __m256i vc = _mm256_loadu_si256((const __m256i *)(s + 2 * ls + i));
        __m256i vd = _mm256_loadu_si256((const __m256i *)(s + 3 * ls + i));
        lk_interleave4_u8_step(o + 4 * i, va, vb, vc, vd);
    }
}

/* The same with only the first `data` (1-3) lanes read, the rest `pad`. */
__attribute__((target("avx2"))) static inline void lk_box_il4_u8_padded(
    char *restrict o, const char *restrict s, ptrdiff_t ls, ptrdiff_t m, int data, __m256i pad) {
    for (ptrdiff_t i0 = 0; i0 < m; i0 += 32) {
        ptrdiff_t i = LK_BOX_STEP_AT(i0, 32, m);
        __m256i va = _mm256_loadu_si256((const __m256i *)(s + i));
        __m256i vb = data > 1 ? _mm256_loadu_si256((const __m256i *)(s + ls + i)) : pad;
        __m256i vc = data > 2 ? _mm256_loadu_si256((const __m256i *)(s + 2 * ls + i)) : pad;
        lk_interleave4_u8_step(o + 4 * i, va, vb, vc, pad);
    }
}

/* Two lanes of half-words, 16 per step: the unpacks leave pairs 0-3 | 8-11 and
 * 4-7 | 12-15; the permutes put the halves in order. */
__attribute__((target("avx2"))) static inline void lk_box_il2_u16(char *restrict o,
                                                                 const char *restrict s,
                                                                 ptrdiff_t ls, ptrdiff_t m) {
    for (ptrdiff_t i0 = 0; i0 < m; i0 += 16) {
        ptrdiff_t i = 2 * LK_BOX_STEP_AT(i0, 16, m); /* bytes into each lane */
        __m256i va = _mm256_loadu_si256((const __m256i *)(s + i));
        __m256i vb = _mm256_loadu_si256((const __m256i *)(s + ls + i));
        __m256i lo = _mm256_unpacklo_epi16(va, vb), hi = _mm256_unpackhi_epi16(va, vb);
        _mm256_storeu_si256((__m256i *)(o + 2 * i), _mm256_permute2x128_si256(lo, hi, 0x20));
        _mm256_storeu_si256((__m256i *)(o + 2 * i + 32), _mm256_permute2x128_si256(lo, hi, 0x31));
    }
}

/* One lane of half-words and a padding lane. */
__attribute__((target("avx2"))) static inline void lk_box_il2_u16_padded(char *restrict o,
                                                                        const char *restrict s,
                                                                        ptrdiff_t m, __m256i pad) {
    for (ptrdiff_t i0 = 0; i0 < m; i0 += 16) {
        ptrdiff_t i = 2 * LK_BOX_STEP_AT(i0, 16, m);
        __m256i va = _mm256_loadu_si256((const __m256i *)(s + i));
        __m256i lo = _mm256_unpacklo_epi16(va, pad), hi = _mm256_unpackhi_epi16(va, pad);
        _mm256_storeu_si256((__m256i *)(o + 2 * i), _mm256_permute2x128_si256(lo, hi, 0x20));
        _mm256_storeu_si256((__m256i *)(o + 2 * i + 32), _mm256_permute2x128_si256(lo, hi, 0x31));
    }
}

/* 16 pixels of two half-words -> two rows of 16: within each 128-bit half the
 * even half-words go low and the odd ones high, a 64-bit permute makes each
 * 32-byte load [evens | odds], and two 128-bit permutes join the loads. */
__attribute__((target("avx2"))) static inline void lk_box_di2_u16(char *restrict o, ptrdiff_t ob,
                                                                 const char *restrict s,
                                                                 ptrdiff_t m, int rows) {
    const __m256i split = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15,
                                           0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
    for (ptrdiff_t i0 = 0; i0 < m; i0 += 16) {
        ptrdiff_t i = 2 * LK_BOX_STEP_AT(i0, 16, m); /* bytes into each row */
        const char *p = s + 2 * i;
        __m256i a = _mm256_permute4x64_epi64(
            _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)p), split), 0xD8);
        __m256i b = _mm256_permute4x64_epi64(
            _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)(p + 32)), split), 0xD8);
        _mm256_storeu_si256((__m256i *)(o + i), _mm256_permute2x128_si256(a, b, 0x20));
        if (rows > 1)
            _mm256_storeu_si256((__m256i *)(o + ob + i), _mm256_permute2x128_si256(a, b, 0x31));
    }
}

/* 16 pixels of 4 bytes -> `rows` (1-4) rows of 16: a byte shuffle makes
 * each 16-byte load's dword r the r-th bytes of its 4 pixels, then a 4x4
 * dword transpose. */
__attribute__((target("avx2"))) static inline void lk_di4_u8_16(char *restrict o, ptrdiff_t ob,
                                                               const char *restrict s, int rows) {
    const __m128i t = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    __m128i a = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)s), t);
    __m128i b = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(s + 16)), t);
    __m128i c = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(s + 32)), t);
    __m128i d = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(s + 48)), t);
    __m128i ab0 = _mm_unpacklo_epi32(a, b), ab1 = _mm_unpackhi_epi32(a, b);
    __m128i cd0 = _mm_unpacklo_epi32(c, d), cd1 = _mm_unpackhi_epi32(c, d);
    _mm_storeu_si128((__m128i *)o, _mm_unpacklo_epi64(ab0, cd0));
    if (rows > 1) _mm_storeu_si128((__m128i *)(o + ob), _mm_unpackhi_epi64(ab0, cd0));
    if (rows > 2) _mm_storeu_si128((__m128i *)(o + 2 * ob), _mm_unpacklo_epi64(ab1, cd1));
    if (rows > 3) _mm_storeu_si128((__m128i *)(o + 3 * ob), _mm_unpackhi_epi64(ab1, cd1));
}

/* 32 pixels of 4 bytes -> `rows` (1-4) rows of 32 at a time; m >= 16 (16-31
 * pixels, croutons of 16-31 channels: two overlapping steps of 16). */
__attribute__((target("avx2"))) static inline void lk_box_di4_u8(char *restrict o, ptrdiff_t ob,
                                                                const char *restrict s,
                                                                ptrdiff_t m, int rows) {
    if (m < 32) {
        lk_di4_u8_16(o, ob, s, rows);
        if (m > 16) lk_di4_u8_16(o + m - 16, ob, s + 4 * (m - 16), rows);
        return;
    }
    ptrdiff_t done = lk_deinterleave4_avx2(o, ob, s, m, rows, 1);
    if (done < m) lk_deinterleave4_avx2(o + m - 32, ob, s + 4 * (m - 32), 32, rows, 1);
}

#define LK_GRID_LOOPS(BOX)                                                       \
    for (ptrdiff_t i0 = 0; i0 < lv[0].n; i0++)                                   \
        for (ptrdiff_t i1 = 0; i1 < lv[1].n; i1++)                               \
            for (ptrdiff_t i2 = 0; i2 < lv[2].n; i2++) {                         \
                const char *s = src + i0 * lv[0].s + i1 * lv[1].s + i2 * lv[2].s; \
                char *d = dst + i0 * lv[0].d + i1 * lv[1].d + i2 * lv[2].d;      \
                for (ptrdiff_t i3 = 0; i3 < lv[3].n; i3++, s += lv[3].s, d += lv[3].d) \
                    BOX;                                                         \
            }

__attribute__((target("avx2"), always_inline)) static inline void lk_box_grid_avx2_m(
    int kind, char *restrict dst, const char *restrict src, const lk_grid_level *lv,
    ptrdiff_t stride, ptrdiff_t m, int data, const void *pad) {
    __m256i vpad = pad ? _mm256_loadu_si256((const __m256i *)pad) : _mm256_setzero_si256();
    switch (kind) {
    case LK_GRID_IL4_U8:
        if (data < 4) {
            LK_GRID_LOOPS(lk_box_il4_u8_padded(d, s, stride, m, data, vpad))
        } else {
            LK_GRID_LOOPS(lk_box_il4_u8(d, s, stride, m))
        }
        break;
    case LK_GRID_IL2_U16:
        if (data < 2) {
            LK_GRID_LOOPS(lk_box_il2_u16_padded(d, s, m, vpad))
        } else {
            LK_GRID_LOOPS(lk_box_il2_u16(d, s, stride, m))
        }
        break;
    case LK_GRID_DI4_U8: LK_GRID_LOOPS(lk_box_di4_u8(d, stride, s, m, data)) break;
    default: LK_GRID_LOOPS(lk_box_di2_u16(d, stride, s, m, data)) break;
    }
}

/* The boxes of croutons are 32 channels: with m a constant the box's steps
 * unroll, without its step arithmetic and branches per box of 128 bytes
 * (NHWC -> Crouton2 float16 of 8x256x56x56 took 1.75x the time of the same
 * loop compiled with m = 32, in one process on the same buffers). */
__attribute__((target("avx2"))) static void lk_box_grid_avx2(int kind, char *restrict dst,
                                                            const char *restrict src,
                                                            const lk_grid_level *lv,
                                                            ptrdiff_t stride, ptrdiff_t m,
                                                            int data, const void *pad) {
    if (m == 32)
        lk_box_grid_avx2_m(kind, dst, src, lv, stride, 32, data, pad);
    else
        lk_box_grid_avx2_m(kind, dst, src, lv, stride, m, data, pad);
}
#endif

#ifdef LK_HAVE_VBMI_TILES
/* De-interleave grids of operations within L2 (lk_small_operation) by byte
 * permutes of two registers (vpermt2b: one shuffle per 64 bytes out, where
 * the AVX2 boxes take two to three): 32 pixels a step, the last step
 * overlapping the one before; m >= 32 (Intel and Zen 5, not Zen 4). Against
 * the AVX2 boxes, alternating in one process (bench/ab_env.py): Crouton2 ->
 * NHWC float16 / Crouton4x1 -> NHWC uint8 of 1x2048x7x7 0.85-0.89x / 0.97x
 * the time. Larger operations were within 3% in that hot loop, but in the
 * suite, whose copy reference evicts the data between calls, Crouton2 ->
 * NHWC float16 of 8x256x56x56 fell from 0.75-0.82x copy to 0.64-0.71x (three
 * full runs; its 64-byte loads all split lines at numpy's 16-byte offset).
 * The same for the interleaves (packing) took 1.06-1.2x the time even in a
 * hot loop, and the four byte lanes need two inserts a step.
 *
 * Byte indices over registers A, B (128 bytes of pixels): out register r,
 * byte b is row 2r + b / 32, pixel b % 32 (4-byte pixels: two rows a
 * register), or row r, half-word b / 2 (pixels of two half-words). */
static const uint8_t lk_grid_di4[2][64] __attribute__((aligned(64))) = {
    {0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80, 84, 88, 92, 96, 100, 104, 108, 112, 116, 120, 124, 1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 49, 53, 57, 61, 65, 69, 73, 77, 81, 85, 89, 93, 97, 101, 105, 109, 113, 117, 121, 125},
    {2, 6, 10, 14, 18, 22, 26, 30, 34, 38, 42, 46, 50, 54, 58, 62, 66, 70, 74, 78, 82, 86, 90, 94, 98, 102, 106, 110, 114, 118, 122, 126, 3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43, 47, 51, 55, 59, 63, 67, 71, 75, 79, 83, 87, 91, 95, 99, 103, 107, 111, 115, 119, 123, 127},
};
static const uint8_t lk_grid_di2[2][64] __attribute__((aligned(64))) = {
    {0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29, 32, 33, 36, 37, 40, 41, 44, 45, 48, 49, 52, 53, 56, 57, 60, 61, 64, 65, 68, 69, 72, 73, 76, 77, 80, 81, 84, 85, 88, 89, 92, 93, 96, 97, 100, 101, 104, 105, 108, 109, 112, 113, 116, 117, 120, 121, 124, 125},
    {2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31, 34, 35, 38, 39, 42, 43, 46, 47, 50, 51, 54, 55, 58, 59, 62, 63, 66, 67, 70, 71, 74, 75, 78, 79, 82, 83, 86, 87, 90, 91, 94, 95, 98, 99, 102, 103, 106, 107, 110, 111, 114, 115, 118, 119, 122, 123, 126, 127},
};

/* 32 pixels of 4 bytes -> `rows` (1-4) rows. */
LK_VBMI static inline void lk_box_di4_u8_vbmi(char *restrict o, ptrdiff_t ob,
                                              const char *restrict s, ptrdiff_t m, int rows,
                                              __m512i t0, __m512i t1) {
    for (ptrdiff_t i0 = 0; i0 < m; i0 += 32) {
        ptrdiff_t i = LK_BOX_STEP_AT(i0, 32, m);
        __m512i a = _mm512_loadu_si512(s + 4 * i), b = _mm512_loadu_si512(s + 4 * i + 64);
        __m512i v = _mm512_permutex2var_epi8(a, t0, b);
        _mm256_storeu_si256((__m256i *)(o + i), _mm512_castsi512_si256(v));
        if (rows > 1)
            _mm256_storeu_si256((__m256i *)(o + ob + i), _mm512_extracti64x4_epi64(v, 1));
        if (rows > 2) {
            v = _mm512_permutex2var_epi8(a, t1, b);
            _mm256_storeu_si256((__m256i *)(o + 2 * ob + i), _mm512_castsi512_si256(v));
            if (rows > 3)
                _mm256_storeu_si256((__m256i *)(o + 3 * ob + i), _mm512_extracti64x4_epi64(v, 1));
        }
    }
}

/* 32 pixels of two half-words -> `rows` (1-2) rows. */
LK_VBMI static inline void lk_box_di2_u16_vbmi(char *restrict o, ptrdiff_t ob,
                                               const char *restrict s, ptrdiff_t m, int rows,
                                               __m512i t0, __m512i t1) {
    for (ptrdiff_t i0 = 0; i0 < m; i0 += 32) {
        ptrdiff_t i = 2 * LK_BOX_STEP_AT(i0, 32, m); /* bytes into each row */
        __m512i a = _mm512_loadu_si512(s + 2 * i), b = _mm512_loadu_si512(s + 2 * i + 64);
        _mm512_storeu_si512(o + i, _mm512_permutex2var_epi8(a, t0, b));
        if (rows > 1) _mm512_storeu_si512(o + ob + i, _mm512_permutex2var_epi8(a, t1, b));
    }
}

LK_VBMI static void lk_box_grid_di_vbmi(int kind, char *restrict dst, const char *restrict src,
                                        const lk_grid_level *lv, ptrdiff_t stride, ptrdiff_t m,
                                        int data) {
    const uint8_t(*tab)[64] = kind == LK_GRID_DI4_U8 ? lk_grid_di4 : lk_grid_di2;
    const __m512i t0 = _mm512_load_si512(tab[0]), t1 = _mm512_load_si512(tab[1]);
    if (kind == LK_GRID_DI4_U8)
        LK_GRID_LOOPS(lk_box_di4_u8_vbmi(d, stride, s, m, data, t0, t1))
    else
        LK_GRID_LOOPS(lk_box_di2_u16_vbmi(d, stride, s, m, data, t0, t1))
}
#endif

/* nl (1-4) levels, the last fastest; `data` lanes of an interleave are read
 * and the rest are the 32-byte pattern `pad` (data = 4 or 2, pad NULL: all
 * read); a de-interleave writes `data` rows, reading every slot of each pixel
 * (the caller knows them readable). See above. */
static inline int lk_box_grid(int kind, char *restrict dst, const char *restrict src,
                              const lk_grid_level *levels, int nl, ptrdiff_t stride,
                              ptrdiff_t m, int data, const void *pad) {
#ifdef LK_HAVE_AVX2_TILES
    lk_grid_level lv[4] = {{1, 0, 0}, {1, 0, 0}, {1, 0, 0}, {1, 0, 0}};
    int four = kind == LK_GRID_IL4_U8 || kind == LK_GRID_DI4_U8;
    ptrdiff_t step = kind == LK_GRID_IL4_U8 ? 32 : 16;
    if (lk_simd() == 0 || !lk_avx2() || m < step || nl < 1 || nl > 4 ||
        kind < LK_GRID_IL4_U8 || kind > LK_GRID_DI2_U16)
        return 0;
    if (data < 1 || data > (four ? 4 : 2) ||
        (data < (four ? 4 : 2) && kind <= LK_GRID_IL2_U16 && pad == NULL))
        return 0;
    for (int j = 0; j < nl; j++) lv[4 - nl + j] = levels[j];
#ifdef LK_HAVE_VBMI_TILES
    if ((kind == LK_GRID_DI4_U8 || kind == LK_GRID_DI2_U16) && m >= 32 && lk_small_operation() &&
        !lk_split_avx512() && lk_vbmi()) {
        lk_box_grid_di_vbmi(kind, dst, src, lv, stride, m, data);
        return 1;
    }
#endif
    lk_box_grid_avx2(kind, dst, src, lv, stride, m, data, pad);
    return 1;
#else
    (void)kind; (void)dst; (void)src; (void)levels; (void)nl; (void)stride; (void)m;
    (void)data; (void)pad;
    return 0;
#endif
}

/*
 * Small boxes through one byte shuffle. Croutons of a few channels (NHWC of 3
 * channels -> R4Crouton4x1 / R4Crouton2 / NHWC8h8w32c, and back) move a dozen
 * bytes per box: on the way in, each box is a 32-128 byte block of padding with
 * 4 pixels x 3 channels in its first 16 bytes; on the way out, those bytes are
 * gathered into 12 contiguous bytes. Per box that is one 16-byte load, one
 * shuffle, and a blend with the padding (or one or two overlapping stores), where
 * the walk paid a call and element-by-element moves.
 *
 * lk_smallbox_plan describes the data of one box: rows r in [r_lo, r_hi) and
 * lanes l in [l_lo, l_hi) of es-byte elements, at source offset r*s0 + l*s1 and
 * destination offset r*d0 + l*d1 (steps >= 0). It fits when the data's source
 * bytes lie within 16 bytes and, packing, the box is `box` bytes of padding made
 * of nsub (1, 2 or 4) equal sub-boxes, each with its data in its first 16 bytes
 * (4 pixels of 32 bytes with 3 channels each: one load for 4 pixels); or,
 * unpacking, the data is exactly the box's first q <= 16 bytes, gathered from
 * one load or, with nsub > 1, from one load per row (4 pixels of NHWC8h8w32c,
 * 32 bytes apart, into 12 bytes: one pair of stores for 4 pixels).
 */
typedef struct {
    uint8_t perm[16];   /* unpacking: window byte for each box byte; 0x80: none */
    uint8_t sub[4][16]; /* packing: the same for each sub-box's first 16 bytes;
                           unpacking nsub > 1 loads: box byte of each load's bytes */
    uint8_t tail[16]; /* unpacking: perm of bytes q - w .. q - 1 (the last store) */
    uint8_t pad[16];  /* packing: the padding pattern */
    ptrdiff_t win;    /* window bytes that hold data */
    ptrdiff_t q;      /* packing: box bytes; unpacking: data bytes */
    ptrdiff_t pix;    /* packing: bytes per sub-box (q / nsub) */
    ptrdiff_t pitch;  /* unpacking with nsub > 1: source bytes between the loads */
    int nsub;         /* packing: sub-boxes (1, 2 or 4), each with its data first;
                         unpacking: 16-byte loads per box (rows r, r * s0 apart) */
    int pack;
    int w;            /* unpacking: store width (16, 8, 4, 2 or 1) */
} lk_smallbox;

static int lk_smallbox_plan(lk_smallbox *k, int es, ptrdiff_t s0, ptrdiff_t d0, ptrdiff_t r_lo,
                            ptrdiff_t r_hi, ptrdiff_t s1, ptrdiff_t d1, ptrdiff_t l_lo,
                            ptrdiff_t l_hi, int pack, ptrdiff_t box, int nsub,
                            const uint8_t *pad) {
    int used[64] = {0};
    ptrdiff_t q = 0, lo = PTRDIFF_MAX, hi = 0, pix = 16;
    if (s0 < 0 || s1 < 0 || d0 < 0 || d1 < 0 || r_hi <= r_lo || l_hi <= l_lo) return 0;
    if ((r_hi - r_lo) * (l_hi - l_lo) * es > 16) return 0;
    int loads = !pack && nsub > 1; /* a load per row */
    if (nsub != 1 && nsub != 2 && nsub != 4) return 0;
    if (pack) {
        /* The pad pattern is one 16-byte vector: whole elements only. */
        if (box % (16 * nsub) || 16 % es) return 0;
        pix = box / nsub;
    } else if (loads && (r_lo != 0 || r_hi != nsub)) {
        return 0;
    }
    for (ptrdiff_t r = r_lo; r < r_hi; r++)
        for (ptrdiff_t l = l_lo; l < l_hi; l++) {
            ptrdiff_t so = (loads ? 0 : r * s0) + l * s1;
            if (so < lo) lo = so;
            if (so + es > hi) hi = so + es;
        }
    if (lo != 0 || hi > 16) return 0; /* the caller's box pointer is the window's start */
    memset(k->perm, 0x80, sizeof k->perm);
    memset(k->sub, 0x80, sizeof k->sub);
    for (ptrdiff_t r = r_lo; r < r_hi; r++)
        for (ptrdiff_t l = l_lo; l < l_hi; l++) {
            ptrdiff_t so = (loads ? 0 : r * s0) + l * s1, dof = r * d0 + l * d1;
            ptrdiff_t sb = pack ? dof / pix : 0, off = pack ? dof % pix : dof;
            if (sb >= (pack ? nsub : 1) || off + es > 16) return 0;
            for (int b = 0; b < es; b++) {
                if (used[sb * 16 + off + b]) return 0;
                used[sb * 16 + off + b] = 1;
                if (pack)
                    k->sub[sb][off + b] = (uint8_t)(so + b);
                else if (loads)
                    k->sub[r][off + b] = (uint8_t)(so + b);
                else
                    k->perm[off + b] = (uint8_t)(so + b);
            }
            if (dof + es > q) q = dof + es;
        }
    k->win = hi;
    k->pack = pack;
    if (pack) {
        for (int b = 0; b < 16; b++) k->pad[b] = pad[b % es];
        k->q = box;
        k->pix = pix;
        k->nsub = nsub;
        k->w = 16;
        return 1;
    }
    for (ptrdiff_t b = 0; b < q; b++)
        if (!used[b]) return 0;
    k->q = q;
    k->nsub = nsub;
    k->pitch = s0;
    k->w = q >= 16 ? 16 : q >= 8 ? 8 : q >= 4 ? 4 : q >= 2 ? 2 : 1;
    memset(k->tail, 0x80, 16);
    for (int b = 0; b < k->w; b++)
        k->tail[b] = loads ? (uint8_t)(q - k->w + b) : k->perm[q - k->w + b];
    return 1;
}

#ifdef LK_HAVE_AVX2_TILES
/* The box's window, without reading past `hi` (the last byte the caller may read
 * + 1): the 16-byte load over-reads up to 16 - win bytes. */
#define LK_SMALLBOX_LOAD(V, S)                                                   \
    if ((S) + 16 <= hi)                                                          \
        V = _mm_loadu_si128((const __m128i *)(S));                               \
    else {                                                                       \
        uint8_t tmp_[16] = {0};                                                  \
        memcpy(tmp_, (S), (size_t)k->win);                                       \
        V = _mm_loadu_si128((const __m128i *)tmp_);                              \
    }

/* The box grid (LK_GRID_LOOPS) with each box's window loaded into `raw`. */
#define LK_SMALLBOX_LOOPS(BODY)                                                  \
    LK_GRID_LOOPS({                                                           \
        __m128i raw;                                                             \
        LK_SMALLBOX_LOAD(raw, s)                                                 \
        BODY                                                                     \
    })

/* ... unpacking, with the window 8 KiB on asked for when `ahead` (below). */
#define LK_SMALLBOX_UNPACK_LOOPS(BODY)                                           \
    LK_GRID_LOOPS({                                                           \
        __m128i raw;                                                             \
        if (ahead) {                                                             \
            _mm_prefetch(s + 8192, _MM_HINT_T0);                                 \
            _mm_prefetch(s + 8192 + k->win - 1, _MM_HINT_T0);                    \
        }                                                                        \
        LK_SMALLBOX_LOAD(raw, s)                                                 \
        BODY                                                                     \
    })

/* Packing: sub-box D (pix bytes of padding) with the data through shuffle P in
 * its first 16 bytes; stored, or streamed. */
#define LK_SMALLBOX_SUB(D, P)                                                    \
    {                                                                            \
        __m128i v_ = _mm_blendv_epi8(_mm_shuffle_epi8(raw, P), pad, P);          \
        if (pix == 16) {                                                         \
            _mm_storeu_si128((__m128i *)(D), v_);                                \
        } else {                                                                 \
            ptrdiff_t b_ = 32;                                                   \
            _mm256_storeu_si256((__m256i *)(D), _mm256_inserti128_si256(pad2, v_, 0)); \
            for (; b_ + 32 <= pix; b_ += 32) _mm256_storeu_si256((__m256i *)((D) + b_), pad2); \
            if (b_ < pix) _mm_storeu_si128((__m128i *)((D) + b_), pad);          \
        }                                                                        \
    }
#define LK_SMALLBOX_SUB_NT(D, P)                                                 \
    {                                                                            \
        _mm_stream_si128((__m128i *)(D), _mm_blendv_epi8(_mm_shuffle_epi8(raw, P), pad, P)); \
        for (ptrdiff_t b_ = 16; b_ < pix; b_ += 16) _mm_stream_si128((__m128i *)((D) + b_), pad); \
    }

/* Source bytes from which unpacking boxes prefetch ahead (below). */
#define LK_SMALLBOX_AHEAD_MIN (8 << 20)

__attribute__((target("avx2"))) static void lk_smallbox_grid_avx2(char *restrict dst,
                                                                 const char *restrict src,
                                                                 const lk_grid_level *lv,
                                                                 const lk_smallbox *k,
                                                                 const char *hi, int stream,
                                                                 int far) {
    const __m128i perm = _mm_loadu_si128((const __m128i *)k->perm);
    const __m128i tail = _mm_loadu_si128((const __m128i *)k->tail);
    const __m128i pad = _mm_loadu_si128((const __m128i *)k->pad);
    const __m256i pad2 = _mm256_broadcastsi128_si256(pad);
    ptrdiff_t q = k->q;
    const __m128i p0 = _mm_loadu_si128((const __m128i *)k->sub[0]);
    const __m128i p1 = _mm_loadu_si128((const __m128i *)k->sub[1]);
    const __m128i p2 = _mm_loadu_si128((const __m128i *)k->sub[2]);
    const __m128i p3 = _mm_loadu_si128((const __m128i *)k->sub[3]);
    ptrdiff_t pix = k->pix;
    if (k->pack && stream) {
        /* Outputs larger than the cache: non-temporal, 16-byte aligned boxes. */
        switch (k->nsub) {
        case 1: LK_SMALLBOX_LOOPS(LK_SMALLBOX_SUB_NT(d, p0)) break;
        case 2: LK_SMALLBOX_LOOPS(LK_SMALLBOX_SUB_NT(d, p0) LK_SMALLBOX_SUB_NT(d + pix, p1)) break;
        default:
            LK_SMALLBOX_LOOPS(LK_SMALLBOX_SUB_NT(d, p0) LK_SMALLBOX_SUB_NT(d + pix, p1)
                                  LK_SMALLBOX_SUB_NT(d + 2 * pix, p2)
                                      LK_SMALLBOX_SUB_NT(d + 3 * pix, p3))
            break;
        }
    } else if (k->pack) {
        switch (k->nsub) {
        case 1: LK_SMALLBOX_LOOPS(LK_SMALLBOX_SUB(d, p0)) break;
        case 2: LK_SMALLBOX_LOOPS(LK_SMALLBOX_SUB(d, p0) LK_SMALLBOX_SUB(d + pix, p1)) break;
        default:
            LK_SMALLBOX_LOOPS(LK_SMALLBOX_SUB(d, p0) LK_SMALLBOX_SUB(d + pix, p1)
                                  LK_SMALLBOX_SUB(d + 2 * pix, p2) LK_SMALLBOX_SUB(d + 3 * pix, p3))
            break;
        }
    } else if (k->nsub > 1) {
        /* A load per row, each shuffled into its bytes of the box (bytes of the
         * other rows zero), OR-ed, stored once (or twice, overlapping). */
        const __m128i subs[4] = {p0, p1, p2, p3};
        ptrdiff_t pitch = k->pitch;
        /* These boxes read a padded source several times the output's size,
         * front to back in small steps: the lines 8 KiB on (one per 64 bytes
         * a box advances) are asked for, since the hardware prefetchers keep
         * too few lines in flight for one core to read at memory speed
         * (compare_builds.py on the Xeon: crouton -> NHWC uint8 of
         * 1x3x1024x1024, 32 MB read for 3 MB written, 0.52x the time;
         * Crouton4x1 -> NHWC 0.81x; 2 KiB ahead did half as well, 16 KiB as
         * 8). Boxes of one load (a pixel of float16 / float32) gained nothing
         * there (on Zen 5 they do: below),
         * and float32 of 1x3x224x224 took 1.24x the time with them. Grids
         * whose source L2 / L3 hold, under LK_SMALLBOX_AHEAD_MIN (`far`: of the
         * whole operation's grid, not of a thread's slice of it),
         * are left to the hardware: on Zen 4 crouton float16
         * of 1x3x224x224 (3 MiB) took 1.37x the time with them, Crouton4x1
         * uint8 1.6x. */
        ptrdiff_t ahead_bytes = lv[3].s > 0 && lv[3].s <= 256 && far
                                    ? lv[3].s
                                    : 0;
        int nsub = k->nsub;
        LK_GRID_LOOPS({
            __m128i v = _mm_setzero_si128();
            for (ptrdiff_t b = 0; b < ahead_bytes; b += 64)
                _mm_prefetch(s + 8192 + b, _MM_HINT_T0);
            for (int j = 0; j < nsub; j++) {
                __m128i r_;
                LK_SMALLBOX_LOAD(r_, s + j * pitch)
                v = _mm_or_si128(v, _mm_shuffle_epi8(r_, subs[j]));
            }
            switch (k->w) {
            case 16: _mm_storeu_si128((__m128i *)d, v); break;
            case 8:
                _mm_storel_epi64((__m128i *)d, v);
                _mm_storel_epi64((__m128i *)(d + q - 8), _mm_shuffle_epi8(v, tail));
                break;
            case 4: {
                int32_t a = _mm_cvtsi128_si32(v);
                int32_t b = _mm_cvtsi128_si32(_mm_shuffle_epi8(v, tail));
                memcpy(d, &a, 4);
                memcpy(d + q - 4, &b, 4);
                break;
            }
            default: {
                uint16_t a = (uint16_t)_mm_cvtsi128_si32(v);
                uint16_t b = (uint16_t)_mm_cvtsi128_si32(_mm_shuffle_epi8(v, tail));
                memcpy(d, &a, 2);
                memcpy(d + q - 2, &b, 2);
            }
            }
        })
    } else {
        /* One load a box (Crouton4x1 / Crouton2 -> NHWC of 3 channels: 12
         * bytes of every 128 of a padded source, half its lines): as above,
         * the lines 8 KiB on are asked for when the whole grid is far larger
         * than the cache (compare_builds.py, 1x3x1024x1024: Crouton4x1 uint8 0.55x
         * the time, Crouton2 float16 0.65x; float32 crouton, a pixel a load, 0.56x). */
        const int ahead = far && lv[3].s > 0 && lv[3].s <= 256;
        switch (k->w) {
        case 16: LK_SMALLBOX_UNPACK_LOOPS(_mm_storeu_si128((__m128i *)d, _mm_shuffle_epi8(raw, perm));) break;
        case 8:
            LK_SMALLBOX_UNPACK_LOOPS({
                _mm_storel_epi64((__m128i *)d, _mm_shuffle_epi8(raw, perm));
                _mm_storel_epi64((__m128i *)(d + q - 8), _mm_shuffle_epi8(raw, tail));
            })
            break;
        case 4:
            LK_SMALLBOX_UNPACK_LOOPS({
                int32_t a = _mm_cvtsi128_si32(_mm_shuffle_epi8(raw, perm));
                int32_t b = _mm_cvtsi128_si32(_mm_shuffle_epi8(raw, tail));
                memcpy(d, &a, 4);
                memcpy(d + q - 4, &b, 4);
            })
            break;
        case 2:
            LK_SMALLBOX_UNPACK_LOOPS({
                uint16_t a = (uint16_t)_mm_cvtsi128_si32(_mm_shuffle_epi8(raw, perm));
                uint16_t b = (uint16_t)_mm_cvtsi128_si32(_mm_shuffle_epi8(raw, tail));
                memcpy(d, &a, 2);
                memcpy(d + q - 2, &b, 2);
            })
            break;
        default: LK_SMALLBOX_UNPACK_LOOPS(*d = (char)_mm_cvtsi128_si32(_mm_shuffle_epi8(raw, perm));) break;
        }
    }
}
#endif

#ifdef LK_HAVE_VBMI_TILES
/* Packing a grid of boxes that tile the destination in order (each level's
 * step the size of everything inside it), of 64-256 bytes (a multiple of 64),
 * with AVX-512 VBMI: each 64-byte piece of the output is one vpermb of a
 * box's window merged over the pad vector (a piece without data: the pad
 * vector). The stores are line-aligned, so with the destination `phase`
 * bytes before a line each box's pieces start `phase` bytes into it and its
 * last piece reaches into the next box, taking both windows (vpermt2b); the
 * first line's bytes are one unaligned piece, the last box is written
 * unaligned. Against the AVX2 kernel (a 32-byte store per sub-box, unaligned
 * with the usual destination 16 bytes into a line), compare_builds.py on the
 * Xeon (Emerald Rapids), 1x3x224x224: NHWC8h8w32c and R4Crouton4x1 uint8 0.7x
 * the time, R4Crouton2 float16 0.78x, NHWC8h8w32c float16 0.85x;
 * 1x3x1024x1024 (streamed) 0.83-1.0x. A grid of boxes that do not tile the
 * destination keeps the AVX2 kernel. Streamed when `stream`. */
LK_VBMI __attribute__((always_inline)) static inline void lk_smallbox_pack_vbmi_k(
    char *restrict dst, const char *restrict src, const lk_grid_level *lv, const lk_smallbox *k,
    const char *hi, const int stream, const int pieces) {
    const ptrdiff_t phase = (ptrdiff_t)(-(uintptr_t)dst & 63);
    uint8_t tab[2][4][64];
    uint64_t bits[2][4] = {{0}};
    memset(tab, 0, sizeof tab);
    /* tab[0]: box byte o in piece o / 64; tab[1]: phase bytes on, the box's
     * first phase bytes in the last piece of the box before (from its
     * second register: index + 64). Data lies in each sub-box's first 16
     * bytes. */
    for (int sb = 0; sb < k->nsub; sb++)
        for (int off = 0; off < 16; off++) {
            int from = k->sub[sb][off];
            if (from == 0x80) continue;
            ptrdiff_t o = sb * k->pix + off;
            tab[0][o >> 6][o & 63] = (uint8_t)from;
            bits[0][o >> 6] |= (uint64_t)1 << (o & 63);
            ptrdiff_t p = o >= phase ? (o - phase) >> 6 : pieces - 1;
            ptrdiff_t b = o >= phase ? (o - phase) & 63 : o + 64 - phase;
            tab[1][p][b] = (uint8_t)(from + (o >= phase ? 0 : 64));
            bits[1][p] |= (uint64_t)1 << b;
        }
    __m512i idx[4], idxp[4];
    __mmask64 keep[4], keepp[4];
    for (int p = 0; p < pieces; p++) {
        memcpy(&idx[p], tab[0][p], 64);
        memcpy(&idxp[p], tab[1][p], 64);
        keep[p] = bits[0][p];
        keepp[p] = bits[1][p];
    }
    const __m512i padv = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)k->pad));
#define LK_SBV_PIECE(IDX, KEEP, p, w) \
    ((KEEP)[p] ? _mm512_mask_permutexvar_epi8(padv, (KEEP)[p], (IDX)[p], w) : padv)
#define LK_SBV_PUT(p, v)                                                         \
    do {                                                                         \
        if (stream)                                                              \
            _mm512_stream_si512((__m512i *)(p), v);                              \
        else                                                                     \
            _mm512_store_si512((void *)(p), v);                                  \
    } while (0)
    __m512i prev = _mm512_setzero_si512();
    char *dprev = NULL;
    if (phase == 0) {
        LK_GRID_LOOPS({
            __m128i raw;
            LK_SMALLBOX_LOAD(raw, s)
            const __m512i w_ = _mm512_castsi128_si512(raw);
            for (int p = 0; p < pieces; p++) LK_SBV_PUT(d + 64 * p, LK_SBV_PIECE(idx, keep, p, w_));
        })
    } else {
        LK_GRID_LOOPS({
            __m128i raw;
            LK_SMALLBOX_LOAD(raw, s)
            const __m512i w_ = _mm512_castsi128_si512(raw);
            if (dprev) {
                /* The box before, phase bytes on, its last piece into this box. */
                char *o_ = dprev + phase;
                for (int p = 0; p < pieces - 1; p++)
                    LK_SBV_PUT(o_ + 64 * p, LK_SBV_PIECE(idxp, keepp, p, prev));
                LK_SBV_PUT(o_ + 64 * (pieces - 1),
                           _mm512_mask_blend_epi8(keepp[pieces - 1], padv,
                                                  _mm512_permutex2var_epi8(prev, idxp[pieces - 1], w_)));
            } else {
                _mm512_storeu_si512((void *)d, LK_SBV_PIECE(idx, keep, 0, w_));
            }
            prev = w_;
            dprev = d;
        })
    }
    if (stream) _mm_sfence();
    if (dprev)
        for (int p = 0; p < pieces; p++)
            _mm512_storeu_si512((void *)(dprev + 64 * p), LK_SBV_PIECE(idx, keep, p, prev));
#undef LK_SBV_PUT
#undef LK_SBV_PIECE
}

/* One copy per piece count and store kind, so that neither is tested per
 * store: NHWC -> Crouton uint8 1x3x224x224 took 1.18x the time with both
 * read at run time (hot loop, Zen 5). */
#define LK_SBV_CASE(S, P)                                                                   \
    LK_VBMI static void lk_smallbox_pack_vbmi_##S##P(char *restrict dst, const char *restrict src, \
                                                     const lk_grid_level *lv,               \
                                                     const lk_smallbox *k, const char *hi) { \
        lk_smallbox_pack_vbmi_k(dst, src, lv, k, hi, S, P);                                 \
    }
LK_SBV_CASE(0, 1) LK_SBV_CASE(0, 2) LK_SBV_CASE(0, 3) LK_SBV_CASE(0, 4)
LK_SBV_CASE(1, 1) LK_SBV_CASE(1, 2) LK_SBV_CASE(1, 3) LK_SBV_CASE(1, 4)
#undef LK_SBV_CASE

/* Pixels of 64-256 bytes (k->q a multiple of 64), streamed when `stream`. */
static void lk_smallbox_pack_vbmi(char *restrict dst, const char *restrict src,
                                  const lk_grid_level *lv, const lk_smallbox *k, const char *hi,
                                  int stream) {
    typedef void (*fn)(char *restrict, const char *restrict, const lk_grid_level *,
                       const lk_smallbox *, const char *);
    static const fn fns[2][4] = {
        {lk_smallbox_pack_vbmi_01, lk_smallbox_pack_vbmi_02, lk_smallbox_pack_vbmi_03,
         lk_smallbox_pack_vbmi_04},
        {lk_smallbox_pack_vbmi_11, lk_smallbox_pack_vbmi_12, lk_smallbox_pack_vbmi_13,
         lk_smallbox_pack_vbmi_14},
    };
    fns[stream != 0][k->q / 64 - 1](dst, src, lv, k, hi);
}
#endif

#ifdef LK_HAVE_VBMI_TILES
/* Unpacking boxes of four rows (4 pixels of NHWC8h8w32c uint8, 32 bytes
 * apart, into 12 bytes) whose windows lie within 128 bytes, with AVX-512
 * VBMI: two masked 64-byte loads, one vpermt2b, one masked store, where the
 * AVX2 kernel loads, shuffles and merges each row and stores twice. Masked
 * loads read nothing past the last row's window. compare_builds.py on the
 * Xeon: crouton -> NHWC uint8 1x3x224x224 0.79x the time. Boxes of two rows
 * (float16) took 1.07x, and sources too large for the cache (1x3x1024x1024,
 * with the AVX2 kernel's prefetches) 1.05x: they keep the AVX2 kernel. */
LK_VBMI static void lk_smallbox_unpack_vbmi(char *restrict dst, const char *restrict src,
                                            const lk_grid_level *lv, const lk_smallbox *k) {
    const ptrdiff_t span = (k->nsub - 1) * k->pitch + k->win;
    uint8_t b[64] = {0};
    for (ptrdiff_t o = 0; o < k->q; o++)
        for (int r = 0; r < k->nsub; r++)
            if (k->sub[r][o] != 0x80) b[o] = (uint8_t)(r * k->pitch + k->sub[r][o]);
    __m512i idx;
    memcpy(&idx, b, 64);
    const __mmask64 lo = span >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << span) - 1;
    const __mmask64 up = span <= 64    ? 0
                         : span >= 128 ? ~(__mmask64)0
                                       : ((__mmask64)1 << (span - 64)) - 1;
    const __mmask16 keep = (__mmask16)((1u << k->q) - 1);
    LK_GRID_LOOPS({
        __m512i w0 = _mm512_maskz_loadu_epi8(lo, s);
        __m512i w1 = up ? _mm512_maskz_loadu_epi8(up, s + 64) : w0;
        _mm_mask_storeu_epi8(d, keep, _mm512_castsi512_si128(_mm512_permutex2var_epi8(w0, idx, w1)));
    })
}
#endif

#ifdef LK_HAVE_VBMI_TILES
/* n0 (up to 32) rows of 4 bytes: n1 lanes of es bytes (4 pixels of uint8, 2
 * of float16), rows [0, data) from the lanes' first data * es bytes, s1 apart
 * (a pixel's channels), the rest the 4-byte pattern at pad. Each lane is one
 * masked load, and the rows of all of them come out of vpermt2b / vpermt2w. */
LK_VBMI __attribute__((target("bmi2"))) static void lk_rowpad4_vbmi(char *restrict dst, const char *restrict src,
                                    const lk_grid_level *lv, ptrdiff_t s1, int n1, int n0,
                                    int data, const void *pad) {
    /* Bytes 2i, 2i+1: byte i of the first and second register. */
    uint8_t pair[64];
    uint16_t wlo[32], whi[32];
    for (int i = 0; i < 32; i++) {
        pair[2 * i] = (uint8_t)i;
        pair[2 * i + 1] = (uint8_t)(64 + i);
        wlo[i] = (uint16_t)(i % 2 ? 32 + i / 2 : i / 2);
        whi[i] = (uint16_t)(i % 2 ? 48 + i / 2 : 16 + i / 2);
    }
    const __m512i ipair = _mm512_loadu_si512(pair);
    const __m512i iwlo = _mm512_loadu_si512(wlo), iwhi = _mm512_loadu_si512(whi);
    uint32_t pat;
    memcpy(&pat, pad, 4);
    const __m512i padv = _mm512_set1_epi32((int)pat);
    const int es = 4 / n1;
    const __mmask64 ld = _bzhi_u64(~0ULL, (unsigned)(data * es));
    const __mmask64 keep0 = _bzhi_u64(~0ULL, (unsigned)(4 * data < 64 ? 4 * data : 64));
    const __mmask64 keep1 = _bzhi_u64(~0ULL, (unsigned)(4 * data > 64 ? 4 * data - 64 : 0));
    const __mmask64 st0 = _bzhi_u64(~0ULL, (unsigned)(4 * n0 < 64 ? 4 * n0 : 64));
    const __mmask64 st1 = _bzhi_u64(~0ULL, (unsigned)(4 * n0 > 64 ? 4 * n0 - 64 : 0));
    if (n1 == 4) {
        LK_GRID_LOOPS({
            __m512i a = _mm512_permutex2var_epi8(_mm512_maskz_loadu_epi8(ld, s), ipair,
                                                 _mm512_maskz_loadu_epi8(ld, s + s1));
            __m512i b = _mm512_permutex2var_epi8(_mm512_maskz_loadu_epi8(ld, s + 2 * s1), ipair,
                                                 _mm512_maskz_loadu_epi8(ld, s + 3 * s1));
            _mm512_mask_storeu_epi8(d, st0, _mm512_mask_blend_epi8(keep0, padv, _mm512_permutex2var_epi16(a, iwlo, b)));
            if (st1) _mm512_mask_storeu_epi8(d + 64, st1, _mm512_mask_blend_epi8(keep1, padv, _mm512_permutex2var_epi16(a, iwhi, b)));
        })
    } else {
        LK_GRID_LOOPS({
            __m512i a = _mm512_maskz_loadu_epi8(ld, s);
            __m512i b = _mm512_maskz_loadu_epi8(ld, s + s1);
            _mm512_mask_storeu_epi8(d, st0, _mm512_mask_blend_epi8(keep0, padv, _mm512_permutex2var_epi16(a, iwlo, b)));
            if (st1) _mm512_mask_storeu_epi8(d + 64, st1, _mm512_mask_blend_epi8(keep1, padv, _mm512_permutex2var_epi16(a, iwhi, b)));
        })
    }
}
#endif

#ifdef LK_HAVE_VBMI_TILES
/* Pixels of `pix` bytes (32, 64, 128 or 256: a crouton's 32 channels) whose
 * first `data` bytes come from the source pixel at s, the rest the pattern
 * at pad (64 bytes): per 32 or 64 bytes of the pixel, one masked load over
 * the pad vector and a store. Masked-off bytes are not read. */
LK_VBMI __attribute__((target("bmi2"))) static void lk_padpix_vbmi(char *restrict dst,
                                                                  const char *restrict src,
                                                                  const lk_grid_level *lv,
                                                                  int pix, int data,
                                                                  const void *pad) {
    const __m512i padv = _mm512_loadu_si512(pad);
    if (pix == 32) {
        const __mmask32 m = (__mmask32)_bzhi_u32(~0u, (unsigned)data);
        const __m256i p = _mm512_castsi512_si256(padv);
        LK_GRID_LOOPS(_mm256_storeu_si256((__m256i *)d, _mm256_mask_loadu_epi8(p, m, s)))
        return;
    }
    __mmask64 m[4];
    for (int u = 0; u < 4; u++) {
        int left = data - 64 * u;
        m[u] = left <= 0 ? 0 : left >= 64 ? ~(__mmask64)0 : _bzhi_u64(~0ULL, (unsigned)left);
    }
    const int units = pix / 64;
    LK_GRID_LOOPS({
        for (int u = 0; u < units; u++)
            _mm512_storeu_si512(d + 64 * u, m[u] ? _mm512_mask_loadu_epi8(padv, m[u], s + 64 * u) : padv);
    })
}
#endif

/* lk_padpix_vbmi over nl (1-4) grid levels, the last the pixels, where the CPU
 * has it (Intel with AVX-512 VBMI); 0 (nothing done) otherwise. */
static inline int lk_padpix_grid(char *restrict dst, const char *restrict src,
                                 const lk_grid_level *levels, int nl, int pix, int data,
                                 const void *pad) {
#ifdef LK_HAVE_VBMI_TILES
    lk_grid_level lv[4] = {{1, 0, 0}, {1, 0, 0}, {1, 0, 0}, {1, 0, 0}};
    if ((pix != 32 && pix != 64 && pix != 128 && pix != 256) || data < 1 || data > pix ||
        nl < 1 || nl > 4 || lk_split_avx512() || !lk_vbmi())
        return 0;
    for (int j = 0; j < nl; j++) lv[4 - nl + j] = levels[j];
    lk_padpix_vbmi(dst, src, lv, pix, data, pad);
    return 1;
#else
    (void)dst; (void)src; (void)levels; (void)nl; (void)pix; (void)data; (void)pad;
    return 0;
#endif
}

/* lk_rowpad4_vbmi over nl (1-4) grid levels where the CPU has it (Intel with
 * AVX-512 VBMI); 0 (nothing done) otherwise or for shapes it does not take:
 * rows of 4 bytes as 4 uint8 or 2 uint16 lanes, n0 <= 32, 1 <= data <= n0,
 * each lane's data within s1. */
static inline int lk_rowpad4_grid(char *restrict dst, const char *restrict src,
                                  const lk_grid_level *levels, int nl, ptrdiff_t s1, int n1,
                                  int n0, int data, const void *pad) {
#ifdef LK_HAVE_VBMI_TILES
    lk_grid_level lv[4] = {{1, 0, 0}, {1, 0, 0}, {1, 0, 0}, {1, 0, 0}};
    if ((n1 != 4 && n1 != 2) || n0 < 1 || n0 > 32 || data < 1 || data > n0 || nl < 1 ||
        nl > 4 || s1 < data * (4 / n1) || lk_split_avx512() || !lk_vbmi())
        return 0;
    for (int j = 0; j < nl; j++) lv[4 - nl + j] = levels[j];
    lk_rowpad4_vbmi(dst, src, lv, s1, n1, n0, data, pad);
    return 1;
#else
    (void)dst; (void)src; (void)levels; (void)nl; (void)s1; (void)n1; (void)n0; (void)data;
    (void)pad;
    return 0;
#endif
}

/* Runs the boxes of nl (1-4) levels, the last fastest (as lk_box_grid); `hi` is
 * one past the last source byte the caller may read, `span_hi` (>= hi) the end
 * of the whole operation's grid, which sizes the choices below: a thread's
 * slice of a grid past the cache reads from memory as the whole grid does
 * (crouton -> NHWC uint8 of 1x3x1024x1024, slices of 2.8 MB on 2 threads:
 * without the prefetches 1.45x the time of one thread). Returns 0 (nothing done)
 * without AVX2; with `stream`, the destination and its steps must be multiples
 * of 16 bytes. */
static inline int lk_smallbox_grid(char *restrict dst, const char *restrict src,
                                   const lk_grid_level *levels, int nl, const lk_smallbox *k,
                                   const char *hi, const char *span_hi, int stream) {
#ifdef LK_HAVE_AVX2_TILES
    lk_grid_level lv[4] = {{1, 0, 0}, {1, 0, 0}, {1, 0, 0}, {1, 0, 0}};
    if (lk_simd() == 0 || !lk_avx2() || nl < 1 || nl > 4) return 0;
    for (int j = 0; j < nl; j++) lv[4 - nl + j] = levels[j];
#ifdef LK_HAVE_VBMI_TILES
    if (!k->pack && k->nsub == 4 && 3 * k->pitch + k->win <= 128 &&
        span_hi - src < LK_SMALLBOX_AHEAD_MIN && lk_vbmi()) {
        lk_smallbox_unpack_vbmi(dst, src, lv, k);
        return 1;
    }
    /* Its pad vector is laid over line-aligned stores, so its 16-byte pattern
     * must start on an element there: a destination 16-byte aligned (numpy's
     * data at an odd element offset shifted the padding's bytes). */
    if (k->pack && k->q % 64 == 0 && k->q <= 256 && (uintptr_t)dst % 16 == 0 && lk_vbmi()) {
        /* The boxes must tile the destination in grid order. */
        ptrdiff_t inside = k->q;
        int tiled = 1;
        for (int j = 3; j >= 0; j--) {
            if (lv[j].n == 1) continue;
            tiled = tiled && lv[j].d == inside;
            inside *= lv[j].n;
        }
        if (tiled) {
            lk_smallbox_pack_vbmi(dst, src, lv, k, hi, stream);
            return 1;
        }
    }
#endif
    lk_smallbox_grid_avx2(dst, src, lv, k, hi, stream, span_hi - src >= LK_SMALLBOX_AHEAD_MIN);
    return 1;
#else
    (void)dst; (void)src; (void)levels; (void)nl; (void)k; (void)hi; (void)span_hi;
    (void)stream;
    return 0;
#endif
}

#endif /* LAYOUTKIT_INTERLEAVE_H */
