/* edgec_threads.h: the thread pool of one generated library (header-only; included once, by
 * the library's NAME.c, so each library has its own pool).
 *
 * edgec_parallel_for(task, ctx, n) runs task(ctx, first, end) on contiguous slices of [0, n),
 * one slice per thread, the calling thread taking the first, and returns when all are done.
 * The workers are created by edgec_set_num_threads (or on the first parallel loop, from the
 * EDGEC_NUM_THREADS environment variable); after that no call allocates. Between loops the
 * workers spin briefly (the next loop of an inference follows within microseconds), then
 * sleep on a condition variable. Build with EDGEC_SINGLE_THREADED defined for a library
 * that needs no pthreads: every loop then runs on the caller. */
#ifndef EDGEC_THREADS_H
#define EDGEC_THREADS_H

#include <stddef.h>
#include <stdlib.h>

#define EDGEC_MAX_THREADS 64

typedef void (*edgec_task)(void *ctx, ptrdiff_t first, ptrdiff_t end);

#ifdef EDGEC_SINGLE_THREADED

static void edgec_set_num_threads(int n)
{
    (void)n;
}

static int edgec_get_num_threads(void)
{
    return 1;
}

static void edgec_parallel_for(edgec_task task, void *ctx, ptrdiff_t n)
{
    if (n > 0)
        task(ctx, 0, n);
}

#else

#include <pthread.h>

#if defined(__x86_64__) || defined(__i386__)
#define EDGEC_PAUSE() __builtin_ia32_pause()
#elif defined(__aarch64__) || defined(__arm__)
#define EDGEC_PAUSE() __asm__ __volatile__("yield")
#else
#define EDGEC_PAUSE() ((void)0)
#endif

/* spins of a worker waiting for work before it sleeps: about a millisecond */
#define EDGEC_SPINS 20000

static struct {
    pthread_mutex_t mu;
    pthread_cond_t wake;
    pthread_t threads[EDGEC_MAX_THREADS];
    int nthreads;       /* threads a loop uses, the caller included */
    int started;        /* workers running */
    int configured;     /* nthreads was set (by the app or from the environment) */
    unsigned generation; /* bumped for each loop and at shutdown */
    int stop;
    int pending;        /* workers still working on the current loop */
    edgec_task task;
    void *ctx;
    ptrdiff_t n;
} edgec_pool = {.mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static void edgec_slice(int k, int parts, ptrdiff_t n, ptrdiff_t *first, ptrdiff_t *end)
{
    *first = n * k / parts;
    *end = n * (k + 1) / parts;
}

static void *edgec_worker(void *arg)
{
    int k = (int)(ptrdiff_t)arg;
    unsigned seen = 0;
    for (;;) {
        unsigned gen;
        int spins = 0;
        while ((gen = __atomic_load_n(&edgec_pool.generation, __ATOMIC_ACQUIRE)) == seen &&
               spins < EDGEC_SPINS) {
            EDGEC_PAUSE();
            ++spins;
        }
        if (gen == seen) {
            pthread_mutex_lock(&edgec_pool.mu);
            while ((gen = __atomic_load_n(&edgec_pool.generation, __ATOMIC_ACQUIRE)) == seen)
                pthread_cond_wait(&edgec_pool.wake, &edgec_pool.mu);
            pthread_mutex_unlock(&edgec_pool.mu);
        }
        seen = gen;
        if (__atomic_load_n(&edgec_pool.stop, __ATOMIC_ACQUIRE))
            return NULL;
        ptrdiff_t first, end;
        edgec_slice(k, edgec_pool.nthreads, edgec_pool.n, &first, &end);
        if (first < end)
            edgec_pool.task(edgec_pool.ctx, first, end);
        __atomic_sub_fetch(&edgec_pool.pending, 1, __ATOMIC_ACQ_REL);
    }
}

static void edgec_publish(void)
{
    pthread_mutex_lock(&edgec_pool.mu);
    __atomic_add_fetch(&edgec_pool.generation, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&edgec_pool.wake);
    pthread_mutex_unlock(&edgec_pool.mu);
}

static void edgec_stop_workers(void)
{
    if (!edgec_pool.started)
        return;
    __atomic_store_n(&edgec_pool.stop, 1, __ATOMIC_RELEASE);
    edgec_publish();
    for (int i = 0; i < edgec_pool.started; ++i)
        pthread_join(edgec_pool.threads[i], NULL);
    edgec_pool.started = 0;
    edgec_pool.stop = 0;
}

/* Use n threads (the caller included) from the next loop on; n < 1 means 1. Not to be
 * called while the library runs. */
static void edgec_set_num_threads(int n)
{
    if (n < 1)
        n = 1;
    if (n > EDGEC_MAX_THREADS)
        n = EDGEC_MAX_THREADS;
    edgec_pool.configured = 1;
    if (n == edgec_pool.nthreads && edgec_pool.started == n - 1)
        return;
    edgec_stop_workers();
    edgec_pool.nthreads = n;
    for (int i = 1; i < n; ++i) {
        if (pthread_create(&edgec_pool.threads[i - 1], NULL, edgec_worker,
                           (void *)(ptrdiff_t)i) != 0)
            break; /* fewer threads: the slices of missing workers run on the caller */
        edgec_pool.started = i;
    }
}

static int edgec_get_num_threads(void)
{
    if (!edgec_pool.configured) {
        const char *env = getenv("EDGEC_NUM_THREADS");
        edgec_set_num_threads(env != NULL ? atoi(env) : 1);
    }
    return edgec_pool.nthreads;
}

static void edgec_parallel_for(edgec_task task, void *ctx, ptrdiff_t n)
{
    int parts = edgec_get_num_threads();
    if (parts <= 1 || n <= 1) {
        if (n > 0)
            task(ctx, 0, n);
        return;
    }
    edgec_pool.task = task;
    edgec_pool.ctx = ctx;
    edgec_pool.n = n;
    __atomic_store_n(&edgec_pool.pending, edgec_pool.started, __ATOMIC_RELEASE);
    edgec_publish();
    ptrdiff_t first, end;
    edgec_slice(0, parts, n, &first, &end);
    if (first < end)
        task(ctx, first, end);
    for (int k = edgec_pool.started + 1; k < parts; ++k) { /* workers that failed to start */
        edgec_slice(k, parts, n, &first, &end);
        if (first < end)
            task(ctx, first, end);
    }
    while (__atomic_load_n(&edgec_pool.pending, __ATOMIC_ACQUIRE) > 0)
        EDGEC_PAUSE();
}

#endif /* EDGEC_SINGLE_THREADED */
#endif /* EDGEC_THREADS_H */
