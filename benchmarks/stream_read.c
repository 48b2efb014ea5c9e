/* Read bandwidth of one core over a buffer of a given size, for the benchmarks' floor.
 *
 * A model whose weights do not fit in the core's own caches (the MLP's 2.1 MB against a
 * 512 KB L2) is bound by how fast a core can stream them, not by its FMA peak: every run
 * reads every weight once. This sums a buffer of that size over and over (so it stays in
 * whatever cache level holds a buffer of that size, as the weights do between runs) with
 * eight independent vector accumulators, and prints one line:
 *   stream_read <bytes> <GB/s>
 * the best of several timings in CPU time of the thread (a loaded machine does not lower
 * it). Build: gcc -O3 -march=native stream_read.c -o stream_read
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    size_t bytes = argc > 1 ? strtoull(argv[1], NULL, 10) : (size_t)2 << 20;
    size_t n = bytes / sizeof(float) / 64 * 64;
    if (n == 0)
        n = 64;
    float *a = aligned_alloc(64, n * sizeof(float));
    if (!a)
        return 1;
    for (size_t i = 0; i < n; ++i)
        a[i] = (float)(i & 7);
    /* repeat so that one timing reads at least 256 MB (far above timer resolution) */
    size_t reps = ((size_t)256 << 20) / (n * sizeof(float)) + 1;
    double best = 1e30, sink = 0;
    for (int trial = 0; trial < 7; ++trial) {
        double t0 = cpu_now();
        for (size_t r = 0; r < reps; ++r) {
            float s[64] = {0};
            for (size_t i = 0; i < n; i += 64)
                for (int k = 0; k < 64; ++k)
                    s[k] += a[i + k];
            for (int k = 0; k < 64; ++k)
                sink += s[k];
        }
        double dt = cpu_now() - t0;
        if (dt < best)
            best = dt;
    }
    printf("stream_read %zu %.1f\n", n * sizeof(float), reps * n * sizeof(float) / best / 1e9);
    return sink == 42.0;  /* keeps the sums alive */
}
