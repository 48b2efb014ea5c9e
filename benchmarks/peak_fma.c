/* Single-core float32 FMA peak of the machine at hand, for the benchmarks' floor.
 *
 * Twelve independent FMA chains (enough to cover FMA latency x issue width on current x86
 * cores) on the widest vector unit the compiler was told about: AVX-512 when built with
 * -march=native on a machine that has it, else AVX2 + FMA. Prints one line:
 *   peak_fma <isa> <GFLOP/s>
 * where GFLOP/s counts a fused multiply-add as 2 FLOP per lane. Timed in CPU time of the
 * process, not wall time, so that other processes taking the core (a shared, loaded
 * machine) do not lower the figure: it is the core's peak, not what was left of it.
 * Build: gcc -O2 -march=native peak_fma.c -o peak_fma
 */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

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
#define SET1(x) _mm512_set1_ps(x)
#define FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define SUM(v) _mm512_reduce_add_ps(v)
#elif defined(__FMA__)
#define ISA "avx2"
#define LANES 8
typedef __m256 vec;
#define SET1(x) _mm256_set1_ps(x)
#define FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
static float SUM(__m256 v) {
    float t[8];
    _mm256_storeu_ps(t, v);
    return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}
#else
#error "peak_fma.c needs AVX2 with FMA or AVX-512 (build with -march=native on x86-64)"
#endif

int main(void) {
    vec a = SET1(1.0000001f), b = SET1(0.9999999f);
    vec c0 = SET1(0), c1 = SET1(1), c2 = SET1(2), c3 = SET1(3), c4 = SET1(4), c5 = SET1(5);
    vec c6 = SET1(6), c7 = SET1(7), c8 = SET1(8), c9 = SET1(9), c10 = SET1(10), c11 = SET1(11);
    double t = cpu_now();
    for (long i = 0; i < ITERS; i++) {
        c0 = FMA(c0, a, b); c1 = FMA(c1, a, b); c2 = FMA(c2, a, b); c3 = FMA(c3, a, b);
        c4 = FMA(c4, a, b); c5 = FMA(c5, a, b); c6 = FMA(c6, a, b); c7 = FMA(c7, a, b);
        c8 = FMA(c8, a, b); c9 = FMA(c9, a, b); c10 = FMA(c10, a, b); c11 = FMA(c11, a, b);
    }
    t = cpu_now() - t;
    /* use every chain so none is dropped as dead code */
    float s = SUM(c0) + SUM(c1) + SUM(c2) + SUM(c3) + SUM(c4) + SUM(c5) + SUM(c6) + SUM(c7) +
              SUM(c8) + SUM(c9) + SUM(c10) + SUM(c11);
    if (s == 12345.0f) puts("");
    printf("peak_fma %s %.1f\n", ISA, (double)ITERS * 12 * LANES * 2 / t / 1e9);
    return 0;
}
