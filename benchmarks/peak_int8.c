/* Single-core int8 dot-product peak of the machine at hand, for the int8 benchmarks' floor.
 *
 * Twelve independent chains of `vpdpbusd` (uint8 x int8, 4 products summed into each int32
 * lane) on the widest unit the compiler was told about: AVX-512 VNNI (zmm), else AVX-VNNI
 * (ymm). Prints one line:
 *   peak_int8 <isa> <GOP/s>
 * counting a multiply and an add per byte product (2 OP x 4 bytes x int32 lanes per
 * instruction). Timed in CPU time of the process, as peak_fma.c.
 * Build: gcc -O2 -march=native peak_int8.c -o peak_int8
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

#if defined(__AVX512VNNI__) && defined(__AVX512F__)
#define ISA "avx512-vnni"
#define LANES 16
typedef __m512i vec;
#define SET1(x) _mm512_set1_epi32(x)
#define DOT(c, a, b) _mm512_dpbusd_epi32(c, a, b)
#define SUM(v) _mm512_reduce_add_epi32(v)
#elif defined(__AVXVNNI__)
#define ISA "avx-vnni"
#define LANES 8
typedef __m256i vec;
#define SET1(x) _mm256_set1_epi32(x)
#define DOT(c, a, b) _mm256_dpbusd_avx_epi32(c, a, b)
static int SUM(__m256i v) {
    int t[8];
    _mm256_storeu_si256((__m256i *)t, v);
    return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}
#else
#error "peak_int8.c needs AVX-512 VNNI or AVX-VNNI (build with -march=native on such a CPU)"
#endif

int main(void) {
    vec a = SET1(0x01020304), b = SET1(0x01010101);
    vec c0 = SET1(0), c1 = SET1(1), c2 = SET1(2), c3 = SET1(3), c4 = SET1(4), c5 = SET1(5);
    vec c6 = SET1(6), c7 = SET1(7), c8 = SET1(8), c9 = SET1(9), c10 = SET1(10), c11 = SET1(11);
    double t = cpu_now();
    for (long i = 0; i < ITERS; i++) {
        c0 = DOT(c0, a, b); c1 = DOT(c1, a, b); c2 = DOT(c2, a, b); c3 = DOT(c3, a, b);
        c4 = DOT(c4, a, b); c5 = DOT(c5, a, b); c6 = DOT(c6, a, b); c7 = DOT(c7, a, b);
        c8 = DOT(c8, a, b); c9 = DOT(c9, a, b); c10 = DOT(c10, a, b); c11 = DOT(c11, a, b);
    }
    t = cpu_now() - t;
    int s = SUM(c0) + SUM(c1) + SUM(c2) + SUM(c3) + SUM(c4) + SUM(c5) + SUM(c6) + SUM(c7) +
            SUM(c8) + SUM(c9) + SUM(c10) + SUM(c11);
    if (s == 12345) puts("");
    printf("peak_int8 %s %.1f\n", ISA, 12.0 * ITERS * LANES * 4 * 2 / t / 1e9);
    return 0;
}
