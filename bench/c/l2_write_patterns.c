/*
 * Where the time of a transpose that fits in L2 goes: NCHW -> NHWC of
 * 1x2048x7x7 (2048 lanes of 49 rows; 100 KiB of bytes, 200 / 400 KiB of
 * float16 / float32), the suite's slowest transposes (0.4-0.5x a copy).
 *
 * lk_transpose is timed with its destination rows as the layout has them
 * (2048 elements apart) and, to split its time, with rows placed so that
 *
 *   in-L1    every tile writes the same 49 lines (rows 64 bytes apart: the
 *            output stays in L1; the arithmetic and the source reads only);
 *   spread   each row is 64 bytes past a multiple of 4 KiB from the last, so
 *            the lines a tile writes fall in 49 different L1 sets instead of
 *            two (rows 2048 bytes apart share two of L1's 64 sets).
 *
 * Two copies of the same bytes are timed too: memcpy, and a copy whose
 * writes follow the transpose's destination order (a column of 64-byte
 * pieces down all 49 rows, then the next column) with sequential reads.
 *
 * On the Emerald Rapids Xeon of 2026-11-28: in-L1 0.6x the time of the real
 * call for bytes and float16, 0.5x for float32; spread 0.7x / 0.7x / 0.8x;
 * the column-order copy 1.6x / 2.1x / 2.1x the time of memcpy. The call is
 * its arithmetic (for bytes, its 4 rounds of unpacks alone, one shuffle-port
 * cycle per 64 bytes each, over 64 rows where 49 are data, are about half the
 * time) plus the cost of writing new lines out of order, more where the rows
 * share two L1 sets.
 *
 * What was tried against the second part, all within 5% or slower (full
 * list in bench/README.md): prefetchw of the next tile's or group's lines,
 * an L1 stage of one or four tiles copied out row by row (1.05-1.3x the time),
 * a rows-outer order (each group across all lanes: 1.1x), and four tiles a
 * group at a time (0.97-1.0x).
 *
 *   gcc -O3 -Isrc/layoutkit/include -o /tmp/l2_write_patterns bench/c/l2_write_patterns.c
 *   /tmp/l2_write_patterns 1        # element size: 1, 2 or 4
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "layoutkit_interleave.h"

enum { LANES = 2048, ROWS = 49, CALLS = 50, ROUNDS = 200 };

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Data 16 bytes into a page, as numpy's allocations are. */
static char *buffer(size_t bytes) {
    char *p = mmap(NULL, bytes + 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    memset(p, 1, bytes + 8192);
    return p + 16;
}

/* 64-byte pieces read in order, written a column of rows at a time. */
static void copy_by_columns(char *dst, const char *src, ptrdiff_t rows, ptrdiff_t row_bytes) {
    const char *s = src;
    for (ptrdiff_t j = 0; j + 64 <= row_bytes; j += 64)
        for (ptrdiff_t r = 0; r < rows; r++, s += 64) memcpy(dst + r * row_bytes + j, s, 64);
}

int main(int argc, char **argv) {
    int es = argc > 1 ? atoi(argv[1]) : 1;
    if (es != 1 && es != 2 && es != 4) {
        fprintf(stderr, "element size: 1, 2 or 4\n");
        return 2;
    }
    ptrdiff_t slane = ROWS * es, drow = LANES * es, bytes = LANES * ROWS * es;
    ptrdiff_t spread = (drow + 4095) / 4096 * 4096 + 64; /* 64 past a multiple of 4 KiB */
    char *src = buffer((size_t)bytes), *dst = buffer((size_t)(spread * ROWS));
    char *copy_src = buffer((size_t)bytes), *copy_dst = buffer((size_t)bytes);
    const char *names[5] = {"lk_transpose", "  in-L1", "  spread", "memcpy", "copy by columns"};
    double best[5] = {1e9, 1e9, 1e9, 1e9, 1e9};
    for (int round = 0; round < ROUNDS; round++) {
        for (int v = 0; v < 5; v++) {
            double t0 = now();
            for (int k = 0; k < CALLS; k++) {
                switch (v) {
                case 0: lk_transpose(dst, drow, src, slane, ROWS, LANES, es); break;
                case 1: lk_transpose(dst, 64, src, slane, ROWS, LANES, es); break;
                case 2: lk_transpose(dst, spread, src, slane, ROWS, LANES, es); break;
                case 3: memcpy(copy_dst, copy_src, (size_t)bytes); break;
                default: copy_by_columns(copy_dst + 48, copy_src, ROWS, drow); break; /* lines */
                }
            }
            double t = (now() - t0) / CALLS;
            if (t < best[v]) best[v] = t;
        }
    }
    printf("%d x %d lanes of %d-byte elements (%td KiB), best of %d rounds:\n", LANES, ROWS, es,
           bytes >> 10, ROUNDS);
    for (int v = 0; v < 5; v++)
        printf("  %-16s %7.2f us  %.2fx the time of lk_transpose\n", names[v], best[v] * 1e6,
               best[v] / best[0]);
    return 0;
}
