/* edgec_avx2.h: the helpers of edgec's AVX2 kernels (renderers/c.py AVX2): masks of a vector
 * tail, horizontal folds, exact int8 dot products and narrowing stores, vector exp and tanh */
#ifndef EDGEC_AVX2_H
#define EDGEC_AVX2_H
#include <immintrin.h>
#include "edgec_runtime.h"

/* --sanitize: the 8 lanes of a gather p[idx[l]] checked (edgec_asan_check) */
#ifdef __SANITIZE_ADDRESS__
__attribute__((always_inline)) static inline void edgec_asan_gather8(const float *p, __m256i idx)
{
    int32_t i[8];
    _mm256_storeu_si256((__m256i *)(void *)i, idx);
    for (int l = 0; l < 8; ++l)
        edgec_asan_check(p + i[l], sizeof *p, 0);
}
#else
#define edgec_asan_gather8(p, idx) ((void)(p), (void)(idx))
#endif

static inline __m256i edgec_mask8(ptrdiff_t n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#define EDGEC_FOLD8(name, op4)                                                      \
    static inline float name(__m256 v)                                              \
    {                                                                               \
        __m128 x = op4(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));      \
        x = op4(x, _mm_movehl_ps(x, x));                                            \
        x = op4(x, _mm_shuffle_ps(x, x, 1));                                        \
        return _mm_cvtss_f32(x);                                                    \
    }
EDGEC_FOLD8(edgec_hadd8, _mm_add_ps)
EDGEC_FOLD8(edgec_hmax8, _mm_max_ps)
EDGEC_FOLD8(edgec_hmin8, _mm_min_ps)
static inline int32_t edgec_hadd8i(__m256i v)
{
    __m128i x = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0x4e));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0xb1));
    return _mm_cvtsi128_si32(x);
}
/* acc + the 4 byte products of each 32-bit lane, exact: the even bytes and the odd bytes of
   a and b widened to 16 bits (zero- or sign-extended), and vpmaddwd adds each pair of 32-bit
   products (|2 * 255 * 128| < 2^31, so it never overflows) */
static inline __m256i edgec_dot4_u8i8(__m256i acc, __m256i a, __m256i b)
{
    __m256i a_even = _mm256_and_si256(a, _mm256_set1_epi16(0xff));
    __m256i a_odd = _mm256_srli_epi16(a, 8);
    __m256i b_even = _mm256_srai_epi16(_mm256_slli_epi16(b, 8), 8);
    __m256i b_odd = _mm256_srai_epi16(b, 8);
    return _mm256_add_epi32(acc, _mm256_add_epi32(_mm256_madd_epi16(a_even, b_even),
                                                  _mm256_madd_epi16(a_odd, b_odd)));
}
static inline __m256i edgec_dot4_i8i8(__m256i acc, __m256i a, __m256i b)
{
    __m256i a_even = _mm256_srai_epi16(_mm256_slli_epi16(a, 8), 8);
    __m256i a_odd = _mm256_srai_epi16(a, 8);
    __m256i b_even = _mm256_srai_epi16(_mm256_slli_epi16(b, 8), 8);
    __m256i b_odd = _mm256_srai_epi16(b, 8);
    return _mm256_add_epi32(acc, _mm256_add_epi32(_mm256_madd_epi16(a_even, b_even),
                                                  _mm256_madd_epi16(a_odd, b_odd)));
}
/* edgec_dot4_u8i8 where b's byte pairs keep every pair sum of products in int16 (kernel IR
   dot4p: the positive weights of a pair sum to at most 128, the negative to at least -128):
   vpmaddubsw's 16-bit pair sums never saturate, and vpmaddwd by ones adds each two */
static inline __m256i edgec_dot4p_u8i8(__m256i acc, __m256i a, __m256i b)
{
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b),
                                                   _mm256_set1_epi16(1)));
}
/* edgec_dot4_i8i8 where every weight of b lies in [-127, 127] (kernel IR dot4p of int8 a: the
   re-centred bytes of a uint8 row): vpsignb moves a's signs onto b, vpmaddubsw multiplies
   |a| (at most 128, as uint8) by them, and the pair sums, at most 2 * 128 * 127, never
   saturate; vpmaddwd by ones adds each two. The AVX2 int8 form of full-range weights where
   it beats the widening (targets/uarch.py int8_sign) */
static inline __m256i edgec_dot4s_i8i8(__m256i acc, __m256i a, __m256i b)
{
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(a),
                                                                        _mm256_sign_epi8(b, a)),
                                                   _mm256_set1_epi16(1)));
}
/* the first n of 8 int32 lanes, already in range, stored as bytes */
#define EDGEC_STORE8(name, T, pack8)                                                \
    static inline void name(T *p, __m256i v, ptrdiff_t n)                           \
    {                                                                               \
        __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v),                      \
                                    _mm256_extracti128_si256(v, 1));                \
        w = pack8(w, w);                                                            \
        if (n >= 8) {                                                               \
            _mm_storel_epi64((__m128i *)(void *)p, w);                              \
            return;                                                                 \
        }                                                                           \
        T t[16];                                                                    \
        _mm_storeu_si128((__m128i *)(void *)t, w);                                  \
        for (ptrdiff_t i = 0; i < n; ++i)                                           \
            p[i] = t[i];                                                            \
    }
EDGEC_STORE8(edgec_store8_u8, uint8_t, _mm_packus_epi16)
EDGEC_STORE8(edgec_store8_i8, int8_t, _mm_packs_epi16)
/* kernel-IR mulshift, as edgec_mulshift16 of edgec_avx512.h (a shuffle and a blend gather
   the high words) */
static inline __m256i edgec_mulshift8(__m256i a, __m256i m, int32_t s)
{
    __m256i even = _mm256_mul_epi32(a, m);
    __m256i odd = _mm256_mul_epi32(_mm256_srli_epi64(a, 32), _mm256_srli_epi64(m, 32));
    __m256i h = _mm256_blend_epi32(_mm256_shuffle_epi32(even, 0xB1), odd, 0xAA);
    h = _mm256_add_epi32(h, _mm256_set1_epi32(1 << (s - 33)));
    return _mm256_sra_epi32(h, _mm_cvtsi32_si128(s - 32));
}
/* kernel-IR nibble 0, as edgec_nibble_lo64 of edgec_avx512.h */
static inline __m256i edgec_nibble_lo32(__m256i a)
{
#ifdef __GFNI__
    return _mm256_gf2p8affine_epi64_epi8(a, _mm256_set1_epi64x(0x01020408), 0);
#else
    return _mm256_and_si256(_mm256_slli_epi16(a, 4), _mm256_set1_epi8((char)0xF0));
#endif
}
EDGEC_BY_LANES(edgec_exp8, edgec_expf, __m256, 8, _mm256_storeu_ps, _mm256_loadu_ps)
EDGEC_BY_LANES(edgec_tanh8, edgec_tanhf, __m256, 8, _mm256_storeu_ps, _mm256_loadu_ps)
#endif
