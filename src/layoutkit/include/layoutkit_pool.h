/*
 * A small persistent worker pool for the kernels' `threads=` (POSIX threads).
 *
 *   lk_pool_run(threads, nitems, fn, ctx)  calls fn(ctx, i) once for every
 *   i < nitems, on the calling thread and up to threads - 1 workers, and returns
 *   when all calls have returned. Items are claimed one at a time from a shared
 *   counter, so a core that the machine slows down simply takes fewer items.
 *
 * Why not a Python thread pool: a task handed to concurrent.futures has to take
 * the GIL to start and wakes its thread through a futex, which costs tens of
 * microseconds on a virtual machine; a 4 MiB conversion takes ~150 us, so two
 * threads ran slower than one. Here workers spin for a short while after each
 * job (as OpenMP runtimes do), so back-to-back calls start at once, and then
 * sleep on a condition variable so an idle pool costs nothing. Nothing here
 * touches Python objects: the caller has released the GIL.
 *
 * Returns 0, or -1 when this platform has no pool (Windows builds): the caller
 * then uses its portable fallback. A process that forks gets a fresh pool in the
 * child (the workers do not survive fork). Concurrent callers do not queue: a
 * call that finds the pool busy runs its items on its own thread.
 */
#ifndef LAYOUTKIT_POOL_H
#define LAYOUTKIT_POOL_H

#include <stddef.h>

typedef void (*lk_pool_fn)(void *ctx, ptrdiff_t item);

#if defined(__unix__) || defined(__APPLE__)
#define LK_HAVE_POOL 1
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#define LK_POOL_MAX 256

static struct {
    pthread_mutex_t run_mu; /* one job at a time */
    pthread_mutex_t mu;     /* guards sleepers and the condition */
    pthread_cond_t cv;
    pid_t pid;              /* the process the workers belong to */
    int nworkers;
    int sleepers;
    /* the current job */
    lk_pool_fn fn;
    void *ctx;
    ptrdiff_t nitems;
    /* Published last, in one word, so a worker reads a job's number and its
     * helper count together: (job number << 16) | workers taking part. */
    long long job;
    long long born[LK_POOL_MAX]; /* per worker: the job number when it was made */
    ptrdiff_t next;         /* next item to claim */
    int pending;            /* helpers still working on the job */
} lk_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};

static inline void lk_pool_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static inline double lk_pool_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void lk_pool_claim(void) {
    lk_pool_fn fn = lk_pool.fn;
    void *ctx = lk_pool.ctx;
    ptrdiff_t n = lk_pool.nitems;
    for (;;) {
        ptrdiff_t i = __atomic_fetch_add(&lk_pool.next, 1, __ATOMIC_RELAXED);
        if (i >= n) break;
        fn(ctx, i);
    }
}

static void *lk_pool_worker(void *arg) {
    int index = (int)(ptrdiff_t)arg;
    /* The job current when this worker was made: the first job it may take is
     * the next one, even if that is published before the thread starts. */
    long long seen = lk_pool.born[index];
    for (;;) {
        /* Spin ~0.3 ms for the next job, then sleep until one is published. */
        double until = lk_pool_now() + 3e-4;
        long long g;
        for (int spins = 0;; spins++) {
            g = __atomic_load_n(&lk_pool.job, __ATOMIC_ACQUIRE);
            if (g != seen) break;
            if ((spins & 255) == 255 && lk_pool_now() > until) {
                pthread_mutex_lock(&lk_pool.mu);
                lk_pool.sleepers++;
                while ((g = __atomic_load_n(&lk_pool.job, __ATOMIC_ACQUIRE)) == seen)
                    pthread_cond_wait(&lk_pool.cv, &lk_pool.mu);
                lk_pool.sleepers--;
                pthread_mutex_unlock(&lk_pool.mu);
                break;
            }
            lk_pool_relax();
        }
        seen = g;
        if (index < (int)(g & 0xFFFF)) {
            lk_pool_claim();
            __atomic_fetch_sub(&lk_pool.pending, 1, __ATOMIC_ACQ_REL);
        }
    }
    return NULL;
}

/* Called with run_mu held: make sure `want` workers exist in this process. */
static int lk_pool_grow(int want) {
    if (lk_pool.pid != getpid()) {
        /* A forked child: the parent's workers are not here. Start afresh (the
         * old mutexes may have been copied mid-use, so make new ones). */
        pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
        pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
        lk_pool.mu = mu;
        lk_pool.cv = cv;
        lk_pool.nworkers = 0;
        lk_pool.sleepers = 0;
        lk_pool.pid = getpid();
    }
    if (want > LK_POOL_MAX) want = LK_POOL_MAX;
    while (lk_pool.nworkers < want) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        lk_pool.born[lk_pool.nworkers] = lk_pool.job;
        int err = pthread_create(&t, &attr, lk_pool_worker, (void *)(ptrdiff_t)lk_pool.nworkers);
        pthread_attr_destroy(&attr);
        if (err) break;
        lk_pool.nworkers++;
    }
    return lk_pool.nworkers;
}

static int lk_pool_run(int threads, ptrdiff_t nitems, lk_pool_fn fn, void *ctx) {
    if (threads <= 1 || nitems <= 1 || pthread_mutex_trylock(&lk_pool.run_mu) != 0) {
        for (ptrdiff_t i = 0; i < nitems; i++) fn(ctx, i);
        return 0;
    }
    int helpers = lk_pool_grow(threads - 1);
    if (helpers > nitems - 1) helpers = (int)(nitems - 1);
    lk_pool.fn = fn;
    lk_pool.ctx = ctx;
    lk_pool.nitems = nitems;
    __atomic_store_n(&lk_pool.next, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&lk_pool.pending, helpers, __ATOMIC_RELAXED);
    __atomic_store_n(&lk_pool.job, ((lk_pool.job >> 16) + 1) << 16 | helpers, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&lk_pool.mu);
    if (lk_pool.sleepers) pthread_cond_broadcast(&lk_pool.cv);
    pthread_mutex_unlock(&lk_pool.mu);
    lk_pool_claim();
    for (int spins = 0; __atomic_load_n(&lk_pool.pending, __ATOMIC_ACQUIRE) > 0; spins++) {
        if (spins < 100000)
            lk_pool_relax();
        else
            sched_yield(); /* a helper was descheduled mid-item */
    }
    pthread_mutex_unlock(&lk_pool.run_mu);
    return 0;
}

static inline int lk_pool_native(void) { return 1; }

#else
static int lk_pool_run(int threads, ptrdiff_t nitems, lk_pool_fn fn, void *ctx) {
    (void)threads; (void)nitems; (void)fn; (void)ctx;
    return -1;
}

static inline int lk_pool_native(void) { return 0; }
#endif

#endif /* LAYOUTKIT_POOL_H */
