/* What a vector gather costs against an FMA on the core at hand: the figure the sparse cost
 * model's gather rate scales with (edgec/targets/uarch.py).
 *
 * The loop is the gathering kernel's (SparseMatMul, sliced ELLPACK): per stored slice, a
 * vector of column indices is loaded, A's inputs are gathered by it (vgatherdps) and
 * multiply-added with a vector of weights into one of 4 accumulators; A (16 KB) and the
 * streams stay in L1. The FMA loop is the same without the gather (12 chains). Prints
 *   peak_gather <isa> <ns per gathered element> <ns per FMA lane> <ratio>
 * where ratio is the FMA lanes the core could issue in the time of one gathered element.
 * CPU time of the process, best of 5. Build for AVX2 or AVX-512:
 *   gcc -O2 -mavx2 -mfma benchmarks/peak_gather.c -o pg && ./pg
 *   gcc -O2 -march=x86-64-v4 benchmarks/peak_gather.c -o pg && ./pg
 */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define SLICES 256
#define REPS 40000L
#define ITERS 20000000L

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

#if defined(__AVX512F__)
#define ISA "avx512"
#define LANES 16
typedef __m512 vec;
typedef __m512i ivec;
#define SET1(x) _mm512_set1_ps(x)
#define FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define LOAD(p) _mm512_loadu_ps(p)
#define ILOAD(p) _mm512_loadu_si512((const void *)(p))
#define GATHER(base, idx) _mm512_i32gather_ps(idx, base, 4)
#define SUM(v) _mm512_reduce_add_ps(v)
#else
#define ISA "avx2"
#define LANES 8
typedef __m256 vec;
typedef __m256i ivec;
#define SET1(x) _mm256_set1_ps(x)
#define FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define LOAD(p) _mm256_loadu_ps(p)
#define ILOAD(p) _mm256_loadu_si256((const __m256i *)(p))
#define GATHER(base, idx) _mm256_i32gather_ps(base, idx, 4)
static float SUM(__m256 v) {
    float t[8];
    _mm256_storeu_ps(t, v);
    return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}
#endif

static float a[4096], w[SLICES * LANES];
static int idx[SLICES * LANES];

static double gather_ns(void) {
    vec acc[4] = {SET1(0), SET1(0), SET1(0), SET1(0)};
    double t0 = cpu_now();
    for (long r = 0; r < REPS; r++)
        for (int s = 0; s < SLICES; s++) {
            ivec i = ILOAD(idx + s * LANES);
            acc[s & 3] = FMA(GATHER(a, i), LOAD(w + s * LANES), acc[s & 3]);
        }
    double t = cpu_now() - t0;
    volatile float sink = SUM(acc[0]) + SUM(acc[1]) + SUM(acc[2]) + SUM(acc[3]);
    (void)sink;
    return t * 1e9 / ((double)REPS * SLICES * LANES);
}

static double fma_ns(void) {  /* peak_fma.c's loop: 12 independent chains */
    vec x = SET1(1.0000001f), y = SET1(0.9999999f);
    vec c0 = SET1(0), c1 = SET1(1), c2 = SET1(2), c3 = SET1(3), c4 = SET1(4), c5 = SET1(5);
    vec c6 = SET1(6), c7 = SET1(7), c8 = SET1(8), c9 = SET1(9), c10 = SET1(10), c11 = SET1(11);
    double t0 = cpu_now();
    for (long i = 0; i < ITERS; i++) {
        c0 = FMA(c0, x, y); c1 = FMA(c1, x, y); c2 = FMA(c2, x, y); c3 = FMA(c3, x, y);
        c4 = FMA(c4, x, y); c5 = FMA(c5, x, y); c6 = FMA(c6, x, y); c7 = FMA(c7, x, y);
        c8 = FMA(c8, x, y); c9 = FMA(c9, x, y); c10 = FMA(c10, x, y); c11 = FMA(c11, x, y);
    }
    double t = cpu_now() - t0;
    volatile float sink = SUM(c0) + SUM(c1) + SUM(c2) + SUM(c3) + SUM(c4) + SUM(c5) +
                          SUM(c6) + SUM(c7) + SUM(c8) + SUM(c9) + SUM(c10) + SUM(c11);
    (void)sink;
    return t * 1e9 / ((double)ITERS * 12 * LANES);
}

int main(void) {
    srand(1);
    for (int i = 0; i < 4096; i++) a[i] = (float)i;
    for (int i = 0; i < SLICES * LANES; i++) {
        idx[i] = rand() % 4096;
        w[i] = 0.5f;
    }
    double g = 1e9, f = 1e9;
    for (int k = 0; k < 5; k++) {
        double gk = gather_ns(), fk = fma_ns();
        g = gk < g ? gk : g;
        f = fk < f ? fk : f;
    }
    printf("peak_gather %s %.4f %.5f %.1f\n", ISA, g, f, g / f);
    return 0;
}
