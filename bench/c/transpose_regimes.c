/*
 * lk_transpose (the long-lane kernel behind NCHW -> NHWC, kHWC8, kCHW32, ...)
 * against memcpy of the same traffic, in the two regimes a caller meets:
 *
 *   hot   the source is in L3 (calls back to back, as in a timeit loop);
 *   cold  a 64 MiB memcpy (twice L3) runs before every call and evicts it to
 *         DRAM (as in bench/run.py, whose copy reference is interleaved with
 *         the calls).
 *
 * A kernel change must win in both: a 16 KiB row block for 2-byte lanes
 * measured 5-17% faster hot and 20% slower cold (long per-lane runs are what
 * the hardware prefetcher needs from DRAM), and was reverted.
 *
 *   gcc -O3 -Isrc/layoutkit/include -o /tmp/transpose_regimes bench/c/transpose_regimes.c
 *   /tmp/transpose_regimes 2 64 65536      # es lanes rows: float16 NCHW -> NHWC of 1x64x256x256
 *   /tmp/transpose_regimes 1 32 65536      # one 32-channel block of int8 kCHW32
 *
 * Buffers are allocated as numpy does (malloc, data 16 bytes into a page, huge
 * pages advised). Figures are medians of 15 calls, each regime measured 5 times
 * interleaved with its memcpy reference.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "layoutkit_interleave.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* glibc serves large blocks by mmap with the data 16 bytes into a page, as numpy's arrays get. */
static char *numpy_like_alloc(size_t n) {
    char *p = malloc(n);
    if (!p) exit(1);
    uintptr_t page = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
    madvise((void *)page, n - (page - (uintptr_t)p), MADV_HUGEPAGE);
    memset(p, 1, n);
    return p;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int es, lanes;
static ptrdiff_t rows;
static size_t nbytes;
#define EVICT_BYTES ((size_t)64 << 20)
static char *evict_src, *evict_dst;

static void run_kernel(char *dst, const char *src) {
    lk_transpose(dst, lanes * es, src, rows * es, rows, lanes, es);
}

static void run_copy(char *dst, const char *src) { memcpy(dst, src, nbytes); }

static double median_call(void (*fn)(char *, const char *), char *dst, const char *src, int cold) {
    double t[15];
    for (int r = 0; r < 15; r++) {
        if (cold) memcpy(evict_dst, evict_src, EVICT_BYTES);
        double t0 = now();
        fn(dst, src);
        t[r] = now() - t0;
    }
    qsort(t, 15, sizeof t[0], by_value);
    return t[7];
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s ELEMENT_BYTES LANES ROWS\n", argv[0]);
        return 2;
    }
    es = atoi(argv[1]);
    lanes = atoi(argv[2]);
    rows = atol(argv[3]);
    nbytes = (size_t)rows * (size_t)lanes * (size_t)es;
    char *src = numpy_like_alloc(nbytes), *dst = numpy_like_alloc(nbytes);
    char *ref_src = numpy_like_alloc(nbytes), *ref_dst = numpy_like_alloc(nbytes);
    evict_src = numpy_like_alloc(EVICT_BYTES);
    evict_dst = numpy_like_alloc(EVICT_BYTES);
    for (size_t i = 0; i < nbytes; i++) src[i] = (char)(i * 13 + i / 4096);

    /* Correctness first: element (lane j, row i) lands at row i, column j. */
    run_kernel(dst, src);
    for (ptrdiff_t i = 0; i < rows; i += rows / 97 + 1)
        for (int j = 0; j < lanes; j++)
            if (memcmp(dst + (i * lanes + j) * es, src + (j * rows + i) * es, (size_t)es)) {
                fprintf(stderr, "wrong element at row %ld lane %d\n", (long)i, j);
                return 1;
            }

    printf("lk_transpose es=%d lanes=%d rows=%ld (%zu bytes each way), kernels %s\n", es, lanes,
           (long)rows, nbytes, lk_simd_name());
    for (int cold = 0; cold < 2; cold++) {
        double tk = 0, tc = 0;
        for (int rep = 0; rep < 5; rep++) {
            tc += median_call(run_copy, ref_dst, ref_src, cold);
            tk += median_call(run_kernel, dst, src, cold);
        }
        printf("  %-4s kernel %8.1f us   memcpy %8.1f us   %.2fx copy\n", cold ? "cold" : "hot",
               tk / 5 * 1e6, tc / 5 * 1e6, tc / tk);
    }
    return 0;
}
