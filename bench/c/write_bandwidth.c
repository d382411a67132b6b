/*
 * How fast a machine takes writes: one buffer of N MiB written whole by
 * 64-byte non-temporal stores (what the kernels stream with), by 64-byte
 * cached stores, by `rep stosb` and by memset; best of 30 calls, each on
 * the buffer as the last call left it ("hot") and after a 32 MiB memcpy of
 * another buffer ("cold").
 *
 * It decides where streaming pays. On the suite's Zen 5 VM (2026-12-04, 32
 * MiB L3 a CCD): non-temporal stores 45 GB/s at every size (the DRAM's
 * write speed), cached stores 109-123 GB/s for 4-16 MiB, hot or cold, and
 * 33-41 GB/s at 64-200 MiB. So outputs that fit the L3 are written through
 * it there (lk_stream_padded); on the Xeons and Zen 4 machines measured
 * before, streaming from 4-8 MiB up was the faster choice.
 *
 *   gcc -O2 -o /tmp/write_bandwidth bench/c/write_bandwidth.c
 *   /tmp/write_bandwidth 16     # MiB
 */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((target("avx512f"))) static void nt_stores(char *d, size_t n) {
    __m512i v = _mm512_set1_epi8(1);
    for (size_t i = 0; i < n; i += 64) _mm512_stream_si512((__m512i *)(d + i), v);
    _mm_sfence();
}

__attribute__((target("avx512f"))) static void cached_stores(char *d, size_t n) {
    __m512i v = _mm512_set1_epi8(1);
    for (size_t i = 0; i < n; i += 64) _mm512_store_si512((__m512i *)(d + i), v);
}

static void rep_stosb(char *d, size_t n) {
    __asm__ volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(1) : "memory");
}

static void libc_memset(char *d, size_t n) { memset(d, 1, n); }

int main(int argc, char **argv) {
    size_t n = (size_t)(argc > 1 ? atoi(argv[1]) : 16) << 20;
    size_t evict = (size_t)32 << 20;
    char *d = aligned_alloc(64, n), *e = aligned_alloc(64, 2 * evict);
    if (!d || !e || !__builtin_cpu_supports("avx512f")) return 1;
    memset(d, 0, n);
    memset(e, 0, 2 * evict);
    void (*fns[4])(char *, size_t) = {nt_stores, cached_stores, rep_stosb, libc_memset};
    const char *names[4] = {"non-temporal", "cached", "rep stosb", "memset"};
    for (int cold = 0; cold < 2; cold++)
        for (int k = 0; k < 4; k++) {
            double best = 1e9;
            for (int r = 0; r < 30; r++) {
                if (cold) memcpy(e, e + evict, evict);
                double t = now();
                fns[k](d, n);
                t = now() - t;
                if (t < best) best = t;
            }
            printf("%s %-12s %4zu MiB: %7.0f us %6.1f GB/s\n", cold ? "cold" : "hot ", names[k],
                   n >> 20, best * 1e6, n / best / 1e9);
        }
    return 0;
}
