/*
 * How fast memory streams when a kernel reads several places in turns, the
 * access pattern of a box that gathers pieces of K lanes (a crouton pixel's
 * chunks, a transpose tile's rows, the planes of an HCWNC box).
 *
 * Reads 64 MiB once per pass (a 128 MiB memcpy evicts it first), as K
 * streams taken in turns, PIECE bytes from each:
 *
 *   SPAN > 0   the K streams are the K runs of SPAN bytes of each block of
 *              K * SPAN bytes, block after block (the chunks of a crouton
 *              pixel: SPAN = 2048);
 *   SPAN = 0   the K streams are the K equal parts of the buffer, each read
 *              from its start to its end (the planes of a transpose).
 *
 *   gcc -O2 -o /tmp/read_in_turns bench/c/read_in_turns.c
 *   /tmp/read_in_turns 1 4096 128    # one stream: the limit
 *   /tmp/read_in_turns 2 2048 128    # two chunks of 2 KiB in turns
 *   /tmp/read_in_turns 8 0 128       # eight long streams in turns
 *   /tmp/read_in_turns 2 2048 128 w  # the same with stores (memset pieces)
 *
 * Zen 5 VM (2026-12-07, GB/s of the 64 MiB): one stream 38; two or eight
 * chunks of 2 KiB in turns 18-19 (stores 16-17); 2-4 long streams 41-44,
 * 8 long streams 21 (33 with 1 KiB pieces), 32 / 64 long streams 19 / 14.
 * Visiting a crouton pixel's chunks one after the other instead of in
 * turns made Crouton2 -> NHWC of 1x64x256x256 0.41x the time.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define BUFFER_BYTES ((size_t)64 << 20)
#define EVICT_BYTES ((size_t)128 << 20)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static char *page_aligned(size_t n) {
    char *p = aligned_alloc(4096, n);
    if (!p) exit(1);
    madvise(p, n, MADV_HUGEPAGE);
    memset(p, 1, n);
    return p;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s STREAMS SPAN PIECE [w]\n", argv[0]);
        return 2;
    }
    int streams = atoi(argv[1]);
    size_t span = (size_t)atol(argv[2]);
    size_t piece = (size_t)atol(argv[3]);
    int stores = argc > 4;
    if (streams < 1 || piece < 64 || piece % 64) {
        fprintf(stderr, "STREAMS >= 1, PIECE a multiple of 64\n");
        return 2;
    }
    if (span == 0) span = BUFFER_BYTES / (size_t)streams;
    size_t block = span * (size_t)streams;
    char *buf = page_aligned(BUFFER_BYTES);
    char *evict_src = page_aligned(EVICT_BYTES), *evict_dst = page_aligned(EVICT_BYTES);
    double best = 1e30;
    uint64_t sum = 0;
    for (int pass = 0; pass < 7; pass++) {
        memcpy(evict_dst, evict_src, EVICT_BYTES);
        double t0 = now();
        for (size_t b = 0; b + block <= BUFFER_BYTES; b += block)
            for (size_t o = 0; o < span; o += piece)
                for (int k = 0; k < streams; k++) {
                    char *p = buf + b + (size_t)k * span + o;
                    if (stores)
                        memset(p, pass, piece);
                    else
                        for (size_t q = 0; q < piece; q += 64) sum += *(const uint64_t *)(p + q);
                }
        double t = now() - t0;
        if (t < best) best = t;
    }
    printf("%d streams, span %zu, pieces of %zu%s: %.1f GB/s%s\n", streams, span, piece,
           stores ? " (stores)" : "", (double)BUFFER_BYTES / best * 1e-9, sum == 1 ? " " : "");
    return 0;
}
