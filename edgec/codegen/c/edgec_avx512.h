/* edgec_avx512.h: the helpers of edgec's AVX-512 kernels (renderers/c.py AVX512): masks of a
 * vector tail, fixed-point multiplies, vector exp and tanh through the runtime's edgec_expf and edgec_tanhf */
#ifndef EDGEC_AVX512_H
#define EDGEC_AVX512_H
#include <immintrin.h>
#include "edgec_runtime.h"

/* --sanitize: the 16 lanes of a gather p[idx[l]] checked (edgec_asan_check) */
#ifdef __SANITIZE_ADDRESS__
__attribute__((always_inline)) static inline void edgec_asan_gather16(const float *p, __m512i idx)
{
    int32_t i[16];
    _mm512_storeu_si512((void *)i, idx);
    for (int l = 0; l < 16; ++l)
        edgec_asan_check(p + i[l], sizeof *p, 0);
}
#else
#define edgec_asan_gather16(p, idx) ((void)(p), (void)(idx))
#endif

#define EDGEC_MASK16(n) ((__mmask16)((1u << (n)) - 1u))
/* kernel-IR mulshift (edgec_mulshift of each lane, 33 <= s <= 62): vpmuldq multiplies the
   even lanes, and the odd lanes moved down, into 64 bits; one masked shuffle gathers the high
   words (the odd products' in place, the even ones' moved down), to which the rounding term
   2^(s-1) adds as 2^(s-33) (it has no bits in the low words), shifted right by s - 32 */
static inline __m512i edgec_mulshift16(__m512i a, __m512i m, int32_t s)
{
    __m512i even = _mm512_mul_epi32(a, m);
    __m512i odd = _mm512_mul_epi32(_mm512_srli_epi64(a, 32), _mm512_srli_epi64(m, 32));
    __m512i h = _mm512_mask_shuffle_epi32(odd, 0x5555, even, _MM_PERM_CDAB);
    h = _mm512_add_epi32(h, _mm512_set1_epi32(1 << (s - 33)));
    return _mm512_sra_epi32(h, _mm_cvtsi32_si128(s - 32));
}
/* kernel-IR nibble 0: each byte's low nibble moved up (16 * the signed int4 it holds). With
   GFNI one affine map per byte (bit i of the result is bit i - 4 of the byte); without it a
   16-bit shift and a mask dropping what crossed over from the byte below */
static inline __m512i edgec_nibble_lo64(__m512i a)
{
#ifdef __GFNI__
    return _mm512_gf2p8affine_epi64_epi8(a, _mm512_set1_epi64(0x01020408), 0);
#else
    return _mm512_and_si512(_mm512_slli_epi16(a, 4), _mm512_set1_epi8((char)0xF0));
#endif
}
EDGEC_BY_LANES(edgec_exp16, edgec_expf, __m512, 16, _mm512_storeu_ps, _mm512_loadu_ps)
EDGEC_BY_LANES(edgec_tanh16, edgec_tanhf, __m512, 16, _mm512_storeu_ps, _mm512_loadu_ps)
#endif
