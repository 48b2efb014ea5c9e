/* edgec_threads.h: the thread pool of one generated library (header-only; included once, by
 * the library's NAME.c, so each library has its own pool).
 *
 * edgec_parallel_for(task, ctx, n) runs task(ctx, first, end) on contiguous slices of [0, n),
 * one slice per thread, and returns when all are done. Threads claim slices from a counter
 * tagged with the loop's generation, the caller too, so a worker the OS has not scheduled
 * yet delays nothing: the caller takes its slice, and a late worker finds the loop over.
 * The workers are created by edgec_set_num_threads (or on the first parallel loop, from the
 * EDGEC_NUM_THREADS environment variable); after that no call allocates. Between loops the
 * workers spin briefly (the next loop of an inference follows within microseconds), then
 * sleep on a condition variable. Build with EDGEC_SINGLE_THREADED defined for a library
 * that needs no pthreads: every loop then runs on the caller.
 *
 * Two app threads may run the library at once (each with its own workspace): a loop takes
 * the pool only when no other loop holds it, else it runs on its caller alone. */
#ifndef EDGEC_THREADS_H
#define EDGEC_THREADS_H

#include <stddef.h>
#include <stdlib.h>

#define EDGEC_MAX_THREADS 64

typedef void (*edgec_task)(void *ctx, ptrdiff_t first, ptrdiff_t end);

#ifdef EDGEC_SINGLE_THREADED

static inline void edgec_set_num_threads(int n)
{
    (void)n;
}

static inline int edgec_get_num_threads(void)
{
    return 1;
}

static inline void edgec_parallel_for(edgec_task task, void *ctx, ptrdiff_t n)
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
    unsigned long long claim; /* generation << 32 | next slice to take */
    int done;           /* slices finished in the current loop */
    int busy;           /* 1 while a loop holds the pool (another app thread runs alone) */
    edgec_task task;
    void *ctx;
    ptrdiff_t n;
} edgec_pool = {.mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};
static pthread_once_t edgec_pool_once = PTHREAD_ONCE_INIT;

static inline void edgec_slice(int k, int parts, ptrdiff_t n, ptrdiff_t *first, ptrdiff_t *end)
{
    *first = n * k / parts;
    *end = n * (k + 1) / parts;
}

/* Take the next slice of loop `gen` and run it; 0 when none is left. */
static inline int edgec_run_slice(unsigned gen)
{
    unsigned long long c = __atomic_load_n(&edgec_pool.claim, __ATOMIC_ACQUIRE);
    for (;;) {
        int k = (int)(c & 0xffffffffu);
        if ((unsigned)(c >> 32) != gen || k >= edgec_pool.nthreads)
            return 0;
        if (__atomic_compare_exchange_n(&edgec_pool.claim, &c, c + 1, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            ptrdiff_t first, end;
            edgec_slice(k, edgec_pool.nthreads, edgec_pool.n, &first, &end);
            if (first < end)
                edgec_pool.task(edgec_pool.ctx, first, end);
            __atomic_add_fetch(&edgec_pool.done, 1, __ATOMIC_ACQ_REL);
            return 1;
        }
    }
}

/* `arg` is the generation when the worker was created: a worker the OS starts late must
 * still see every loop (and the stop) published after its creation. */
static inline void *edgec_worker(void *arg)
{
    unsigned seen = (unsigned)(size_t)arg;
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
        while (edgec_run_slice(gen))
            ;
    }
}

/* Start loop number generation + 1 (the job fields are set) and wake the workers. */
static inline unsigned edgec_publish(void)
{
    unsigned gen = edgec_pool.generation + 1;
    __atomic_store_n(&edgec_pool.done, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&edgec_pool.claim, (unsigned long long)gen << 32, __ATOMIC_RELEASE);
    pthread_mutex_lock(&edgec_pool.mu);
    __atomic_store_n(&edgec_pool.generation, gen, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&edgec_pool.wake);
    pthread_mutex_unlock(&edgec_pool.mu);
    return gen;
}

static inline void edgec_stop_workers(void)
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
static inline void edgec_set_num_threads(int n)
{
    if (n < 1)
        n = 1;
    if (n > EDGEC_MAX_THREADS)
        n = EDGEC_MAX_THREADS;
    __atomic_store_n(&edgec_pool.configured, 1, __ATOMIC_RELEASE);
    if (n == edgec_pool.nthreads && edgec_pool.started == n - 1)
        return;
    edgec_stop_workers();
    edgec_pool.nthreads = n;
    for (int i = 1; i < n; ++i) {
        void *gen = (void *)(size_t)edgec_pool.generation;
        if (pthread_create(&edgec_pool.threads[i - 1], NULL, edgec_worker, gen) != 0)
            break; /* fewer threads: the caller takes the slices nobody else does */
        edgec_pool.started = i;
    }
}

/* The first use without edgec_set_num_threads: the thread count from the environment,
 * once, whichever app thread comes first. */
static void edgec_configure_from_env(void)
{
    if (!__atomic_load_n(&edgec_pool.configured, __ATOMIC_ACQUIRE)) {
        const char *env = getenv("EDGEC_NUM_THREADS");
        edgec_set_num_threads(env != NULL ? atoi(env) : 1);
    }
}

static inline int edgec_get_num_threads(void)
{
    if (!__atomic_load_n(&edgec_pool.configured, __ATOMIC_ACQUIRE))
        pthread_once(&edgec_pool_once, edgec_configure_from_env);
    return edgec_pool.nthreads;
}

static inline void edgec_parallel_for(edgec_task task, void *ctx, ptrdiff_t n)
{
    int parts = edgec_get_num_threads();
    int idle = 0;
    if (parts <= 1 || n <= 1 ||
        !__atomic_compare_exchange_n(&edgec_pool.busy, &idle, 1, 0, __ATOMIC_ACQUIRE,
                                     __ATOMIC_RELAXED)) {
        if (n > 0)
            task(ctx, 0, n); /* one thread, a loop too small, or another run holds the pool */
        return;
    }
    edgec_pool.task = task;
    edgec_pool.ctx = ctx;
    edgec_pool.n = n;
    unsigned gen = edgec_publish();
    while (edgec_run_slice(gen))
        ;
    while (__atomic_load_n(&edgec_pool.done, __ATOMIC_ACQUIRE) < parts)
        EDGEC_PAUSE();
    __atomic_store_n(&edgec_pool.busy, 0, __ATOMIC_RELEASE);
}

#endif /* EDGEC_SINGLE_THREADED */
#endif /* EDGEC_THREADS_H */
