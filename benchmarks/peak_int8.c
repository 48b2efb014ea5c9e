/* Single-core int8 dot-product peak of the machine at hand, for the int8 benchmarks' floor.
 *
 * Independent chains of `vpdpbusd` (uint8 x int8, 4 products summed into each int32 lane) on
 * the widest unit the compiler was told about: AVX-512 VNNI (zmm, 12 chains), else AVX-VNNI
 * (ymm, 10 chains: with 12 in 16 registers gcc spilled sums to the stack inside the loop, and
 * the probe read 280 GOP/s on a Zen 5 that runs 460). Prints one line:
 *   peak_int8 <isa> <GOP/s>
 * counting a multiply and an add per byte product (2 OP x 4 bytes x int32 lanes per
 * instruction). Timed in CPU time of the process, as peak_fma.c.
 * Build: gcc -O2 -march=native peak_int8.c -o peak_int8 (AVX-VNNI alone, the rate of an AVX2
 * library's int8 tiles on a CPU that has it: gcc -O2 -mavx2 -mavxvnni)
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
#define CHAINS 12
typedef __m512i vec;
#define SET1(x) _mm512_set1_epi32(x)
#define DOT(c, a, b) _mm512_dpbusd_epi32(c, a, b)
#define SUM(v) _mm512_reduce_add_epi32(v)
#elif defined(__AVXVNNI__)
#define ISA "avx-vnni"
#define LANES 8
#define CHAINS 10
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
    vec a = SET1(0x01020304), b = SET1(0x01010101), c[CHAINS];
    for (int j = 0; j < CHAINS; j++) c[j] = SET1(j);
    double t = cpu_now();
    for (long i = 0; i < ITERS; i++) {
#pragma GCC unroll 16
        for (int j = 0; j < CHAINS; j++) c[j] = DOT(c[j], a, b);
    }
    t = cpu_now() - t;
    int s = 0;
    for (int j = 0; j < CHAINS; j++) s += SUM(c[j]);
    if (s == 12345) puts("");
    printf("peak_int8 %s %.1f\n", ISA, (double)CHAINS * ITERS * LANES * 4 * 2 / t / 1e9);
    return 0;
}
