/* Single-core rate of the exact AVX2 int8 dot products (no VNNI), for the int8 benchmarks'
 * floor on AVX2-only hosts, in the shape of the GEMM tile that uses them (microkernels_int8.py
 * gemm_tile on AVX2: 4 rows x 2 vectors, 8 int32 accumulators): per k-group, two 32-byte
 * weight vectors loaded and the 4 bytes of each of 4 rows broadcast (from an L1-resident
 * block, so the loads cost what they cost in the tile), then 8 dot4s, in one of three forms:
 *   widened  edgec_avx2.h edgec_dot4_u8i8: even and odd bytes widened to 16 bits, two
 *            vpmaddwd and two vpaddd per dot4 (the widening of a row or a vector shared)
 *   sign     edgec_avx2.h edgec_dot4c_u8i7: x = a ^ 0x80 (a - 128), vpsignb moves x's signs
 *            onto the weights (exact for weights in [-127, 127]), vpmaddubsw of |x| (once
 *            per row) by them, vpmaddwd by ones, vpaddd
 *   maddubs  vpmaddubsw of a by the weights, vpmaddwd by ones, vpaddd: exact only for
 *            weights of 7 bits (onnxruntime's reduce_range), the sign form's lower bound
 * and `fma`, the same tile in float32 (8 vfmadd231ps per k step of 8 floats), for the ratio.
 * Prints one line: peak_int8_avx2 <form> <GOP/s> (2 OP per byte product or per FMA lane).
 * Build: gcc -O2 -mavx2 -mfma peak_int8_avx2.c -o peak_int8_avx2; run: ./peak_int8_avx2 sign
 */
#include <immintrin.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define ITERS 20000000L
#define BLOCK 64 /* k-groups in the L1 block, walked round */

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static signed char wts[BLOCK][2][32] __attribute__((aligned(32)));
static unsigned char act[BLOCK][4][4] __attribute__((aligned(32)));
static float wf[BLOCK][2][8] __attribute__((aligned(32)));
static float af[BLOCK][4];

static inline __m256i bcast4(const unsigned char *p)
{
    return _mm256_broadcastd_epi32(_mm_loadu_si32(p));
}

#define ROW(i, c0, c1, PRE_ROW, DOT)                                                        \
    {                                                                                       \
        __m256i a = bcast4(act[g][i]);                                                      \
        PRE_ROW;                                                                            \
        c0 = DOT(c0, a, b0);                                                                \
        c1 = DOT(c1, a, b1);                                                                \
    }
/* the accumulators in named locals (an array of them was stored back on every step) */
#define TILE(PRE_ROW, DOT)                                                                  \
    for (long it = 0; it < ITERS; ++it) {                                                   \
        long g = it & (BLOCK - 1);                                                          \
        __m256i b0 = _mm256_load_si256((const __m256i *)wts[g][0]);                        \
        __m256i b1 = _mm256_load_si256((const __m256i *)wts[g][1]);                        \
        ROW(0, c00, c01, PRE_ROW, DOT) ROW(1, c10, c11, PRE_ROW, DOT)                       \
        ROW(2, c20, c21, PRE_ROW, DOT) ROW(3, c30, c31, PRE_ROW, DOT)                       \
    }

static inline __m256i dot_widened(__m256i acc, __m256i a, __m256i b)
{
    __m256i a_even = _mm256_and_si256(a, _mm256_set1_epi16(0xff));
    __m256i a_odd = _mm256_srli_epi16(a, 8);
    __m256i b_even = _mm256_srai_epi16(_mm256_slli_epi16(b, 8), 8);
    __m256i b_odd = _mm256_srai_epi16(b, 8);
    return _mm256_add_epi32(acc, _mm256_add_epi32(_mm256_madd_epi16(a_even, b_even),
                                                  _mm256_madd_epi16(a_odd, b_odd)));
}
static inline __m256i dot_sign(__m256i acc, __m256i x, __m256i b)
{
    __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(x), _mm256_sign_epi8(b, x));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
}
static inline __m256i dot_maddubs(__m256i acc, __m256i a, __m256i b)
{
    __m256i p = _mm256_maddubs_epi16(a, b);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
}

int main(int argc, char **argv)
{
    const char *form = argc > 1 ? argv[1] : "sign";
    for (int g = 0; g < BLOCK; ++g) {
        for (int j = 0; j < 64; ++j) {
            wts[g][j / 32][j % 32] = (signed char)((g * 7 + j * 13) % 127 - 63);
            wf[g][j / 32 % 2][j % 8] = (float)j;
        }
        for (int i = 0; i < 16; ++i)
            act[g][i / 4][i % 4] = (unsigned char)(g * 5 + i * 11);
        for (int i = 0; i < 4; ++i)
            af[g][i] = 1e-9f * (float)i;
    }
    __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00,
            c21 = c00, c30 = c00, c31 = c00;
    double t = cpu_now();
    if (!strcmp(form, "widened")) {
        TILE((void)0, dot_widened)
    } else if (!strcmp(form, "sign")) {
        TILE(a = _mm256_xor_si256(a, _mm256_set1_epi8(-128)), dot_sign)
    } else if (!strcmp(form, "maddubs")) {
        TILE((void)0, dot_maddubs)
    } else if (!strcmp(form, "fma")) {
        __m256 f00 = _mm256_setzero_ps(), f01 = f00, f10 = f00, f11 = f00, f20 = f00,
               f21 = f00, f30 = f00, f31 = f00;
        for (long it = 0; it < ITERS; ++it) {
            long g = it & (BLOCK - 1);
            __m256 b0 = _mm256_load_ps(wf[g][0]), b1 = _mm256_load_ps(wf[g][1]);
            __m256 a0 = _mm256_broadcast_ss(&af[g][0]), a1 = _mm256_broadcast_ss(&af[g][1]);
            __m256 a2 = _mm256_broadcast_ss(&af[g][2]), a3 = _mm256_broadcast_ss(&af[g][3]);
            f00 = _mm256_fmadd_ps(a0, b0, f00), f01 = _mm256_fmadd_ps(a0, b1, f01);
            f10 = _mm256_fmadd_ps(a1, b0, f10), f11 = _mm256_fmadd_ps(a1, b1, f11);
            f20 = _mm256_fmadd_ps(a2, b0, f20), f21 = _mm256_fmadd_ps(a2, b1, f21);
            f30 = _mm256_fmadd_ps(a3, b0, f30), f31 = _mm256_fmadd_ps(a3, b1, f31);
        }
        t = cpu_now() - t;
        float o[8];
        _mm256_storeu_ps(o, _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(f00, f01),
                                                        _mm256_add_ps(f10, f11)),
                                          _mm256_add_ps(_mm256_add_ps(f20, f21),
                                                        _mm256_add_ps(f30, f31))));
        if (o[0] == 12345.f)
            puts("");
        printf("peak_int8_avx2 fma %.1f\n", 8.0 * ITERS * 8 * 2 / t / 1e9);
        return 0;
    } else {
        fprintf(stderr, "peak_int8_avx2: form is widened, sign, maddubs or fma\n");
        return 2;
    }
    t = cpu_now() - t;
    int o[8];
    __m256i s = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(c00, c01), _mm256_add_epi32(c10, c11)),
                                 _mm256_add_epi32(_mm256_add_epi32(c20, c21), _mm256_add_epi32(c30, c31)));
    _mm256_storeu_si256((__m256i *)o, s);
    if (o[0] == 12345)
        puts("");
    printf("peak_int8_avx2 %s %.1f\n", form, 8.0 * ITERS * 32 * 2 / t / 1e9);
    return 0;
}
